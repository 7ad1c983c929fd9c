//go:build linux && cgo

package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestInfiniteHeaderAfterFailure: --run_infinitely prints the column
// line of its intervals after perftest's header block, which a run that
// fails before it connects never prints; so it prints no column line
// either. It used to print the line first, before the error, on each
// side and in loopback.
func TestInfiniteHeaderAfterFailure(t *testing.T) {
	port := freshPort()
	for _, args := range [][]string{
		{"write-bw", "--run_infinitely", "-d", "nosuchdev0", "-p", port, "127.0.0.1"},
		{"write-bw", "--run_infinitely", "-d", "nosuchdev0", "-p", port},
		{"loopback", "send-bw", "--run_infinitely", "-d", "nosuchdev0"},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		start := time.Now()
		code := run(context.Background(), f, args)
		if code != exitError || strings.Contains(out.String(), "#bytes") || errOut.Len() == 0 {
			t.Errorf("%q: exit %d, want %d, the error and no column line\nstdout:\n%s\nstderr:\n%s", args, code, exitError, out, errOut)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%q took %v", args, d)
		}
	}
}

// TestFinishWriteError: a --json or --csv document (or --output's
// figures) that cannot be written fails the run, where it exited 0 with
// the result lost; and so does any other output that did not arrive.
func TestFinishWriteError(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	for _, o := range []testOptions{
		{Test: exchange.WriteBW, JSON: true},
		{Test: exchange.WriteBW, CSV: true},
		{Test: exchange.WriteBW, Output: "bandwidth", value: report.BWValue},
	} {
		f, _, _ := newTestFactory(nil, nil)
		f.IO.Out = full
		err := o.finish(f, "client", fakeBW(), nil)
		if exitCode(err) != exitError || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("json %v, csv %v, output %q to /dev/full: %v (exit %d), want exit 1 with ENOSPC", o.JSON, o.CSV, o.Output, err, exitCode(err))
		}
	}
	// A run whose own error came first keeps it: a missed limit stays
	// exit status 3.
	f, _, _ := newTestFactory(nil, nil)
	f.IO.Out = full
	o := testOptions{Test: exchange.WriteBW, JSON: true, limits: report.Limits{BW: 1e9}}
	if err := o.finish(f, "client", fakeBW(), nil); exitCode(err) != exitLimit {
		t.Errorf("a missed limit, to /dev/full: %v (exit %d), want exit %d", err, exitCode(err), exitLimit)
	}
	// Whatever a command prints: a test's -V to a full disk.
	f, _, errOut := newTestFactory(nil, nil)
	f.IO.Out = full
	if code := run(context.Background(), f, []string{"write-bw", "-V"}); code != exitError || !strings.Contains(errOut.String(), "writing the output") {
		t.Errorf("write-bw -V to /dev/full: exit %d, stderr %q", code, errOut)
	}
}

// fakeInfinite is the result of write_bw --run_infinitely stopped after
// three intervals.
func fakeInfinite() (*bench.Result, []report.Interval) {
	res := fakeBW()
	res.Sizes = res.Sizes[:1]
	res.Spec.RunInfinitely = true
	res.Interrupted = true
	var ivs []report.Interval
	for i := 1; i <= 3; i++ {
		b := stats.ComputeBandwidth(4096, uint64(1000*i), time.Second, 0)
		ivs = append(ivs, report.IntervalFromBandwidth(time.Duration(i)*time.Second, b))
	}
	return res, ivs
}

