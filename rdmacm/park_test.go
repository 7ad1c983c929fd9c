//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// cancelOnRequest makes cancel run once the listener's channel hands over
// a connection request, after Accept's wait has ended but before it has
// answered the request; it is undone when the test ends.
func cancelOnRequest(t *testing.T, l *rdmacm.Listener, cancel context.CancelFunc) {
	t.Helper()
	ch := l.ID().Channel()
	var once sync.Once
	restore := rdmacm.SetGetEventHook(func(c *rdmacm.EventChannel, ev *rdmacm.Event) {
		if c == ch && ev.Type == rdmacm.EventConnectRequest {
			once.Do(cancel)
		}
	})
	t.Cleanup(restore)
}

// dialAsync dials l from src in a goroutine, for at most 20 s, and returns
// its outcome on the channel; a connection made closes when the test ends.
func dialAsync(t *testing.T, l *rdmacm.Listener, src netip.Addr) <-chan error {
	t.Helper()
	dialed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: src.String()})
		if c != nil {
			t.Cleanup(func() { closeOK(t, c) })
		}
		dialed <- err
	}()
	return dialed
}

// acceptWithin is l's Accept, bounded by d, and the connection it makes
// closes when the test ends.
func acceptWithin(t *testing.T, l *rdmacm.Listener, d time.Duration) (*rdmacm.Conn, error) {
	t.Helper()
	c, err := l.Accept(timeout(t, d))
	if c != nil {
		t.Cleanup(func() { closeOK(t, c) })
	}
	return c, err
}

// parkOne dials l from ip and has an Accept take the request and leave it
// parked, its context cancelled there (cancelOnRequest); it returns the
// dial's outcome, to come.
func parkOne(t *testing.T, l *rdmacm.Listener, ip netip.Addr) <-chan error {
	t.Helper()
	actx, cancel := context.WithCancel(timeout(t, 60*time.Second))
	defer cancel()
	cancelOnRequest(t, l, cancel)
	dialed := dialAsync(t, l, ip)
	if c, err := l.Accept(actx); !errors.Is(err, context.Canceled) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Accept whose context ended once it took the request: %v, want context.Canceled", err)
	}
	return dialed
}

// TestAcceptParked: an Accept whose context ends just after it took a
// request (a hook cancels it there) returns the context's error and
// leaves the request unanswered, and the next Accept makes the
// connection, which the dialer gets; a TCP Accept whose deadline passes
// leaves the connection in the backlog likewise. Before, Accept rejected
// the request and the dialer failed with a *RejectedError.
func TestAcceptParked(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	dialed := parkOne(t, l, n.IP)
	srv, err := acceptWithin(t, l, 20*time.Second)
	if err != nil {
		t.Fatalf("the next Accept: %v, want the connection the first left", err)
	}
	if err := <-dialed; err != nil {
		t.Fatalf("Dial, whose request an Accept left when its context ended: %v", err)
	}
	if srv.RemoteAddr().Addr().WithZone("") != n.IP.WithZone("") {
		t.Errorf("the connection accepted is from %v, want %v", srv.RemoteAddr(), n.IP)
	}
}

// TestAcceptParkedWakes: a request an Accept leaves when its context
// ends goes to another Accept that already waits for the next request
// (its wait is ended for it), where it would wait for one more.
func TestAcceptParkedWakes(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ch := l.ID().Channel()
	actx, cancel := context.WithCancel(timeout(t, 60*time.Second))
	defer cancel()
	cancelOnRequest(t, l, cancel)
	// The first Accept, which took the request, answers it only once
	// the second waits on the channel.
	var once sync.Once
	restore := rdmacm.SetTakenHook(func(*rdmacm.Listener) {
		once.Do(func() {
			for deadline := time.Now().Add(10 * time.Second); !rdmacm.Waiting(ch); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Error("the second Accept does not wait on the channel 10 s after the first took the request")
					return
				}
			}
		})
	})
	defer restore()

	first := acceptOne(actx, l)
	for deadline := time.Now().Add(10 * time.Second); !rdmacm.Waiting(ch); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first Accept does not wait on the channel after 10 s")
		}
	}
	type result struct {
		c   *rdmacm.Conn
		err error
	}
	second := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := l.Accept(ctx)
		second <- result{c, err}
	}()
	dialed := dialAsync(t, l, n.IP)
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("the first Accept: %v, want context.Canceled", err)
	}
	r := <-second
	if r.c != nil {
		t.Cleanup(func() { closeOK(t, r.c) })
	}
	if r.err != nil {
		t.Fatalf("the second Accept, waiting as the first left its request: %v, want the connection", r.err)
	}
	if err := <-dialed; err != nil {
		t.Fatalf("Dial: %v", err)
	}
}

// TestCloseRejectsParked: the listener's Close rejects a request an
// Accept left when its context ended: the dialer, which waited until
// then, fails with a *RejectedError, and nothing is left open.
func TestCloseRejectsParked(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 1)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialed := parkOne(t, l, n.IP)
	select {
	case err := <-dialed:
		t.Fatalf("Dial ended (%v) while its request waited for the next Accept", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close with a request left: %v", err)
	}
	var rej *rdmacm.RejectedError
	select {
	case err := <-dialed:
		if !errors.As(err, &rej) {
			t.Errorf("Dial whose request the listener's Close refused: %v, want a *RejectedError", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Dial still waits 20 s after the listener's Close")
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
	if _, err := l.Accept(timeout(t, 5*time.Second)); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("Accept after Close: %v, want ErrClosed", err)
	}
}

// TestListenerCloseRetry: a listener's Close that fails is tried again
// by the next, where the first's error was kept and returned for good
// and what it had not freed stayed: a QP of the test's own on the
// listening ID (CreateQP; a UD listener's, as rdma_create_qp refuses an
// RC listening ID a QP, with EINVAL) makes the ID's Close, and so the
// channel's, fail (EBUSY); once the QP is closed, the next Close frees
// the ID and the channel. (Its own IDs on the listener's channel, which
// made it fail before, CreateID now refuses.)
func TestListenerCloseRetry(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, &rdmacm.Config{UD: true})
	ch := l.ID().Channel()
	pd, cq := idPDCQ(t, l.ID())
	qp, err := l.ID().CreateQP(pd, ibverbs.QPInit{SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatalf("CreateQP on a UD Listener's ID: %v", err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	if err := l.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("Close with a QP on the listening ID: %v, want EBUSY", err)
	}
	if ch.Fd() == -1 {
		t.Fatal("the channel is closed after the Close that failed")
	}
	if _, err := l.Accept(timeout(t, 5*time.Second)); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("Accept after the Close that failed: %v, want ErrClosed", err)
	}
	closeOK(t, qp)
	if err := l.Close(); err != nil {
		t.Fatalf("Close again once the QP is closed: %v", err)
	}
	if ch.Fd() != -1 {
		t.Error("the listener's channel is still open after the second Close")
	}
	if err := l.Close(); err != nil {
		t.Errorf("a third Close: %v", err)
	}
}
