//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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
	return newServingLocal(t, once, Local{Admit: admit})
}

// newServingLocal is newServing with the server's side l (its Admit, its
// IdleTimeout), on no device.
func newServingLocal(t *testing.T, once bool, l Local) *serving {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newServingOn(t, ln, once, l)
}

// newServingOn is newServingLocal on the listener ln.
func newServingOn(t *testing.T, ln net.Listener, once bool, l Local) *serving {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	s := &serving{t: t, ctx: ctx, cancel: cancel, addr: ln.Addr().String(), ended: make(chan error, 1),
		spec: exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10, TXDepth: 8, NumQPs: 1}}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	l.Device, l.CMPort = "gorperf-no-such-device", 18515
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
	c, err := s.hello(5 * time.Second)
	if err != nil {
		t.Fatalf("a client behind a silent connection: %v after %v", err, time.Since(began))
	}
	if err := s.ask(c, s.overLimits(), 5*time.Second); !errors.Is(err, exchange.ErrOverLimit) && (err == nil || !strings.Contains(err.Error(), "QPs")) {
		t.Errorf("a test over the limits behind a silent connection: %v, want it refused", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the client's refusal took %v, with a helloWait of %v", took, helloWait)
	}
}

// TestServeGreetingsBounded: a flood of silent connections grows no
// goroutines without bound: past maxGreetings, the next connection waits
// for a greeting's place, which it gets as a greeting ends (here at a
// helloWait of 500 ms) or, once the oldest greeting has gone on for
// greetingOld, by closing that one, which is reported so; a client still
// gets its answer. A connection waited in the backlog until a greeting
// ended, 10 s, and its client, whose own wait was 10 s, failed.
func TestServeGreetingsBounded(t *testing.T) {
	restoreAtEnd(t, &maxGreetings)
	restoreAtEnd(t, &helloWait)
	restoreAtEnd(t, &greetingOld)
	for _, tc := range []struct {
		name      string
		wait, old time.Duration
		closed    bool // the oldest is closed for the client, not ended by its wait
	}{
		{"greeting ends", 500 * time.Millisecond, 5 * time.Second, false},
		{"oldest closed", 5 * time.Second, 300 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maxGreetings, helloWait, greetingOld = 2, tc.wait, tc.old
			s := newServing(t, false, nil)
			began := time.Now()
			oldest := s.dial()
			time.Sleep(50 * time.Millisecond)
			second := s.dial()
			c, err := s.hello(3 * time.Second) // waits for a greeting's place
			if err != nil {
				t.Fatalf("a client behind a flood: %v", err)
			}
			if took, least := time.Since(began), min(tc.wait, tc.old)-50*time.Millisecond; took < least || took > least+time.Second {
				t.Errorf("a third connection was greeted after %v, with 2 greeted at most; want after about %v", took, least)
			}
			oldest.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.ReadAll(oldest); err != nil { // the server's hello, then its end
				t.Errorf("the oldest silent connection: %v; want it closed", err)
			}
			if err := s.ask(c, s.overLimits(), 5*time.Second); err == nil || !strings.Contains(err.Error(), "QPs") {
				t.Errorf("a test over the limits behind a flood: %v, want it refused", err)
			}
			if tc.closed {
				second.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := io.ReadAll(second); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("the second silent connection, younger than greetingOld when the client came: %v; want it greeted on", err)
				}
			}
			const closed = "asked for no test in 3"
			want := closed
			if !tc.closed {
				want = "sent no gorperf hello in 5"
			}
			if got := s.reported(want, 1, 2*time.Second); len(got) == 0 || !KeepsWaiting(got[0]) {
				t.Errorf("done got %v; want the oldest reported: %q", s.reports(), want)
			}
			for _, r := range s.reports() {
				if !KeepsWaiting(r) && !strings.Contains(r.Error(), "QPs") || strings.Contains(r.Error(), "dropped") ||
					!tc.closed && strings.Contains(r.Error(), closed) {
					t.Errorf("done got %v", r)
				}
			}
		})
	}
}

