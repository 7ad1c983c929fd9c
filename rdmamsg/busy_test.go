//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestDialBurst: 64 Dials at once from one host to a Listener with the
// default Config (8 handshakes from one address) all connect, as a pool
// of connections opened at start-up would: those beyond the eight are
// told the listener is busy and try again. Each echoes a message. Where
// the listener's reject was final, 17 of 40 failed with ECONNREFUSED.
func TestDialBurst(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 120*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var served sync.WaitGroup
	defer served.Wait()
	go func() {
		for {
			c, err := l.Accept(ctx)
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer served.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	const dials = 64
	errs := make(chan error, dials)
	start := time.Now()
	for i := range dials {
		go func() {
			dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			c, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := fmt.Sprintf("hello %d", i)
			if _, err := c.Write([]byte(msg)); err != nil {
				errs <- fmt.Errorf("write: %w", err)
				return
			}
			if err := c.CloseWrite(); err != nil {
				errs <- fmt.Errorf("CloseWrite: %w", err)
				return
			}
			b, err := io.ReadAll(c)
			if err != nil || string(b) != msg {
				errs <- fmt.Errorf("echo %q of %q, %v", b, msg, err)
				return
			}
			errs <- nil
		}()
	}
	failed := map[string]int{}
	for range dials {
		if err := <-errs; err != nil {
			failed[err.Error()]++
		}
	}
	for why, n := range failed {
		t.Errorf("%d of %d Dials: %s", n, dials, why)
	}
	t.Logf("%d Dials from %s in %v", dials, cliNet.IP, time.Since(start))
}

// TestDialBusyUntilCtxEnds: a Dial from a host whose handshakes are all
// held (Config.HandshakesPerAddr 1, one stalled peer) tries again until
// its ctx ends, then fails with an error that says the listener was
// busy, matching syscall.EAGAIN and ctx's error, a net.Error whose
// Timeout is true: not a refusal (ECONNREFUSED), which reads as nothing
// listening. Where the reject was final, Dial failed at once with
// ECONNREFUSED.
func TestDialBusyUntilCtxEnds(t *testing.T) {
	t.Parallel() // it waits out its Dial's ctx
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	// The stalled handshake is held for longer than the Dial tries.
	l, _ := listenAccepting(t, ctx, srvNet.IP, &rdmamsg.Config{HandshakesPerAddr: 1, HandshakeTimeout: time.Minute})
	defer l.Close()
	rawDial(t, ctx, cliNet.IP, l.Addr()) // holds cliNet's one handshake
	// Long enough for a first request's answer under TCG on a loaded
	// host (2 s was not, in TestStallsFromOneAddress).
	const wait = 8 * time.Second
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	c, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatalf("Dial from %s, its one handshake stalled: connected", cliNet.IP)
	}
	t.Logf("after %v: %v", took, err)
	var ne interface{ Timeout() bool }
	switch {
	case !errors.Is(err, syscall.EAGAIN) || !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("Dial: %v; want an error matching EAGAIN and context.DeadlineExceeded", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		t.Errorf("Dial: %v matches ECONNREFUSED, as though nothing listened", err)
	case !strings.Contains(err.Error(), "busy") || !strings.Contains(err.Error(), "HandshakesPerAddr"):
		t.Errorf("Dial: %q; want it to say the listener was busy, and why", err)
	case !errors.As(err, &ne) || !ne.Timeout():
		t.Errorf("Dial: %v; want a Timeout() true", err)
	}
	if took < wait-100*time.Millisecond {
		t.Errorf("Dial gave up after %v, before its ctx ended (%v)", took, wait)
	}
}

// TestDialBusyOldListener: an rdmamsg Listener from before the busy mark
// rejects a request beyond HandshakesPerAddr with its reason alone; Dial
// takes that for busy too and tries again, and a reject for any other
// reason is final (ECONNREFUSED, one request). The Dial's ctx ends once
// the listener has rejected 3 requests, however long they take.
func TestDialBusyOldListener(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	for _, c := range []struct {
		why   string
		retry bool
	}{
		{fmt.Sprintf("rdmamsg: too many handshakes from %s under way (Config.HandshakesPerAddr, 8)", cliNet.IP), true},
		{"rdmamsg: no hello", false},
	} {
		l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var requests atomic.Int32
		lctx, stop := context.WithCancel(ctx)
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				req, err := l.GetRequest(lctx)
				if err != nil {
					return
				}
				n := requests.Add(1)
				req.Reject([]byte(c.why))
				if n == 3 {
					cancel() // the Dial tried again, twice
				}
			}
		}()
		conn, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
		cancel()
		stop()
		<-done
		l.Close()
		if err == nil {
			conn.Close()
			t.Fatalf("rejected with %q: connected", c.why)
		}
		n := requests.Load()
		switch {
		case c.retry && (n < 3 || !errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ECONNREFUSED)):
			t.Errorf("rejected with %q: %d requests, %v; want 3 or more, and EAGAIN", c.why, n, err)
		case !c.retry && (n != 1 || !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EAGAIN)):
			t.Errorf("rejected with %q: %d requests, %v; want one, and ECONNREFUSED", c.why, n, err)
		}
	}
}

// TestListenerBusy: Dial takes a reject for busy where its private data
// begins with the busy mark, or with an older Listener's reason for the
// same, and only from rdma_reject (status 28) on RC; every other reject
// is final.
func TestListenerBusy(t *testing.T) {
	const why = "rdmamsg: too many handshakes from 198.18.0.2 under way (Config.HandshakesPerAddr, 8)"
	pad := func(s string) []byte { return append([]byte(s), make([]byte, 148-len(s))...) }
	for _, c := range []struct {
		err     error
		busy    bool
		wantWhy string
	}{
		{&rdmacm.RejectedError{Status: 28, PrivateData: pad(rdmamsg.BusyMark + why)}, true, why},
		{&rdmacm.OpError{Op: "dial", Addr: "x", Err: &rdmacm.RejectedError{Status: 28, PrivateData: pad(rdmamsg.BusyMark + "later")}}, true, "later"},
		{&rdmacm.RejectedError{Status: 28, PrivateData: pad(why)}, true, why}, // an older Listener
		{&rdmacm.RejectedError{Status: 28, PrivateData: pad("rdmamsg: no hello")}, false, ""},
		{&rdmacm.RejectedError{Status: 28}, false, ""},
		{&rdmacm.RejectedError{Status: 8, PrivateData: pad(rdmamsg.BusyMark)}, false, ""},
		{&rdmacm.RejectedError{Status: 28, UD: true, PrivateData: pad(rdmamsg.BusyMark)}, false, ""},
		{syscall.EAGAIN, false, ""},
	} {
		got, busy := rdmamsg.ListenerBusy(c.err)
		if busy != c.busy || (busy && got != c.wantWhy) {
			t.Errorf("ListenerBusy(%v) = %q, %v; want %q, %v", c.err, got, busy, c.wantWhy, c.busy)
		}
	}
}

// TestBusyPause: Dial's pauses after busy rejects double from 10 ms up to
// 500 ms, each at least half of that and at most all of it.
func TestBusyPause(t *testing.T) {
	for tries, want := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond,
		4: 80 * time.Millisecond, 6: 320 * time.Millisecond, 7: 500 * time.Millisecond, 100: 500 * time.Millisecond} {
		for range 100 {
			if d := rdmamsg.BusyPause(tries); d < want/2 || d > want {
				t.Fatalf("BusyPause(%d) = %v, want %v to %v", tries, d, want/2, want)
			}
		}
	}
}
