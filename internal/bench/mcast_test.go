//go:build linux && cgo

package bench

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

func TestGroupOf(t *testing.T) {
	v4 := ibverbs.GID(netip.MustParseAddr("::ffff:198.18.0.1").As16())
	v6 := ibverbs.GID(netip.MustParseAddr("2001:2::1").As16())
	var ib ibverbs.GID
	for _, c := range []struct {
		base   string
		gid    ibverbs.GID
		client bool
		want   string // or the error's text
	}{
		{"", v4, false, "239.255.0.1"},
		{"", v4, true, "239.255.0.2"},
		{"", v6, false, "ff05::114"},
		{"", v6, true, "ff05::115"},
		{"::ffff:239.1.2.3", v4, true, "239.1.2.4"},
		{"239.1.2.255", v4, true, "239.1.2.0"}, // the last byte wraps, as perftest's does
		{"ff0e::1", v4, false, "are not of one IP version"},
		{"239.1.2.3", v6, false, "are not of one IP version"},
		{"198.18.0.9", v4, false, "not a multicast address"},
		{"198.18.0.9", ib, false, "not a multicast address"},
	} {
		var base netip.Addr
		if c.base != "" {
			base = netip.MustParseAddr(c.base)
		}
		g, err := groupOf(base, c.gid, c.client)
		if got := g.String(); err != nil {
			got = err.Error()
			if !strings.Contains(got, c.want) {
				t.Errorf("groupOf(%q, %v, client %v) = %s, want %s", c.base, c.gid, c.client, got, c.want)
			}
		} else if got != c.want {
			t.Errorf("groupOf(%q, %v, client %v) = %s, want %s", c.base, c.gid, c.client, got, c.want)
		}
	}
}

// TestGroupOfIB: an InfiniBand port's GID is zero, of no family: the
// group's family is its own, IPv4's by default, where a zero GID took
// IPv6's default and refused an IPv4 group.
func TestGroupOfIB(t *testing.T) {
	var ib ibverbs.GID
	for _, c := range []struct {
		base   string
		client bool
		want   string
	}{
		{"", false, "239.255.0.1"},
		{"", true, "239.255.0.2"},
		{"ff0e::1", true, "ff0e::2"},
		{"::ffff:239.1.2.3", false, "239.1.2.3"},
		{"239.1.2.3", true, "239.1.2.4"},
	} {
		var base netip.Addr
		if c.base != "" {
			base = netip.MustParseAddr(c.base)
		}
		if g, err := groupOf(base, ib, c.client); err != nil || g.String() != c.want {
			t.Errorf("groupOf(%q, zero GID, client %v) = %v, %v; want %s", c.base, c.client, g, err, c.want)
		}
	}
}

// TestCMSrcAddr: rdma_cm binds to the GID's address on RoCE, and on an
// InfiniBand port, whose chosen GID is zero, to none (the route picks
// it), where it bound "::", which cannot resolve an IPv4 server.
func TestCMSrcAddr(t *testing.T) {
	gid := mustGID
	for _, tc := range []struct {
		e    ibverbs.GIDEntry
		want string
	}{
		{ibverbs.GIDEntry{GID: gid("::ffff:198.18.0.1"), Netdev: "eth0"}, "198.18.0.1"},
		{ibverbs.GIDEntry{GID: gid("fe80::1"), Netdev: "eth0"}, "fe80::1%eth0"},
		{ibverbs.GIDEntry{}, ""},
	} {
		s := &session{gid: ibverbs.GIDChoice{Entry: tc.e}}
		if got := s.cmSrcAddr(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.e, got, tc.want)
		}
	}
}
