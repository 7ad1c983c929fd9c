//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain makes the test binary compare itself where COMPARE_MAIN is 1,
// and a fake perftest tool or gorperf where COMPARE_FAKE names how it
// behaves (see fake); the scripts of fakeTools run it so.
func TestMain(m *testing.M) {
	if os.Getenv("COMPARE_MAIN") == "1" {
		os.Unsetenv("COMPARE_MAIN") // not for the fakes it runs
		main()
		os.Exit(0)
	}
	if mode := os.Getenv("COMPARE_FAKE"); mode != "" {
		os.Exit(fake(mode, os.Args[1], os.Args[2:]))
	}
	// The fakes and compare are this binary too: under -race, each of
	// their exits would sleep the race runtime's default second
	// (atexit_sleep_ms), some 100 s of the package's tests in all. A
	// race they find still fails them: it sets their exit status.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// fakeTools puts on PATH scripts named ib_write_bw, ib_read_bw and
// gorperf that run this test binary as fake, in mode, and returns their
// directory; the fakes leave their pids and a mark of each client run
// there.
func fakeTools(t *testing.T, mode string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"ib_write_bw", "ib_read_bw", "gorperf"} {
		script := "#!/bin/sh\nexec \"$COMPARE_FAKE_BIN\" " + name + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("COMPARE_FAKE", mode)
	t.Setenv("COMPARE_FAKE_BIN", exe)
	t.Setenv("COMPARE_FAKE_DIR", dir)
	return dir
}

// fake is a perftest tool or gorperf as run, a server or (its last
// argument 127.0.0.1) a client:
//
//   - ok: the server listens on -p (a perftest tool's on every IPv4
//     address, gorperf's on 127.0.0.1) and stays until killed; the client
//     prints a result (perftest's at 2 bytes on rxe, or gorperf's JSON);
//   - clientfail: the server as ok; the client prints perftest's table
//     header on stdout and its error on stderr, and exits 1;
//   - exit: the server says it cannot listen and exits 1;
//   - silent: the server never listens and stays until killed;
//   - gorperfflaky, perftestflaky: as ok, but gorperf's (or the perftest
//     tool's) first client run fails, as clientfail's does, or with
//     gorperf's JSON error;
//
// gorperf's client, given --threads N, reports its N threads pinned in
// turn to CPUs 0 and 1; without --use_old_post_send (on the ibv_wr_* API,
// compare's -wr-api) it reports 20% more bandwidth and message rate, and
// in mode wrfail it fails there, with gorperf's JSON error;
//
// and, given only --help, it prints a usage as perftest 26.04's and
// exits 1.
func fake(mode, name string, args []string) int {
	dir := os.Getenv("COMPARE_FAKE_DIR")
	port := ""
	if i := slices.Index(args, "-p"); i >= 0 && i+1 < len(args) {
		port = args[i+1]
	}
	if slices.Equal(args, []string{"--help"}) {
		fmt.Printf("Usage:\n  %s            start a server and wait for connection\n      --disable_numa Disable NUMA auto-detection and binding.\n", name)
		return 1
	}
	if len(args) > 0 && args[len(args)-1] == "127.0.0.1" {
		mark := filepath.Join(dir, name+".client")
		_, ranBefore := os.Stat(mark)
		os.WriteFile(mark, []byte(strings.Join(args, " ")), 0o644)
		flaky := ranBefore != nil && (mode == "gorperfflaky" && name == "gorperf" || mode == "perftestflaky" && name != "gorperf")
		wrAPI := name == "gorperf" && !slices.Contains(args, "--use_old_post_send")
		switch {
		case mode == "wrfail" && wrAPI:
			fmt.Print(`{"error": {"code": "post", "message": "ibv_wr_complete: invalid argument"}}`)
			return 1
		case flaky && name == "gorperf":
			fmt.Print(`{"error": {"code": "post", "message": "ibv_post_send: connection reset"}}`)
			return 1
		case mode == "clientfail" || flaky:
			fmt.Print(perftestResultLine + perftestResultFmt + "\n")
			fmt.Fprintf(os.Stderr, " Couldn't connect to 127.0.0.1:%s\n Unable to init the socket connection\n\n", port)
			return 1
		case name == "gorperf":
			threads := ""
			if i := slices.Index(args, "--threads"); i >= 0 && i+1 < len(args) {
				n, _ := strconv.Atoi(args[i+1])
				var ts []string
				for k := range n {
					ts = append(ts, fmt.Sprintf(`{"thread": %d, "qps": 1, "cpu": %d, "results": []}`, k, k%2))
				}
				threads = `, "thread_results": [` + strings.Join(ts, ", ") + `]`
			}
			bw, rate := 0.050491676612154444, 0.02647218014763323
			if wrAPI {
				bw, rate = 1.2*bw, 1.2*rate
			}
			fmt.Printf(`{"results": [{"bw_avg_mbps": %v, "msg_rate_mpps": %v}]%s}`, bw, rate, threads)
		default:
			fmt.Print(header + perftestResultLine + perftestResultFmt + "\n" +
				fmt.Sprintf(perftestReportFmt, 2, 2000, 0.06, 0.05, 0.027644) + "\n" + perftestResultLine)
		}
		return 0
	}
	os.WriteFile(filepath.Join(dir, name+".server"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	switch mode {
	case "exit":
		fmt.Print(perftestResultLine)
		fmt.Fprintf(os.Stderr, " Couldn't listen to port %s\n", port)
		return 1
	case "silent":
	default:
		if name != "gorperf" {
			// As perftest's server: on every address, and without
			// saying why it could not.
			l, err := net.Listen("tcp4", "0.0.0.0:"+port)
			if err != nil {
				fmt.Print(perftestResultLine)
				fmt.Fprintf(os.Stderr, " Couldn't listen to port %s\n", port)
				return 1
			}
			defer l.Close()
			break
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer l.Close()
	}
	// Until killed, or long after the test should have ended.
	time.Sleep(2 * time.Minute)
	return 0
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serverGone reads the fake server's pid and checks that the process is
// no more (killed and reaped).
func serverGone(t *testing.T, dir, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".server"))
	if err != nil {
		t.Fatalf("the server never ran: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server (pid %d) is still there after the run: kill 0 gives %v", pid, err)
	}
}

// TestRunProcesses runs fake perftest tools and gorperf through run: the
// figures it parses, the error text of a client or server that fails,
// and that the server is killed whatever happened.
func TestRunProcesses(t *testing.T) {
	newConfig := func() *config {
		return &config{serverDev: "fake0", clientDev: "fake1", addr: "127.0.0.1", port: freePort(t) - 1, gorperf: "gorperf"}
	}

	t.Run("ok", func(t *testing.T) {
		dir := fakeTools(t, "ok")
		c := newConfig()
		m, out := c.run(context.Background(), false, "write_bw", 2, 1, nil, 2000, false)
		if m.Err != "" || m.BWAvgMBps != 0.05 || m.MsgRateMpps != 0.027644 || m.Msgs != 2000 || !strings.Contains(out, "#bytes") {
			t.Fatalf("perftest: %+v\n%s", m, out)
		}
		// 0.027644 Mpps × 2 bytes, where BW average says 0.05.
		if want := 0.027644 * 2e6 / (1 << 20); math.Abs(m.BWPreciseMBps-want) > 1e-12 {
			t.Errorf("perftest's precise bandwidth %v, want %v", m.BWPreciseMBps, want)
		}
		serverGone(t, dir, "ib_write_bw")
		g, _ := c.run(context.Background(), true, "write_bw", 2, 1, []string{"--use_old_post_send"}, 2000, false)
		if g.Err != "" || g.MsgRateMpps != 0.02647218014763323 || g.BWPreciseMBps != 0 {
			t.Errorf("gorperf: %+v", g)
		}
		serverGone(t, dir, "gorperf")
	})

	t.Run("client fails", func(t *testing.T) {
		dir := fakeTools(t, "clientfail")
		c := newConfig()
		m, _ := c.run(context.Background(), false, "read_bw", 2, 1, nil, 2000, false)
		// stderr's last line, not stdout's table header.
		if !strings.HasSuffix(m.Err, ": Unable to init the socket connection") {
			t.Errorf("error %q, want stderr's last line", m.Err)
		}
		serverGone(t, dir, "ib_read_bw")
	})

	t.Run("server exits", func(t *testing.T) {
		dir := fakeTools(t, "exit")
		c := newConfig()
		start := time.Now()
		m, _ := c.run(context.Background(), false, "write_bw", 2, 1, nil, 2000, false)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a server that exited at once was waited for %v", d)
		}
		if want := fmt.Sprintf("Couldn't listen to port %d", c.port); !strings.Contains(m.Err, "exited before it listened") || !strings.HasSuffix(m.Err, want) {
			t.Errorf("error %q, want the exit and stderr's %q", m.Err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "ib_write_bw.client")); err == nil {
			t.Error("the client ran without a server")
		}
	})

	t.Run("foreign listener", func(t *testing.T) {
		dir := fakeTools(t, "silent")
		c := newConfig()
		// The run waits all of listenWait (the server never listens)
		// and sees the port another process's at its first look; the
		// wait is long enough for the server (the test binary, under
		// -race on a loaded machine) to start and leave its pid for
		// serverGone.
		c.listenWait = 3 * time.Second
		// Another process's socket listens on the port the server should.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.port+1))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		m, _ := c.run(context.Background(), false, "write_bw", 2, 1, nil, 2000, false)
		if !strings.Contains(m.Err, "did not listen") || !strings.Contains(m.Err, "another process's") {
			t.Errorf("error %q, want the server not listening on a port another process holds", m.Err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ib_write_bw.client")); err == nil {
			t.Error("the client ran against another process's socket")
		}
		serverGone(t, dir, "ib_write_bw")
	})
}

// TestBWRatioPrecise: the bandwidth ratio compares gorperf's bandwidth
// with perftest's from its message rate at small sizes, not with its BW
// average to two decimals. The figures are the runs of read_bw at 2 bytes
// in docs/compare-rxe-tcg.json, whose bandwidth ratio (of BW average) was
// 1.010 and message-rate ratio 0.958.
func TestBWRatioPrecise(t *testing.T) {
	var g, p []measure
	for _, r := range [][2]float64{{0.051626680295906203, 0.02706724895898007}, {0.03857727320590699, 0.020225601414578562}, {0.050491676612154444, 0.02647218014763323}} {
		g = append(g, measure{BWAvgMBps: r[0], MsgRateMpps: r[1]})
	}
	for _, rate := range []float64{0.027644, 0.027767, 0.025299} {
		out := perftestResultLine + perftestResultFmt + "\n" + fmt.Sprintf(perftestReportFmt, 2, 2000, 0.06, 0.05, rate) + "\n"
		m, err := parse(false, false, []byte(out))
		if err != nil {
			t.Fatal(err)
		}
		p = append(p, m)
	}
	r := row{Test: "read_bw", Bytes: 2, QPs: 1, Gorperf: summarize(g, true), Perftest: summarize(p, true)}
	r.setRatios()
	if !r.BWRatio.Defined() || math.Abs(r.BWRatio.v-r.MsgRateRatio.v) > 1e-4 || math.Abs(r.MsgRateRatio.v-0.9576) > 1e-4 {
		t.Errorf("bandwidth ratio %v, message-rate ratio %v: want both 0.958", r.BWRatio, r.MsgRateRatio)
	}
	var b strings.Builder
	printTable(&b, []row{r})
	if !strings.Contains(b.String(), " 0.05049 MiB/s  0.05273 MiB/s  0.958  ") {
		t.Errorf("the row shows the bandwidths or the ratio otherwise:\n%s", b.String())
	}
	// A printed 0.00 is no zero ratio.
	m, _ := parse(false, false, []byte(perftestResultLine+perftestResultFmt+"\n"+fmt.Sprintf(perftestReportFmt, 2, 2000, 0.0, 0.0, 0.001)+"\n"))
	if r := ratio(0.002, m.bw()); math.Abs(r.v-1.048576) > 1e-9 {
		t.Errorf("against a printed 0.00 MiB/s at 0.001 Mpps: ratio %v, want 1.048576", r.v)
	}
	// At 64 KiB BW average (within 0.005 MiB/s) is the more precise: the
	// message rate to six decimals is within 0.03 MiB/s there.
	m, _ = parse(false, false, []byte(perftestResultLine+perftestResultFmt+"\n"+fmt.Sprintf(perftestReportFmt, 65536, 2000, 37.1, 36.08, 0.000577)+"\n"))
	if m.BWPreciseMBps != 0 || m.bw() != 36.08 {
		t.Errorf("at 64 KiB: %+v, want BW average's 36.08", m)
	}
}

// TestUndefinedRatios: a ratio to zero is null in the JSON and "-" in the
// table, not 0 and 0.00; a difference of exactly 0 is in the JSON; a
// bandwidth row has no latency figures.
func TestUndefinedRatios(t *testing.T) {
	known := func(m measure) stat { m.CPUKnown = true; return stat{measure: m, Best: m.TTypicalUs + m.MsgRateMpps} }
	lat := row{Test: "write_lat", Bytes: 2, QPs: 1,
		Gorperf:  known(measure{TTypicalUs: 20, P99Us: 30, UserCPUNsPerMsg: 500, SysCPUNsPerMsg: 900}),
		Perftest: known(measure{TTypicalUs: 20, P99Us: 30, UserCPUNsPerMsg: 0, SysCPUNsPerMsg: 1000})}
	lat.setRatios()
	bw := row{Test: "write_bw", Bytes: 64, QPs: 1,
		Gorperf: known(measure{BWAvgMBps: 1, MsgRateMpps: 1}), Perftest: known(measure{BWAvgMBps: 2, MsgRateMpps: 2})}
	bw.setRatios()
	b, err := json.Marshal([]row{lat, bw})
	if err != nil {
		t.Fatal(err)
	}
	var doc []map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"user_cpu_ratio": nil, "sys_cpu_ratio": 0.9, "t_typical_diff_us": 0.0, "p99_diff_us": 0.0, "t_typical_ratio": 1.0} {
		if v, ok := doc[0][k]; !ok || v != want {
			t.Errorf("latency row's %s: %v (there: %v), want %v", k, v, ok, want)
		}
	}
	for _, k := range []string{"t_typical_diff_us", "p99_diff_us", "t_typical_ratio", "p99_ratio"} {
		if v, ok := doc[1][k]; ok {
			t.Errorf("bandwidth row has %s: %v", k, v)
		}
	}
	if doc[1]["bw_ratio"] != 0.5 || doc[0]["bw_ratio"] != nil {
		t.Errorf("bw_ratio %v and %v", doc[1]["bw_ratio"], doc[0]["bw_ratio"])
	}
	// Read back, null stays undefined.
	var back []row
	if err := json.Unmarshal(b, &back); err != nil || back[0].CPURatio.Defined() || !back[0].CPURatio.set || !back[0].TypicalDiffUs.Defined() || back[1].TypicalRatio.set {
		t.Errorf("read back: %+v, %v", back, err)
	}
	var tb strings.Builder
	printTable(&tb, []row{lat})
	if f := strings.Fields(strings.Split(tb.String(), "\n")[1]); f[len(f)-2] != "-" || f[len(f)-1] != "0.90" || !slices.Contains(f, "+0.00") {
		t.Errorf("the latency row's CPU ratios %q, want - and 0.90, and a +0.00 difference:\n%s", f[len(f)-2:], tb.String())
	}
}

// TestInts: a list flag's entries are whole numbers from 1, perhaps with
// k or m; any other entry is an error, not dropped.
func TestInts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{{"2,64,4096", []int{2, 64, 4096}}, {"2,4k", []int{2, 4096}}, {" 64 , 1K,1m", []int{64, 1024, 1 << 20}}, {"", nil}, {"  ", nil}} {
		if got, err := ints("sizes", tc.in); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ints(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"2,4x", "0", "1,-2", "2,,4", "2,", "k", "4kk", "1.5", "99999999999"} {
		if got, err := ints("qps", in); err == nil || !strings.Contains(err.Error(), "-qps") {
			t.Errorf("ints(%q) = %v, %v; want an error naming -qps", in, got, err)
		}
	}
	if got, err := testList("write_bw, send_lat"); err != nil || !slices.Equal(got, []string{"write_bw", "send_lat"}) {
		t.Errorf("testList: %q, %v", got, err)
	}
	for _, in := range []string{"write_bw,", "write", "write_bw,../x_bw"} {
		if _, err := testList(in); err == nil {
			t.Errorf("testList(%q) accepted", in)
		}
	}
}

// TestCheckTools: a perftest tool the cases need and PATH lacks is found
// before the run, with its name.
func TestCheckTools(t *testing.T) {
	fakeTools(t, "ok")
	t.Setenv("PATH", os.Getenv("COMPARE_FAKE_DIR")) // the fakes alone
	c := config{tests: []string{"write_bw", "read_bw"}, sizes: []int{2}}
	if help, err := c.checkTools(c.cases()); err != nil || !strings.Contains(help, "ib_write_bw            start a server") {
		t.Errorf("with every tool there: %v; help %q, want ib_write_bw's", err, help)
	}
	c.tests = []string{"read_bw", "send_lat", "send_bw"}
	c.postList = 16
	c.postListSizes = []int{2}
	_, err := c.checkTools(c.cases())
	if err == nil || !strings.Contains(err.Error(), "ib_send_lat, ib_send_bw not found on PATH") {
		t.Errorf("without ib_send_lat and ib_send_bw: %v", err)
	}
	c = config{tests: []string{"write_bw"}, sizes: []int{2}, pin: true}
	if _, err := c.checkTools(c.cases()); err == nil || !strings.Contains(err.Error(), "taskset") {
		t.Errorf("-pin without taskset: %v", err)
	}
}

// TestSettleDevices: picked devices never override a flag given, a flag
// given without a server device is refused, and a server device alone is
// the client's too.
func TestSettleDevices(t *testing.T) {
	picked := pick{serverDev: "mlx5_0", clientDev: "mlx5_1", serverGID: 3, clientGID: 4, addr: "192.0.2.1", why: "two devices"}
	pickFn := func() (pick, error) { return picked, nil }
	noPick := func() (pick, error) { t.Error("picked devices where some were named"); return pick{}, errors.New("no") }
	defaults := config{clientDev: "", addr: "127.0.0.1", serverGID: 1, clientGID: 1}

	c := defaults
	if note, err := c.settleDevices(map[string]bool{}, pickFn); err != nil || c.serverDev != "mlx5_0" || c.clientDev != "mlx5_1" ||
		c.serverGID != 3 || c.clientGID != 4 || c.addr != "192.0.2.1" || !strings.Contains(note, "two devices") {
		t.Errorf("nothing named: %+v, %q, %v", c, note, err)
	}
	for _, f := range []string{"client-dev", "addr", "server-gid", "client-gid"} {
		c := defaults
		if _, err := c.settleDevices(map[string]bool{f: true}, noPick); err == nil || !strings.Contains(err.Error(), "-"+f+" without -server-dev") {
			t.Errorf("-%s alone: %v, want it refused", f, err)
		}
	}
	c = defaults
	c.serverDev, c.serverGID = "mlx5_0", 3
	if note, err := c.settleDevices(map[string]bool{"server-dev": true, "server-gid": true}, noPick); err != nil ||
		c.clientDev != "mlx5_0" || c.clientGID != 3 || !strings.Contains(note, "shares the server's device") {
		t.Errorf("-server-dev alone: %+v, %q, %v; want the client on mlx5_0, GID 3", c, note, err)
	}
	c = defaults
	c.serverDev, c.serverGID, c.clientGID = "mlx5_0", 3, 5
	if _, err := c.settleDevices(map[string]bool{"server-dev": true, "server-gid": true, "client-gid": true}, noPick); err != nil || c.clientDev != "mlx5_0" || c.clientGID != 5 {
		t.Errorf("-server-dev and -client-gid: %+v, %v; want the client on mlx5_0, GID 5", c, err)
	}
	c = defaults
	c.serverDev, c.clientDev = "rxe0", "rxe1"
	if note, err := c.settleDevices(map[string]bool{}, noPick); err != nil || c.clientDev != "rxe1" || note != "" {
		t.Errorf("both named (RXE_DEV, RXE_DEV2): %+v, %q, %v", c, note, err)
	}
	c = defaults
	if _, err := c.settleDevices(map[string]bool{}, func() (pick, error) { return pick{}, errors.New("no device with an active port 1") }); err == nil ||
		!strings.Contains(err.Error(), "no device with an active port 1; name the devices with -server-dev") {
		t.Errorf("nothing to pick: %v", err)
	}
}

// TestPerftestFailedEveryRun: where perftest fails every run of a case,
// gorperf is not run (its parameters come from perftest's header), and
// the table's ERROR is perftest's own; it was gorperf's "not run", which
// hid the cause (here the server's "Couldn't listen") in the JSON.
func TestPerftestFailedEveryRun(t *testing.T) {
	fakeTools(t, "exit")
	c := &config{serverDev: "fake0", clientDev: "fake1", addr: "127.0.0.1", port: freePort(t) - 1, gorperf: "gorperf", reps: 2}
	r := c.compare(context.Background(), testCase{test: "write_bw", size: 2, qps: 1, iters: 2000})
	if r.Perftest.Err == "" || !strings.HasPrefix(r.Gorperf.Err, "not run") {
		t.Fatalf("perftest's error %q, gorperf's %q; want a failure and gorperf not run", r.Perftest.Err, r.Gorperf.Err)
	}
	var b strings.Builder
	printTable(&b, []row{r})
	line := strings.Split(b.String(), "\n")[1]
	if !strings.Contains(line, "ERROR: perftest: the server exited before it listened") || !strings.Contains(line, "Couldn't listen to port") ||
		strings.Contains(line, "not run") {
		t.Errorf("the table's row %q; want perftest's error", line)
	}
	// A gorperf that failed on its own is named so.
	r = row{Test: "write_bw", Bytes: 2, QPs: 1, Gorperf: stat{measure: measure{Err: "exit status 1: no device"}}}
	b.Reset()
	printTable(&b, []row{r})
	if !strings.Contains(b.String(), "ERROR: gorperf: exit status 1: no device") {
		t.Errorf("gorperf's failure:\n%s", b.String())
	}
}

// TestCountFlags: -n and -lat-n below perftest's least (5 iterations) and
// -reps below 1 end the run before it starts, with exit status 2 and the
// reason, as the list flags do; they ran, every case failing (-reps, then
// taken as 1, too).
func TestCountFlags(t *testing.T) {
	dir := fakeTools(t, "exit")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "-5"}, "compare: -n -5: perftest runs at least 5 iterations"},
		{[]string{"-n", "4"}, "compare: -n 4: perftest runs at least 5 iterations"},
		{[]string{"-lat-n", "0"}, "compare: -lat-n 0: perftest runs at least 5 iterations"},
		{[]string{"-reps", "-3"}, "compare: -reps -3: each tool runs at least once a case"},
		{[]string{"-reps", "0"}, "compare: -reps 0: each tool runs at least once a case"},
	} {
		out := filepath.Join(t.TempDir(), "compare.json")
		args := append([]string{"-gorperf", filepath.Join(dir, "gorperf"), "-server-dev", "fake0", "-addr", "127.0.0.1",
			"-json", out, "-tests", "write_bw", "-sizes", "2", "-qps", "", "-post-list", "0", "-port", strconv.Itoa(freePort(t) - 1)}, tc.args...)
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "COMPARE_MAIN=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.HasPrefix(stderr.String(), tc.want+"\n") {
			t.Errorf("compare %q: exit status %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("compare %q wrote its JSON: it started", tc.args)
		}
	}
}
