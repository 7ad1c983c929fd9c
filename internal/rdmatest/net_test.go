//go:build linux && cgo

package rdmatest

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestCheckTestAddr checks which values of GORPERF_TEST_ADDR are taken:
// an IPv4 address that is both this host's and the device's, and no other.
func TestCheckTestAddr(t *testing.T) {
	a := netip.MustParseAddr
	local := []netip.Addr{a("127.0.0.1"), a("10.1.2.3"), a("198.18.0.1"), a("192.0.2.7")}
	gids := []netip.Addr{a("10.1.2.3"), a("198.18.0.1")}
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "10.1.2.3", want: "10.1.2.3"},     // a NIC's own address, outside TestRange
		{in: "198.18.0.1", want: "198.18.0.1"}, // the VM's
		{in: "::ffff:10.1.2.3", want: "10.1.2.3"},
		{in: "10.1.2.4", err: "not an address of this host's interfaces"}, // another host's: never sent to
		{in: "198.18.0.3", err: "not an address of this host's interfaces"},
		{in: "127.0.0.1", err: "not an address of rxe0"}, // this host's, not the device's
		{in: "192.0.2.7", err: "not an address of rxe0"},
		{in: "fe80::1", err: "not an IPv4 address"},
		{in: "10.1.2.3:7471", err: "not an IP address"},
		{in: "eth0", err: "not an IP address"},
	} {
		ip, err := checkTestAddr(tc.in, "rxe0", local, gids)
		switch {
		case tc.err == "" && (err != nil || ip.String() != tc.want):
			t.Errorf("%s: %v, %v; want %s", tc.in, ip, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, %v; want an error saying %q", tc.in, ip, err, tc.err)
		case err != nil && !strings.HasPrefix(err.Error(), AddrEnv+"="):
			t.Errorf("%s: error %q does not name %s", tc.in, err, AddrEnv)
		}
	}
}

// TestAddrOptIn runs Addr's search on the device under test with
// GORPERF_TEST_ADDR set to the device's own address, which it takes, and
// to addresses it refuses: loopback, which is this host's but not the
// device's, and one that is not this host's at all. Nothing is sent.
func TestAddrOptIn(t *testing.T) {
	info := Device(t)
	base, err := findAddr(info) // as Addr finds it here: RXE_IP in the VM
	if err != nil {
		t.Skipf("%v (the test needs an address of %s that Addr takes)", err, info.Name)
	}
	t.Logf("%s's address: %s", info.Name, base.IP)

	t.Setenv(AddrEnv, base.IP.String())
	if n := Addr(t); n != base {
		t.Errorf("Addr with %s=%s: %+v, want %+v", AddrEnv, base.IP, n, base)
	}
	local, err := localAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ip, err string }{
		{"127.0.0.1", "not an address of " + info.Name},
		{"198.18.0.3", "not an address of this host's interfaces"},
		{"not-an-ip", "not an IP address"},
	} {
		if ip, err := netip.ParseAddr(tc.ip); err == nil && ip != netip.MustParseAddr("127.0.0.1") && slices.Contains(local, ip) {
			t.Logf("%s is an address of this host: not tried", ip)
			continue
		}
		t.Setenv(AddrEnv, tc.ip)
		if n, err := findAddr(info); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s=%s: %+v, %v; want an error saying %q", AddrEnv, tc.ip, n, err, tc.err)
		}
	}
	// RXE_IP, the VM's, gives way to GORPERF_TEST_ADDR.
	t.Setenv("RXE_IP", "198.18.0.250")
	t.Setenv(AddrEnv, base.IP.String())
	if n, err := findAddr(info); err != nil || n != base {
		t.Errorf("with RXE_IP=198.18.0.250 and %s=%s: %+v, %v; want %+v", AddrEnv, base.IP, n, err, base)
	}
}