// TestServeOneTestAtATime: a one-test server runs one test. It keeps
// waiting past connections that are not a test; once it has taken its
// test, a client greeted before, that asks for its own, and one that
// connects during the test, are told at once that it runs one test (the
// first waited out the whole test to be told so, the second got no
// hello); it ends after its one test and closes the greetings still
// under way.
func TestServeOneTestAtATime(t *testing.T) {
	taken, release := make(chan exchange.TestSpec, 1), make(chan struct{})
	s := newServing(t, true, func(spec exchange.TestSpec) error {
		taken <- spec
		<-release
		return errors.New("not this one")
	})
	nc := s.dial()
	nc.Write([]byte("GET / HTTP/1.0\r\n\r\n")) // not a gorperf client
	b, err := s.hello(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.hello(5 * time.Second)
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
	case <-time.After(5 * time.Second):
		t.Fatal("the test was not taken within 5 s")
	}
	// The test is held until release: an answer within 5 s is at once.
	const want = "this server runs one test, and has taken another client's"
	if err := s.ask(b, s.spec, 5*time.Second); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a client greeted before the test was taken: %v; want %q at once", err, want)
	}
	c, err := s.hello(5 * time.Second)
	if err != nil {
		t.Fatalf("a client during the test: %v; want greeted", err)
	}
	if err := s.ask(c, s.spec, 5*time.Second); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a client during the test: %v; want %q at once", err, want)
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
	case <-time.After(5 * time.Second):
		t.Fatal("the one-test server did not end within 5 s of its test")
	}
	s.ended <- nil // for the cleanup
	pending.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(pending); err != nil {
		t.Errorf("a connection being greeted when the one-test server ended: %v; want it closed", err)
	}
	if err := s.ask(a, s.spec, 5*time.Second); err == nil || !strings.Contains(err.Error(), "not this one") {
		t.Errorf("the client whose test was refused: %v", err)
	}
}

// TestHandshakeSpecLate: a connection that says nothing in the wait is
// told to have sent no hello, not "receiving: context deadline
// exceeded"; one that says hello and asks for no test, that too. Either
// says how long since the connection was accepted.
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
			// Sent before the server's wait starts, it waits in the
			// socket: only the test's ask can come late.
			if err := exchange.NewConn(nc).Send(ctx, exchange.NewHello("test")); err != nil {
				t.Fatal(err)
			}
		}
		// Accepted 300 ms ago (it waited for a greeting's place), and
		// given 200 ms: the report says the 500 ms since.
		_, err = handshakeSpec(ctx, exchange.NewConn(sc), time.Now().Add(-300*time.Millisecond), 200*time.Millisecond)
		want := regexp.MustCompile(`: sent no gorperf hello in 5\d\dms \(not a gorperf client\?\)$`)
		if tc.hello {
			want = regexp.MustCompile(`: said hello but asked for no test in 5\d\dms$`)
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !want.MatchString(err.Error()) ||
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
	restoreAtEnd(t, &groupWait)
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

// askAll has n clients say hello and ask for spec(i) at once, each
// waiting wait for the server's answer, and returns each one's.
func (s *serving) askAll(n int, spec func(i int) exchange.TestSpec, wait time.Duration) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", s.addr)
			if err != nil {
				errs[i] = err
				return
			}
			defer nc.Close()
			c := exchange.NewConn(nc)
			hctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			defer cancel()
			if _, err := exchange.Handshake(hctx, c, Tool); err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.ask(c, spec(i), wait)
		}()
	}
	wg.Wait()
	return errs
}

// TestServeManyThreads: a test of more threads than maxGreetings, whose
// connections all come at once, as clientThreads dials them, gets every
// one: past the bound they wait in the backlog, and the lobby takes
// them from there, none dropped. (No device: each thread is then told it
// cannot open one.) The server dropped the oldest greetings past 32,
// often the test's own connections, some of which had asked for it: 64
// threads failed about half the time, 16 with a bound of 4 always.
func TestServeManyThreads(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	restoreAtEnd(t, &maxGreetings)
	groupWait = 3 * time.Second
	for _, tc := range []struct{ threads, most int }{{64, 32}, {16, 4}} {
		maxGreetings = tc.most
		s := newServing(t, true, nil)
		spec := s.spec
		n := tc.threads
		spec.NumQPs, spec.Threads, spec.Group = uint16(n), uint16(n), 7
		errs := s.askAll(n, func(i int) exchange.TestSpec {
			sp := spec
			sp.NumQPs, sp.Thread = 1, uint16(i)
			return sp
		}, 6*time.Second)
		bad := 0
		for i, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "device") {
				if bad++; bad < 4 {
					t.Errorf("%d threads, %d greeted at most: thread %d: %v; want it in the test, told the device is not there", n, tc.most, i, err)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d threads, %d greeted at most: %d not in the test", n, tc.most, bad)
		}
		s.cancel()
	}
}

// TestServeBackToBack: two clients that ask for their tests at once of
// a server (serve, not once) both get them, one after the other: the
// second waits for the first's test (300 ms here), not told the server
// is busy. (No device: each is then told it cannot open one.) The
// server turned the second away.
func TestServeBackToBack(t *testing.T) {
	var first sync.Once
	s := newServing(t, false, func(spec exchange.TestSpec) error {
		first.Do(func() { time.Sleep(300 * time.Millisecond) })
		return nil
	})
	for i, err := range s.askAll(2, func(int) exchange.TestSpec { return s.spec }, 5*time.Second) {
		if err == nil || !strings.Contains(err.Error(), "device") {
			t.Errorf("client %d: %v; want its test run, told the device is not there", i, err)
		}
	}
}

