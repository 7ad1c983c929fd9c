//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// gathering is what a gatherThreads test starts from: the spec of a test
// of threads threads (group 5), thread 0's connection, taken already,
// and ask, which makes a connection the lobby took with it, asking for
// spec: the server's end, for more, and the client's.
type gathering struct {
	ctx   context.Context
	spec  exchange.TestSpec
	conns []*exchange.Conn
	specs []exchange.TestSpec
	more  []asked
	ask   func(spec exchange.TestSpec) *exchange.Conn
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
	g := &gathering{ctx: ctx,
		spec: exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10, TXDepth: 8,
			NumQPs: 1, Threads: uint16(threads), Group: 5},
		conns: make([]*exchange.Conn, threads), specs: make([]exchange.TestSpec, threads)}
	first, _ := net.Pipe() // thread 0's, which the server has read already
	t.Cleanup(func() { first.Close() })
	g.conns[0], g.specs[0] = exchange.NewConn(first), g.spec
	g.ask = func(spec exchange.TestSpec) *exchange.Conn {
		t.Helper()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c := exchange.NewConn(nc)
		t.Cleanup(func() { c.Close(); sc.Close() })
		g.more = append(g.more, asked{exchange.NewConn(sc), spec})
		return c
	}
	return g
}

// TestGatherOthers: of the connections the lobby took with a test's
// first, one that asks for a thread the test has already, or for
// another number of threads, is told the server is busy; the test's own
// are gathered.
func TestGatherOthers(t *testing.T) {
	g := newGathering(t, 3)
	s := g.spec
	s.Thread = 2
	g.ask(s)
	dup := g.ask(g.spec) // thread 0 again
	s.Threads, s.Thread = 4, 3
	other := g.ask(s)
	s = g.spec
	s.Thread = 1
	g.ask(s)
	if err := gatherThreads(g.ctx, g.conns, g.specs, g.more, Local{}, exchange.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	for i := range g.conns {
		if g.conns[i] == nil || g.specs[i].Thread != uint16(i) || g.specs[i].Group != 5 {
			t.Errorf("thread %d: %v, %+v", i, g.conns[i], g.specs[i])
		}
	}
	for _, c := range []*exchange.Conn{dup, other} {
		if _, err := c.Recv(g.ctx); err == nil || !strings.Contains(err.Error(), "busy") {
			t.Errorf("a connection the test has no place for was told %v; want busy", err)
		}
	}
}

// TestGatherGivesUp: a test whose connections did not all come fails
// with the count that came; one over the limits is refused.
func TestGatherGivesUp(t *testing.T) {
	g := newGathering(t, 2)
	err := gatherThreads(g.ctx, g.conns, g.specs, nil, Local{}, exchange.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "a test of 2 threads: 1 of its connections came in ") {
		t.Errorf("nothing came: %v", err)
	}
	s := g.spec
	s.Thread, s.TXDepth = 1, 10000
	c := g.ask(s)
	err = gatherThreads(g.ctx, g.conns, g.specs, g.more, Local{}, exchange.DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a test over the limits: %v", err)
	}
	if _, err := c.Recv(g.ctx); err == nil || !strings.Contains(err.Error(), "queue depth 10000") {
		t.Errorf("the connection over the limits was told %v", err)
	}
}

// TestGatherSameTest: each later connection of a test of several threads
// must ask for the first one's test, but for what is its own (its share
// of the QPs, its thread, its flow labels from its first QP on): one
// that asks for another is refused, and the gathering fails. Only the
// group and the number of threads were compared, so a connection with
// other iterations joined the test.
func TestGatherSameTest(t *testing.T) {
	g := newGathering(t, 3)
	g.spec.FlowLabels = []uint32{1, 2, 3}
	g.specs[0] = g.spec
	own := g.spec
	own.Thread, own.NumQPs, own.FlowLabels = 1, 2, []uint32{2, 3, 1}
	g.ask(own)
	other := g.spec
	other.Thread, other.Iterations = 2, 20
	last := g.ask(other)
	want := "thread 2's connection asks for another test than thread 0's: Iterations 20, not 10"
	if err := gatherThreads(g.ctx, g.conns, g.specs, g.more, Local{}, exchange.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "refused: "+want) {
		t.Errorf("gathering: %v; want %q", err, want)
	}
	if _, err := last.Recv(g.ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the connection of another test was told %v", err)
	}
	if g.conns[1] == nil || g.specs[1].NumQPs != 2 || g.conns[2] != nil {
		t.Errorf("gathered %v: thread 1's own share should have joined, thread 2's other test not", g.conns)
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
	for i := range uint16(2) {
		s := g.spec
		s.Thread = i + 1
		g.ask(s)
	}
	if err := gatherThreads(g.ctx, g.conns, g.specs, g.more, l, exchange.DefaultLimits()); err == nil || !strings.Contains(err.Error(), "refused: not thread 2") {
		t.Errorf("gathering: %v; want thread 2 refused", err)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Errorf("Admit saw threads %v; want 1 and 2", seen)
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

// TestGatherShares: -q 63 --threads 5, shared out as 13, 13, 13, 12 and
// 12 QPs, is gathered under a server's 64 QPs, each connection admitted
// as it comes; each was counted as its share times the threads, so
// thread 1's 13 QPs as 65, and the test was refused, though it has 63.
func TestGatherShares(t *testing.T) {
	g := newGathering(t, 5)
	g.spec.NumQPs = 63
	specs, err := threadSpecs(g.spec, g.spec.Group)
	if err != nil {
		t.Fatal(err)
	}
	g.specs[0] = specs[0]
	for _, s := range specs[1:] {
		g.ask(s)
	}
	if err := gatherThreads(g.ctx, g.conns, g.specs, g.more, Local{}, exchange.DefaultLimits()); err != nil {
		t.Fatalf("-q 63 --threads 5 under 64 QPs: %v", err)
	}
	for i, s := range g.specs {
		if g.conns[i] == nil || s.NumQPs != specs[i].NumQPs {
			t.Errorf("thread %d: %d QPs, connection %v; want %d QPs", i, s.NumQPs, g.conns[i], specs[i].NumQPs)
		}
	}
}

// TestServeThreadsOverTogether: a test whose connections each pass the
// limits alone, judged each by the least test it can be part of, but
// not together, is refused once all have come, and every connection is
// told why. Here a client of its own shares 3, 1 and 1 QPs of 64 KiB
// sends, thread 0 at RX depth 128, the others at 300: alone each counts
// at most 56.25 MiB (thread 1: three threads of one QP at depth 300),
// together they need 61.5 MiB, over the server's 60 MiB.
func TestServeThreadsOverTogether(t *testing.T) {
	g := newGathering(t, 3)
	lim := exchange.DefaultLimits()
	lim.MaxMemory = 60 << 20
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64 << 10, Iterations: 100,
		TXDepth: 128, RXDepth: 300, RXDepthDefault: true, CQModeration: 100, PostList: 1, RecvPostList: 1,
		NumQPs: 1, Threads: 3, Group: 5}
	var clients []*exchange.Conn
	for i := range uint16(3) {
		s := spec
		s.Thread = i
		if i == 0 {
			s.NumQPs, s.RXDepth = 3, 128
		}
		if err := admit(&s, Local{}, lim); err != nil {
			t.Fatalf("thread %d alone: %v", i, err)
		}
		clients = append(clients, g.ask(s))
	}
	want := "a test of 3 threads of 5 QPs in all needs 61.5 MiB of registered memory"
	_, err := serveThreads(g.ctx, g.more[0], g.more[1:], Local{}, lim, nil)
	if err == nil || !errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(err.Error(), "refused: test exceeds the server's limits: "+want) {
		t.Errorf("serveThreads: %v; want %q", err, want)
	}
	for i, c := range clients {
		if _, err := c.Recv(g.ctx); err == nil || !errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(err.Error(), want) {
			t.Errorf("thread %d's client was told %v; want %q", i, err, want)
		}
	}
}

// TestThreadSpecsWithinLimits: every connection threadSpecs makes of a
// test within a server's QPs or memory is admitted alone, and the test
// together; a test over them is refused together, and by one of its
// connections alone at least (the one whose least test is the test).
func TestThreadSpecsWithinLimits(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64 << 10, Iterations: 10, TXDepth: 128}
	const perQP = 8 << 20 // 64 KiB × 128
	for threads := uint16(2); threads <= 8; threads++ {
		for total := threads; total <= 70; total++ {
			spec.NumQPs, spec.Threads = total, threads
			specs, err := threadSpecs(spec, 9)
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []uint16{total - 1, total} {
				qps, mem := exchange.DefaultLimits(), exchange.DefaultLimits()
				qps.MaxQPs = limit
				mem.MaxQPs, mem.MaxMemory = 1024, uint64(limit)*perQP
				for _, lim := range []Limits{qps, mem} {
					alone := 0
					for _, s := range specs {
						if admissible(&s, Local{}, lim) != nil {
							alone++
						}
					}
					together := exchange.CheckGroupLimits(specs, lim)
					if over := total > limit; over != (together != nil) || over != (alone > 0) {
						t.Fatalf("-q %d --threads %d, %+v: refused together: %v, by %d connections alone", total, threads, lim, together, alone)
					}
				}
			}
		}
	}
}
