//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestLoopbackUnknownTest: a test loopback does not have is a usage error
// that lists those it has, with flags after it too; loopback alone shows
// its help, as gorperf alone does.
func TestLoopbackUnknownTest(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"loopback", "wirte-bw"}, exitUsage, "",
			`gorperf: unknown test "wirte-bw" for "gorperf loopback": want one of atomic-bw, atomic-lat, read-bw, read-lat, send-bw, send-lat, write-bw, write-lat` + "\nRun 'gorperf loopback --help' for usage.\n"},
		{[]string{"loopback", "wirte-bw", "-d", "x"}, exitUsage, "", `gorperf: unknown test "wirte-bw" for "gorperf loopback": want one of`},
		{[]string{"wirte-bw", "-d", "x"}, exitUsage, "", `gorperf: unknown command "wirte-bw" for "gorperf": did you mean write-bw?` + "\nRun 'gorperf --help' for usage.\n"},
		{[]string{"loopback", "ib_send_lat", "--help"}, exitOK, "Send Latency Test with server and client in this process.", ""},
		{[]string{"loopback", "-d", "x"}, exitUsage, "", "unknown shorthand flag: 'd' in -d"},
		{[]string{"loopback"}, exitOK, "Available Commands:", ""},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, tc.args)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) || tc.stderr == "" && errOut.Len() > 0 {
			t.Errorf("%q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s\nwant stdout with %q, stderr with %q", tc.args, code, tc.code, out, errOut, tc.stdout, tc.stderr)
		}
	}
}

// TestLoopbackServerSide: the server side runs on --peer-dev without the
// client side's --mmap, and reports intervals and progress only where
// it, not the client side, sends: with -b both sides send, and both
// reporting printed each interval twice and appended to one slice from
// two goroutines.
func TestLoopbackServerSide(t *testing.T) {
	l := bench.Local{Device: "rxe1", MapFile: "f", MapOffset: 4096, ThreadCPUs: []int{0, 1, 2},
		Interval: func(time.Duration, stats.Bandwidth) {},
		Progress: func(int, uint64, uint64) {}}
	o := &testOptions{Loopback: true, PeerDev: "rxe0"}
	for _, tc := range []struct {
		spec    exchange.TestSpec
		reports bool
	}{
		{exchange.TestSpec{Test: exchange.WriteBW, RunInfinitely: true, Bidirectional: true}, false},
		{exchange.TestSpec{Test: exchange.WriteBW, RunInfinitely: true}, false},
		{exchange.TestSpec{Test: exchange.ReadBW, RunInfinitely: true, Reversed: true}, true},
	} {
		sl := serverSide(o, tc.spec, l)
		if (sl.Interval != nil) != tc.reports || (sl.Progress != nil) != tc.reports {
			t.Errorf("%+v: the server side reports intervals %v, progress %v; want %v", tc.spec, sl.Interval != nil, sl.Progress != nil, tc.reports)
		}
		if sl.Device != "rxe0" || sl.MapFile != "" || sl.MapOffset != 0 || l.Interval == nil || l.Device != "rxe1" {
			t.Errorf("server side %+v from client side %+v", sl, l)
		}
	}
}

// TestLoopbackPeerDevOnDevice: a server side that cannot run (--peer-dev
// names no device) ends the run at once with its own error, where the
// client side waited 10 s for a greeting from a listener nobody served
// and then reported "context deadline exceeded".
func TestLoopbackPeerDevOnDevice(t *testing.T) {
	_, cliDev, _ := peers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	out, err := gorperf(ctx, "loopback", "write-bw", "-d", cliDev, "--peer-dev", "nosuchdev0", "-n", "100", "--json").Output()
	d := time.Since(t0)
	if code := procExit(err); code != 1 {
		t.Errorf("exit %d (%v), want 1", code, err)
	}
	if d > 5*time.Second {
		t.Errorf("took %v, want the server side's failure at once", d)
	}
	var r report.Result
	if jerr := json.Unmarshal(out, &r); jerr != nil || r.Error == nil || !strings.HasPrefix(r.Error.Message, "server side: ") ||
		!strings.Contains(r.Error.Message, `no RDMA device named "nosuchdev0"`) {
		t.Errorf("JSON %+v (%v), want the server side's error:\n%s", r.Error, jerr, out)
	}
}

// TestLoopbackBidirectionalIntervals: loopback -b --run_infinitely
// reports each interval once, from one goroutine (with -race, a second
// would be a data race and fail the process). Text and --json, each
// timed by the clock, run side by side (t.Parallel).
func TestLoopbackBidirectionalIntervals(t *testing.T) {
	_, cliDev, _ := peers(t)
	ctx := testContext(t, 60*time.Second)
	for _, jsonOut := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", jsonOut), func(t *testing.T) {
			t.Parallel()
			testLoopbackBidirectionalIntervals(t, ctx, cliDev, jsonOut)
		})
	}
}

