//go:build linux && cgo

package bench_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestServeWaitsForSetUpOnDevice: a server (serve) that took a client's
// test waits for the client's set-up as long as the client sends Alives
// (a client that registers a large buffer), past the control protocol's
// step (cut to 2 s here), plain and with rdma_cm (-R), whose first step
// on RC is the client's Offer; once they stop, it gives up after its
// peer timeout (1 s), says that it waited for that client's set-up, and
// tells the client. A
// client that sends nothing at all once it asked for its test is given
// up after the step, said so. The server gave up after the step whatever
// came, and said only "receiving: context deadline exceeded". The
// clients are the protocol's: a Hello, a TestSpec, Alives, no Setup.
func TestServeWaitsForSetUpOnDevice(t *testing.T) {
	l, _ := serverOnDevice(t, time.Second)
	t.Cleanup(bench.SetControlTimeout(2 * time.Second))
	for _, tc := range []struct {
		name         string
		cm, alive    bool
		want, silent string
	}{
		{"alive", false, true, "waiting for the client's set-up: receiving: the peer has sent nothing for 1s", "1s"},
		{"alive rdma_cm", true, true, "waiting for the client's set-up: offer of path MTU: receiving: the peer has sent nothing for 1s", "1s"},
		{"mute", false, false, "the client sent no set-up, nor anything else, for 2s after its test was taken (stopped or hung?)", "2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 4)
			served := make(chan error, 1)
			sl := l
			sl.CMPort = 0 // the listener's port, each case its own
			go func() {
				served <- bench.Serve(ctx, ln, sl, exchange.DefaultLimits(), false, nil, func(_ *bench.Result, err error) { done <- err })
			}()
			defer func() {
				cancel()
				<-served
			}()
			c := dialServer(t, ctx, ln.Addr().String(), "test")
			defer c.Close()
			spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100,
				NumQPs: 1, TXDepth: 16, RdmaCM: tc.cm}
			if err := c.Send(ctx, spec); err != nil {
				t.Fatal(err)
			}
			if tc.alive {
				stop := c.KeepAlive(100 * time.Millisecond)
				select {
				case err := <-done:
					stop()
					t.Fatalf("the server gave up on a client that kept alive: %v", err)
				case <-time.After(3 * time.Second):
				}
				stop()
			}
			began := time.Now()
			select {
			case err := <-done:
				prefix := "client " + c.NetConn().LocalAddr().String() + ": "
				if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("the server, after %v: %v; want %s...%s", time.Since(began), err, prefix, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the server did not give up on its silent client within 5 s")
			}
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			defer rcancel()
			err = nil
			for n := 0; err == nil && n < 4; n++ { // the server's Setup first (-R on RC: nothing)
				_, err = c.Recv(rctx)
			}
			if told := "the server gave up on this client, which had sent nothing for " + tc.silent; err == nil || !strings.Contains(err.Error(), told) {
				t.Errorf("the client was told %v; want %q", err, told)
			}
		})
	}
}

// TestServeStoppedWaitingForSetUpOnDevice: a server stopped (its
// context's end: Ctrl-C) while it waits for a client's set-up, the
// client keeping alive, ends that wait at once, tells the client it was
// stopped before it ran the test, and Serve returns. The wait went on
// for the control protocol's step (30 s), and the client, whose test
// then began, was told the server was interrupted.
func TestServeStoppedWaitingForSetUpOnDevice(t *testing.T) {
	l, ln := serverOnDevice(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		served <- bench.Serve(sctx, ln, l, exchange.DefaultLimits(), false, nil, func(_ *bench.Result, err error) { done <- err })
	}()
	c := dialServer(t, ctx, ln.Addr().String(), "test")
	defer c.Close()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100, NumQPs: 1, TXDepth: 16}
	if err := c.Send(ctx, spec); err != nil {
		t.Fatal(err)
	}
	defer c.KeepAlive(100 * time.Millisecond)()
	if m, err := c.Recv(ctx); err != nil || m.Type() != exchange.TypeSetup { // the test taken, the server waits
		t.Fatalf("the server's first message: %v, %v; want its Setup", m, err)
	}
	stop()
	began := time.Now()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not end within 5 s of its stop")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("serve ended %v after its stop; want at once", took)
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	const want = "the server was stopped before it ran this test"
	if _, err := c.Recv(rctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the client was told %v; want %q", err, want)
	}
}
