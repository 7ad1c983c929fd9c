//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestAcceptNilWithoutQP: accepting a request with no ConnParam on an ID
// without a QP is refused with EINVAL, where librdmacm read the nil
// parameters and the process died (SIGSEGV).
func TestAcceptNilWithoutQP(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 60*time.Second)
	ch, id := newID(t, rdmacm.PortSpaceTCP)
	if err := id.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
		t.Fatal(err)
	}
	if err := id.Listen(0); err != nil {
		t.Fatal(err)
	}
	dialed := dialAndClose(ctx, id.LocalAddr().String(), n.IP)
	var ev *rdmacm.Event
	var err error
	for ev == nil || ev.Type != rdmacm.EventConnectRequest {
		if ev, err = ch.GetEvent(ctx); err != nil {
			t.Fatal(err)
		}
	}
	err = ev.ID.Accept(nil)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CreateQP") {
		t.Errorf("Accept(nil) without a QP: %v, want EINVAL saying what it needs", err)
	}
	ev.ID.Reject(nil)
	closeOK(t, ev.ID)
	if err := <-dialed; err == nil {
		t.Error("Dial succeeded; the request was rejected")
	}
}

// TestPrivateDataLimits: private data longer than a request or reply of
// the port space carries over RoCE is refused before anything is made,
// with the limit, where the verb failed with a bare EINVAL after the QP
// was made (and, for Accept, after the peer had waited).
func TestPrivateDataLimits(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 60*time.Second)
	for _, tc := range []struct {
		ud   bool
		size int
		want string
	}{
		{false, 197, "at most 196"},
		{true, 137, "at most 136"},
	} {
		_, err := rdmacm.Listen(ctx, addr(n.IP, 0), &rdmacm.Config{UD: tc.ud, PrivateData: make([]byte, tc.size)})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Listen (UD %v) with %d bytes to reply: %v, want EINVAL and %q", tc.ud, tc.size, err, tc.want)
		}
	}
	l := listen(t, n.IP, nil)
	go func() {
		for {
			c, err := l.Accept(ctx)
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String(), PrivateData: make([]byte, 57)})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "at most 56") {
		t.Errorf("Dial with 57 bytes to send: %v, want EINVAL and the limit", err)
	}
	c, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String(), PrivateData: make([]byte, 56)})
	if err != nil {
		t.Fatalf("Dial with 56 bytes: %v", err)
	}
	closeOK(t, c)
	lu := listen(t, n.IP, &rdmacm.Config{UD: true})
	_, err = rdmacm.LookupUD(ctx, lu.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String(), PrivateData: make([]byte, 181)})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "at most 180") {
		t.Errorf("LookupUD with 181 bytes to send: %v, want EINVAL and the limit", err)
	}
}

// TestPrivateDataLimitsWildcard: a listener on a wildcard address, on no
// device, refuses reply data longer than the devices present (RoCE
// here) carry, where it took up to 255 bytes and then every Accept
// rejected its client.
func TestPrivateDataLimitsWildcard(t *testing.T) {
	device(t)
	for _, tc := range []struct {
		addr string
		ud   bool
		size int
		want string
	}{
		{"0.0.0.0:0", false, 197, "at most 196"},
		{"[::]:0", false, 197, "at most 196"},
		{"0.0.0.0:0", true, 137, "at most 136"},
	} {
		l, err := rdmacm.Listen(context.Background(), tc.addr, &rdmacm.Config{UD: tc.ud, PrivateData: make([]byte, tc.size)})
		if err == nil {
			closeOK(t, l)
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Listen(%s, UD %v) with %d bytes to reply: %v, want EINVAL and %q", tc.addr, tc.ud, tc.size, err, tc.want)
		}
		l, err = rdmacm.Listen(context.Background(), tc.addr, &rdmacm.Config{UD: tc.ud, PrivateData: make([]byte, tc.size-1)})
		if err != nil {
			t.Errorf("Listen(%s, UD %v) with %d bytes to reply: %v", tc.addr, tc.ud, tc.size-1, err)
		} else {
			closeOK(t, l)
		}
	}
}

