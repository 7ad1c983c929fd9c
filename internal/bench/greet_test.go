//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// serving is a server's loop (serve) on a loopback listener, without a
// device: a test it takes is refused by its limits or its Admit, or
// fails to open a device that is not there, at once.
type serving struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	addr   string
	ended  chan error // serve's return
	mu     sync.Mutex
	done   []error // what done got, in turn
	spec   exchange.TestSpec
}

func newServing(t *testing.T, once bool, admit func(exchange.TestSpec) error) *serving {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	s := &serving{t: t, ctx: ctx, cancel: cancel, addr: ln.Addr().String(), ended: make(chan error, 1),
		spec: exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10, TXDepth: 8, NumQPs: 1}}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	l := Local{Device: "gorperf-no-such-device", CMPort: 18515, Admit: admit}
	go func() {
		defer stop()
		s.ended <- serve(ctx, ln, l, exchange.DefaultLimits(), once, nil, func(r *Result, err error) {
			s.mu.Lock()
			s.done = append(s.done, err)
			s.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.ended:
		case <-time.After(5 * time.Second):
			t.Error("serve did not end within 5 s of its context")
		}
	})
	return s
}

// dial connects to the server, saying nothing yet.
func (s *serving) dial() net.Conn {
	s.t.Helper()
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { nc.Close() })
	return nc
}

// hello connects as a client and says hello, within wait.
func (s *serving) hello(wait time.Duration) (*exchange.Conn, error) {
	c := exchange.NewConn(s.dial())
	hctx, cancel := context.WithTimeout(s.ctx, wait)
	defer cancel()
	_, err := exchange.Handshake(hctx, c, "test")
	return c, err
}

// ask sends spec on c and returns what the server answered within wait.
func (s *serving) ask(c *exchange.Conn, spec exchange.TestSpec, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	defer cancel()
	if err := c.Send(ctx, spec); err != nil {
		return err
	}
	_, err := c.Recv(ctx)
	return err
}

// reports is what done got so far.
func (s *serving) reports() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.done...)
}

// overLimits is s's spec with more QPs than the default limits take.
func (s *serving) overLimits() exchange.TestSpec {
	sp := s.spec
	sp.NumQPs = exchange.DefaultLimits().MaxQPs + 1
	return sp
}