// TestCSVIntervals: --csv --run_infinitely writes a row an interval
// before the result, with the interval's end and length in two columns
// more, where it dropped them all; a run stopped before its first
// interval has the columns still, and its JSON no "intervals".
func TestCSVIntervals(t *testing.T) {
	res, ivs := fakeInfinite()
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, CSV: true, Infinite: true, intervals: ivs}
	if err := o.finish(f, "client", res, nil); exitCode(err) != exitInterrupted {
		t.Fatalf("finish: %v", err)
	}
	rows, err := csv.NewReader(out).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("%d rows (%v), want a header, 3 intervals and the result:\n%s", len(rows), err, out)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	end, dur := col["interval_end_s"], col["interval_duration_s"]
	if end == 0 || dur == 0 || end != len(rows[0])-2 {
		t.Fatalf("header %q: want interval_end_s and interval_duration_s last", rows[0])
	}
	for i, iv := range ivs {
		r := rows[1+i]
		if r[col["test"]] != "write_bw" || r[col["bytes"]] != "4096" || r[col["iterations"]] != strconv.FormatUint(iv.Iterations, 10) ||
			r[end] != strconv.Itoa(i+1) || r[dur] != "1" || r[col["bw_avg_mbps"]] == "" || r[col["bw_peak_mbps"]] != "" {
			t.Errorf("interval %d's row %q, want %+v", i, r, iv)
		}
	}
	if r := rows[4]; r[col["iterations"]] != "5000" || r[end] != "" || r[dur] != "" || r[col["bw_peak_mbps"]] == "" {
		t.Errorf("the result's row %q", r)
	}

	// Stopped before an interval ended: the same columns, no rows of
	// intervals; and the JSON leaves the empty list out.
	f, out, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.WriteBW, CSV: true, Infinite: true}
	o.finish(f, "client", res, nil)
	if rows, err := csv.NewReader(out).ReadAll(); err != nil || len(rows) != 2 || rows[0][len(rows[0])-1] != "interval_duration_s" {
		t.Errorf("no interval: %v\n%s", err, out)
	}
	f, out, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.WriteBW, JSON: true, Infinite: true}
	o.finish(f, "client", res, nil)
	if strings.Contains(out.String(), `"intervals"`) {
		t.Errorf("JSON without intervals has the key:\n%s", out)
	}
}

// fakeLatDuration is a send_lat of -D seconds: 1000 samples of 20 to 35
// µs and one of 110 µs.
// Its 1000 iterations took a window of 60 ms, more than the samples
// cover (27.44 ms, twice that for write_lat and send_lat): the window
// holds the pauses the samples leave out.
func fakeLatDuration(test exchange.Test) (*bench.Result, []float64) {
	res := fakeLat()
	res.Spec = exchange.TestSpec{Test: test, Duration: 4, Margin: 1}
	res.Sizes[0].Window = 60 * time.Millisecond
	return res, res.Sizes[0].Samples
}

// TestLatDurationTable: a latency test of a duration (-D) prints
// perftest's table of one (print_report_lat_duration), where it printed
// the table of a run of iterations, with perftest's figures: t_avg the
// measuring window over the rtt_factor and the iterations, and tps the
// iterations over the window, not the samples' mean and rate (which
// leave out gorperf's pauses); --output latency prints that t_avg.
func TestLatDurationTable(t *testing.T) {
	for _, tc := range []struct {
		test   exchange.Test
		factor float64 // of a sample to an iteration, perftest's rtt_factor
	}{
		{exchange.SendLat, 2}, {exchange.WriteLat, 2}, {exchange.ReadLat, 1}, {exchange.AtomicLat, 1},
	} {
		res, samples := fakeLatDuration(tc.test)
		window := float64(res.Sizes[0].Window)
		avg := window / tc.factor / float64(len(samples))
		tps := float64(len(samples)) / (window / 1e9)

		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: tc.test}
		if err := o.finish(f, "client", res, nil); err != nil {
			t.Fatal(err)
		}
		want := " #bytes        #iterations       t_avg[usec]    tps average\n" +
			fmt.Sprintf(" %-7d       %d            %-7.2f        %-7.2f\n", 64, len(samples), avg/1e3, tps)
		if !strings.HasPrefix(out.String(), want) || strings.Contains(out.String(), "t_typical") {
			t.Errorf("%v -D:\n%s\nwant it to begin with\n%s", tc.test, out, want)
		}
		if !strings.Contains(out.String(), " p50: ") {
			t.Errorf("%v -D: no percentile line:\n%s", tc.test, out)
		}

		f, out, _ = newTestFactory(nil, nil)
		o = testOptions{Test: tc.test, Output: "latency", value: report.LatValue}
		if err := o.finish(f, "client", res, nil); err != nil || out.String() != fmt.Sprintf("%f\n", avg/1e3) {
			t.Errorf("%v -D --output latency: %q (%v), want %f", tc.test, out, err, avg/1e3)
		}
	}
	// The side the peer measured (read_lat's server) says so in the row.
	res, _ := fakeLatDuration(exchange.ReadLat)
	res.Sizes[0].Lat, res.Sizes[0].Samples = stats.Latency{}, nil
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.ReadLat}
	if err := o.finish(f, "server", res, nil); err != nil || !strings.Contains(out.String(), "tps average\n 64      measured by the peer") {
		t.Errorf("the server's -D table (%v):\n%s", err, out)
	}
}

