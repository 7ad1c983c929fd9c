//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestStallsFromOneAddress: a host that sends connection requests with a
// valid hello and never completes them holds at most
// Config.HandshakesPerAddr (8) of a Listener's handshakes; its requests
// beyond those are rejected at once as busy, saying why (a Dial from it
// tries again until its ctx ends), and a Dial from another address gets
// in at once. Where there was no such limit, 32 stalls took
// every handshake, and no Dial got in until one timed out.
func TestStallsFromOneAddress(t *testing.T) {
	t.Parallel() // it waits mostly on the CM's answers
	srvNet, cliNet := ends(t)
	if srvNet.IP == cliNet.IP {
		t.Skip("needs a second address, the VM's second device")
	}
	ctx := timeout(t, 150*time.Second)
	l, acc := listenAccepting(t, ctx, srvNet.IP, &rdmamsg.Config{HandshakeTimeout: time.Minute})
	defer l.Close()
	// One more than the handshakes a listener runs at once.
	const stalls, perAddr = 33, 8
	var answered, rejected int
	for i := range stalls {
		ch, id, _ := rdmatest.RoutedID(t, ctx, cliNet.IP, l.Addr())
		if err := id.Connect(stallParam()); err != nil {
			t.Fatal(err)
		}
		// "At once", for a VM under TCG on a loaded host: a lost CM MAD
		// is sent again after about 4 s; without the limit, the answer
		// waits out HandshakeTimeout (1 min).
		wait, cancel := context.WithTimeout(ctx, 15*time.Second)
		ev, err := ch.GetEvent(wait)
		cancel()
		switch {
		case err != nil:
			t.Errorf("stalled request %d: no answer in 15 s: %v", i+1, err)
		case ev.Type == rdmacm.EventConnectResponse:
			answered++
		case ev.Type == rdmacm.EventRejected:
			rejected++
			if why := string(bytes.TrimRight(ev.PrivateData(), "\x00")); !strings.Contains(why, "HandshakesPerAddr") || !strings.Contains(why, cliNet.IP.String()) {
				t.Errorf("stalled request %d rejected (status %d): %q, want the reason, naming Config.HandshakesPerAddr and %s", i+1, ev.Status, why, cliNet.IP)
			}
		default:
			t.Errorf("stalled request %d: %v", i+1, ev)
		}
	}
	if answered != perAddr || rejected != stalls-perAddr {
		t.Errorf("%d stalled requests from %s: %d answered, %d rejected; want %d and %d", stalls, cliNet.IP, answered, rejected, perAddr, stalls-perAddr)
	}
	// A Dial from the stalling address finds the listener busy until its
	// ctx ends, and says why. Its first request must have its answer
	// by then: 2 s was short once under TCG on a loaded host (the error
	// was the ctx's, before any busy reject).
	dctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	c, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
	cancel()
	if err == nil {
		c.Close()
		t.Errorf("Dial from %s, with %d of its handshakes stalled: connected", cliNet.IP, perAddr)
	} else if !errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "HandshakesPerAddr") {
		t.Errorf("Dial from %s, with %d of its handshakes stalled: %v; want EAGAIN (busy), naming Config.HandshakesPerAddr", cliNet.IP, perAddr, err)
	}
	// One from another address gets in at once: within 15 s (a lost CM
	// MAD is sent again after about 4 s), where without the limit it
	// waited for a stalled handshake's HandshakeTimeout (1 min).
	start := time.Now()
	dctx, cancel = context.WithTimeout(ctx, 20*time.Second)
	c, err = rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: srvNet.IP.String()}})
	cancel()
	if err != nil {
		t.Fatalf("Dial from %s while %s stalls: %v after %v", srvNet.IP, cliNet.IP, err, time.Since(start))
	}
	defer closeOK(t, c)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Dial from %s while %s stalls took %v", srvNet.IP, cliNet.IP, d)
	}
	select {
	case r := <-acc:
		if r.err != nil {
			t.Fatalf("Accept while %s stalls: %v", cliNet.IP, r.err)
		}
		closeOK(t, r.c)
	case <-time.After(5 * time.Second):
		t.Fatalf("Accept has not returned the Dial from %s 5 s after it", srvNet.IP)
	}
}

// stallQPN numbers the stalls' requests across the package's tests.
var stallQPN atomic.Uint32

// stallParam is a stall's request: a QP number of its own, never used
// before in this process, as different QPs would have, or the CM would
// reject it as a stale connection (it still tracks one test's remote QPN
// when the next test sends it again).
func stallParam() *rdmacm.ConnParam {
	return &rdmacm.ConnParam{PrivateData: rdmamsg.Hello(16, 4096), QPNum: 0xf00000 + stallQPN.Add(1), RetryCount: 7, RNRRetryCount: 7}
}

// TestHandshakeConfig: Config.Handshakes, HandshakesPerAddr and
// HandshakeTimeout out of range are refused.
func TestHandshakeConfig(t *testing.T) {
	for _, cfg := range []rdmamsg.Config{{Handshakes: -1}, {Handshakes: 4097}, {HandshakesPerAddr: -1}, {HandshakeTimeout: -time.Second}} {
		if l, err := rdmamsg.Listen(context.Background(), "198.18.0.1:0", &cfg); !errors.Is(err, syscall.EINVAL) {
			if l != nil {
				l.Close()
			}
			t.Errorf("Listen with %+v: %v, want EINVAL", cfg, err)
		}
	}
}

// TestConfiguredHandshakes: Config.HandshakesPerAddr and HandshakeTimeout
// apply: with 1 handshake per address, a second stall from the address is
// rejected; with a HandshakeTimeout of 500 ms, the first is dropped (its
// ID gets REJECTED) soon after.
func TestConfiguredHandshakes(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, _ := listenAccepting(t, ctx, srvNet.IP, &rdmamsg.Config{HandshakesPerAddr: 1, HandshakeTimeout: 500 * time.Millisecond})
	defer l.Close()
	_, id, next := rdmatest.RoutedID(t, ctx, cliNet.IP, l.Addr())
	if err := id.Connect(stallParam()); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventConnectResponse)
	start := time.Now()
	_, id2, next2 := rdmatest.RoutedID(t, ctx, cliNet.IP, l.Addr())
	if err := id2.Connect(stallParam()); err != nil {
		t.Fatal(err)
	}
	if why := string(bytes.TrimRight(next2(rdmacm.EventRejected).PrivateData(), "\x00")); !strings.Contains(why, "too many handshakes from "+cliNet.IP.String()) {
		t.Errorf("the second stall's reject: %q", why)
	}
	next(rdmacm.EventRejected)
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the stalled peer was dropped after %v, HandshakeTimeout 500 ms", d)
	}
}