// TestServeGreetsPastSilent: a connection that says nothing (a TCP
// health check, nc), or only part of a frame, holds up no client that
// comes after it: the client is greeted and told at once that its test
// is over the server's limits. The server greeted one connection at a
// time, 10 s each (15 with part of a frame), and the client's own 10 s
// for the hello ran out first.
func TestServeGreetsPastSilent(t *testing.T) {
	s := newServing(t, false, nil)
	s.dial()
	s.dial().Write([]byte{0, 0}) // part of a frame's length
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	c, err := s.hello(time.Second)
	if err != nil {
		t.Fatalf("a client behind a silent connection: %v after %v", err, time.Since(began))
	}
	if err := s.ask(c, s.overLimits(), time.Second); !errors.Is(err, exchange.ErrOverLimit) && (err == nil || !strings.Contains(err.Error(), "QPs")) {
		t.Errorf("a test over the limits behind a silent connection: %v, want it refused", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("the client's refusal took %v", took)
	}
}

// TestServeGreetingsBounded: a flood of silent connections grows no
// goroutines without bound: past maxGreetings the oldest is dropped, at
// once, and said so; a client still gets its answer.
func TestServeGreetingsBounded(t *testing.T) {
	defer func(old int) { maxGreetings = old }(maxGreetings)
	maxGreetings = 2
	s := newServing(t, false, nil)
	oldest := s.dial()
	time.Sleep(50 * time.Millisecond)
	s.dial()
	s.dial()
	oldest.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadAll(oldest); err != nil { // the server's hello, then its end
		t.Errorf("the oldest silent connection: %v; want it closed", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(s.reports()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r := s.reports(); len(r) != 1 || !KeepsWaiting(r[0]) || !strings.Contains(r[0].Error(), "dropped unanswered: 2 newer connections were being greeted") {
		t.Errorf("done got %v; want the oldest dropped", r)
	}
	c, err := s.hello(time.Second)
	if err != nil {
		t.Fatalf("a client behind a flood: %v", err)
	}
	if err := s.ask(c, s.overLimits(), time.Second); err == nil || !strings.Contains(err.Error(), "QPs") {
		t.Errorf("a test over the limits behind a flood: %v, want it refused", err)
	}
}

// TestServeOneTestAtATime: the server still runs one test at a time. A
// client greeted while another's test is taken is told the server is
// busy when it asks for its own; one that connects during the test is
// greeted only after it (its connection waits in the backlog). A
// one-test server keeps waiting past connections that are not a test,
// ends after its one test, and closes the greetings still under way.
func TestServeOneTestAtATime(t *testing.T) {
	taken, release := make(chan exchange.TestSpec, 1), make(chan struct{})
	s := newServing(t, true, func(spec exchange.TestSpec) error {
		taken <- spec
		<-release
		return errors.New("not this one")
	})
	nc := s.dial()
	nc.Write([]byte("GET / HTTP/1.0\r\n\r\n")) // not a gorperf client
	b, err := s.hello(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.hello(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pending := s.dial() // says nothing
	time.Sleep(50 * time.Millisecond)
	if err := a.Send(s.ctx, s.spec); err != nil {
		t.Fatal(err)
	}
	select {
	case <-taken:
	case <-time.After(time.Second):
		t.Fatal("the test was not taken within 1 s")
	}
	if err := s.ask(b, s.spec, time.Second); err == nil || !strings.Contains(err.Error(), "this server is busy") {
		t.Errorf("a client greeted while the test was taken: %v; want busy", err)
	}
	c := exchange.NewConn(s.dial())
	hctx, cancel := context.WithTimeout(s.ctx, 300*time.Millisecond)
	_, err = exchange.Handshake(hctx, c, "test")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a client during the test: %v; want no hello", err)
	}
	if r := s.reports(); len(r) != 1 || !KeepsWaiting(r[0]) {
		t.Errorf("done got %v; want the connection that was no client", r)
	}
	close(release)
	select {
	case err := <-s.ended:
		if err == nil || !strings.Contains(err.Error(), "not this one") {
			t.Errorf("the one-test server ended with %v; want the refusal", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the one-test server did not end after its test")
	}
	s.ended <- nil // for the cleanup
	pending.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadAll(pending); err != nil {
		t.Errorf("a connection being greeted when the one-test server ended: %v; want it closed", err)
	}
	if err := s.ask(a, s.spec, time.Second); err == nil || !strings.Contains(err.Error(), "not this one") {
		t.Errorf("the client whose test was refused: %v", err)
	}
}

// TestHandshakeSpecLate: a connection that says nothing in the wait is
// told to have sent no hello, not "receiving: context deadline
// exceeded"; one that says hello and asks for no test, that too.
func TestHandshakeSpecLate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		hello bool
		want  string
	}{
		{false, "connection from 127.0.0.1:"},
		{true, "client 127.0.0.1:"},
	} {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		if tc.hello {
			go exchange.Handshake(ctx, exchange.NewConn(nc), "test")
		}
		_, err = handshakeSpec(ctx, exchange.NewConn(sc), 200*time.Millisecond)
		want := ": sent no gorperf hello within 200ms (not a gorperf client?)"
		if tc.hello {
			want = ": said hello but asked for no test within 200ms"
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), want) ||
			!KeepsWaiting(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("hello %v: %v; want %s...%s", tc.hello, err, tc.want, want)
		}
	}
}

// TestSendError: a client whose server closed the connection after its
// hello, before taking the test, is told so, with the server's address,
// not "sending Spec: write tcp ...: connection reset by peer".
func TestSendError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc.(*net.TCPConn).SetLinger(0) // a reset
	sc.Close()
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c := exchange.NewConn(nc)
	err = c.Send(ctx, exchange.TestSpec{})
	got := sendError(addr, err)
	if !strings.HasPrefix(got.Error(), "server at "+addr+": the server closed the connection after its hello, before taking the test") || !errors.Is(got, err) {
		t.Errorf("sendError(%v) = %v", err, got)
	}
	other := errors.New("sending Spec: i/o timeout")
	if got := sendError(addr, other); got.Error() != "server at "+addr+": sending the test: "+other.Error() {
		t.Errorf("sendError(%v) = %v", other, got)
	}
}

// TestServeHandsOffThreads: a test of several threads whose connections
// were all greeted at once gets them all: those whose greeting ends
// after the first's test is taken go to its gathering, not told the
// server is busy. (No device: each thread is then told it cannot open
// one.)
func TestServeHandsOffThreads(t *testing.T) {
	defer func(old time.Duration) { groupWait = old }(groupWait)
	groupWait = 2 * time.Second
	s := newServing(t, true, nil)
	spec := s.spec
	spec.NumQPs, spec.Threads, spec.Group = 2, 2, 7
	var conns [2]*exchange.Conn
	for i := range conns {
		c, err := s.hello(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for i, c := range conns {
		sp := spec
		sp.NumQPs, sp.Thread = 1, uint16(i)
		if err := c.Send(s.ctx, sp); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the first is taken
	}
	for i, c := range conns {
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		_, err := c.Recv(ctx)
		cancel()
		if err == nil || strings.Contains(err.Error(), "busy") || !strings.Contains(err.Error(), "device") {
			t.Errorf("thread %d: %v; want it in the test, told the device is not there", i, err)
		}
	}
}
