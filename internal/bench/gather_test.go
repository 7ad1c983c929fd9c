//go:build linux && cgo

package bench

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// gathering is what a gatherThreads test starts from: a listener, the
// spec of a test of threads threads (group 5), thread 0's connection,
// taken already, and hello, which connects as a client and says hello.
type gathering struct {
	ctx   context.Context
	ln    net.Listener
	spec  exchange.TestSpec
	conns []*exchange.Conn
	specs []exchange.TestSpec
	hello func() *exchange.Conn
}

func newGathering(t *testing.T, threads int) *gathering {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	g := &gathering{ctx: ctx, ln: ln,
		spec: exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10, TXDepth: 8,
			NumQPs: 1, Threads: uint16(threads), Group: 5},
		conns: make([]*exchange.Conn, threads), specs: make([]exchange.TestSpec, threads)}
	first, _ := net.Pipe() // thread 0's, which the server has read already
	t.Cleanup(func() { first.Close() })
	g.conns[0], g.specs[0] = exchange.NewConn(first), g.spec
	g.hello = func() *exchange.Conn {
		t.Helper()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c := exchange.NewConn(nc)
		t.Cleanup(func() { c.Close() })
		if _, err := exchange.Handshake(ctx, c, "test"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	return g
}

// TestGatherStray: a server gathering a test's connections greets each
// on its own, so that a connection that says nothing (a port scanner,
// nc), come before the test's others, holds up none of them: the test's
// are in at once, another client's is told the server is busy, and the
// silent one is dropped. The listener is as it was, no deadline left.
// Each connection was greeted in turn on the wait's one deadline, so the
// silent one held the others up until the whole wait was over.
func TestGatherStray(t *testing.T) {
	defer func(old time.Duration) { groupWait = old }(groupWait)
	groupWait = 5 * time.Second
	g := newGathering(t, 3)
	ctx, ln, conns, specs := g.ctx, g.ln, g.conns, g.specs
	// ask connects as a client and asks for the test as thread i of group.
	ask := func(group uint64, i uint16) *exchange.Conn {
		c := g.hello()
		s := g.spec
		s.Group, s.Thread = group, i
		if err := c.Send(ctx, s); err != nil {
			t.Fatal(err)
		}
		return c
	}

	stray, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	gathered := make(chan error, 1)
	began := time.Now()
	go func() { gathered <- gatherThreads(ctx, ln, conns, specs, exchange.DefaultLimits()) }()

	other := ask(6, 1) // another client's test
	ask(5, 2)
	ask(5, 1)
	if err := <-gathered; err != nil {
		t.Fatalf("gathering: %v after %v", err, time.Since(began))
	}
	if took := time.Since(began); took > groupWait/2 {
		t.Errorf("gathering took %v of its %v", took, groupWait)
	}
	for i, want := range []uint16{0, 1, 2} {
		if conns[i] == nil || specs[i].Thread != want || specs[i].Group != 5 {
			t.Errorf("thread %d: %v, %+v", i, conns[i], specs[i])
		}
	}
	if _, err := other.Recv(ctx); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("the other client was told %v; want busy", err)
	}
	// The silent connection got the server's hello, then its end.
	stray.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(stray); err != nil {
		t.Errorf("the silent connection: %v; want it closed", err)
	}
	for _, c := range conns[1:] {
		c.Close()
	}

	// The listener is the caller's again, without a deadline.
	time.Sleep(100 * time.Millisecond)
	next, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if nc, err := ln.Accept(); err != nil {
		t.Errorf("Accept after gathering: %v", err)
	} else {
		nc.Close()
	}
}

// TestGatherBusyInFlight: another client whose greeting is under way
// when the test's last connection comes in is told the server is busy,
// as when connections were greeted in turn, not dropped: it has said
// hello, and sends its test only after the gathering is over.
func TestGatherBusyInFlight(t *testing.T) {
	g := newGathering(t, 2)
	ctx, conns, hello := g.ctx, g.conns, g.hello
	gathered := make(chan error, 1)
	go func() { gathered <- gatherThreads(ctx, g.ln, conns, g.specs, exchange.DefaultLimits()) }()
	other := hello()
	last := hello()
	s := g.spec
	s.Thread = 1
	if err := last.Send(ctx, s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the gathering is over
	s.Group, s.Thread = 6, 0
	if err := other.Send(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Recv(ctx); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("the other client was told %v; want busy", err)
	}
	if err := <-gathered; err != nil {
		t.Fatal(err)
	}
	if conns[1] == nil {
		t.Error("thread 1 was not gathered")
	} else {
		conns[1].Close()
	}
}

// TestGatherGivesUp: connections that do not come end the gathering at
// its wait, with the count that came; a test over the limits ends it at
// once.
func TestGatherGivesUp(t *testing.T) {
	defer func(old time.Duration) { groupWait = old }(groupWait)
	groupWait = 300 * time.Millisecond
	g := newGathering(t, 2)
	ctx, ln, spec, conns := g.ctx, g.ln, g.spec, g.conns
	err := gatherThreads(ctx, ln, conns, []exchange.TestSpec{spec, {}}, exchange.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "a test of 2 threads: 1 of its connections came in 300ms") {
		t.Errorf("nothing came: %v", err)
	}

	groupWait = 5 * time.Second
	go func() {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer nc.Close()
		c := exchange.NewConn(nc)
		if _, err := exchange.Handshake(ctx, c, "test"); err != nil {
			return
		}
		s := spec
		s.Thread, s.TXDepth = 1, 10000
		c.Send(ctx, s)
		c.Recv(ctx)
	}()
	conns[1] = nil
	began := time.Now()
	err = gatherThreads(ctx, ln, conns, []exchange.TestSpec{spec, {}}, exchange.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "refused a client's test") || time.Since(began) > time.Second {
		t.Errorf("a test over the limits: %v after %v", err, time.Since(began))
	}
}
