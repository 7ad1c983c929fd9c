//go:build linux && cgo

package rdmatest

import (
	"net/netip"
	"os"
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
// loopback: the soft-RoCE VM's (198.18.0.0/15), never another.
var TestRange = netip.MustParsePrefix("198.18.0.0/15")

func allowed(ip netip.Addr) bool { return TestRange.Contains(ip) || ip.IsLoopback() }

// Addr returns the device under test and its IPv4 address: RXE_IP in the
// VM, else the device's own address if it is one the tests may use; it
// skips (or fails, as Device does) when there is none.
func Addr(t testing.TB) Net {
	t.Helper()
	info := Device(t)
	if s := os.Getenv("RXE_IP"); s != "" {
		ip, err := netip.ParseAddr(s)
		if err != nil || !allowed(ip) {
			t.Fatalf("RXE_IP=%q: not an address in %s", s, TestRange)
		}
		return Net{Dev: info.Name, IP: ip}
	}
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	gids, err := ctx.GIDTable(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gids {
		if ip := g.IP(); ip.Is4() && allowed(ip) {
			return Net{Dev: info.Name, IP: ip}
		}
	}
	msg := "%s has no IPv4 address in %s; set RXE_IP"
	if Required() {
		t.Fatalf("GORPERF_REQUIRE_DEVICE=1 but "+msg, info.Name, TestRange)
	}
	t.Skipf(msg, info.Name, TestRange)
	return Net{}
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
// the test where there is none.
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
	t.Skipf("%s port %d has no link-local RoCE v2 GID with a netdev", dev, port)
	return ibverbs.GIDEntry{}
}
