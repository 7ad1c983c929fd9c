//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestServeIntervals: gorperf serve prints an infinite run's intervals
// as they end, under a column line, as a server for one test does, each
// test's under its own; with --json they are in the test's document.
// One that comes when no test has its header is not printed, nor kept.
func TestServeIntervals(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		f, out, _ := newTestFactory(nil, nil)
		o := &serveOptions{test: testOptions{JSON: jsonOut}}
		var l bench.Local
		onHeader := o.streamRows(f, &l)
		if l.Interval == nil {
			t.Fatal("serve sets no Interval: an infinite run's intervals are not printed as they end")
		}
		stray := stats.ComputeBandwidth(4096, 7, time.Second, 0)
		l.Interval(time.Second, stray) // no test's: not printed, nor kept
		if out.Len() != 0 {
			t.Fatalf("an interval with no test:\n%s", out)
		}
		for test := range 2 {
			res, ivs := fakeInfinite()
			res.Role, res.Interrupted, res.PeerInterrupted = "server", false, true
			l.Admit(res.Spec)
			onHeader(res.Header)
			from := out.Len()
			for i := range ivs {
				b := stats.ComputeBandwidth(4096, uint64(1000*(i+1)), time.Second, 0)
				l.Interval(time.Duration(i+1)*time.Second, b)
				if jsonOut {
					continue
				}
				printed := out.String()[from:]
				if n := strings.Count(printed, "\n"); n != i+2 || strings.Count(printed, "#bytes") != 1 {
					t.Errorf("test %d: after %d intervals printed\n%s\nwant a column line and a row each", test, i+1, printed)
				}
			}
			if jsonOut && out.Len() != from {
				t.Errorf("test %d --json: printed before the document:\n%s", test, out.String()[from:])
			}
			o.done(context.Background(), f, res, nil)
			if jsonOut {
				var r report.Result
				if err := json.Unmarshal(out.Bytes()[from:], &r); err != nil || len(r.Intervals) != len(ivs) {
					t.Errorf("test %d --json (%v): want %d intervals in the document:\n%s", test, err, len(ivs), out.String()[from:])
				}
			}
		}
	}
}

// TestServeIntervalsOnDevice: gorperf serve prints a client's
// --run_infinitely test's intervals as they end, as a server for one
// test does, where it printed nothing until the client stopped; the
// client's SIGTERM ends the test, which serve reports in the client's
// words, as served, not failed.
func TestServeIntervalsOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	// serve's stderr is read while it runs: a syncBuffer.
	srv := gorperf(ctx, "serve", "-d", srvDev, "-p", port)
	srvOut, srvErr := &syncBuffer{}, &syncBuffer{}
	srv.Stdout, srv.Stderr = srvOut, srvErr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if srv.ProcessState == nil {
			srv.Process.Kill()
			srv.Wait()
		}
	})
	waitListening(t, port)
	// send_bw: the server receives, and counts, each interval.
	cli, cliOut := start(t, ctx, "send-bw", "-d", cliDev, "-p", port, "-s", "4096", "--run_infinitely", "-D", "1", addr)
	rows := func() int {
		n := 0
		for _, l := range strings.Split(srvOut.String(), "\n") {
			if f := strings.Fields(l); len(f) == 5 && f[0] == "4096" {
				n++
			}
		}
		return n
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && rows() < 2; time.Sleep(50 * time.Millisecond) {
	}
	n := rows()
	cli.Process.Signal(syscall.SIGTERM)
	if err := cli.Wait(); procExit(err) != 143 {
		t.Errorf("the client stopped by SIGTERM: %v, want exit 143\n%s%s", err, cliOut, cli.Stderr)
	}
	if n < 2 || strings.Count(srvOut.String(), "#bytes") < 1 {
		t.Errorf("serve printed %d interval rows while the client ran, want 2 or more under a column line:\n%s", n, srvOut)
	}
	waitOutput(t, srvErr, "the client was stopped (SIGTERM)") // serve reports the test
	srv.Process.Signal(syscall.SIGINT)
	err := srv.Wait()
	e := srvErr.String()
	if procExit(err) != 0 || !strings.Contains(e, "the client was stopped (SIGTERM); the results above") || !strings.Contains(e, "served 1 tests, 0 failed") {
		t.Errorf("serve: %v, want exit 0, the client stopped (SIGTERM), served and not failed:\n%s", err, e)
	}
}
