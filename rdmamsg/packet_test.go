//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// packetPair makes a PacketConn on each end (the VM's two devices when it
// has them); they close when the test ends.
func packetPair(t testing.TB) (a, b *rdmamsg.PacketConn) {
	t.Helper()
	na, nb := ends(t)
	ctx := timeout(t, 30*time.Second)
	var err error
	if a, err = rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, a) })
	if b, err = rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	return a, b
}

func closeOK(t testing.TB, c interface{ Close() error }) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestPackets sends datagrams of the edge sizes from b to a, which b
// looks up, and answers each to the address ReadFrom gave, which a looks
// up before its first answer: each arrives whole, naming its sender's
// address.
func TestPackets(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	if a.MaxDatagram() < 256 || a.MaxDatagram() != b.MaxDatagram() {
		t.Fatalf("MaxDatagram %d and %d", a.MaxDatagram(), b.MaxDatagram())
	}
	buf := make([]byte, a.MaxDatagram())
	start := time.Now()
	if err := b.WriteTo(ctx, []byte("first"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	t.Logf("first lookup and send: %v", time.Since(start))
	if _, _, err := a.ReadFrom(ctx, buf); err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{0, 1, 100, a.MaxDatagram()} {
		m := message(i, size)
		if err := b.WriteTo(ctx, m, a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		n, from, err := a.ReadFrom(ctx, buf)
		if err != nil || from != b.LocalAddr() || !bytes.Equal(buf[:n], m) {
			t.Fatalf("datagram of %d bytes: %d bytes from %v, %v; want from %v", size, n, from, err, b.LocalAddr())
		}
		if err := a.WriteTo(ctx, buf[:n], from); err != nil {
			t.Fatal(err)
		}
		n, from, err = b.ReadFrom(ctx, buf)
		if err != nil || from != a.LocalAddr() || !bytes.Equal(buf[:n], m) {
			t.Fatalf("answer of %d bytes: %d bytes from %v, %v; want from %v", size, n, from, err, a.LocalAddr())
		}
	}
	// A burst within the receiver's depth all arrives.
	const burst = 40
	for i := range burst {
		if err := b.WriteTo(ctx, message(100+i, 64), a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range burst {
		n, _, err := a.ReadFrom(ctx, buf)
		if err != nil || !bytes.Equal(buf[:n], message(100+i, 64)) {
			t.Fatalf("burst datagram %d: %d bytes, %v", i, n, err)
		}
	}
	if err := b.WriteTo(ctx, make([]byte, a.MaxDatagram()+1), a.LocalAddr()); !errors.Is(err, syscall.EMSGSIZE) {
		t.Errorf("a datagram over MaxDatagram: %v", err)
	}
	if err := b.WriteTo(ctx, message(1, 100), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.ReadFrom(ctx, buf[:10]); n != 10 || !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("100 bytes into 10: %d, %v", n, err)
	}
}

// TestPacketLookupFails checks that a datagram for an address where no
// PacketConn is bound fails with the reason, promptly: nothing there, or a
// plain rdma_cm UD listener, which sends no hello.
func TestPacketLookupFails(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	nowhere := netip.AddrPortFrom(a.LocalAddr().Addr(), a.LocalAddr().Port()+1)
	start := time.Now()
	if err := b.WriteTo(ctx, []byte("x"), nowhere); !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 10*time.Second {
		t.Errorf("to %v, where nothing listens: %v after %v", nowhere, err, time.Since(start))
	}
	l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(a.LocalAddr().Addr(), 0).String(), &rdmacm.Config{UD: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(ctx); err == nil {
			<-ctx.Done()
			c.Close()
		}
	}()
	if err := b.WriteTo(ctx, []byte("x"), l.Addr()); err == nil || !strings.Contains(err.Error(), "no PacketConn hello") {
		t.Errorf("to a plain rdma_cm UD listener: %v", err)
	}
}

// TestPacketListenRefused checks the addresses and settings ListenPacket
// cannot take.
func TestPacketListenRefused(t *testing.T) {
	n := rdmatest.Addr(t)
	ctx := timeout(t, 30*time.Second)
	for _, tc := range []struct {
		addr string
		cfg  *rdmamsg.PacketConfig
	}{
		{"0.0.0.0:0", nil},
		{"no-port", nil},
		{netip.AddrPortFrom(n.IP, 0).String(), &rdmamsg.PacketConfig{Depth: -1}},
		{netip.AddrPortFrom(n.IP, 0).String(), &rdmamsg.PacketConfig{LookupTimeout: -time.Second}},
	} {
		if p, err := rdmamsg.ListenPacket(ctx, tc.addr, tc.cfg); !errors.Is(err, syscall.EINVAL) {
			if p != nil {
				p.Close()
			}
			t.Errorf("%s %+v: %v, want EINVAL", tc.addr, tc.cfg, err)
		}
	}
	if p, err := rdmamsg.ListenPacket(ctx, "127.0.0.1:0", nil); err == nil {
		p.Close()
		t.Error("ListenPacket on loopback, no RDMA device's address, succeeded")
	}
}

// TestPacketClose checks that Close ends a waiting ReadFrom, and that
// both calls fail after it.
func TestPacketClose(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 30*time.Second)
	got := make(chan error, 1)
	go func() { _, _, err := a.ReadFrom(ctx, make([]byte, 10)); got <- err }()
	time.Sleep(100 * time.Millisecond)
	closeOK(t, a)
	if err := <-got; !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("ReadFrom during Close: %v", err)
	}
	if err := a.WriteTo(ctx, []byte("x"), b.LocalAddr()); !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("WriteTo after Close: %v", err)
	}
}

// TestPacketNoAllocations checks that a datagram there and back, to
// addresses already known, allocates nothing.
func TestPacketNoAllocations(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	msg, buf := make([]byte, 64), make([]byte, a.MaxDatagram())
	round := func() {
		if err := b.WriteTo(ctx, msg, a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		_, from, err := a.ReadFrom(ctx, buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.WriteTo(ctx, msg, from); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.ReadFrom(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
	checkNoAllocs(t, round)
}

// TestNetPacketConnNoAllocations is TestPacketNoAllocations through
// NetPacketConn: a datagram from a known peer reads as the Addr made when
// it was looked up, not one made for each datagram (which allocated once
// a ReadFrom), and one cut to the buffer allocates no error to drop.
func TestNetPacketConnNoAllocations(t *testing.T) {
	a, b := packetPair(t)
	na, nb := a.NetPacketConn(), b.NetPacketConn()
	for _, c := range []net.PacketConn{na, nb} {
		c.SetDeadline(time.Now().Add(60 * time.Second))
	}
	msg, buf, short := make([]byte, 64), make([]byte, a.MaxDatagram()), make([]byte, 16)
	to := na.LocalAddr()
	var from net.Addr
	round := func() {
		if _, err := nb.WriteTo(msg, to); err != nil {
			t.Fatal(err)
		}
		_, f, err := na.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		from = f
		if _, err := na.WriteTo(msg, from); err != nil {
			t.Fatal(err)
		}
		if n, _, err := nb.ReadFrom(short); err != nil || n != len(short) {
			t.Fatalf("64 bytes into %d: %d, %v", len(short), n, err)
		}
	}
	checkNoAllocs(t, round)
	if from == nil || from.String() != b.LocalAddr().String() {
		t.Errorf("the sender read as %v, want %v", from, b.LocalAddr())
	}
}

// TestPacketNoLeaks makes, uses and closes endpoints: neither memory,
// descriptors, RDMA objects nor goroutines may grow.
func TestPacketNoLeaks(t *testing.T) {
	cycle := func() {
		na, nb := ends(t)
		ctx := timeout(t, 30*time.Second)
		a, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.WriteTo(ctx, []byte("hi"), a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.ReadFrom(ctx, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		closeOK(t, a)
		closeOK(t, b)
	}
	checkNoLeaks(t, 6, "endpoints", cycle)
}

// TestNetPacketConn uses PacketConns as net.PacketConns: datagrams to an
// Addr and to a *net.UDPAddr, senders given as Addrs, and a read deadline
// that ends the wait with a timeout.
func TestNetPacketConn(t *testing.T) {
	a, b := packetPair(t)
	na, nb := a.NetPacketConn(), b.NetPacketConn()
	if la := na.LocalAddr(); la.Network() != "rdma" || la.String() != a.LocalAddr().String() {
		t.Errorf("LocalAddr %v (%s)", la, la.Network())
	}
	buf := make([]byte, 100)
	for _, to := range []net.Addr{na.LocalAddr(), net.UDPAddrFromAddrPort(a.LocalAddr())} {
		if n, err := nb.WriteTo([]byte("via net"), to); err != nil || n != 7 {
			t.Fatalf("WriteTo %T: %d, %v", to, n, err)
		}
		n, from, err := na.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "via net" || from.Network() != "rdma" || from.String() != b.LocalAddr().String() {
			t.Fatalf("ReadFrom: %q from %v, %v", buf[:n], from, err)
		}
	}
	na.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, _, err := na.ReadFrom(buf)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("ReadFrom past its deadline: %v", err)
	}
	// As a UDP socket's: a deadline past fails ReadFrom at once, though a
	// datagram waits, and WriteTo too; cleared, the datagram is read, cut
	// to the buffer without an error.
	if _, err := nb.WriteTo([]byte("waiting"), na.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // it arrives
	na.SetDeadline(time.Now().Add(-time.Second))
	if n, _, err := na.ReadFrom(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadFrom with a datagram there, past its deadline: %d bytes, %v", n, err)
	}
	if n, err := na.WriteTo([]byte("x"), nb.LocalAddr()); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("WriteTo past its deadline: %d bytes, %v", n, err)
	}
	na.SetDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := na.ReadFrom(buf[:4]); n != 4 || err != nil || string(buf[:n]) != "wait" {
		t.Errorf("7 bytes into 4: %q, %v; want %q and no error", buf[:n], err, "wait")
	}
	// After Close, errors match net.ErrClosed, on which read loops
	// written for package net end, a deadline past or not.
	na.SetDeadline(time.Now().Add(-time.Second))
	closeOK(t, a)
	if _, _, err := na.ReadFrom(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("ReadFrom after Close: %v, want net.ErrClosed", err)
	}
	if _, err := na.WriteTo([]byte("x"), nb.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WriteTo after Close: %v, want net.ErrClosed", err)
	}
}

// TestPacketCloseEndsLookup: a lookup of a destination that does not
// answer holds up no WriteTo to a known one, and Close ends it at once,
// where Close waited out the lookup's timeout; the WriteTo returns
// ErrClosed.
func TestPacketCloseEndsLookup(t *testing.T) {
	na, nb := ends(t)
	ctx := timeout(t, 60*time.Second)
	a, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, a) })
	// One lookup at a time, for the wait for it below.
	defer rdmamsg.SetMaxLookups(1)()
	b, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), &rdmamsg.PacketConfig{LookupTimeout: 40 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if err := b.WriteTo(ctx, []byte("known"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReadFrom(ctx, buf); err != nil {
		t.Fatal(err)
	}
	// An rdma_cm UD listener that takes no request: a lookup of it waits
	// for an answer that does not come.
	l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmacm.Config{UD: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stuck := make(chan error, 1)
	go func() { stuck <- b.WriteTo(ctx, []byte("x"), l.Addr()) }()
	time.Sleep(300 * time.Millisecond)
	// What waits for the lookup waits 40 s (LookupTimeout): the limits
	// below, 10 to 15 s, are far from that and from a slow host's "at
	// once" (CI's VM runs under TCG).
	start := time.Now()
	if err := b.WriteTo(ctx, []byte("meanwhile"), a.LocalAddr()); err != nil || time.Since(start) > 10*time.Second {
		t.Errorf("WriteTo a known destination during another's lookup: %v after %v", err, time.Since(start))
	}
	if n, _, err := a.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "meanwhile" {
		t.Errorf("ReadFrom: %q, %v", buf[:n], err)
	}
	// One to another new destination waits for the lookup under way
	// only as long as its context allows.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	other := netip.AddrPortFrom(l.Addr().Addr(), l.Addr().Port()+1)
	start = time.Now()
	if err := b.WriteTo(short, []byte("x"), other); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("WriteTo a new destination during another's lookup, with 300 ms: %v after %v", err, time.Since(start))
	}
	start = time.Now()
	closeOK(t, b)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Close took %v during a lookup", d)
	}
	select {
	case err := <-stuck:
		if !errors.Is(err, rdmamsg.ErrClosed) {
			t.Errorf("the WriteTo whose lookup Close ended: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the WriteTo whose lookup Close ended has not returned 5 s later")
	}
}

// TestPacketLookupTimeout: a lookup that PacketConfig.LookupTimeout ends,
// under a context with no deadline of its own, says so, and matches
// context.DeadlineExceeded, where it said only "context deadline
// exceeded", of a context that had none. Through NetPacketConn it is a
// *net.OpError whose Timeout is true (its Timeout asked only its Err, a
// wrapper of context.DeadlineExceeded, and was false).
func TestPacketLookupTimeout(t *testing.T) {
	t.Parallel() // it waits out lookups
	na, nb := ends(t)
	ctx := timeout(t, 60*time.Second)
	b, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), &rdmamsg.PacketConfig{LookupTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	// An rdma_cm UD listener that takes no request: a lookup of it waits
	// for an answer that does not come.
	l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmacm.Config{UD: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	err = b.WriteTo(context.Background(), []byte("x"), l.Addr())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "PacketConfig.LookupTimeout (1s)") {
		t.Errorf("WriteTo whose lookup timed out: %v after %v; want one naming PacketConfig.LookupTimeout (1s), matching context.DeadlineExceeded",
			err, time.Since(start))
	}
	// Through NetPacketConn, a *net.OpError whose Timeout is true, as
	// errors.As to a net.Error found the error before it was one.
	_, err = b.NetPacketConn().WriteTo([]byte("x"), rdmamsg.Addr(l.Addr()))
	var ne net.Error
	if oe, ok := err.(*net.OpError); !ok || !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("NetPacketConn's WriteTo whose lookup timed out: %v (%T, %v); want a *net.OpError whose Timeout is true", err, err, oe)
	}
	// A context that ends first is the context's doing.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = b.WriteTo(short, []byte("x"), l.Addr())
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "LookupTimeout") {
		t.Errorf("WriteTo whose context ended during the lookup: %v; want context.DeadlineExceeded, not LookupTimeout", err)
	}
}

// TestPacketLookupWaitBounded: WriteTos to 6 new destinations that do
// not answer, at once, run 4 lookups at once, and PacketConfig.
// LookupTimeout bounds each from its start, the wait for the others
// included; with a write deadline, those that wait for the others fail
// with os.ErrDeadlineExceeded when it passes. The wait had no bound but
// the context: they returned one LookupTimeout after another, the
// deadline ignored.
func TestPacketLookupWaitBounded(t *testing.T) {
	t.Parallel() // it waits out lookups
	na, nb := ends(t)
	ctx := timeout(t, 120*time.Second)
	const lookupTimeout = 3 * time.Second
	b, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), &rdmamsg.PacketConfig{LookupTimeout: lookupTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	// rdma_cm UD listeners that take no request: a lookup of one waits
	// for an answer that does not come.
	var dsts []netip.AddrPort
	for range 6 {
		l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmacm.Config{UD: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		dsts = append(dsts, l.Addr())
	}
	type result struct {
		err error
		d   time.Duration
	}
	writeAll := func() []result {
		start := time.Now()
		res := make(chan result, len(dsts))
		for _, to := range dsts {
			go func() {
				err := b.WriteTo(ctx, []byte("x"), to)
				res <- result{err, time.Since(start)}
			}()
		}
		var rs []result
		for range dsts {
			rs = append(rs, <-res)
		}
		return rs
	}
	// A slow VM's slack, well short of a second LookupTimeout.
	const slack = 2 * time.Second
	for _, r := range writeAll() {
		if !errors.Is(r.err, context.DeadlineExceeded) || !strings.Contains(r.err.Error(), "LookupTimeout") || r.d > lookupTimeout+slack {
			t.Errorf("WriteTo a destination that does not answer, 6 at once: %v after %v; want one naming LookupTimeout (%v) within %v",
				r.err, r.d, lookupTimeout, lookupTimeout+slack)
		}
	}
	if err := b.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var late int
	for _, r := range writeAll() {
		switch {
		case r.d > lookupTimeout+slack:
			t.Errorf("WriteTo with a write deadline 1 s on: %v after %v", r.err, r.d)
		case errors.Is(r.err, os.ErrDeadlineExceeded) && r.d < time.Second+slack:
			late++
		case !errors.Is(r.err, context.DeadlineExceeded):
			t.Errorf("WriteTo with a write deadline 1 s on: %v after %v; want os.ErrDeadlineExceeded, or its lookup's time out", r.err, r.d)
		}
	}
	if late < 2 {
		t.Errorf("WriteTos with a write deadline 1 s on: %d of 6 failed with os.ErrDeadlineExceeded by %v, want the 2 that wait for a lookup at least", late, time.Second+slack)
	}
}

// TestPacketRetireInUse: an address handle retired while a WriteTo sends
// with it (its destination came back with a new QP, or it was evicted)
// stays open until the send posted with it has completed, not only the
// sends before it, and is closed after that.
func TestPacketRetireInUse(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, 16)
	if err := b.WriteTo(ctx, []byte("first"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReadFrom(ctx, buf); err != nil {
		t.Fatal(err)
	}
	restore := rdmamsg.SetRetireInUse()
	err := b.WriteTo(ctx, []byte("second"), a.LocalAddr())
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if after, sent, ok := b.RetiredWait(); !ok || after < sent {
		t.Errorf("the handle retired during a WriteTo is kept until send %d has completed, but the send made with it is send %d", after, sent)
	}
	if n, _, err := a.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "second" {
		t.Errorf("ReadFrom: %q, %v", buf[:n], err)
	}
	// Looked up again; once b has seen its sends complete, the retired
	// handle is closed.
	if err := b.WriteTo(ctx, []byte("third"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReadFrom(ctx, buf); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); b.Retired() > 0 && time.Now().Before(end); {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		b.ReadFrom(short, buf) // polls the CQ
		cancel()
	}
	if n := b.Retired(); n != 0 {
		t.Errorf("%d retired handles not closed after their sends completed", n)
	}
}

// TestPacketPeers: the destinations a PacketConn keeps address handles
// for stay within their bound (2 here), the destinations it sends to and
// the senders it answers alike, and one that had to go is reached again
// (looked up anew).
func TestPacketPeers(t *testing.T) {
	t.Cleanup(rdmamsg.SetMaxPeers(2))
	na, nb := ends(t)
	ctx := timeout(t, 60*time.Second)
	listen := func(ip netip.Addr) *rdmamsg.PacketConn {
		p, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(ip, 0).String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, p) })
		return p
	}
	a := listen(na.IP)
	bs := []*rdmamsg.PacketConn{listen(nb.IP), listen(nb.IP), listen(nb.IP)}
	buf := make([]byte, 64)
	expect := func(to *rdmamsg.PacketConn, from netip.AddrPort, m []byte) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, got, err := to.ReadFrom(short, buf)
		if err != nil || got != from || !bytes.Equal(buf[:n], m) {
			t.Fatalf("at %v: %q from %v, %v; want %q from %v", to.LocalAddr(), buf[:n], got, err, m, from)
		}
	}
	for round := range 2 {
		for i, b := range bs {
			m := message(10*round+i, 20)
			if err := a.WriteTo(ctx, m, b.LocalAddr()); err != nil {
				t.Fatalf("round %d, to %v: %v", round, b.LocalAddr(), err)
			}
			expect(b, a.LocalAddr(), m)
		}
		if n := a.Peers(); n > 2 {
			t.Fatalf("round %d of lookups: %d destinations kept, at most 2 wanted", round, n)
		}
	}
	for i, b := range bs {
		m := message(100+i, 20)
		if err := b.WriteTo(ctx, m, a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		expect(a, b.LocalAddr(), m)
		if err := a.WriteTo(ctx, m, b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		expect(b, a.LocalAddr(), m)
	}
	if n := a.Peers(); n > 2 {
		t.Fatalf("after the senders: %d destinations kept, at most 2 wanted", n)
	}

	// A side that only sends, with 2 send buffers, to destinations that
	// keep replacing each other: the handles replaced are freed as its
	// sends complete, though one is always on the wire.
	c, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmamsg.PacketConfig{SendBuffers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, c) })
	for i := range 30 {
		if err := c.WriteTo(ctx, message(i, 20), bs[i%len(bs)].LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Retired(); n > 4 {
		t.Errorf("a side that only sends holds %d retired address handles, want at most 4", n)
	}
}

// TestPacketPeerComesBack: a PacketConn closed and made again at the
// same address has a new QP: its first datagram, from a QP other than
// the one known, has the other side look the address up again before
// its next answer, which then reaches it.
func TestPacketPeerComesBack(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, 64)
	at := b.LocalAddr()
	for i, from := range []*rdmamsg.PacketConn{b, nil} {
		if from == nil { // b again, closed and made anew
			closeOK(t, b)
			var err error
			if from, err = rdmamsg.ListenPacket(ctx, at.String(), nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeOK(t, from) })
		}
		m := message(i, 20)
		if err := from.WriteTo(ctx, m, a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		n, got, err := a.ReadFrom(ctx, buf)
		if err != nil || got != at || !bytes.Equal(buf[:n], m) {
			t.Fatalf("datagram %d: %d bytes from %v, %v", i, n, got, err)
		}
		if err := a.WriteTo(ctx, m, at); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, got, err = from.ReadFrom(short, buf)
		cancel()
		if err != nil || got != a.LocalAddr() || !bytes.Equal(buf[:n], m) {
			t.Fatalf("answer %d: %d bytes from %v, %v", i, n, got, err)
		}
	}
}

// TestPacketCloseWhileWriting: Close while another goroutine writes
// ends the writes with ErrClosed, and a WriteTo begun while Close frees
// things fails so too (and, under the race detector, reads nothing Close
// changes without the lock).
func TestPacketCloseWhileWriting(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	msg := make([]byte, 32)
	if err := a.WriteTo(ctx, msg, b.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var first error
		for {
			// The last WriteTo begins after Close has returned.
			var last bool
			select {
			case <-closed:
				last = true
			default:
			}
			err := a.WriteTo(ctx, msg, b.LocalAddr())
			if err != nil && first == nil {
				first = err
			}
			if first != nil && !errors.Is(err, rdmamsg.ErrClosed) {
				first = fmt.Errorf("after %v: %w", first, err)
			}
			if last {
				done <- first
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	closeOK(t, a)
	close(closed)
	if err := <-done; !errors.Is(err, rdmamsg.ErrClosed) || strings.Contains(err.Error(), "after") {
		t.Errorf("WriteTo during Close: %v", err)
	}
}

// TestPacketLookupWaitCallersTime: a WriteTo that waits for other lookups
// under a context whose deadline comes with its LookupTimeout, or just
// before, fails with the context's error, not one naming LookupTimeout:
// the wait's timer for LookupTimeout could fire before the context's own
// timer had ended it, and the error then blamed PacketConfig.LookupTimeout
// for the caller's deadline.
func TestPacketLookupWaitCallersTime(t *testing.T) {
	na, nb := ends(t)
	ctx := timeout(t, 120*time.Second)
	const lookupTimeout = time.Second
	b, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), &rdmamsg.PacketConfig{LookupTimeout: lookupTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	// rdma_cm UD listeners that take no request: 4 lookups of them, as
	// many as run at once, keep the others waiting.
	var dsts []netip.AddrPort
	for range 12 {
		l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmacm.Config{UD: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		dsts = append(dsts, l.Addr())
	}
	var blamed atomic.Int32
	for range 3 {
		errs := make(chan error, len(dsts))
		for _, to := range dsts[:4] {
			go func() { errs <- b.WriteTo(ctx, []byte("x"), to) }()
		}
		// The 4 lookups under way, and the others' time running out
		// as theirs does, or a little before.
		time.Sleep(10 * time.Millisecond)
		for _, to := range dsts[4:] {
			go func() {
				wctx, cancel := context.WithTimeout(ctx, lookupTimeout)
				defer cancel()
				err := b.WriteTo(wctx, []byte("x"), to)
				if err != nil && strings.Contains(err.Error(), "LookupTimeout") {
					blamed.Add(1)
					err = fmt.Errorf("blamed LookupTimeout for its context's deadline: %w", err)
				}
				errs <- err
			}()
		}
		for range dsts {
			if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("WriteTo a destination that does not answer: %v, want context.DeadlineExceeded", err)
			}
		}
	}
	if n := blamed.Load(); n > 0 {
		t.Errorf("%d of %d WriteTos that waited for other lookups blamed LookupTimeout for their context's deadline", n, 3*8)
	}
}
