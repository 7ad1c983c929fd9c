//go:build linux && cgo

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestServeCountsFailures: serve counts a test as failed when it failed,
// before its result too (refused by --max-*, say: it counted none), or
// when finish finds it did (bytes that did not validate), and says why.
// A connection that was no test is said but not counted: a real one in
// TestServerLimitsAndGarbage, which needs a device.
func TestServeCountsFailures(t *testing.T) {
	f, _, errOut := newTestFactory(nil, nil)
	o := &serveOptions{}
	o.done(context.Background(), f, fakeBW(), nil)
	bad := fakeBW()
	bad.Mismatches = 2
	o.done(context.Background(), f, bad, nil)
	o.done(context.Background(), f, fakeBW(), errors.New("peer gone"))
	o.done(context.Background(), f, nil, errors.New("refused: 4 QPs exceed the server's limit of 2"))
	if o.served != 4 || o.failed != 3 {
		t.Errorf("served %d, failed %d; want 4 and 3", o.served, o.failed)
	}
	for _, want := range []string{"gorperf: data validation failed: 2 QPs", "gorperf: peer gone", "gorperf: refused: "} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// A test that Ctrl-C stopped shows what it measured: not a failure.
	f, _, errOut = newTestFactory(nil, nil)
	o = &serveOptions{}
	stopped := fakeBW()
	stopped.Interrupted = true
	o.done(context.Background(), f, stopped, nil)
	if o.served != 1 || o.failed != 0 || strings.Contains(errOut.String(), "exit status") {
		t.Errorf("an interrupted test: served %d, failed %d, stderr:\n%s", o.served, o.failed, errOut)
	}
}

// TestServeNamesClients: what serve says of a test that failed names
// its client (bench.Result.Peer) once: what finish found, bytes that did
// not validate, as what Serve said, which named it already. It said
// "data validation failed" of no client in particular.
func TestServeNamesClients(t *testing.T) {
	f, _, errOut := newTestFactory(nil, nil)
	o := &serveOptions{}
	bad := fakeBW()
	bad.Mismatches, bad.Peer = 2, "198.18.0.2:40000"
	o.done(context.Background(), f, bad, nil)
	gone := fakeBW()
	gone.Peer = "198.18.0.2:40002"
	o.done(context.Background(), f, gone, errors.New("client 198.18.0.2:40002: peer gone"))
	for _, want := range []string{
		"gorperf: client 198.18.0.2:40000: data validation failed: 2 QPs",
		"gorperf: client 198.18.0.2:40002: peer gone; the results above are what was measured until then\n",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Count(errOut.String(), "client 198.18.0.2:40002") != 1 {
		t.Errorf("the second client named more than once:\n%s", errOut)
	}
}

// TestServeMaxDuration: --max-duration sets the limits' MaxDuration,
// 0 (none) by default, the other limits as they were.
func TestServeMaxDuration(t *testing.T) {
	o, err := parseServe(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.limits(); got != exchange.DefaultLimits() || got.MaxDuration != 0 {
		t.Errorf("serve's default limits: %+v; want %+v, no maximum duration", got, exchange.DefaultLimits())
	}
	if o, err = parseServe(t, "--max-duration", "60", "--max-qps", "4"); err != nil {
		t.Fatal(err)
	}
	if got := o.limits(); got.MaxDuration != 60 || got.MaxQPs != 4 {
		t.Errorf("serve --max-duration 60 --max-qps 4: limits %+v", got)
	}
	if _, err := parseServe(t, "--max-duration", "-1"); err == nil {
		t.Error("serve --max-duration -1 was taken")
	}
}

// TestServeStoppedInSetUp: a Ctrl-C that cuts a test's set-up short (the
// gathering of a --threads test's connections returns the context's
// error, and so does Serve) or a greeting (a connection's handshake) is
// serve's stop: done says and counts nothing; it printed "gorperf:
// context canceled", which serve then printed again and exited 1 for.
func TestServeStoppedInSetUp(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	f, _, errOut := newTestFactory(nil, nil)
	o := &serveOptions{}
	o.done(stopped, f, nil, context.Canceled)
	o.done(stopped, f, nil, fmt.Errorf("connection from 198.18.0.2:4242: receiving: %w", context.Canceled))
	if errOut.Len() != 0 || o.served != 0 || o.failed != 0 {
		t.Errorf("served %d, failed %d, stderr %q; want nothing", o.served, o.failed, errOut)
	}
	// A test with a result still reports, stopped or not.
	o.done(stopped, f, fakeBW(), errors.New("peer gone"))
	if !strings.Contains(errOut.String(), "gorperf: peer gone") || o.served != 1 || o.failed != 1 {
		t.Errorf("a result's failure after Ctrl-C: served %d, failed %d, stderr %q", o.served, o.failed, errOut)
	}
}

// TestServeStoppedInSetUpOnDevice stops `gorperf serve` with SIGINT
// while it gathers the connections of a test of two threads (one came)
// and while it waits for a connection's hello: serve exits 0, as any
// stop, says "served 0 tests, 0 failed" and no "context canceled". It
// exited 1 and printed the cancellation twice in the first case, and a
// spurious "connection from ...: context canceled" in the second.
func TestServeStoppedInSetUpOnDevice(t *testing.T) {
	srvDev, _, _ := peers(t)
	spec, _, err := parseTest(t, exchange.WriteBW, "--threads", "2", "-s", "4096", "-n", "100", "host")
	if err != nil {
		t.Fatal(err)
	}
	spec.NumQPs, spec.Thread, spec.Group = 1, 0, 12345
	for _, gather := range []bool{true, false} {
		ctx := testContext(t, 60*time.Second)
		port := freshPort()
		srv, _ := startServer(t, ctx, srvDev, port, "serve")
		nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if gather {
			c := exchange.NewConn(nc)
			hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := exchange.Handshake(hctx, c, "gorperf test"); err != nil {
				t.Fatal(err)
			}
			if err := c.Send(hctx, spec); err != nil {
				t.Fatal(err)
			}
			hcancel()
		}
		time.Sleep(time.Second) // the server has the first thread's spec, or waits for a hello
		srv.Process.Signal(syscall.SIGINT)
		t0 := time.Now()
		err = srv.Wait()
		e := srv.Stderr.(*bytes.Buffer).String()
		if procExit(err) != 0 || time.Since(t0) > 5*time.Second {
			t.Errorf("gathering %v: serve exit %v after %v, want 0 at once:\n%s", gather, err, time.Since(t0), e)
		}
		if strings.Contains(e, "context canceled") || !strings.Contains(e, "served 0 tests, 0 failed") {
			t.Errorf("gathering %v: serve said:\n%s", gather, e)
		}
	}
}
