//go:build linux && cgo

package bench_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestServeClientPastSilentOnDevice: a connection that says nothing (a
// TCP health check, nc), and one that sent part of a frame, hold up no
// client that comes after them: the client's test runs at once, and the
// one-test server ends after it. The server greeted one connection at a
// time, 10 s each (15 with part of a frame), and the client gave up
// after its own 10 s for the hello: "it may be busy with another
// client".
func TestServeClientPastSilentOnDevice(t *testing.T) {
	l, ln := serverOnDevice(t, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := serveOne(ctx, ln, l)
	for _, say := range [][]byte{nil, {0, 0}} {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write(say)
	}
	time.Sleep(100 * time.Millisecond)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100, NumQPs: 1, TXDepth: 16}
	began := time.Now()
	r, err := bench.Client(ctx, ln.Addr().String(), spec, l, nil)
	took := time.Since(began)
	if err != nil || len(r.Sizes) != 1 || r.Sizes[0].BW.Iterations != 100 {
		t.Fatalf("a client behind silent connections: %v after %v", err, took)
	}
	// "At once", for a VM under TCG on a loaded host; the defect took
	// over 10 s.
	if took > 8*time.Second {
		t.Errorf("the client's test took %v", took)
	}
	select {
	case o := <-srv:
		if o.err != nil || o.r == nil {
			t.Errorf("server: %v", o.err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the one-test server did not end after its test")
	}
}

// TestServeQueuesClientsOnDevice: two write_bw clients started together
// against a server that serves one test after another (serve, not once)
// both run their tests, the second after the first: greeted together,
// the second waits its turn in the server's queue. Its wait (the first
// test's 2 s) outlasts the control protocol's step (cut to 500 ms here)
// and its peer timeout (1 s): the server's Alives keep it waiting. So
// with rdma_cm (-R), whose first step is the client's Offer (a barrier
// before protocol version 14). The server told the
// second client it was busy. The two cases, each two tests of 2 s one
// after the other, run side by side (t.Parallel).
func TestServeQueuesClientsOnDevice(t *testing.T) {
	info := rdmatest.Device(t)
	t.Cleanup(bench.SetControlTimeout(500 * time.Millisecond))
	for _, cm := range []bool{false, true} {
		name := "write_bw"
		if cm {
			name += " rdma_cm"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: time.Second}
			cl := l
			if cm {
				cl.CMHost = gidHost(t)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 2,
				NumQPs: 1, TXDepth: 16, CQModeration: 4, RdmaCM: cm}
			type outcome struct {
				r    *bench.Result
				err  error
				took time.Duration
			}
			outs := make([]outcome, 2)
			var wg sync.WaitGroup
			began := time.Now()
			for i := range outs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := bench.Client(ctx, ln.Addr().String(), spec, cl, nil)
					outs[i] = outcome{r, err, time.Since(began)}
				}()
			}
			// Both connect, and wait in the backlog, before the server
			// greets them, together.
			time.Sleep(500 * time.Millisecond)
			var mu sync.Mutex
			var served []error
			srv := make(chan error, 1)
			sctx, stop := context.WithCancel(ctx)
			go func() {
				srv <- bench.Serve(sctx, ln, l, exchange.DefaultLimits(), false, nil, func(r *bench.Result, err error) {
					mu.Lock()
					served = append(served, err)
					mu.Unlock()
				})
			}()
			wg.Wait()
			stop()
			if err := <-srv; err != nil {
				t.Errorf("serve: %v", err)
			}
			for i, o := range outs {
				if o.err != nil || o.r == nil || len(o.r.Sizes) != 1 || o.r.Sizes[0].BW.Iterations == 0 {
					t.Errorf("client %d: %v after %v", i, o.err, o.took)
				} else {
					t.Logf("client %d: %d messages, done after %v", i, o.r.Sizes[0].BW.Iterations, o.took)
				}
			}
			if last := max(outs[0].took, outs[1].took); last < 4*time.Second {
				t.Errorf("the clients were done after %v and %v; want one after the other, 2 s each", outs[0].took, outs[1].took)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(served) != 2 || served[0] != nil || served[1] != nil {
				t.Errorf("the server's tests: %v; want 2 run", served)
			}
		})
	}
}

// TestClientServerKilledOnDevice: a client whose server closes the
// control connection after taking its test and telling it to wait its
// turn, before the test began (the server killed: the kernel closes its
// sockets, or resets them), says so, plain and with rdma_cm, whose
// first step is the swap of Offers (a barrier before protocol version
// 14), where it said "receiving: EOF" or "receiving:
// read tcp ...: connection reset by peer".
func TestClientServerKilledOnDevice(t *testing.T) {
	info := rdmatest.Device(t)
	for _, tc := range []struct {
		name      string
		cm, reset bool
	}{{"write_bw", false, false}, {"write_bw reset", false, true}, {"write_bw rdma_cm", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}
			if tc.cm {
				l.CMHost = gidHost(t)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			served := make(chan error, 1)
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					served <- err
					return
				}
				c := exchange.NewConn(nc)
				defer c.Close()
				if _, err := exchange.Handshake(ctx, c, bench.Tool); err != nil {
					served <- err
					return
				}
				if _, err := c.RecvSpec(ctx); err != nil {
					served <- err
					return
				}
				if err := c.Send(ctx, exchange.Queued{Ahead: 1}); err != nil {
					served <- err
					return
				}
				time.Sleep(500 * time.Millisecond) // the client waits its turn
				if tc.reset {
					nc.(*net.TCPConn).SetLinger(0)
				}
				served <- nil
			}()
			spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100,
				NumQPs: 1, TXDepth: 16, RdmaCM: tc.cm}
			began := time.Now()
			_, err = bench.Client(ctx, ln.Addr().String(), spec, l, nil)
			if e := <-served; e != nil {
				t.Fatalf("the server: %v", e)
			}
			const want = "the server closed the connection before the test began (it exited or was killed)"
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("a client whose server closed before the test: %v; want %q", err, want)
			}
			if took := time.Since(began); took > 10*time.Second {
				t.Errorf("the client failed after %v; want it at once", took)
			}
		})
	}
}