// testLoopbackBidirectionalIntervals is a case of
// TestLoopbackBidirectionalIntervals: its text, or --json.
func testLoopbackBidirectionalIntervals(t *testing.T, ctx context.Context, cliDev string, jsonOut bool) {
	args := []string{"loopback", "write-bw", "-d", cliDev, "-b", "-s", "4096", "--run_infinitely", "-D", "1"}
	if jsonOut {
		args = append(args, "--json")
	}
	cmd := gorperf(ctx, args...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6500 * time.Millisecond) // set-up may take 2 s under emulation
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if code := procExit(err); code != exitInterrupted || strings.Contains(stderr.String(), "DATA RACE") {
		t.Fatalf("%q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, exitInterrupted, &stdout, &stderr)
	}
	var elapsed []float64
	if jsonOut {
		var r report.Result
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("JSON: %v\n%s", err, &stdout)
		}
		for _, iv := range r.Intervals {
			elapsed = append(elapsed, iv.EndS)
		}
	} else {
		for _, line := range strings.Split(stdout.String(), "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == "4096" {
				elapsed = append(elapsed, float64(len(elapsed)+1)) // rows have no time: counted
			}
		}
	}
	// 4 to 6 intervals of 1 s; each reported twice made 8 to 12. (In
	// text the rows carry no time, so only this count tells.)
	t.Logf("%d intervals in 6.5 s", len(elapsed))
	if len(elapsed) < 2 || len(elapsed) > 7 {
		t.Errorf("%q: %d intervals in 6.5 s of 1 s intervals, want 2 to 7:\n%s", args, len(elapsed), &stdout)
	}
	for i := 1; i < len(elapsed); i++ {
		if elapsed[i] < elapsed[i-1]+0.5 {
			t.Errorf("%q: interval %d ends at %.3f s, interval %d at %.3f s: one interval reported twice", args, i, elapsed[i], i-1, elapsed[i-1])
		}
	}
}

// TestOneTestServerInterrupted: a server for one test stopped with SIGINT
// before any client asked for a test, even after a connection that was
// none, exits 130 with --json's document, code "interrupted", on stdout
// and in --out_json's file; it used to exit 0 with no document, or 1 with
// the stray connection's error.
func TestOneTestServerInterrupted(t *testing.T) {
	srvDev, _, addr := peers(t)
	ctx := testContext(t, 60*time.Second)
	for _, stray := range []bool{false, true} {
		port := freshPort()
		file := t.TempDir() + "/out.json"
		cmd := gorperf(ctx, "write-bw", "-d", srvDev, "-p", port, "--json", "--out_json_file", file)
		var stdout, stderr syncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitListening(t, port)
		if stray {
			c, err := net.Dial("tcp", net.JoinHostPort(addr, port))
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			waitOutput(t, &stderr, "still waiting")
		}
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if code := procExit(err); code != exitInterrupted {
			t.Errorf("stray connection %v: exit %d (%v), want %d\nstderr:\n%s", stray, code, err, exitInterrupted, &stderr)
		}
		b, ferr := os.ReadFile(file)
		var inFile struct { // perftest's file, gorperf's document in it
			Gorperf json.RawMessage `json:"gorperf"`
		}
		json.Unmarshal(b, &inFile)
		for what, doc := range map[string][]byte{"stdout": stdout.Bytes(), "--out_json's file": inFile.Gorperf} {
			var r report.Result
			if jerr := json.Unmarshal(doc, &r); jerr != nil || r.Error == nil || r.Error.Code != "interrupted" {
				t.Errorf("stray connection %v: %s: %+v (%v, %v), want code interrupted:\n%s", stray, what, r.Error, jerr, ferr, doc)
			}
		}
		if !strings.HasSuffix(stderr.String(), "gorperf: interrupted before a client asked for a test\n") {
			t.Errorf("stray connection %v: stderr does not end with the interruption:\n%s", stray, &stderr)
		}
	}
}

// TestMTUNotices: an -m over the port's active MTU is noticed on stderr,
// as perftest's "Requested mtu is higher than active mtu" is, and the
// header's path MTU is the active one; an -m within it gets no notice; a
// UD send test without -s sends the active MTU and says so; --json
// prints no notice.
func TestMTUNotices(t *testing.T) {
	info := rdmatest.Device(t)
	active, err := bench.ActiveMTU(bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1})
	if err != nil {
		t.Fatal(err)
	}
	if active == ibverbs.MTU4096 {
		t.Skipf("%s's active MTU is 4096: no -m is over it", info.Name)
	}
	over := strconv.Itoa((active + 1).Bytes())
	notice := fmt.Sprintf("gorperf: -m %s is over the port's active MTU: the path MTU is at most %d\n", over, active.Bytes())
	header := fmt.Sprintf(" Mtu             : %d[B]\n", active.Bytes())
	ud := fmt.Sprintf("gorperf: a UD message is at most the port's MTU: sending %d bytes (-s to choose)\n", active.Bytes())
	for _, tc := range []struct {
		args       []string
		wantErr    []string
		notWantErr []string
		wantOut    string
	}{
		{[]string{"write-bw", "-m", over}, []string{notice}, nil, header},
		{[]string{"write-bw", "-m", strconv.Itoa(active.Bytes())}, nil, []string{"gorperf:"}, header},
		{[]string{"send-bw", "-c", "UD"}, []string{ud}, []string{"-m "}, ""},
		{[]string{"send-bw", "-c", "UD", "-m", over}, []string{notice, ud}, nil, header},
		{[]string{"write-bw", "-m", over, "--json"}, nil, []string{"gorperf:"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stdout, stderr strings.Builder
			cmd := gorperf(ctx, append([]string{"loopback", "-d", info.Name, "-n", "20"}, tc.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, w := range tc.notWantErr {
				if strings.Contains(stderr.String(), w) {
					t.Errorf("stderr has %q:\n%s", w, stderr.String())
				}
			}
			if !strings.Contains(stdout.String(), tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, stdout.String())
			}
		})
	}
}
