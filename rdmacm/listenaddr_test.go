//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"net"
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
		acc := acceptOne(ctx, l)
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

// TestListenEmptyHostDualStack: Listen(":0") listens on :: and takes an
// IPv4 and an IPv6 Dial, as net.Listen does, where it listened on
// 0.0.0.0 and refused the IPv6 one.
func TestListenEmptyHostDualStack(t *testing.T) {
	n := device(t)
	ip6 := globalIPv6(t, n.IP)
	l, err := rdmacm.Listen(context.Background(), ":0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, l)
	if got := l.Addr().Addr(); got != netip.IPv6Unspecified() {
		t.Errorf("Listen(\":0\") is bound to %v, want ::", got)
	}
	for _, ip := range []netip.Addr{n.IP, ip6} {
		ctx := timeout(t, 60*time.Second)
		acc := acceptOne(ctx, l)
		c, err := rdmacm.Dial(ctx, addr(ip, l.Addr().Port()), &rdmacm.Config{SrcAddr: ip.String()})
		if err != nil {
			t.Errorf("Dial to %s, a listener on \":0\": %v", ip, err)
		} else {
			closeOK(t, c)
		}
		if err := <-acc; err != nil {
			t.Errorf("Accept of %s's Dial: %v", ip, err)
		}
	}
}

// globalIPv6 returns a global IPv6 address of the netdev that holds ip
// (the VM gives rxe0's 2001:2::1), or skips.
func globalIPv6(t *testing.T, ip netip.Addr) netip.Addr {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		as, _ := ifc.Addrs()
		var has bool
		var v6 netip.Addr
		for _, a := range as {
			p, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			if p.Addr() == ip {
				has = true
			}
			if a := p.Addr(); a.Is6() && !a.Is4In6() && a.IsGlobalUnicast() {
				v6 = a
			}
		}
		if has && v6.IsValid() {
			return v6
		}
	}
	t.Skipf("the netdev of %s has no global IPv6 address", ip)
	return netip.Addr{}
}

// TestListenPortClash: a Listen on a port another listener holds fails
// with an error matching syscall.EADDRINUSE, that names the address
// once: where one bind is a wildcard and the other specific, the
// kernel's EADDRNOTAVAIL, which matched only itself, also matches it;
// where the address came twice ("listen 198.18.0.1:P: 198.18.0.1:P:
// rdma_bind_addr: ...").
func TestListenPortClash(t *testing.T) {
	n := device(t)
	for _, tc := range []struct {
		first, second netip.Addr
		errno         syscall.Errno
	}{
		{netip.IPv4Unspecified(), n.IP, syscall.EADDRNOTAVAIL},
		{n.IP, netip.IPv4Unspecified(), syscall.EADDRNOTAVAIL},
		{n.IP, n.IP, syscall.EADDRINUSE},
	} {
		l := listen(t, tc.first, nil)
		a := addr(tc.second, l.Addr().Port())
		l2, err := rdmacm.Listen(context.Background(), a, nil)
		if err == nil {
			t.Errorf("Listen(%s) while %s listens: a listener", a, l.Addr())
			closeOK(t, l2)
			closeOK(t, l)
			continue
		}
		want := "rdmacm: listen " + a + ": rdma_bind_addr: "
		if !errors.Is(err, syscall.EADDRINUSE) || !errors.Is(err, tc.errno) ||
			!strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), a) != 1 {
			t.Errorf("Listen(%s) while %s listens: %q; want EADDRINUSE and %v, starting %q, the address once", a, l.Addr(), err, tc.errno, want)
		}
		closeOK(t, l)
	}
	// An address no device has is still EADDRNOTAVAIL alone, not a port
	// in use.
	_, err := rdmacm.Listen(context.Background(), "198.18.0.77:7471", nil)
	if errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Listen(198.18.0.77:7471), an address no netdev has: %v, which matches EADDRINUSE", err)
	}
}

// TestAcceptErrorAddr: Accept's errors name the address the listener is
// bound to, its port included, where a listener on port 0 said port 0.
func TestAcceptErrorAddr(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Accept(ctx)
	want := "rdmacm: accept " + l.Addr().String() + ": "
	if err == nil || !strings.HasPrefix(err.Error(), want) || l.Addr().Port() == 0 {
		t.Errorf("Accept with its ctx done, on a listener on %s: %v; want it to start %q", l.Addr(), err, want)
	}
}
