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

	"github.com/gorperf/gorperf/rdmacm"
)

// TestListenNoDeviceAddr: Listen refuses an address that no RDMA device
// has (loopback), RC and UD alike, with ENODEV and a message that says
// what to listen on instead, where rdma_bind_addr took it, left the ID
// on no device, and Listen returned a listener that no request could
// reach (a Dial to it fails: rdma_resolve_route finds no device).
func TestListenNoDeviceAddr(t *testing.T) {
	device(t)
	for _, tc := range []struct {
		addr, ip, wild string
		ud             bool
	}{
		{"127.0.0.1:0", "127.0.0.1", "0.0.0.0", false},
		{"127.0.0.1:0", "127.0.0.1", "0.0.0.0", true},
		{"[::1]:0", "::1", "::", false},
	} {
		l, err := rdmacm.Listen(context.Background(), tc.addr, &rdmacm.Config{UD: tc.ud})
		if err == nil {
			t.Errorf("Listen(%s, UD %v) = %v, a listener; want ENODEV", tc.addr, tc.ud, l.Addr())
			closeOK(t, l)
			continue
		}
		want := "rdmacm: listen " + tc.addr + ": no RDMA device has address " + tc.ip +
			" (listen on an address of an RDMA device's netdev, or on " + tc.wild + " for every device): no such device"
		if !errors.Is(err, syscall.ENODEV) || err.Error() != want {
			t.Errorf("Listen(%s, UD %v): %v; want ENODEV: %q", tc.addr, tc.ud, err, want)
		}
	}
}

// TestListenWildcard: the unspecified addresses still listen, on every
// device: a Dial to the device's address and the listener's port
// connects.
func TestListenWildcard(t *testing.T) {
	n := device(t)
	for _, a := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		l, err := rdmacm.Listen(context.Background(), a, nil)
		if err != nil {
			t.Errorf("Listen(%s): %v", a, err)
			continue
		}
		ctx := timeout(t, 60*time.Second)
		acc := make(chan error, 1)
		go func() {
			c, err := l.Accept(ctx)
			if c != nil {
				c.Close()
			}
			acc <- err
		}()
		c, err := rdmacm.Dial(ctx, addr(n.IP, l.Addr().Port()), &rdmacm.Config{SrcAddr: n.IP.String()})
		if err != nil {
			t.Errorf("Dial to a listener on %s (%s), at %s: %v", a, l.Addr(), n.IP, err)
		} else {
			closeOK(t, c)
		}
		if err := <-acc; err != nil {
			t.Errorf("Accept on %s: %v", a, err)
		}
		closeOK(t, l)
	}
}

// TestContextNoDeviceAddr: an ID bound to an address that no RDMA device
// has, as rdma_bind_addr allows (a datagram endpoint's, say, which then
// asks for its device), is on no device: Context says so, naming the
// address, where it said the ID was not bound yet.
func TestContextNoDeviceAddr(t *testing.T) {
	device(t)
	_, id := newID(t, rdmacm.PortSpaceUDP)
	if _, err := id.Context(); !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "not bound to a device yet") {
		t.Errorf("Context of an ID not bound: %v; want ENODEV, not bound yet", err)
	}
	if err := id.BindAddr(netip.MustParseAddrPort("127.0.0.1:0")); err != nil {
		t.Fatalf("BindAddr(127.0.0.1:0): %v (the kernel refused it: Listen need not)", err)
	}
	const want = "rdmacm: the ID is bound to 127.0.0.1, which no RDMA device has: no such device"
	if _, err := id.Context(); !errors.Is(err, syscall.ENODEV) || err.Error() != want {
		t.Errorf("Context of an ID bound to 127.0.0.1: %v; want %q", err, want)
	}
}