// TestOneTestLimits: a server for one test, and loopback's server side,
// take every test the test commands take, where they had serve's limits
// (64 QPs, 8 MiB messages, 2^24 latency iterations, ...); serve keeps
// them.
func TestOneTestLimits(t *testing.T) {
	for _, args := range [][]string{
		{"-q", "128", "host"},
		{"-q", "1024", "-s", "16", "host"},
		{"-s", "1073741824", "-n", "5", "host"},
		{"-t", "16384", "-n", "20000", "host"},
		{"-q", "64", "-s", "8388608", "-b", "host"},
	} {
		s, _, err := parseTest(t, exchange.WriteBW, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if err := s.CheckLimits(oneTestLimits()); err != nil {
			t.Errorf("%v: %v", args, err)
		}
		if err := s.CheckLimits(exchange.DefaultLimits()); !errors.Is(err, exchange.ErrOverLimit) {
			t.Errorf("%v: serve's limits: %v, want over", args, err)
		}
	}
	s, _, err := parseTest(t, exchange.WriteLat, "-n", "100000000", "host")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckLimits(oneTestLimits()); err != nil {
		t.Errorf("10^8 latency iterations: %v", err)
	}
}

// TestCheckBuffers: a server for one test takes a client's test whose
// buffers on its side (2 regions × QPs × threads) are at most half its
// memory, and refuses one over, saying so, as over a limit.
func TestCheckBuffers(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		args []string
		mem  uint64
		ok   bool
	}{
		{[]string{"-s", "65536", "host"}, 1 * gib, true},
		{[]string{"-s", "1073741824", "-n", "5", "host"}, 16 * gib, true},                  // 2 regions of 1 GiB + 64 bytes: 2.0 GiB
		{[]string{"-s", "1073741824", "-n", "5", "host"}, 4 * gib, false},                  // over 2 GiB
		{[]string{"-s", "1073741824", "-n", "5", "-q", "1024", "host"}, 1 << 40, false},    // 2 TiB: over half of 1 TiB
		{[]string{"-s", "268435456", "--threads", "4", "-q", "4", "host"}, 4 * gib, false}, // 512 MiB a thread × 4
		{[]string{"-s", "268435456", "--threads", "4", "-q", "4", "host"}, 8 * gib, true},
		{[]string{"-s", "1073741824", "-n", "5", "-q", "1024", "host"}, 0, true}, // memory not known
	} {
		s, _, err := parseTest(t, exchange.WriteBW, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if s.Threads > 1 {
			s.NumQPs /= s.Threads // a connection's share, as Admit sees it
		}
		err = checkBuffers(s, tc.mem)
		if tc.ok != (err == nil) || err != nil && (!errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(err.Error(), "more than half of this host's memory")) {
			t.Errorf("%v with %d bytes of memory: %v, want ok %v", tc.args, tc.mem, err, tc.ok)
		}
	}
	if physMemory() == 0 {
		t.Error("physMemory: sysinfo gave no memory")
	}
}

// TestServerOtherTest: a server for one test refuses (its Admit) a
// client's test of the other kind, saying that its --output and limits,
// its command's, would not apply; it judged a bandwidth test by a
// latency limit ("t_typical 0.00 µs, above 5", exit 3) and printed the
// message rate for --output latency. A test of the same kind, or a
// server without those flags, runs as the client asks.
// TestServerOtherTestOnDevice runs the refusal end to end.
func TestServerOtherTest(t *testing.T) {
	for _, tc := range []struct {
		o      testOptions
		client exchange.Test
		want   string // in the error; "" for none
	}{
		{testOptions{Test: exchange.WriteLat, limits: report.Limits{Typical: 5}}, exchange.WriteBW,
			"the client ran write_bw, and this server's --limit_lat is for write-lat's figures: not applied (run the server as gorperf write-bw)"},
		{testOptions{Test: exchange.WriteLat, Output: "latency", value: report.LatValue}, exchange.WriteBW, "--output latency is for write-lat's"},
		{testOptions{Test: exchange.ReadBW, limits: report.Limits{BW: 1, MsgRate: 1}}, exchange.SendLat, "-w and -y are for read-bw's"},
		{testOptions{Test: exchange.WriteBW, limits: report.Limits{BW: 1}}, exchange.WriteBW, ""},
		{testOptions{Test: exchange.ReadBW, limits: report.Limits{BW: 1}}, exchange.WriteBW, ""},
		{testOptions{Test: exchange.WriteLat}, exchange.WriteBW, ""},
	} {
		err := tc.o.otherTest(tc.client)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v server, client's %v: %v", tc.o.Test, tc.client, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v server, client's %v: %v, want %q", tc.o.Test, tc.client, err, tc.want)
		}
	}
}

