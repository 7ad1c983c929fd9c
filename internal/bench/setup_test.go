//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestPeerStoppedInSetUp: a peer that stops (SIGSTOP, a debugger) after
// its first keepalive but before it sends its Setup keeps its control
// connection open; the side waiting for the Setup gives up once the peer
// has been silent for the idle timeout, and says why, where it waited out
// the control protocol's 30 s. The stopped peer is played here by a
// connection that speaks the protocol up to the spec, sends one Alive
// and then nothing.
func TestPeerStoppedInSetUp(t *testing.T) {
	info := rdmatest.Device(t)
	const idle = time.Second
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: idle}
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
		TXDepth: 8, CQModeration: 4, NumQPs: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// silent says one Alive on c and then nothing, until the test ends.
	silent := func(c *exchange.Conn) {
		stop := c.KeepAlive(time.Hour)
		t.Cleanup(func() {
			c.Close()
			stop()
		})
	}
	check := func(t *testing.T, side string, err error, start time.Time) {
		t.Helper()
		var se *exchange.SilenceError
		if !errors.As(err, &se) {
			t.Errorf("%s of a peer stopped in its set-up: %v, want a SilenceError", side, err)
		}
		if d := time.Since(start); d > 10*idle {
			t.Errorf("%s gave up on the stopped peer after %v, with an idle timeout of %v", side, d, idle)
		}
	}

	t.Run("server", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c := exchange.NewConn(nc)
			if _, err := exchange.Handshake(ctx, c, "stopped server"); err != nil {
				nc.Close()
				return
			}
			if _, err := c.RecvSpec(ctx); err != nil {
				nc.Close()
				return
			}
			silent(c)
		}()
		start := time.Now()
		_, err = bench.Client(ctx, ln.Addr().String(), spec, l, nil)
		check(t, "the client", err, start)
	})

	t.Run("client", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close() // a one-test Serve hands it back open
		served := make(chan error, 1)
		go func() {
			bench.Serve(ctx, ln, l, exchange.DefaultLimits(), true, nil, func(_ *bench.Result, err error) { served <- err })
		}()
		c := dialServer(t, ctx, ln.Addr().String(), "stopped client")
		if err := c.Send(ctx, spec); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		silent(c)
		select {
		case err := <-served:
			check(t, "the server", err, start)
		case <-ctx.Done():
			t.Fatal("the server never gave up on the stopped client")
		}
	})
}
