//go:build linux && cgo

package bench

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestGIDMismatch: GIDs of different IP families, or of different RoCE
// versions, are refused with both GIDs named and the flags that choose
// others; GIDs that match, or one unknown, pass.
func TestGIDMismatch(t *testing.T) {
	gid, ep := mustGID, gidEndpoint
	v4 := ibverbs.GIDEntry{Index: 1, GID: gid("::ffff:198.18.0.1"), Type: ibverbs.GIDTypeRoCEv2}
	v6 := ibverbs.GIDEntry{Index: 0, GID: gid("fe80::1"), Type: ibverbs.GIDTypeRoCEv2}
	v4v1 := v4
	v4v1.Type, v4v1.Index = ibverbs.GIDTypeRoCEv1, 3
	for _, c := range []struct {
		name          string
		local, remote ibverbs.GIDEntry
		want          []string // nil: compatible
	}{
		{"both IPv4", v4, v4, nil},
		{"both IPv6", v6, v6, nil},
		{"IPv6 to IPv4", v6, v4, []string{"index 0, fe80::1 (RoCE v2, IPv6)", "index 1, 198.18.0.1 (RoCE v2, IPv4)", "one IP family", "-x", "--gid-family"}},
		{"IPv4 to IPv6", v4, v6, []string{"index 1, 198.18.0.1 (RoCE v2, IPv4)", "index 0, fe80::1 (RoCE v2, IPv6)", "one IP family"}},
		{"v2 to v1", v4, v4v1, []string{"index 3, 198.18.0.1 (RoCE v1, IPv4)", "one RoCE version"}},
		{"type unknown", v4, ibverbs.GIDEntry{Index: 2, GID: v4.GID}, nil},
		{"no GID", v4, ibverbs.GIDEntry{}, nil},
	} {
		err := gidMismatch(c.local, ep(c.remote))
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want nil", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: nil, want a mismatch", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
}

// mustGID is the GID of the address s.
func mustGID(s string) ibverbs.GID { return ibverbs.GID(netip.MustParseAddr(s).As16()) }

// gidEndpoint is the Endpoint a peer sends of its GID e.
func gidEndpoint(e ibverbs.GIDEntry) ibverbs.Endpoint {
	return ibverbs.Endpoint{GID: e.GID, GIDIndex: uint8(e.Index), GIDType: e.Type}
}
