//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

// blackHole returns an address in the VM's network where nothing
// answers, or skips the test outside the VM.
func blackHole(t *testing.T, near netip.Addr) netip.AddrPort {
	t.Helper()
	if !netip.MustParsePrefix("198.18.0.0/24").Contains(near) {
		t.Skipf("%v is not in the VM's network", near)
	}
	return netip.MustParseAddrPort("198.18.0.99:5000")
}

// TestPacketQueuedReadFromEnds: a ReadFrom waiting for its turn behind
// another ends with its own context, and with its read deadline, though
// the one ahead of it still waits.
func TestPacketQueuedReadFromEnds(t *testing.T) {
	a, b := packetPair(t)
	first := make(chan error, 1)
	go func() {
		_, _, err := a.ReadFrom(context.Background(), make([]byte, 16))
		first <- err
	}()
	time.Sleep(100 * time.Millisecond) // the first one waits
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	second := make(chan error, 1)
	go func() {
		_, _, err := a.ReadFrom(ctx, make([]byte, 16))
		second <- err
	}()
	var err error
	waiting := []chan error{first}
	select {
	case err = <-second:
	case <-time.After(2 * time.Second):
		waiting = append(waiting, second)
	}
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > time.Second {
		t.Errorf("queued ReadFrom with a 200 ms context: %v after %v, want context.DeadlineExceeded at once", err, took)
	}
	// With its read deadline (which the first one, asleep on the CQ,
	// sees too; it goes on waiting after, with the deadline cleared).
	third := make(chan error, 1)
	start = time.Now()
	go func() {
		_, _, err := a.ReadFrom(context.Background(), make([]byte, 16))
		third <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.SetReadDeadline(time.Now().Add(150 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-third:
	case <-time.After(2 * time.Second):
		err = nil
		waiting = append(waiting, third)
	}
	if took := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || took > time.Second {
		t.Errorf("queued ReadFrom with a read deadline: %v after %v, want os.ErrDeadlineExceeded at once", err, took)
	}
	// Free whoever still waits.
	a.SetReadDeadline(time.Time{})
	ctx2 := timeout(t, 10*time.Second)
	for range 3 {
		b.WriteTo(ctx2, []byte("x"), a.LocalAddr())
	}
	for _, ch := range waiting {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			closeOK(t, a)
			<-ch
		}
	}
}

// TestPacketQueuedWriteToEnds: a WriteTo waiting for its turn behind
// another that has not sent yet ends with its own context, its write
// deadline and Close.
func TestPacketQueuedWriteToEnds(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 30*time.Second)
	if err := b.WriteTo(ctx, []byte("known"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	held, hold := make(chan struct{}, 1), make(chan struct{})
	restore := rdmamsg.SetUsingHook(func() {
		select {
		case held <- struct{}{}:
			<-hold
		default:
		}
	})
	defer restore()
	first := make(chan error, 1)
	go func() { first <- b.WriteTo(ctx, []byte("first"), a.LocalAddr()) }()
	<-held // the first WriteTo has its turn, and keeps it
	held <- struct{}{}
	released := false
	check := func(what string, want error, do func() error) {
		t.Helper()
		start := time.Now()
		got := make(chan error, 1)
		go func() { got <- do() }()
		var err error
		select {
		case err = <-got:
		case <-time.After(2 * time.Second):
			close(hold) // the old code: let both go
			released = true
			err = <-got
		}
		if took := time.Since(start); !errors.Is(err, want) || took > time.Second {
			t.Errorf("queued WriteTo with %s: %v after %v, want %v at once", what, err, took, want)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	check("a 200 ms context", context.DeadlineExceeded, func() error { return b.WriteTo(cctx, []byte("second"), a.LocalAddr()) })
	if !released {
		b.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		check("a 200 ms write deadline", os.ErrDeadlineExceeded, func() error { return b.WriteTo(ctx, []byte("third"), a.LocalAddr()) })
		b.SetWriteDeadline(time.Time{})
	}
	if !released {
		close(hold)
	}
	if err := <-first; err != nil {
		t.Errorf("first WriteTo: %v", err)
	}
}

// TestPacketWriteToFailsAtOnce: a datagram too long for any destination,
// a destination where no PacketConn can be, and a lookup past the write
// deadline fail at once, not after the lookup's 5 s.
func TestPacketWriteToFailsAtOnce(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	hole := blackHole(t, a.LocalAddr().Addr())
	quick := func(what string, took time.Duration, err error, want ...error) {
		t.Helper()
		ok := false
		for _, w := range want {
			ok = ok || errors.Is(err, w)
		}
		if !ok || took > 2*time.Second {
			t.Errorf("%s: %v after %v, want one of %v at once", what, err, took, want)
		}
	}
	start := time.Now()
	err := b.WriteTo(ctx, make([]byte, b.MaxDatagram()+1), hole)
	quick("a datagram too long to an unknown destination", time.Since(start), err, syscall.EMSGSIZE)
	for _, to := range []string{"0.0.0.0:5000", "[::]:5000", "255.255.255.255:5000", "224.0.0.1:5000", "[ff02::1]:5000", "127.0.0.1:5000", "[::1]:5000", "[::ffff:127.0.0.1]:5000", netip.AddrPortFrom(a.LocalAddr().Addr(), 0).String()} {
		start := time.Now()
		err := b.WriteTo(ctx, []byte("x"), netip.MustParseAddrPort(to))
		quick("WriteTo "+to, time.Since(start), err, syscall.EINVAL, syscall.EADDRNOTAVAIL)
	}
	// The write deadline bounds a lookup, natively and through the
	// net.PacketConn.
	b.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	start = time.Now()
	err = b.WriteTo(ctx, []byte("x"), hole)
	quick("WriteTo a black hole with a 200 ms write deadline", time.Since(start), err, os.ErrDeadlineExceeded)
	nb := b.NetPacketConn()
	nb.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	start = time.Now()
	_, err = nb.WriteTo([]byte("x"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(hole.Addr(), hole.Port()+1)))
	quick("net.PacketConn WriteTo a black hole with a 200 ms write deadline", time.Since(start), err, os.ErrDeadlineExceeded)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("the lookup past the write deadline: %v is no net.Error timeout", err)
	}
	nb.SetWriteDeadline(time.Time{})
	// A known destination still works.
	if err := b.WriteTo(ctx, []byte("x"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReadFrom(ctx, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
}

// TestPacketWriteToMapped: a WriteTo to the IPv4-mapped form of an IPv4
// address reaches the same destination, with the same address handle, as
// one to the IPv4 address.
func TestPacketWriteToMapped(t *testing.T) {
	a, b := packetPair(t)
	if !a.LocalAddr().Addr().Is4() {
		t.Skipf("%v is not IPv4", a.LocalAddr())
	}
	ctx := timeout(t, 30*time.Second)
	mapped := netip.AddrPortFrom(netip.AddrFrom16(a.LocalAddr().Addr().As16()), a.LocalAddr().Port())
	buf := make([]byte, 16)
	if err := b.WriteTo(ctx, []byte("mapped"), mapped); err != nil {
		t.Fatal(err)
	}
	if n, from, err := a.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "mapped" || from != b.LocalAddr() {
		t.Fatalf("ReadFrom: %q from %v, %v", buf[:n], from, err)
	}
	if err := b.WriteTo(ctx, []byte("plain"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "plain" {
		t.Fatalf("ReadFrom: %q, %v", buf[:n], err)
	}
	if n := b.Peers(); n != 1 {
		t.Errorf("after WriteTo %v and %v: %d destinations kept, want 1", mapped, a.LocalAddr(), n)
	}
}

// TestPacketLookupCallersTimeout: a lookup that the caller's own context
// ended says so, not that PacketConfig.LookupTimeout passed: rdma_cm's
// resolution, given the time left, could time out a hair before the Go
// context did, and the error then named the 5 s bound after 200 ms.
func TestPacketLookupCallersTimeout(t *testing.T) {
	_, b := packetPair(t)
	hole := blackHole(t, b.LocalAddr().Addr())
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		to := netip.AddrPortFrom(hole.Addr(), hole.Port()+uint16(i))
		start := time.Now()
		err := b.WriteTo(ctx, []byte("x"), to)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "LookupTimeout") || took > 2*time.Second {
			t.Errorf("WriteTo %v with a 200 ms context: %v after %v, want the context's deadline", to, err, took)
		}
	}
}