// TestLoopbackPeerDevGID: on another device (--peer-dev) the server side
// chooses its GID automatically, in the family asked for, or else (on a
// device) in the family of the client side's GID (and its subnet, where
// the server side's device has a GID there), where it took the
// client side's -x or --source_ip, which name a GID of the client side's
// device; on the same device it keeps them.
func TestLoopbackPeerDevGID(t *testing.T) {
	for _, args := range [][]string{
		{"-d", "rxe1", "--peer-dev", "rxe0", "--source_ip", "198.18.0.2"},
		{"-d", "rxe1", "--peer-dev", "rxe0", "--bind_source_ip", "198.18.0.2"},
		{"-d", "rxe1", "--peer-dev", "rxe0", "-x", "1"},
		{"-d", "rxe1", "--peer-dev", "rxe0", "--gid-netdev", "rxeveth1", "--gid-family", "4"},
		{"-d", "rxe1", "--peer-dev", "rxe0", "--gid-subnet", "198.18.0.2/32", "--ipv6"},
		{"-d", "rxe1", "--peer-dev", "rxe1", "--source_ip", "198.18.0.2"},
		{"-d", "rxe1", "--source_ip", "198.18.0.2"},
	} {
		f, _, _ := newTestFactory(nil, nil)
		var o *testOptions
		cmd := newCmdTest(f, exchange.WriteBW, true, func(got *testOptions) error { o = got; return nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		l, err := o.local()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		sl := serverSide(o, exchange.TestSpec{Test: exchange.WriteBW}, l)
		other := o.PeerDev != "" && o.PeerDev != o.Device
		family := l.GIDRule.Family
		e, cerr := chosenGID(l)
		if family == 0 && cerr == nil && e.Type == ibverbs.GIDTypeRoCEv2 {
			family = map[bool]int{true: 4, false: 6}[e.IP().Is4()]
		}
		// A prefix, where the server side has one, is the subnet of the
		// client side's GID (198.18.0.0/24 in the VM).
		prefixOK := !sl.GIDRule.Prefix.IsValid() || cerr == nil && sl.GIDRule.Prefix.Contains(e.IP())
		switch {
		case other && (sl.GIDIndex != -1 || !prefixOK || sl.GIDRule.Addr.IsValid() || sl.GIDRule.Netdev != "" ||
			sl.GIDRule.Family != family || sl.Device != o.PeerDev):
			t.Errorf("%v: the server side on %s has GID index %d, rule %+v; want the automatic choice, family %d", args, sl.Device, sl.GIDIndex, sl.GIDRule, family)
		case !other && (sl.GIDIndex != l.GIDIndex || sl.GIDRule != l.GIDRule || sl.Device != l.Device):
			t.Errorf("%v: the server side on the same device has GID index %d, rule %+v; want the client side's %d, %+v", args, sl.GIDIndex, sl.GIDRule, l.GIDIndex, l.GIDRule)
		}
		if other && (l.GIDIndex < 0 && !l.GIDRule.Prefix.IsValid() && !l.GIDRule.Addr.IsValid() && l.GIDRule.Netdev == "") {
			t.Errorf("%v: the client side lost its selection: %d, %+v", args, l.GIDIndex, l.GIDRule)
		}
	}
}

// TestDevicesJSONError: gorperf devices --json that fails writes its own
// document, with no devices and the error, where it wrote a test's
// result document.
func TestDevicesJSONError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  error
		code int
		want string // error code
	}{
		{[]string{"devices", "--json"}, nil, exitError, "failed"},
		{[]string{"devices", "--json", "-d", "nope"}, errors.New(`no RDMA device named "nope" (devices: rxe0)`), exitError, "failed"},
		{[]string{"devices", "--json", "--bogus"}, nil, exitUsage, "usage"},
	} {
		f, out, _ := newTestFactory(nil, tc.err)
		if code := run(context.Background(), f, tc.args); code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.args, code, tc.code)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%q: %v\n%s", tc.args, err, out)
		}
		var e report.Error
		json.Unmarshal(doc["error"], &e)
		if string(doc["schema_version"]) != "1" || string(doc["devices"]) != "[]" || e.Code != tc.want || e.Message == "" || len(doc) != 5 {
			t.Errorf("%q: document %s, want schema_version 1, tool, version, devices [] and an error of code %q, alone", tc.args, out, tc.want)
		}
	}
	// A test's failure is still a test's document.
	f, out, _ := newTestFactory(nil, nil)
	run(context.Background(), f, []string{"write-bw", "--json", "--bogus"})
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Test != "write_bw" || r.Error == nil || r.Tool != "gorperf" {
		t.Errorf("write-bw --json --bogus: %+v (%v)", r, err)
	}
}