// TestServeQueuesClients: clients greeted together, that ask for tests
// while another's runs, wait their turns, first come first served, told
// their places meanwhile, and each test is taken after the one before; the clients
// still waiting when the server is stopped are told so at once. (The
// server told them it was busy.)
func TestServeQueuesClients(t *testing.T) {
	taken, release := make(chan uint32, 8), make(chan struct{}, 8)
	s := newServing(t, false, func(spec exchange.TestSpec) error {
		taken <- spec.Size
		<-release
		return fmt.Errorf("not test %d", spec.Size)
	})
	t.Cleanup(func() { close(release) })
	// The clients are greeted before the first test is taken (the
	// server before the lobby left a connection in the backlog during a
	// test: TestServeGreetsDuringTest).
	var greeted [5]*exchange.Conn
	for i := 1; i < len(greeted); i++ {
		c, err := s.hello(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		greeted[i] = c
	}
	ask := func(size uint32) *exchange.Conn {
		t.Helper()
		c := greeted[size]
		sp := s.spec
		sp.Size = size
		if err := c.Send(s.ctx, sp); err != nil {
			t.Fatal(err)
		}
		if size > 1 {
			var told atomic.Bool
			c.OnQueued(func(exchange.Queued) { told.Store(true) })
			s.inLine(c, told.Load)
		}
		return c
	}
	expect := func(want uint32) {
		t.Helper()
		select {
		case got := <-taken:
			if got != want {
				t.Errorf("took test %d; want %d", got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("test %d not taken within 2 s", want)
		}
	}
	answer := func(c *exchange.Conn, want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := c.Recv(ctx); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("answer %v; want %q", err, want)
		}
	}
	a := ask(1)
	expect(1)
	b := ask(2)
	c := ask(3)
	d := ask(4)
	s.sentQueued(b, "a client waiting its turn")
	select {
	case got := <-taken:
		t.Fatalf("test %d taken while test 1 ran", got)
	default:
	}
	release <- struct{}{}
	answer(a, "not test 1")
	expect(2)
	release <- struct{}{}
	answer(b, "not test 2")
	expect(3)
	began := time.Now()
	s.cancel() // test 3 is refused as the server stops; 4 never runs
	release <- struct{}{}
	answer(c, "") // refused or closed: the server is stopping
	answer(d, "the server was stopped before it ran this test")
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("the waiting client was told after %v", took)
	}
}

// TestServeQueuesThreads: a test of several threads whose connections
// all ask while another client's test runs waits its turn whole, and is
// gathered from the queue when it comes; a client that asks while a
// test of several threads gathers its connections waits too, and is
// served after it. (No device: each is then told it cannot open one.)
// The server told both it was busy.
func TestServeQueuesThreads(t *testing.T) {
	restoreAtEnd(t, &groupWait)
	groupWait = 2 * time.Second
	var first sync.Once
	s := newServing(t, false, func(spec exchange.TestSpec) error {
		first.Do(func() { time.Sleep(300 * time.Millisecond) })
		return nil
	})
	a, err := s.hello(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Send(s.ctx, s.spec); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a's test is taken, and held
	spec := s.spec
	spec.NumQPs, spec.Threads, spec.Group = 3, 3, 9
	var wg sync.WaitGroup
	var threadErrs []error
	wg.Add(1)
	go func() {
		defer wg.Done()
		threadErrs = s.askAll(3, func(i int) exchange.TestSpec {
			sp := spec
			sp.NumQPs, sp.Thread = 1, uint16(i)
			if i == 2 {
				// the last thread comes while the test gathers, after
				// a client of its own
				time.Sleep(600 * time.Millisecond)
			}
			return sp
		}, 5*time.Second)
	}()
	time.Sleep(450 * time.Millisecond) // a's test ended, the threads' gathers
	other := s.askAll(1, func(int) exchange.TestSpec { return s.spec }, 5*time.Second)
	wg.Wait()
	for i, err := range append(threadErrs, other...) {
		if err == nil || !strings.Contains(err.Error(), "device") {
			t.Errorf("client %d: %v; want its test run, told the device is not there", i, err)
		}
	}
	if err := s.ask(a, s.spec, time.Second); err == nil {
		t.Errorf("the first client: no answer")
	}
}

// TestHandshakeSpecGaveUp: a client whose hello waited in the socket and
// that closed before it asked for a test (it gave up waiting for a
// stopped server's hello) is said to have, where serve logged "client
// ADDR: receiving: EOF".
func TestHandshakeSpecGaveUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := exchange.NewConn(nc).Send(ctx, exchange.NewHello("test")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	_, err = handshakeSpec(ctx, exchange.NewConn(sc), time.Now(), 5*time.Second)
	const want = "closed its connection before it asked for a test (it gave up waiting for this server's hello, or exited)"
	if err == nil || !strings.HasPrefix(err.Error(), "client 127.0.0.1:") || !strings.Contains(err.Error(), want) || !KeepsWaiting(err) {
		t.Errorf("%v; want client ADDR: %s", err, want)
	}
}
