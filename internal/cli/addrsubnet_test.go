//go:build linux && cgo

package cli

import (
	"net/netip"
	"testing"
)

// TestAddrSubnet: the subnet of an address of this host's is that of its
// netdev's address (loopback's 127.0.0.1/8); an address no netdev has has
// none.
func TestAddrSubnet(t *testing.T) {
	for _, nd := range []string{"lo", ""} {
		if p, ok := addrSubnet(nd, netip.MustParseAddr("127.0.0.1")); !ok || p != netip.MustParsePrefix("127.0.0.0/8") {
			t.Errorf("%q: %v, %v; want 127.0.0.0/8", nd, p, ok)
		}
	}
	if p, ok := addrSubnet("lo", netip.MustParseAddr("192.0.2.77")); ok {
		t.Errorf("192.0.2.77: %v, want none", p)
	}
}