// TestOneTestNoLimitsOnDevice: a server for one test, and loopback, run a
// test over serve's limits (65 QPs, of its 64), which both refused: "65
// QPs exceed this server's maximum of 64".
func TestOneTestNoLimitsOnDevice(t *testing.T) {
	srvDev, cliDev, _, port, ctx := setUpPeers(t, 120*time.Second)
	test := []string{"write-bw", "-q", "65", "-s", "1024", "-n", "20"}
	r, _ := serverAndJSONClient(t, ctx, port, []string{"write-bw", "-d", srvDev}, append(test, "-d", cliDev, peersAddr(t)))
	if r.QPs != 65 || r.Error != nil || r.Results[0].Iterations != 20*65 {
		t.Errorf("client: %d QPs, error %+v, %d iterations", r.QPs, r.Error, r.Results[0].Iterations)
	}
	out, err := gorperf(ctx, append(append([]string{"loopback"}, test...), "-d", cliDev, "--json")...).Output()
	r = report.Result{}
	if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || r.QPs != 65 || r.Error != nil {
		t.Errorf("loopback: %v, %v, %d QPs, error %+v\n%s", err, jerr, r.QPs, r.Error, out)
	}
}

// peersAddr is the server's address of peers.
func peersAddr(t *testing.T) string {
	_, _, addr := peers(t)
	return addr
}

// TestServerOtherTestOnDevice: a write-lat server with --limit_lat whose
// client runs write-bw refuses the test before it runs, saying that its
// limit is for write-lat, and both sides exit 1; the server exited 3 with
// "t_typical 0.00 µs, above 5", having run the test.
func TestServerOtherTestOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "write-lat", "--limit_lat", "5")
	out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-n", "200", addr).CombinedOutput()
	const why = "the client ran write_bw, and this server's --limit_lat is for write-lat's figures: not applied"
	if procExit(err) != exitError || !strings.Contains(string(out), why) || strings.Contains(string(out), "#bytes") {
		t.Errorf("client: exit %d, want 1, told why, and no result:\n%s", procExit(err), out)
	}
	err = srv.Wait()
	e := srv.Stderr.(*bytes.Buffer).String()
	if procExit(err) != exitError || !strings.Contains(e, "refused: "+why) ||
		strings.Contains(srvOut.String(), "#bytes") {
		t.Errorf("server: exit %d, said:\n%s%s", procExit(err), srvOut, e)
	}
}

