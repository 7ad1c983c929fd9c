//go:build linux && cgo

package bench

import (
	"context"
	"errors"
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
	go func() { gathered <- gatherThreads(ctx, ln, nil, conns, specs, Local{}, exchange.DefaultLimits()) }()

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
	go func() { gathered <- gatherThreads(ctx, g.ln, nil, conns, g.specs, Local{}, exchange.DefaultLimits()) }()
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
	err := gatherThreads(ctx, ln, nil, conns, []exchange.TestSpec{spec, {}}, Local{}, exchange.DefaultLimits())
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
	err = gatherThreads(ctx, ln, nil, conns, []exchange.TestSpec{spec, {}}, Local{}, exchange.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "refused a client's test") || time.Since(began) > time.Second {
		t.Errorf("a test over the limits: %v after %v", err, time.Since(began))
	}
}

// TestGatherSameTest: each later connection of a test of several threads
// must ask for the first one's test, but for what is its own (its share
// of the QPs, its thread, its flow labels from its first QP on): one
// that asks for another is refused, and the gathering ends. Only the
// group and the number of threads were compared, so a connection with
// other iterations joined the test.
func TestGatherSameTest(t *testing.T) {
	g := newGathering(t, 3)
	g.spec.FlowLabels = []uint32{1, 2, 3}
	g.specs[0] = g.spec
	gathered := make(chan error, 1)
	go func() {
		gathered <- gatherThreads(g.ctx, g.ln, nil, g.conns, g.specs, Local{}, exchange.DefaultLimits())
	}()
	own := g.spec
	own.Thread, own.NumQPs, own.FlowLabels = 1, 2, []uint32{2, 3, 1}
	first := g.hello()
	if err := first.Send(g.ctx, own); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	other := g.spec
	other.Thread, other.Iterations = 2, 20
	last := g.hello()
	if err := last.Send(g.ctx, other); err != nil {
		t.Fatal(err)
	}
	want := "thread 2's connection asks for another test than thread 0's: Iterations 20, not 10"
	if err := <-gathered; err == nil || !strings.Contains(err.Error(), "refused a client's test: "+want) {
		t.Errorf("gathering: %v; want %q", err, want)
	}
	if _, err := last.Recv(g.ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the connection of another test was told %v", err)
	}
	if g.conns[1] == nil || g.specs[1].NumQPs != 2 || g.conns[2] != nil {
		t.Errorf("gathered %v: thread 1's own share should have joined, thread 2's other test not", g.conns)
	}
	if g.conns[1] != nil {
		g.conns[1].Close()
	}
}

// TestGatherAdmitsEach: each connection of a test of several threads is
// admitted as the first was: Local.Admit sees each, and refuses the test
// where it refuses one. Only the first went through Admit.
func TestGatherAdmitsEach(t *testing.T) {
	g := newGathering(t, 3)
	var seen []uint16
	l := Local{Admit: func(s exchange.TestSpec) error {
		seen = append(seen, s.Thread)
		if s.Thread == 2 {
			return errors.New("not thread 2")
		}
		return nil
	}}
	gathered := make(chan error, 1)
	go func() { gathered <- gatherThreads(g.ctx, g.ln, nil, g.conns, g.specs, l, exchange.DefaultLimits()) }()
	for i := range uint16(2) {
		c := g.hello()
		s := g.spec
		s.Thread = i + 1
		if err := c.Send(g.ctx, s); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-gathered; err == nil || !strings.Contains(err.Error(), "refused a client's test: not thread 2") {
		t.Errorf("gathering: %v; want thread 2 refused", err)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Errorf("Admit saw threads %v; want 1 and 2", seen)
	}
	if g.conns[1] != nil {
		g.conns[1].Close()
	}
}

// TestSameTest: what threadSpecs splits is each connection's own; all
// else is the test's.
func TestSameTest(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 64, Iterations: 10, TXDepth: 8,
		RXDepth: 2000, RXDepthDefault: true, NumQPs: 5, Threads: 2, Group: 9, FlowLabels: []uint32{7, 8}}
	specs, err := threadSpecs(spec, 9)
	if err != nil {
		t.Fatal(err)
	}
	specs[1].RXDepth = 1000 // a default depth, fitted to its share
	if err := sameTest(specs[0], specs[1]); err != nil {
		t.Errorf("threadSpecs' own split: %v", err)
	}
	for _, tc := range []struct {
		change func(*exchange.TestSpec)
		want   string
	}{
		{func(s *exchange.TestSpec) { s.Size = 128 }, "Size 128, not 64"},
		{func(s *exchange.TestSpec) { s.Bidirectional = true }, "Bidirectional true, not false"},
		{func(s *exchange.TestSpec) { s.RXDepthDefault = false }, "RXDepth 1000, not 2000"}, // asked for, not a default
		{func(s *exchange.TestSpec) { s.FlowLabels = []uint32{7, 9} }, "FlowLabels [7 9], not [7 8]"},
		{func(s *exchange.TestSpec) { s.Test = exchange.WriteBW }, "Test "},
	} {
		s := specs[1]
		tc.change(&s)
		if err := sameTest(specs[0], s); err == nil || !strings.Contains(err.Error(), "thread 1's connection asks for another test than thread 0's: "+tc.want) {
			t.Errorf("%v; want %q", err, tc.want)
		}
	}
}
