//go:build linux && cgo

package bench

import (
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestServeGreetsPastIdleFlood: 40 connections that say nothing (a port
// scanner, health checks holding their sockets), more than the 32 that
// a server greeted at once, hold up no client that comes after them: it
// is greeted at once, and told that its test is over the server's
// limits. It waited in the listener's backlog for a greeting to end,
// 10 s, as long as its own wait for the server's hello, and failed "no
// hello from the server within 10 s".
func TestServeGreetsPastIdleFlood(t *testing.T) {
	s := newServing(t, false, nil)
	for range 40 {
		s.dial()
	}
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	c, err := s.hello(3 * time.Second)
	if err != nil {
		t.Fatalf("a client behind 40 idle connections: %v after %v", err, time.Since(began))
	}
	if err := s.ask(c, s.overLimits(), 3*time.Second); err == nil || !strings.Contains(err.Error(), "QPs") {
		t.Errorf("a test over the limits behind 40 idle connections: %v, want it refused", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the client's refusal took %v behind 40 idle connections; want it at once", took)
	}
}

// TestServeGreetsPastFlood: connections that say nothing, more than the
// server greets at once (maxGreetings, here 4) and coming on while a
// client comes, hold it up only until the oldest has been greeted for
// greetingOld (here 200 ms): those are closed, oldest first, each
// reported, to greet the newer ones. The client waited in the backlog
// behind them, each greeted for helloWait (here 3 s), in turn.
func TestServeGreetsPastFlood(t *testing.T) {
	restoreAtEnd(t, &maxGreetings)
	restoreAtEnd(t, &helloWait)
	restoreAtEnd(t, &greetingOld)
	maxGreetings, helloWait, greetingOld = 4, 3*time.Second, 200*time.Millisecond
	s := newServing(t, false, nil)
	var flood []net.Conn
	for range 12 {
		flood = append(flood, s.dial())
	}
	began := time.Now()
	c, err := s.hello(2 * time.Second)
	if err != nil {
		t.Fatalf("a client behind 12 idle connections, 4 greeted at once: %v after %v", err, time.Since(began))
	}
	if err := s.ask(c, s.overLimits(), 2*time.Second); err == nil || !strings.Contains(err.Error(), "QPs") {
		t.Errorf("a test over the limits behind a flood: %v, want it refused", err)
	}
	if took := time.Since(began); took > 1500*time.Millisecond {
		t.Errorf("the client's refusal took %v; want it within about greetingOld for each 4 of the flood", took)
	}
	closed := 0
	for _, nc := range flood[:9] { // those before the last 4 greeted, with the client
		nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := io.ReadAll(nc); err == nil {
			closed++
		}
	}
	if closed != 9 {
		t.Errorf("%d of the 9 oldest idle connections closed; want all, to greet the newer ones", closed)
	}
	got := s.reported("and was closed to greet a newer one (4 connections were being greeted at once", 9, time.Second)
	if len(got) != 9 {
		t.Errorf("done got %v; want the 9 connections closed, reported", s.reports())
	}
	for _, r := range got {
		if !KeepsWaiting(r) || !regexp.MustCompile(`^connection from 127\.0\.0\.1:\d+: asked for no test in \d+ms`).MatchString(r.Error()) {
			t.Errorf("done got %v; want a connection closed, how long after it came", r)
		}
	}
}

// TestServeReportsHelloWaited: a connection that says nothing, held
// back from its greeting (maxGreetings, here 1) by another's, is
// reported as having sent no hello in as long as it was open, the wait
// for its greeting's place with its helloWait (here 500 ms each), not
// "within 500ms" when it had been open a second. The two are dialled
// back to back, so that the second waits about all of the first's
// helloWait: a report of its own helloWait would be some 500 ms short of
// the time it was open, where the bound allows 350 ms (for the server's
// accept, and the close's way to the client, on a stalled VM; 150 ms,
// with a sleep of 50 ms between the dials and a helloWait of 300 ms,
// left too little of either).
func TestServeReportsHelloWaited(t *testing.T) {
	restoreAtEnd(t, &maxGreetings)
	restoreAtEnd(t, &helloWait)
	maxGreetings, helloWait = 1, 500*time.Millisecond
	s := newServing(t, false, nil)
	s.dial()
	began := time.Now()
	second := s.dial()
	second.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadAll(second); err != nil {
		t.Fatalf("the second idle connection: %v; want it closed", err)
	}
	open := time.Since(began)
	got := s.reported("sent no gorperf hello", 2, 2*time.Second)
	var said []string
	for _, r := range got {
		if strings.Contains(r.Error(), second.LocalAddr().String()+":") {
			said = append(said, r.Error())
		}
	}
	if len(said) != 1 {
		t.Fatalf("done got %v; want the second connection reported", s.reports())
	}
	// waited rounds to the millisecond below a second, to the tenth of
	// one (50 ms either way) from a second up.
	m := regexp.MustCompile(` in (\d+ms|\d+\.?\d*s) `).FindStringSubmatch(said[0])
	if m == nil {
		t.Fatalf("the second idle connection was reported %q after %v open; want how long it waited", said[0], open)
	}
	d, _ := time.ParseDuration(m[1])
	if d < open-350*time.Millisecond || d > open+60*time.Millisecond {
		t.Errorf("the second idle connection was reported %q after %v open; want that time", said[0], open)
	}
	t.Logf("reported waiting %v, %v open", d, open)
}

// TestServeOutOfFiles: a server whose Accept fails for a lack of file
// descriptors (EMFILE, as a flood of connections can make it) goes on,
// reports it once, and greets the client waiting in its backlog once
// Accept works again. It ended with the Accept's error.
func TestServeOutOfFiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingListener{Listener: ln}
	fl.fails.Store(3)
	s := newServingOn(t, fl, false, Local{})
	c, err := s.hello(3 * time.Second)
	if err != nil {
		t.Fatalf("a client of a server out of file descriptors a moment: %v", err)
	}
	if err := s.ask(c, s.overLimits(), 2*time.Second); err == nil || !strings.Contains(err.Error(), "QPs") {
		t.Errorf("a test over the limits: %v, want it refused", err)
	}
	got := s.reported("accepting a connection: ", 1, time.Second)
	if len(got) != 1 || !KeepsWaiting(got[0]) || !errors.Is(got[0], syscall.EMFILE) {
		t.Errorf("done got %v; want the lack of file descriptors reported once", s.reports())
	}
	select {
	case err := <-s.ended:
		t.Errorf("serve ended: %v", err)
	default:
	}
}

// failingListener is a listener whose next fails Accepts fail with
// EMFILE.
type failingListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestServeNamesClients: a server that serves many clients names the
// client of each test that failed in the error it reports, once: a test
// refused as it asks, and one that fails as it runs (here on the device,
// not there). It named only a client that closed its connection.
func TestServeNamesClients(t *testing.T) {
	s := newServing(t, false, nil)
	for _, over := range []bool{true, false} {
		c := s.greet()
		sp := s.spec
		if over {
			sp = s.overLimits()
		}
		if err := s.ask(c, sp, 3*time.Second); err == nil {
			t.Fatalf("over the limits %v: the test did not fail", over)
		}
		addr := c.NetConn().LocalAddr().String()
		got := s.reported(addr, 1, 2*time.Second)
		if len(got) != 1 || strings.Contains(got[0].Error(), "refused") != over || KeepsWaiting(got[0]) {
			t.Fatalf("over the limits %v: done got %v; want the test failed", over, s.reports())
		}
		prefix := "client " + addr + ": "
		if e := got[0].Error(); !strings.HasPrefix(e, prefix) || strings.Count(e, addr) != 1 {
			t.Errorf("over the limits %v: done got %q; want it to begin %q, once", over, e, prefix)
		}
	}
}