// TestServerBuffersOnDevice: a server for one test refuses a client's
// test whose buffers would take more than half the host's memory (8 MiB
// messages, rxe's largest, on 1024 QPs: 16 GiB, where the VM has 2),
// before it maps any, and tells the client why, as over a limit; it
// exits 1. The client is the protocol's, which maps nothing: a gorperf
// client on a host of as little memory fails first, mapping its own.
func TestServerBuffersOnDevice(t *testing.T) {
	srvDev, _, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, _ := startServer(t, ctx, srvDev, port, "write-bw")
	spec, _, err := parseTest(t, exchange.WriteBW, "-s", "8388608", "-n", "5", "-q", "1024", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", net.JoinHostPort(addr, port))
	if err != nil {
		t.Fatal(err)
	}
	c := exchange.NewConn(nc)
	defer c.Close()
	_, err = exchange.Handshake(ctx, c, "gorperf test")
	if err == nil {
		err = c.Send(ctx, spec)
	}
	var m exchange.Message
	if err == nil {
		m, err = c.Recv(ctx)
	}
	const why = "more than half of this host's memory"
	if !errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(fmt.Sprint(err), why) {
		t.Errorf("client: %v (%v), want the server's refusal, over a limit", err, m)
	}
	err = srv.Wait()
	if e := srv.Stderr.(*bytes.Buffer).String(); procExit(err) != exitError || !strings.Contains(e, why) {
		t.Errorf("server: exit %d, said:\n%s", procExit(err), e)
	}
}

// TestLoopbackPeerDevSourceIPOnDevice: loopback from one device to
// another with the client side's --source_ip (or -x) runs, the server
// side on its own automatic GID; it looked for the client side's address
// on the server side's device and failed.
func TestLoopbackPeerDevSourceIPOnDevice(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	if srvDev == cliDev {
		t.Skip("needs two devices")
	}
	ip := defaultGIDAddr(t, cliDev)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, sel := range [][]string{{"--source_ip", ip}, {"--bind_source_ip", ip}} {
		args := append([]string{"loopback", "write-bw", "-d", cliDev, "--peer-dev", srvDev, "-s", "4096", "-n", "100", "--json"}, sel...)
		out, err := gorperf(ctx, args...).CombinedOutput()
		var r report.Result
		if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || r.Error != nil || r.PeerDevice != srvDev || len(r.Results) != 1 {
			t.Errorf("%q: %v, %v\n%s", args, err, jerr, out)
		}
	}
}

// defaultGIDAddr is the IP address of dev's port 1's default GID.
func defaultGIDAddr(t *testing.T, dev string) string {
	t.Helper()
	ip, err := gidAddr(bench.Local{Device: dev, GIDIndex: -1})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// TestLatDurationOnDevice: latency tests of a duration print perftest's
// table for one, whose t_avg and tps agree: tps is a second over an
// iteration, two samples long where a sample is half a round trip.
// The two tests, each timed by the clock, run side by side (t.Parallel).
func TestLatDurationOnDevice(t *testing.T) {
	_, cliDev, _ := peers(t)
	ctx := testContext(t, 90*time.Second)
	for _, tc := range []struct {
		test   string
		factor float64
	}{{"write-lat", 2}, {"read-lat", 1}} {
		t.Run(tc.test, func(t *testing.T) {
			t.Parallel()
			testLatDuration(t, ctx, cliDev, tc.test, tc.factor)
		})
	}
}

// testLatDuration is a case of TestLatDurationOnDevice: test's table,
// whose tps × t_avg × factor is a second.
func testLatDuration(t *testing.T, ctx context.Context, cliDev, test string, factor float64) {
	out, err := gorperf(ctx, "loopback", test, "-d", cliDev, "-D", "2").Output()
	if err != nil {
		t.Fatalf("%s -D 2: %v\n%s", test, err, out)
	}
	text := string(out)
	i := strings.Index(text, " #bytes        #iterations       t_avg[usec]    tps average\n")
	if i < 0 || strings.Contains(text, "t_typical") {
		t.Fatalf("%s -D 2: not perftest's table of a duration:\n%s", test, text)
	}
	row := strings.Fields(strings.SplitN(text[i:], "\n", 3)[1])
	if len(row) != 4 {
		t.Fatalf("%s -D 2: row %q", test, row)
	}
	n, _ := strconv.ParseUint(row[1], 10, 64)
	avg, _ := strconv.ParseFloat(row[2], 64)
	tps, _ := strconv.ParseFloat(row[3], 64)
	if n < 100 || avg <= 0 || math.Abs(tps*avg*factor/1e6-1) > 0.01 {
		t.Errorf("%s -D 2: %d iterations, t_avg %g µs, tps %g: want tps × t_avg × %g of 1 s", test, n, avg, tps, factor)
	}
	// The iterations run in 2 s; rxe's are slow, but not that slow.
	if secs := float64(n) / tps; secs < 1 || secs > 2.1 {
		t.Errorf("%s -D 2: %d iterations at %g a second is %g s", test, n, tps, secs)
	} else {
		t.Logf("%s -D 2: %d iterations at %g a second, %g s", test, n, tps, secs)
	}
}
