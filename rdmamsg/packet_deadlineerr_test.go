//go:build linux && cgo

package rdmamsg_test

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestPacketLookupDeadlineNetError: a WriteTo whose write deadline
// passes during its lookup, or while it waits for another's (a fifth
// new destination at once), fails with an error that is a net.Error
// itself, whose Timeout is true, as package net's are, and that matches
// os.ErrDeadlineExceeded. (Both were fmt.Errorf's wrappers, which only
// errors.As found a net.Error in: err.(net.Error) failed.)
func TestPacketLookupDeadlineNetError(t *testing.T) {
	t.Parallel() // it waits out a deadline
	na, nb := ends(t)
	ctx := timeout(t, 60*time.Second)
	b, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(nb.IP, 0).String(), &rdmamsg.PacketConfig{LookupTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	// rdma_cm UD listeners that take no request: a lookup of one waits
	// for an answer that does not come.
	var dsts []netip.AddrPort
	for range 5 {
		l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmacm.Config{UD: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		dsts = append(dsts, l.Addr())
	}
	if err := b.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, len(dsts))
	for _, to := range dsts {
		go func() { errs <- b.WriteTo(ctx, []byte("x"), to) }()
	}
	for range dsts {
		err := <-errs
		ne, ok := err.(net.Error)
		if !ok || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("WriteTo whose write deadline passed in a lookup: %v (%T), want a net.Error whose Timeout is true, matching os.ErrDeadlineExceeded", err, err)
		}
	}
}
