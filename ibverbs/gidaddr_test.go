//go:build linux && cgo

package ibverbs

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// addrFlags matches a GID to its netdev's address: an IPv4-mapped GID to
// the IPv4 address, else to ::ffff:a.b.c.d configured as IPv6.
func TestIfNamesAddrFlags(t *testing.T) {
	old := netAddrs
	t.Cleanup(func() { netAddrs = old })
	calls := 0
	netAddrs = func() (map[int][]ifAddr, error) {
		calls++
		return map[int][]ifAddr{
			3: {
				{addr: netip.MustParseAddr("198.18.0.2")},
				{addr: netip.MustParseAddr("::ffff:198.18.0.2")}, // both: IPv4 wins
				{addr: netip.MustParseAddr("::ffff:198.18.0.99")},
				{addr: netip.MustParseAddr("2001:2:0:5::2"), flags: AddrDeprecated},
				{addr: netip.MustParseAddr("2001:2::77"), flags: AddrTentative | AddrDADFailed},
			},
		}, nil
	}
	var n ifNames
	for _, tt := range []struct {
		gid    string
		ifi    int
		flags  AddrFlags
		mapped bool
	}{
		{"::ffff:198.18.0.2", 3, 0, false},
		{"::ffff:198.18.0.99", 3, 0, true},
		{"2001:2:0:5::2", 3, AddrDeprecated, false},
		{"2001:2::77", 3, AddrTentative | AddrDADFailed, false},
		{"2001:2::77", 4, 0, false}, // another netdev's
		{"2001:2::1", 3, 0, false},
	} {
		e := GIDEntry{GID: mustGID(t, tt.gid), Type: GIDTypeRoCEv2, Ifindex: tt.ifi}
		n.addrFlags(&e)
		if e.AddrFlags != tt.flags || e.MappedIPv6 != tt.mapped {
			t.Errorf("%s on %d: flags %q mapped %v, want %q %v", tt.gid, tt.ifi, e.AddrFlags, e.MappedIPv6, tt.flags, tt.mapped)
		}
	}
	if calls != 1 {
		t.Errorf("dumped the addresses %d times, want once", calls)
	}
}

// dumpAddrs finds the loopback interface's 127.0.0.1, unmapped.
func TestDumpAddrs(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip("no lo:", err)
	}
	m, err := dumpAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range m[lo.Index] {
		if a.addr == netip.MustParseAddr("127.0.0.1") {
			return
		}
	}
	t.Errorf("lo (index %d) addresses %v lack 127.0.0.1", lo.Index, m[lo.Index])
}

// TestAddrFlagValues: the flags spelled out in gid.go are the kernel's.
func TestAddrFlagValues(t *testing.T) {
	for _, c := range []struct {
		got  AddrFlags
		want int
	}{{AddrDADFailed, unix.IFA_F_DADFAILED}, {AddrDeprecated, unix.IFA_F_DEPRECATED}, {AddrTentative, unix.IFA_F_TENTATIVE}} {
		if uint32(c.got) != uint32(c.want) {
			t.Errorf("%v = %#x, the kernel's %#x", c.got, uint32(c.got), c.want)
		}
	}
}
