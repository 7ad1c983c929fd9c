//go:build linux && cgo

package bench_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// strayListener hands out, as its second connection, stray: the server's
// end of a TCP connection whose client sends nothing (a port scanner,
// nc), so that it comes in among a test's thread connections, after the
// first.
type strayListener struct {
	*net.TCPListener
	stray   net.Conn
	accepts atomic.Int32
}

func (l *strayListener) Accept() (net.Conn, error) {
	if l.accepts.Add(1) == 2 {
		return l.stray, nil
	}
	return l.TCPListener.Accept()
}

// TestThreadsStrayConnection: a connection that says nothing, come in
// while the server gathers a test's threads, is dropped and the test
// runs. The server greeted each connection in turn on the gathering's
// one deadline, so the silent one held the test's others back until it
// gave up on them: "1 of its connections came in 3s".
func TestThreadsStrayConnection(t *testing.T) {
	info := rdmatest.Device(t)
	defer bench.SetGroupWait(3 * time.Second)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // a one-test Serve hands it back open
	side, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	silent, err := net.Dial("tcp", side.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	stray, err := side.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sl := &strayListener{TCPListener: ln.(*net.TCPListener), stray: stray}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}
	srv := serveOne(ctx, sl, l)
	const iters = 100
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 512, Iterations: iters, TXDepth: 16,
		CQModeration: 4, NumQPs: 2, Threads: 2}
	began := time.Now()
	cr, cerr := bench.Client(ctx, ln.Addr().String(), spec, l, nil)
	so := <-srv
	if cerr != nil || so.err != nil {
		t.Fatalf("client: %v; server: %v (after %v)", cerr, so.err, time.Since(began))
	}
	if got := cr.Sizes[0].BW.Iterations; got != iters*2 {
		t.Errorf("%d messages, want %d", got, iters*2)
	}
	if n := sl.accepts.Load(); n < 3 {
		t.Errorf("the server accepted %d connections; the stray was not among the test's", n)
	}
	// The silent connection got the server's hello, then its end.
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(silent); err != nil {
		t.Errorf("the silent connection: %v; want it closed", err)
	}
}
