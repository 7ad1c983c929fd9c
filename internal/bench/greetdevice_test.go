//go:build linux && cgo

package bench_test

import (
	"context"
	"net"
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
	info := rdmatest.Device(t)
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	if took > 5*time.Second {
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
