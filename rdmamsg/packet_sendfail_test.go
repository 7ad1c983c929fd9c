//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestPacketSendFailure: a datagram whose send fails is one datagram
// lost, as UDP loses one, not the end of the PacketConn. b's link goes
// down, b sends one datagram to a (soft-RoCE fails its send,
// IBV_WC_LOC_QP_OP_ERR, and its QP goes to the error state), and the link
// comes back: then datagrams go both ways between a and b again, and a
// PacketConn made since reaches b, and b's Stats count the datagram
// lost. (The failed send failed the PacketConn for good: its ReadFrom and
// WriteTo returned the completion's error, naming no destination, and it
// went on answering lookups with the QP that took nothing.) It needs the
// rxe VM's two devices, and root, to take b's netdev (RXE_NETDEV2) down.
func TestPacketSendFailure(t *testing.T) {
	na, nb := ends(t)
	nd := secondNetdev(t, na, nb)
	a, b := packetPair(t)
	ctx := timeout(t, 90*time.Second)
	buf := make([]byte, a.MaxDatagram())
	// probe sends msg from one to the other, a few times where it is
	// lost, until it arrives from the sender's address.
	probe := func(what string, from, to *rdmamsg.PacketConn, msg string) {
		t.Helper()
		var errs []error
		for range 5 {
			if err := from.WriteTo(ctx, []byte(msg), to.LocalAddr()); err != nil {
				errs = append(errs, err)
				continue
			}
			short, cancel := context.WithTimeout(ctx, time.Second)
			n, sender, err := to.ReadFrom(short, buf)
			cancel()
			if err == nil && bytes.Equal(buf[:n], []byte(msg)) && sender == from.LocalAddr() {
				return
			}
			errs = append(errs, err)
		}
		t.Fatalf("%s: %q from %v to %v did not arrive in 5 tries: %v", what, msg, from.LocalAddr(), to.LocalAddr(), errors.Join(errs...))
	}
	probe("before", a, b, "a to b")
	probe("before", b, a, "b to a")

	up := linkDown(t, nd, na.Dev, nb.Dev)
	if err := b.WriteTo(ctx, []byte("lost"), a.LocalAddr()); err != nil {
		t.Errorf("WriteTo with the link down: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	st, err := b.QP().State()
	t.Logf("b's QP after its send with the link down, before the completion is taken: %v (%v)", st, err)
	// A read takes the send's completion; it finds no datagram, and no
	// failure.
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().Failed == 0 && time.Now().Before(deadline) {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _, err := b.ReadFrom(short, buf)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ReadFrom after a send failed, the link down: %v, want its context's end", err)
		}
	}
	if st := b.Stats(); st.Failed != 1 || st.Sent != 2 {
		t.Errorf("Stats after one send with the link down: %+v, want Sent 2, Failed 1", st)
	}
	// More than the send buffers, still down: each posted is lost, those
	// on the wire when the QP is brought back included, and every buffer
	// comes back once.
	posted := 0
	for i := range 40 {
		if err := b.WriteTo(ctx, message(i, 100), a.LocalAddr()); err != nil {
			t.Logf("WriteTo %d with the link down: %v", i, err)
			continue
		}
		posted++
	}
	deadline = time.Now().Add(10 * time.Second)
	for b.Stats().Failed < uint64(1+posted) && time.Now().Before(deadline) {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _, err := b.ReadFrom(short, buf)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ReadFrom after sends failed, the link down: %v, want its context's end", err)
		}
	}
	if st := b.Stats(); st.Failed != uint64(1+posted) || st.Sent != uint64(2+posted) {
		t.Errorf("Stats after %d more sends posted with the link down: %+v, want Sent %d, Failed %d", posted, st, 2+posted, 1+posted)
	}
	free, onWire := rdmamsg.PacketSendState(b)
	slices.Sort(free)
	if onWire != 0 || len(free) != 16 || len(slices.Compact(slices.Clone(free))) != 16 {
		t.Errorf("after the sends failed: free send buffers %v, %d on the wire; want each of the 16 free once", free, onWire)
	}
	up()

	probe("after", b, a, "b to a again")
	probe("after", a, b, "a to b again")
	c, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, c)
	probe("a PacketConn made after", c, b, "c to b")
	probe("a PacketConn made after", b, c, "b to c")
	if st := b.Stats(); st.Failed != uint64(1+posted) {
		t.Errorf("b's Stats at the end: %+v, want Failed %d", st, 1+posted)
	}
}

// TestPacketRestartFails: where the QP cannot be brought back after a
// send failed (an error put in restart's way here), the PacketConn fails,
// with an error that names the datagram's destination and says why it
// ended, and rejects lookups, so that a new peer's WriteTo fails at once
// (ECONNREFUSED) rather than send datagrams that vanish. It needs what
// TestPacketSendFailure needs.
func TestPacketRestartFails(t *testing.T) {
	na, nb := ends(t)
	nd := secondNetdev(t, na, nb)
	injected := errors.New("injected")
	defer rdmamsg.SetRestartError(injected)()
	a, b := packetPair(t)
	ctx := timeout(t, 90*time.Second)
	buf := make([]byte, a.MaxDatagram())
	if err := b.WriteTo(ctx, []byte("known"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	up := linkDown(t, nd, na.Dev, nb.Dev)
	if err := b.WriteTo(ctx, []byte("lost"), a.LocalAddr()); err != nil {
		t.Fatalf("WriteTo with the link down: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, _, err := b.ReadFrom(short, buf)
	cancel()
	up()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, injected) || !errors.As(err, new(*ibverbs.WCError)) ||
			!strings.Contains(err.Error(), "to "+a.LocalAddr().String()) || !strings.Contains(err.Error(), "ends the PacketConn") {
			t.Errorf("%s: %v, want the failed send's error, naming its destination %v, and that the QP could not be brought back", what, err, a.LocalAddr())
		}
	}
	check("ReadFrom", err)
	check("WriteTo", b.WriteTo(ctx, []byte("after"), a.LocalAddr()))
	c, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, c)
	begin := time.Now()
	err = c.WriteTo(ctx, []byte("to a failed PacketConn"), b.LocalAddr())
	if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(begin) > 3*time.Second {
		t.Errorf("a lookup of a failed PacketConn: %v after %v, want ECONNREFUSED at once", err, time.Since(begin))
	}
}
