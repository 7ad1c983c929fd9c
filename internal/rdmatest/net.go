//go:build linux && cgo

package rdmatest

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// Net is a device under test and the IPv4 address of its port, which
// rdma_cm tests listen on and dial from.
type Net struct {
	Dev string
	IP  netip.Addr
}

// TestRange holds every address a device test may send to, besides
// loopback: the soft-RoCE VM's (198.18.0.0/15), never another, unless
// GORPERF_TEST_ADDR names one of this host's own (AddrEnv).
var TestRange = netip.MustParsePrefix("198.18.0.0/15")

// AddrEnv names the variable by which a user opts in to device tests over
// an address of a device of this host outside TestRange, a NIC's own
// (GORPERF_TEST_ADDR=10.1.2.3): Addr returns it if it is an IPv4 address
// of one of this host's interfaces and of the device under test (one of
// its GIDs), and fails the test otherwise. The tests then send to that
// address, so to this host itself; the device loops the traffic back.
const AddrEnv = "GORPERF_TEST_ADDR"

func allowed(ip netip.Addr) bool { return TestRange.Contains(ip) || ip.IsLoopback() }

// Addr returns the device under test and its IPv4 address: GORPERF_TEST_ADDR
// where it is set (AddrEnv), else RXE_IP in the VM, else the device's own
// address if it is in TestRange; it skips (or fails, as Device does) when
// there is none.
func Addr(t testing.TB) Net {
	t.Helper()
	info := Device(t)
	n, err := findAddr(info)
	var none *noAddrError
	switch {
	case err == nil:
		return n
	case errors.As(err, &none) && Required():
		t.Fatalf("GORPERF_REQUIRE_DEVICE=1 but %v", err)
	case errors.As(err, &none):
		t.Skip(err)
	default:
		t.Fatal(err)
	}
	return Net{}
}

// noAddrError: the device has no address in TestRange, and none was named.
type noAddrError struct {
	dev  string
	have []netip.Addr // its IPv4 GIDs' addresses
}

func (e *noAddrError) Error() string {
	return fmt.Sprintf("%s has no IPv4 address in %s (its IPv4 GIDs: %v); set RXE_IP in the VM, "+
		"or %s to one of its addresses to run the tests over it, to this host itself (docs/testing-on-soft-roce.md)",
		e.dev, TestRange, e.have, AddrEnv)
}

// findAddr is Addr's search, which fails with a *noAddrError where the
// device has no address the tests may use and none was named.
func findAddr(info Info) (Net, error) {
	env, vm := os.Getenv(AddrEnv), os.Getenv("RXE_IP")
	if env == "" && vm != "" {
		ip, err := netip.ParseAddr(vm)
		if err != nil || !allowed(ip) {
			return Net{}, fmt.Errorf("RXE_IP=%q: not an address in %s (on a host, name one of its own with %s)", vm, TestRange, AddrEnv)
		}
		return Net{Dev: info.Name, IP: ip}, nil
	}
	gids, err := deviceIPv4s(info)
	if err != nil {
		return Net{}, err
	}
	if env != "" {
		local, err := localAddrs()
		if err != nil {
			return Net{}, err
		}
		ip, err := checkTestAddr(env, info.Name, local, gids)
		return Net{Dev: info.Name, IP: ip}, err
	}
	for _, ip := range gids {
		if allowed(ip) {
			return Net{Dev: info.Name, IP: ip}, nil
		}
	}
	return Net{}, &noAddrError{dev: info.Name, have: gids}
}

// checkTestAddr parses s, GORPERF_TEST_ADDR's value, and checks that it is
// an IPv4 address that both local (this host's interfaces' addresses) and
// gids (the device's IPv4 GIDs' addresses) hold.
func checkTestAddr(s, dev string, local, gids []netip.Addr) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s=%q: not an IP address", AddrEnv, s)
	}
	ip = ip.Unmap()
	if !ip.Is4() {
		return netip.Addr{}, fmt.Errorf("%s=%s: not an IPv4 address", AddrEnv, s)
	}
	if !slices.Contains(local, ip) {
		return netip.Addr{}, fmt.Errorf("%s=%s: not an address of this host's interfaces (%v): "+
			"device tests send only to this host's own addresses, loopback and %s", AddrEnv, ip, local, TestRange)
	}
	if !slices.Contains(gids, ip) {
		return netip.Addr{}, fmt.Errorf("%s=%s: not an address of %s (its IPv4 GIDs: %v): name one on its netdev, "+
			"or the device with GORPERF_TEST_DEVICE", AddrEnv, ip, dev, gids)
	}
	return ip, nil
}

// deviceIPv4s returns the IPv4 addresses of the GIDs of the device's port.
func deviceIPv4s(info Info) ([]netip.Addr, error) {
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	table, err := ctx.GIDTable(info.Port)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	for _, g := range table {
		if ip := g.IP(); ip.Is4() && !slices.Contains(ips, ip) {
			ips = append(ips, ip)
		}
	}
	return ips, nil
}

// localAddrs returns the IPv4 addresses of this host's interfaces (of its
// network namespace).
func localAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing this host's addresses: %w", err)
	}
	var ips []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
				ips = append(ips, ip.Unmap())
			}
		}
	}
	return ips, nil
}

// SecondAddr returns the VM's second device and its address (RXE_DEV2,
// RXE_IP2), or skips; with GORPERF_REQUIRE_DEVICE=1 in the VM it must be
// there.
func SecondAddr(t testing.TB) Net {
	t.Helper()
	name, s := os.Getenv("RXE_DEV2"), os.Getenv("RXE_IP2")
	if name == "" || s == "" {
		if Required() && os.Getenv("RXE_VM") == "1" {
			t.Fatal("GORPERF_REQUIRE_DEVICE=1 in the rxe VM but RXE_DEV2 is unset: run it with ci/rxe-vm/run -2")
		}
		t.Skip("no second device: RXE_DEV2 and RXE_IP2 are unset (ci/rxe-vm/run -2 sets them)")
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !allowed(ip) {
		t.Fatalf("RXE_IP2=%q: not an address in %s", s, TestRange)
	}
	return Net{Dev: name, IP: ip}
}

var nextPort atomic.Int32

// ListenAddr returns a new "ip:port" on the device's address (Addr) for a
// server that a test starts: the ports count up from base, one a call.
func ListenAddr(t testing.TB, base int) string {
	t.Helper()
	n := Addr(t)
	return netip.AddrPortFrom(n.IP, uint16(base+int(nextPort.Add(1)))).String()
}

// LinkLocalGID returns the first link-local RoCE v2 GID of port of the
// device dev that has a netdev (for the zone rdma_cm needs), skipping
// the test where there is none; with GORPERF_REQUIRE_DEVICE=1 it fails
// unless GORPERF_ALLOW_UNSUPPORTED lists link-local-gid.
func LinkLocalGID(t testing.TB, dev string, port int) ibverbs.GIDEntry {
	t.Helper()
	ctx, err := ibverbs.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	table, err := ctx.GIDTable(port)
	ctx.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range table {
		if a := e.IP(); e.Type == ibverbs.GIDTypeRoCEv2 && a.Is6() && a.IsLinkLocalUnicast() && e.Netdev != "" {
			return e
		}
	}
	Lacking(t, "link-local-gid", "%s port %d has no link-local RoCE v2 GID with a netdev", dev, port)
	return ibverbs.GIDEntry{}
}