// TestAcceptGivenUp: a request taken, and then accepted with a context
// that has ended, is rejected without a reply, so that its dialer fails
// with a *RejectedError, not with a connection torn down as it came up.
func TestAcceptGivenUp(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	accepted := make(chan error, 1)
	go func() {
		r, err := l.GetRequest(ctx)
		if err != nil {
			accepted <- err
			return
		}
		over, cancel := context.WithCancel(ctx)
		cancel()
		c, err := r.Accept(over, nil)
		if c != nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
	if c != nil {
		c.Close()
	}
	var rej *rdmacm.RejectedError
	if !errors.As(err, &rej) {
		t.Errorf("Dial to a listener that gave up on its request: %v, want a *RejectedError", err)
	}
	if err := <-accepted; !errors.Is(err, context.Canceled) {
		t.Errorf("Accept with a context that had ended: %v", err)
	}
}

// TestAcceptAfterPeerGaveUp: a request whose dialer gave up (its ID
// destroyed) once the listener had taken it fails to be accepted with
// ErrDisconnected, and not EINVAL, so that a server can tell it from its
// own failure; it was rdma_create_qp's bare EINVAL, and then both.
func TestAcceptAfterPeerGaveUp(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	// The request reaches the listener's channel; the dialer then goes.
	id, r := pendingRequest(t, ctx, n, l)
	if err := id.Close(); err != nil {
		t.Fatal(err)
	}
	// The kernel's REJ arrives: the request can no longer be answered.
	for deadline := time.Now().Add(10 * time.Second); !rdmacm.PeerGaveUp(r.ID()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request can still be answered 10s after its dialer went")
		}
	}
	c, err := r.Accept(ctx, nil)
	if c != nil {
		c.Close()
		t.Fatal("accepted a request whose dialer had gone")
	}
	if !errors.Is(err, rdmacm.ErrDisconnected) || errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "the peer gave up") {
		t.Errorf("Accept of a request whose dialer had gone: %v, want ErrDisconnected saying the peer gave up, not EINVAL", err)
	}
}

// TestRejectDataLimit: a reject's private data longer than the CM's REJ
// carries (148 bytes over RoCE) is refused with the limit and leaves the
// request as it was, where rdma_reject failed with a bare EINVAL and the
// request was refused all the same, without the data; the data that fits
// then reaches the dialer.
func TestRejectDataLimit(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	dialed := dialAndClose(ctx, l.Addr().String(), n.IP)
	r, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Reject(make([]byte, 149)); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "at most 148") {
		t.Errorf("Reject with 149 bytes: %v, want EINVAL and the limit", err)
	}
	if err := r.Reject([]byte("go away")); err != nil {
		t.Fatalf("Reject after a refused one: %v", err)
	}
	var rej *rdmacm.RejectedError
	if err := <-dialed; !errors.As(err, &rej) || rej.Reason() == "" || !strings.HasPrefix(string(rej.PrivateData), "go away") {
		t.Errorf("Dial: %v, want a *RejectedError with the reject's data", err)
	}
}

// TestLinkLocal: a link-local IPv6 address with its zone (the GID's
// netdev) binds and connects, where the zone was dropped and the kernel
// refused the address (EINVAL): the device's own link-local RoCE v2 GID,
// dialed from itself.
func TestLinkLocal(t *testing.T) {
	n := device(t)
	ll := rdmatest.LinkLocalGID(t, n.Dev, 1)
	ip := ll.IP().WithZone(ll.Netdev)
	l := listen(t, ip, nil)
	if got := l.Addr().Addr(); got != ip {
		t.Errorf("bound to %v, want %v", got, ip)
	}
	srv, cli := connect(t, l, ip, &rdmacm.Config{})
	if got := cli.RemoteAddr().Addr(); got != ip {
		t.Errorf("the dialer's peer is %v, want %v", got, ip)
	}
	// The kernel gives an accepted ID's addresses without the scope.
	if got := srv.LocalAddr().Addr(); got.WithZone("") != ip.WithZone("") {
		t.Errorf("the accepted side is at %v, want %v", got, ip)
	}
}
