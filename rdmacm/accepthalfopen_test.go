//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// halfOpen connects to l from n's address with an ID of the test's own,
// without a QP, and returns once l has answered (CONNECT_RESPONSE): the
// peer got the reply, and never completes the connection (librdmacm
// leaves the RTU to its program, which here does nothing), as a peer
// that went away and whose CM never told. The ID and its channel close
// when the test ends.
func halfOpen(t *testing.T, n testNet, l *rdmacm.Listener) (*rdmacm.EventChannel, *rdmacm.ID) {
	t.Helper()
	ch, id, next := rdmatest.RoutedID(t, timeout(t, 30*time.Second), n.IP, l.Addr())
	// A QP number of its own for each, as the listener's CM rejects a
	// request whose QP number one under way already has (stale
	// connection).
	qpn := 0xfff000 + halfOpenQPN.Add(1)
	if err := id.Connect(&rdmacm.ConnParam{QPNum: qpn, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventConnectResponse)
	return ch, id
}

// halfOpenQPN numbers halfOpen's connections, from the top of the 24-bit
// QP numbers, far from those the device gives.
var halfOpenQPN atomic.Uint32

type accepted struct {
	c   *rdmacm.Conn
	err error
}

// acceptLoop runs a plain Accept loop on l, as ExampleListen's, and sends
// what each Accept returns on the channel, until one returns ErrClosed;
// the listener closes, and the loop has ended, when the test ends.
func acceptLoop(t *testing.T, l *rdmacm.Listener) <-chan accepted {
	t.Helper()
	out := make(chan accepted, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept(context.Background())
			if errors.Is(err, rdmacm.ErrClosed) {
				return
			}
			out <- accepted{c, err}
		}
	}()
	t.Cleanup(func() {
		closeOK(t, l)
		<-done
		close(out)
		for a := range out {
			if a.c != nil {
				closeOK(t, a.c)
			}
		}
	})
	return out
}

// TestAcceptNotHeldUpByHalfOpenPeer: a plain Accept loop is not held up
// by a peer that got the reply and never completes the connection: a
// good Dial that comes next is accepted at once, while the first
// handshake is still under way, as a TCP listener's accept never waits
// on one client's handshake. Before, Accept waited for the first
// handshake to end (the kernel resends its reply for about 69 s, or
// DefaultConnectTimeout): the good Dial failed at its 5 s deadline and
// no Accept returned.
func TestAcceptNotHeldUpByHalfOpenPeer(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	acc := acceptLoop(t, l)
	halfOpen(t, n, l)
	select {
	case a := <-acc:
		t.Fatalf("Accept returned (%v, %v) for a peer that never completes", a.c, a.err)
	case <-time.After(100 * time.Millisecond):
	}
	dialAccepted(t, n, l, acc, "a Dial while another peer's handshake is under way")
}

// dialAccepted dials l, and fails the test unless the Dial succeeds
// within 5 s and, within 5 s more, an Accept of acc's loop returns its
// connection; both are closed when the test ends.
func dialAccepted(t *testing.T, n testNet, l *rdmacm.Listener, acc <-chan accepted, what string) {
	t.Helper()
	start := time.Now()
	cli, err := rdmacm.Dial(timeout(t, 5*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
	if err != nil {
		t.Fatalf("%s: %v after %v", what, err, time.Since(start))
	}
	t.Cleanup(func() { closeOK(t, cli) })
	select {
	case a := <-acc:
		if a.err != nil {
			t.Fatalf("%s: Accept: %v, want the Dial's connection", what, a.err)
		}
		t.Cleanup(func() { closeOK(t, a.c) })
		t.Logf("%s: accepted %v after the Dial began", what, time.Since(start))
		matchConns(t, []*rdmacm.Conn{cli}, []*rdmacm.Conn{a.c})
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no Accept returned the Dial's connection 5 s after it was made", what)
	}
}

// TestAcceptHandshakeFailsAmongPending: a handshake that fails ends the
// Accept that began it with its error, also while another handshake of
// that Accept is under way (a peer that never completes), and the next
// Accept takes the next request at once. Before, the Accept waited for
// the first handshake and never took the second request.
func TestAcceptHandshakeFailsAmongPending(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	refused := errors.New("the test's Prepare refuses this one")
	var refuse atomic.Bool
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), &rdmacm.Config{Prepare: func(*rdmacm.Conn) (func() error, error) {
		if refuse.Load() {
			return nil, refused
		}
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	acc := acceptLoop(t, l)
	halfOpen(t, n, l)
	refuse.Store(true)
	_, err = rdmacm.Dial(timeout(t, 5*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
	var rej *rdmacm.RejectedError
	if !errors.As(err, &rej) {
		t.Errorf("Dial whose handshake the listener's Prepare refused: %v, want a *RejectedError", err)
	}
	select {
	case a := <-acc:
		if a.c != nil {
			a.c.Close()
		}
		if !errors.Is(a.err, refused) {
			t.Fatalf("Accept: %v, want Prepare's error", a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Accept returned the failed handshake's error within 5 s")
	}
	refuse.Store(false)
	dialAccepted(t, n, l, acc, "the next Dial")
}

// TestListenerCloseEndsPendingHandshakes: an Accept that has begun the
// handshakes of several peers that never complete (it takes each request
// while the others are under way) is ended by the listener's Close with
// ErrClosed; Close ends each handshake (the peer gets an event that is
// not ESTABLISHED) and leaves no goroutine or descriptor behind. Before,
// Accept took the first request only: the other peers never got a reply.
func TestListenerCloseEndsPendingHandshakes(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := acceptOne(context.Background(), l)
	var peers []*rdmacm.EventChannel
	for range 3 {
		ch, _ := halfOpen(t, n, l)
		peers = append(peers, ch)
	}
	select {
	case err := <-acc:
		t.Fatalf("Accept returned (%v) while no peer completed", err)
	case <-time.After(100 * time.Millisecond):
	}
	start := time.Now()
	closeOK(t, l)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v with 3 handshakes under way", d)
	}
	select {
	case err := <-acc:
		if !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("Accept after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits 5 s after the listener's Close")
	}
	for i, ch := range peers {
		ev, err := ch.GetEvent(timeout(t, 10*time.Second))
		if err != nil {
			t.Errorf("peer %d: no event 10 s after the listener's Close ended its handshake: %v", i, err)
			continue
		}
		t.Logf("peer %d: %v", i, ev)
		if ev.Type == rdmacm.EventEstablished {
			t.Errorf("peer %d: %v after the listener's Close", i, ev)
		}
	}
}
