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
