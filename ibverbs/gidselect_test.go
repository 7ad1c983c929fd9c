package ibverbs

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func mustGID(t *testing.T, s string) GID {
	t.Helper()
	g, err := ParseGID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A ConnectX-style table: each address has a RoCE v1 and a v2 entry, the
// link-local pair first, then IPv4, then a global IPv6 address.
func mlxTable(t *testing.T) []GIDEntry {
	return []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv1, Netdev: "eth0"},
		{Index: 1, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
		{Index: 2, GID: mustGID(t, "2001:db8::5"), Type: GIDTypeRoCEv1, Netdev: "eth0"},
		{Index: 3, GID: mustGID(t, "2001:db8::5"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
		{Index: 4, GID: mustGID(t, "::ffff:198.18.0.1"), Type: GIDTypeRoCEv1, Netdev: "eth0"},
		{Index: 5, GID: mustGID(t, "::ffff:198.18.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
		{Index: 6, GID: mustGID(t, "::ffff:198.19.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth1.100"},
	}
}

func TestSelectGID(t *testing.T) {
	tests := []struct {
		name string
		rule GIDRule
		want int
	}{
		{"default prefers IPv4 over an earlier IPv6", GIDRule{}, 5},
		{"IPv6", GIDRule{Family: 6}, 3},
		{"by address", GIDRule{Addr: netip.MustParseAddr("198.19.0.1")}, 6},
		{"by subnet", GIDRule{Prefix: netip.MustParsePrefix("198.19.0.0/16")}, 6},
		{"by IPv4-mapped subnet", GIDRule{Prefix: netip.MustParsePrefix("::ffff:198.19.0.0/112")}, 6},
		{"by IPv6 subnet", GIDRule{Prefix: netip.MustParsePrefix("2001:db8::/32")}, 3},
		{"any IPv6", GIDRule{Prefix: netip.MustParsePrefix("::/0")}, 3},
		{"by netdev", GIDRule{Netdev: "eth1.100"}, 6},
		{"link-local on request, routable first", GIDRule{Family: 6, AllowLinkLocal: true}, 3},
		{"link-local on request, in its subnet", GIDRule{Prefix: netip.MustParsePrefix("fe80::/10"), AllowLinkLocal: true}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := SelectGID(mlxTable(t), tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if c.Entry.Index != tt.want {
				t.Fatalf("chose %d, want %d\n%s", c.Entry.Index, tt.want, c.Explain())
			}
			if len(c.Skipped) != len(mlxTable(t))-1 {
				t.Errorf("%d entries explained as skipped, want %d", len(c.Skipped), len(mlxTable(t))-1)
			}
		})
	}
}

func TestSelectGIDReasons(t *testing.T) {
	c, err := SelectGID(mlxTable(t), GIDRule{})
	if err != nil {
		t.Fatal(err)
	}
	why := map[int]string{}
	for _, s := range c.Skipped {
		why[s.Entry.Index] = s.Reason
	}
	for idx, want := range map[int]string{
		0: "RoCE v1 twin of index 1",
		1: "link-local",
		3: "IPv4, which is preferred",
		4: "RoCE v1 twin of index 5",
		6: "index 5 comes first",
	} {
		if !strings.Contains(why[idx], want) {
			t.Errorf("index %d skipped for %q, want it to say %q", idx, why[idx], want)
		}
	}
	if !strings.Contains(c.Reason, "IPv4 RoCE v2") || !strings.Contains(c.Explain(), "chose GID index 5") {
		t.Errorf("reason %q / explanation %q", c.Reason, c.Explain())
	}
}

func TestSelectGIDNone(t *testing.T) {
	table := []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2},
		{Index: 1, Type: GIDTypeRoCEv2},
		{Index: 2, GID: mustGID(t, "::ffff:10.1.1.1"), Type: GIDTypeIB},
	}
	_, err := SelectGID(table, GIDRule{})
	var ne *NoGIDError
	if !errors.As(err, &ne) || len(ne.Skipped) != 3 {
		t.Fatalf("err = %v, want a NoGIDError naming 3 entries", err)
	}
	for _, want := range []string{"link-local", "empty", "IB, not RoCE v2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if _, err := SelectGID(nil, GIDRule{}); err == nil || !strings.Contains(err.Error(), "table is empty") {
		t.Errorf("empty table: %v", err)
	}
	if _, err := SelectGID(mlxTable(t), GIDRule{Netdev: "eth9"}); err == nil || !strings.Contains(err.Error(), "on eth0, not eth9") {
		t.Errorf("wrong netdev: %v", err)
	}
}

// A Family other than 0, 4 and 6 is refused with EINVAL: 5, -4 and 46
// were taken as either family with no preference (the IPv6 entry won on
// its index here), while the rule's text said IPv4 was preferred.
func TestSelectGIDBadFamily(t *testing.T) {
	for _, f := range []int{5, -4, 46} {
		ch, err := SelectGID(mlxTable(t), GIDRule{Family: f})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "GIDRule.Family "+strconv.Itoa(f)) {
			t.Errorf("Family %d: chose index %d (%v); want EINVAL naming the family", f, ch.Entry.Index, err)
		}
	}
	for _, f := range []int{0, 4, 6} {
		if _, err := SelectGID(mlxTable(t), GIDRule{Family: f}); err != nil {
			t.Errorf("Family %d: %v", f, err)
		}
	}
}

// TestSelectGIDIndexPast255 checks that an entry the 8-bit sgid_index
// cannot name is never chosen: soft-RoCE's table has 1024 slots, and a
// netdev with many addresses fills them past 255.
func TestSelectGIDIndexPast255(t *testing.T) {
	table := []GIDEntry{
		{Index: 3, GID: mustGID(t, "2001:db8::5"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
		{Index: 255, GID: mustGID(t, "2001:db8::ff"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
		{Index: 256, GID: mustGID(t, "::ffff:198.18.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
		{Index: 1000, GID: mustGID(t, "2001:db8::1:1"), Type: GIDTypeRoCEv2, Netdev: "eth0"},
	}
	tests := []struct {
		name string
		rule GIDRule
		want int // -1: none
	}{
		// The IPv4 entry would be preferred, but its index is 256.
		{"default passes over the IPv4 entry at 256", GIDRule{}, 3},
		{"255 is the last usable index", GIDRule{Addr: netip.MustParseAddr("2001:db8::ff")}, 255},
		{"by address, at 256", GIDRule{Addr: netip.MustParseAddr("198.18.0.1")}, -1},
		{"IPv4 only", GIDRule{Family: 4}, -1},
		{"by address, at 1000", GIDRule{Addr: netip.MustParseAddr("2001:db8::1:1")}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := SelectGID(table, tt.rule)
			if tt.want < 0 {
				var ne *NoGIDError
				if !errors.As(err, &ne) {
					t.Fatalf("chose %d (err %v), want a NoGIDError", c.Entry.Index, err)
				}
				if !strings.Contains(err.Error(), "past 255") {
					t.Errorf("%q does not say why the entry past 255 was skipped", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Entry.Index != tt.want {
				t.Fatalf("chose %d, want %d\n%s", c.Entry.Index, tt.want, c.Explain())
			}
			for _, s := range c.Skipped {
				// Under the default rule only the index rules these out.
				if tt.rule == (GIDRule{}) && s.Entry.Index > 255 && !strings.Contains(s.Reason, "8-bit GID index") {
					t.Errorf("index %d skipped for %q", s.Entry.Index, s.Reason)
				}
			}
		})
	}
}

// TestSelectGIDLinkLocal covers link-local GIDs of both families, and a
// rule's address with a zone, as a link-local socket address has.
func TestSelectGIDLinkLocal(t *testing.T) {
	table := []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv1, Netdev: "eth0", Ifindex: 2},
		{Index: 1, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
		{Index: 2, GID: mustGID(t, "::ffff:169.254.7.7"), Type: GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
		{Index: 3, GID: mustGID(t, "fe80::2"), Type: GIDTypeRoCEv2, Netdev: "eth1", Ifindex: 3},
	}
	tests := []struct {
		name string
		rule GIDRule
		want int    // -1: none
		why  string // with want -1: what the error must say
	}{
		{"none routable", GIDRule{}, -1, "index 2 ::ffff:169.254.7.7: link-local (169.254.0.0/16)"},
		{"IPv6 is fe80::/10", GIDRule{Family: 6}, -1, "index 1 fe80::1: link-local (fe80::/10)"},
		{"IPv4 link-local on request", GIDRule{AllowLinkLocal: true}, 2, ""},
		{"named link-local address", GIDRule{Addr: netip.MustParseAddr("fe80::2")}, 3, ""},
		{"named IPv4 link-local address", GIDRule{Addr: netip.MustParseAddr("169.254.7.7")}, 2, ""},
		{"zone by name", GIDRule{Addr: netip.MustParseAddr("fe80::1%eth0")}, 1, ""},
		{"zone by name, link-local allowed", GIDRule{Addr: netip.MustParseAddr("fe80::2%eth1"), AllowLinkLocal: true}, 3, ""},
		{"zone by index", GIDRule{Addr: netip.MustParseAddr("fe80::1%2")}, 1, ""},
		{"zone of another netdev", GIDRule{Addr: netip.MustParseAddr("fe80::1%eth1")}, -1, "index 1 fe80::1: on eth0, not zone eth1"},
		{"zone of another index", GIDRule{Addr: netip.MustParseAddr("fe80::2%2")}, -1, "on eth1, not zone 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := SelectGID(table, tt.rule)
			if tt.want < 0 {
				if err == nil {
					t.Fatalf("chose %d, want none\n%s", c.Entry.Index, c.Explain())
				}
				if !strings.Contains(err.Error(), tt.why) {
					t.Errorf("%q lacks %q", err, tt.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Entry.Index != tt.want {
				t.Fatalf("chose %d, want %d\n%s", c.Entry.Index, tt.want, c.Explain())
			}
		})
	}
	if !mustGID(t, "::ffff:169.254.7.7").IsLinkLocal() || mustGID(t, "::ffff:169.255.7.7").IsLinkLocal() {
		t.Error("IsLinkLocal is wrong about IPv4's 169.254.0.0/16")
	}
}

func TestGIDText(t *testing.T) {
	for in, want := range map[string]string{
		"198.18.0.1":        "::ffff:198.18.0.1",
		"::ffff:198.18.0.1": "::ffff:198.18.0.1",
		"0000:0000:0000:0000:0000:ffff:c612:0001": "::ffff:198.18.0.1",
		"fe80::1": "fe80::1",
		// A zone names a netdev, which a GID has not: it is dropped,
		// as the doc says.
		"fe80::1%rxeveth0": "fe80::1",
	} {
		g, err := ParseGID(in)
		if err != nil || g.String() != want {
			t.Errorf("ParseGID(%q) = %v, %v; want %s", in, g, err, want)
		}
	}
	g := mustGID(t, "198.18.0.1")
	if g.Hex() != "0000:0000:0000:0000:0000:ffff:c612:0001" || !g.Addr().Is4() || g.IsLinkLocal() {
		t.Errorf("Hex %s Addr %v", g.Hex(), g.Addr())
	}
	if _, err := ParseGID("not a gid"); err == nil {
		t.Error("ParseGID accepted garbage")
	}
}

func TestEnumStrings(t *testing.T) {
	for got, want := range map[string]string{
		WCRemAccessErr.String(): "REM_ACCESS_ERR",
		WCStatus(99).String():   "WCStatus(99)",
		MTU1024.String():        "1024",
		MTU(9).String():         "MTU(9)",
		(AccessLocalWrite | AccessRemoteRead | 1<<30).String(): "LOCAL_WRITE|REMOTE_READ|0x40000000",
		QPTypeUD.String():      "UD",
		EventPortErr.String():  "PORT_ERR",
		GIDTypeRoCEv2.String(): "RoCE v2",
		PortActive.String():    "ACTIVE",
		SendFlags(0).String():  "0",
		MWType2.String():       "type 2",
		MWType(0).String():     "MWType(0)",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if m, err := MTUFromBytes(4096); err != nil || m != MTU4096 {
		t.Errorf("MTUFromBytes(4096) = %v, %v", m, err)
	}
	if _, err := MTUFromBytes(1500); err == nil {
		t.Error("MTUFromBytes(1500) accepted")
	}
	if q, err := ParseQPType("UC"); err != nil || q != QPTypeUC {
		t.Errorf("ParseQPType(UC) = %v, %v", q, err)
	}
}

// TestSelectGIDExplains covers the choice among several candidates and
// the words for it: ranking (routable, then IPv4, then index), a v1
// entry's twin on its own netdev, every other entry explained in table
// order and relative to the entry chosen, ties named in the reason, and a
// link-local address without a zone that two netdevs have refused.
func TestSelectGIDExplains(t *testing.T) {
	v2 := func(i int, gid, nd string, ifx int) GIDEntry {
		return GIDEntry{Index: i, GID: mustGID(t, gid), Type: GIDTypeRoCEv2, Netdev: nd, Ifindex: ifx}
	}
	v1 := func(i int, gid, nd string, ifx int) GIDEntry {
		e := v2(i, gid, nd, ifx)
		e.Type = GIDTypeRoCEv1
		return e
	}
	// mlx5 with a VLAN: eth0.100 shares eth0's MAC, so its link-local GID.
	vlan := []GIDEntry{
		v1(0, "fe80::1", "eth0", 2), v2(1, "fe80::1", "eth0", 2),
		v1(2, "::ffff:10.0.0.1", "eth0", 2), v2(3, "::ffff:10.0.0.1", "eth0", 2),
		v1(4, "fe80::1", "eth0.100", 5), v2(5, "fe80::1", "eth0.100", 5),
	}
	tests := []struct {
		name   string
		table  []GIDEntry
		rule   GIDRule
		want   int            // the index chosen; -1: none
		reason string         // in the choice's Reason, or the error
		why    map[int]string // in the reason each index was skipped for
	}{
		{"v1 twin on its own netdev", vlan, GIDRule{}, 3, "first routable IPv4 RoCE v2 entry",
			map[int]string{0: "RoCE v1 twin of index 1", 4: "RoCE v1 twin of index 5", 1: "link-local (fe80::/10)"}},
		{"link-local address of two netdevs", vlan, GIDRule{Addr: netip.MustParseAddr("fe80::1")}, -1,
			"link-local address fe80::1 is on more than one netdev (index 1 on eth0, index 5 on eth0.100): add a zone (fe80::1%eth0)", nil},
		{"link-local address with a zone", vlan, GIDRule{Addr: netip.MustParseAddr("fe80::1%eth0.100")}, 5,
			"first entry matching RoCE v2 GID, address fe80::1%eth0.100", map[int]string{1: "on eth0, not zone eth0.100"}},
		{"link-local address on a netdev", vlan, GIDRule{Addr: netip.MustParseAddr("fe80::1"), Netdev: "eth0"}, 1, "", nil},
		{"reasons relative to the entry chosen",
			[]GIDEntry{v2(1, "2001:db8::1", "eth0", 2), v2(2, "2001:db8::2", "eth0", 2), v2(3, "::ffff:10.0.0.1", "eth0", 2)},
			GIDRule{}, 3, "first routable IPv4 RoCE v2 entry",
			map[int]string{1: "IPv6; index 3 is IPv4, which is preferred", 2: "IPv6; index 3 is IPv4, which is preferred"}},
		{"skipped in table order",
			[]GIDEntry{v2(0, "2001:db8::1", "eth0", 2), v1(1, "2001:db8::1", "eth0", 2), v2(2, "::ffff:10.0.0.1", "eth0", 2)},
			GIDRule{}, 2, "", map[int]string{0: "IPv4, which is preferred", 1: "RoCE v1 twin of index 0"}},
		{"a tie of two subnets is named",
			[]GIDEntry{v2(0, "fe80::1", "eth0", 2), v2(1, "::ffff:10.0.100.1", "eth0.100", 5), v2(3, "::ffff:10.0.0.1", "eth0", 2)},
			GIDRule{}, 1, "first routable IPv4 RoCE v2 entry, 1 of 2 (also index 3: 10.0.0.1 on eth0)",
			map[int]string{3: "also usable, but index 1 comes first"}},
		{"a tie under a rule",
			[]GIDEntry{v2(0, "2001:db8::1", "eth0", 2), v2(1, "::ffff:10.0.0.1", "eth0", 2), v2(2, "::ffff:10.0.0.2", "eth0", 2),
				v2(3, "::ffff:10.0.0.3", "eth0", 2), v2(4, "::ffff:10.0.0.4", "eth0", 2), v2(5, "::ffff:10.0.0.5", "eth0", 2)},
			GIDRule{Netdev: "eth0"}, 1,
			"first IPv4 entry matching RoCE v2 GID, on eth0, 1 of 5 (also index 2: 10.0.0.2 on eth0, index 3: 10.0.0.3 on eth0, index 4: 10.0.0.4 on eth0, and 1 more)",
			map[int]string{0: "IPv6; index 1 is IPv4"}},
		{"no tie across kinds",
			[]GIDEntry{v2(0, "2001:db8::1", "eth0", 2), v2(1, "::ffff:10.0.0.1", "eth0", 2)},
			GIDRule{Prefix: netip.MustParsePrefix("::/0")}, 0, "first IPv6 entry matching RoCE v2 GID, in ::/0", nil},
		{"routable before link-local, IPv6",
			[]GIDEntry{v2(0, "fe80::1", "eth0", 2), v2(1, "2001:db8::1", "eth0", 2)},
			GIDRule{Family: 6, AllowLinkLocal: true}, 1, "first routable entry matching RoCE v2 GID, IPv6, link-local allowed",
			map[int]string{0: "link-local; index 1 is routable, which is preferred"}},
		{"routable before link-local, before IPv4",
			[]GIDEntry{v2(0, "fe80::1", "eth0", 2), v2(1, "::ffff:169.254.0.1", "eth0", 2), v2(2, "2001:db8::1", "eth0", 2)},
			GIDRule{AllowLinkLocal: true}, 2, "first routable IPv6 RoCE v2 entry",
			map[int]string{0: "link-local; index 2 is routable", 1: "link-local; index 2 is routable"}},
		{"link-local allowed and chosen",
			[]GIDEntry{v2(0, "fe80::1", "eth0", 2), v1(1, "2001:db8::1", "eth0", 2)},
			GIDRule{AllowLinkLocal: true}, 0, "first link-local IPv6 RoCE v2 entry, none routable",
			map[int]string{1: "RoCE v1 (not routable over IP)"}},
		{"link-local named",
			[]GIDEntry{v2(0, "fe80::1", "eth0", 2), v2(1, "2001:db8::1", "eth0", 2)},
			GIDRule{Addr: netip.MustParseAddr("fe80::1"), AllowLinkLocal: true}, 0,
			"first entry matching RoCE v2 GID, address fe80::1, link-local allowed", map[int]string{1: "address is not fe80::1"}},
		{"link-local allowed, nothing matches",
			[]GIDEntry{v1(0, "fe80::1", "eth0", 2)},
			GIDRule{AllowLinkLocal: true}, -1, "no GID matches any RoCE v2 GID (link-local too), IPv4 preferred; index 0 fe80::1: RoCE v1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := SelectGID(tt.table, tt.rule)
			if tt.want < 0 {
				if err == nil {
					t.Fatalf("chose %d, want none\n%s", c.Entry.Index, c.Explain())
				}
				if !strings.Contains(err.Error(), tt.reason) {
					t.Errorf("%q lacks %q", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Entry.Index != tt.want {
				t.Fatalf("chose %d, want %d\n%s", c.Entry.Index, tt.want, c.Explain())
			}
			if !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", c.Reason, tt.reason)
			}
			var order []int
			for _, s := range c.Skipped {
				order = append(order, s.Entry.Index)
				if want, ok := tt.why[s.Entry.Index]; ok && !strings.Contains(s.Reason, want) {
					t.Errorf("index %d skipped for %q, want %q", s.Entry.Index, s.Reason, want)
				}
			}
			var want []int
			for _, e := range tt.table {
				if e.Index != c.Entry.Index {
					want = append(want, e.Index)
				}
			}
			if !slices.Equal(order, want) {
				t.Errorf("skipped %v, want %v (table order)", order, want)
			}
		})
	}
}

// TestSelectGIDTiedAndAmbiguous checks the choice's Tied list and the
// type of the error for a link-local address that two netdevs have.
func TestSelectGIDTiedAndAmbiguous(t *testing.T) {
	table := []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
		{Index: 1, GID: mustGID(t, "::ffff:10.0.100.1"), Type: GIDTypeRoCEv2, Netdev: "eth0.100", Ifindex: 5},
		{Index: 2, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2, Netdev: "eth0.100", Ifindex: 5},
		{Index: 3, GID: mustGID(t, "::ffff:10.0.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
	}
	c, err := SelectGID(table, GIDRule{})
	if err != nil || c.Entry.Index != 1 || len(c.Tied) != 1 || c.Tied[0] != table[3] {
		t.Errorf("SelectGID = %+v, %v; want index 1 tied with index 3", c, err)
	}
	if c, err := SelectGID(table, GIDRule{Netdev: "eth0"}); err != nil || c.Entry.Index != 3 || c.Tied != nil {
		t.Errorf("SelectGID on eth0 = %+v, %v; want index 3, no tie", c, err)
	}
	_, err = SelectGID(table, GIDRule{Addr: netip.MustParseAddr("fe80::1")})
	var ae *AmbiguousGIDError
	if !errors.As(err, &ae) || len(ae.Entries) != 2 || ae.Entries[0] != table[0] || ae.Entries[1] != table[2] {
		t.Errorf("err = %v, want an AmbiguousGIDError naming indexes 0 and 2", err)
	}
	// IPv4 has no zones: the netdev decides.
	ll4 := []GIDEntry{
		{Index: 0, GID: mustGID(t, "::ffff:169.254.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
		{Index: 1, GID: mustGID(t, "::ffff:169.254.0.1"), Type: GIDTypeRoCEv2, Netdev: "eth1", Ifindex: 3},
	}
	_, err = SelectGID(ll4, GIDRule{Addr: netip.MustParseAddr("169.254.0.1")})
	if !errors.As(err, &ae) || !strings.HasSuffix(err.Error(), "(index 0 on eth0, index 1 on eth1): name the netdev to say which") {
		t.Errorf("err = %v, want an AmbiguousGIDError asking for the netdev", err)
	}
}

func TestGIDRuleString(t *testing.T) {
	for _, tt := range []struct {
		rule GIDRule
		want string
	}{
		{GIDRule{}, "any routable RoCE v2 GID, IPv4 preferred"},
		{GIDRule{AllowLinkLocal: true}, "any RoCE v2 GID (link-local too), IPv4 preferred"},
		{GIDRule{Family: 6, AllowLinkLocal: true}, "RoCE v2 GID, IPv6, link-local allowed"},
		{GIDRule{Family: 4, Prefix: netip.MustParsePrefix("10.0.0.0/8"), Netdev: "eth0"}, "RoCE v2 GID, IPv4, in 10.0.0.0/8, on eth0"},
		// A family SelectGID refuses is named, not taken for either.
		{GIDRule{Family: 5}, "RoCE v2 GID, family 5 (not 4 or 6)"},
	} {
		if got := tt.rule.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.rule, got, tt.want)
		}
	}
}

// A soft-RoCE table after `ip -6 addr add ... preferred_lft 0` of
// 2001:2:0:5::2 before 2001:2::2, a duplicate 2001:2::77 (dadfailed), and
// ::ffff:198.18.0.99 added as an IPv6 address.
func flaggedTable(t *testing.T) []GIDEntry {
	return []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::2"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1"},
		{Index: 1, GID: mustGID(t, "::ffff:198.18.0.2"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1"},
		{Index: 2, GID: mustGID(t, "2001:2:0:5::2"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1", AddrFlags: AddrDeprecated},
		{Index: 3, GID: mustGID(t, "2001:2::77"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1", AddrFlags: AddrTentative | AddrDADFailed},
		{Index: 4, GID: mustGID(t, "2001:2::2"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1"},
		{Index: 5, GID: mustGID(t, "2001:2::88"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1", AddrFlags: AddrTentative},
		{Index: 6, GID: mustGID(t, "::ffff:198.18.0.99"), Type: GIDTypeRoCEv2, Ifindex: 3, Netdev: "rxeveth1", MappedIPv6: true},
	}
}

func TestSelectGIDAddrFlags(t *testing.T) {
	tab := flaggedTable(t)
	c, err := SelectGID(tab, GIDRule{Family: 6})
	if err != nil {
		t.Fatal(err)
	}
	if c.Entry.Index != 4 {
		t.Fatalf("IPv6 chose %d, want 4 (the preferred address, not the deprecated 2)\n%s", c.Entry.Index, c.Explain())
	}
	for _, tt := range c.Tied {
		t.Errorf("tied with %v: flagged entries must not tie", tt)
	}
	why := map[int]string{}
	for _, s := range c.Skipped {
		why[s.Entry.Index] = s.Reason
	}
	for i, want := range map[int]string{
		2: "deprecated (preferred lifetime 0); index 4 is not",
		3: "failed duplicate address detection (dadfailed)",
		5: "is tentative",
	} {
		if !strings.Contains(why[i], want) {
			t.Errorf("index %d skipped for %q, want it to say %q", i, why[i], want)
		}
	}

	// A deprecated address is still used when nothing else passes, and
	// the reason says so.
	c, err = SelectGID(tab, GIDRule{Prefix: netip.MustParsePrefix("2001:2:0:5::/64")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Entry.Index != 2 || !strings.Contains(c.Reason, "deprecated (preferred lifetime 0)") {
		t.Errorf("deprecated alone: chose %d for %q, want 2 saying deprecated", c.Entry.Index, c.Reason)
	}

	// Naming a dadfailed, tentative or IPv6-configured mapped address
	// is refused with the reason.
	for addr, want := range map[string]string{
		"2001:2::77":         "dadfailed",
		"2001:2::88":         "tentative",
		"::ffff:198.18.0.99": "IPv4-mapped GID of the IPv6 address ::ffff:198.18.0.99 on rxeveth1",
		"198.18.0.99":        "routes neither as IPv4 nor as IPv6",
	} {
		_, err := SelectGID(tab, GIDRule{Addr: netip.MustParseAddr(addr)})
		var nog *NoGIDError
		if !errors.As(err, &nog) || !strings.Contains(err.Error(), want) {
			t.Errorf("address %s: got %v, want a NoGIDError saying %q", addr, err, want)
		}
	}

	// The default rule never picks the mapped IPv6 address as IPv4.
	c, err = SelectGID(tab, GIDRule{Family: 4})
	if err != nil || c.Entry.Index != 1 || len(c.Tied) != 0 {
		t.Errorf("IPv4: chose %d (tied %v), %v; want 1 alone", c.Entry.Index, c.Tied, err)
	}
}

func TestAddrFlagsString(t *testing.T) {
	if s := (AddrTentative | AddrDADFailed | AddrDeprecated).String(); s != "deprecated tentative dadfailed" {
		t.Errorf("got %q", s)
	}
	if s := AddrFlags(0).String(); s != "" {
		t.Errorf("zero: got %q", s)
	}
}

// bigTable is soft-RoCE's table with 132 IPv4 addresses on one netdev:
// the link-local pair, then a RoCE v1 and a v2 entry of each address,
// 198.18.0.9 last, at indexes 264 and 265.
func bigTable(t *testing.T) []GIDEntry {
	tab := []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv1, Netdev: "eth0", Ifindex: 2},
		{Index: 1, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
	}
	for n := range 132 {
		a := "::ffff:198.18.1." + strconv.Itoa(n)
		if n == 131 {
			a = "::ffff:198.18.0.9"
		}
		for _, ty := range []GIDType{GIDTypeRoCEv1, GIDTypeRoCEv2} {
			tab = append(tab, GIDEntry{Index: len(tab), GID: mustGID(t, a), Type: ty, Netdev: "eth0", Ifindex: 2})
		}
	}
	return tab
}

// TestNoGIDErrorGrouped: with 266 entries, the one reason that tells
// (index past 255) comes first, the 131 entries of other addresses and
// the 133 RoCE v1 entries are each one group with a count, and Skipped
// still has every entry with its own reason. The text was about 20 KB in
// table order, the index past 255 last.
func TestNoGIDErrorGrouped(t *testing.T) {
	tab := bigTable(t)
	_, err := SelectGID(tab, GIDRule{Addr: netip.MustParseAddr("198.18.0.9")})
	var ne *NoGIDError
	if !errors.As(err, &ne) {
		t.Fatalf("err = %v, want a NoGIDError", err)
	}
	want := "no GID matches RoCE v2 GID, address 198.18.0.9" +
		"; index 265 ::ffff:198.18.0.9: index past 255, which the verbs' 8-bit GID index (sgid_index) cannot name" +
		"; index 3 ::ffff:198.18.1.0, index 5 ::ffff:198.18.1.1, index 7 ::ffff:198.18.1.2 and 128 more: address is not 198.18.0.9" +
		"; index 1 fe80::1: link-local (fe80::/10), not routable" +
		"; index 0 fe80::1, index 2 ::ffff:198.18.1.0, index 4 ::ffff:198.18.1.1 and 130 more: RoCE v1 twins of RoCE v2 entries"
	if got := err.Error(); got != want {
		t.Errorf("error text (%d bytes):\n%.2000s\nwant:\n%s", len(got), got, want)
	}
	if len(ne.Skipped) != len(tab) {
		t.Fatalf("Skipped has %d entries, want all %d", len(ne.Skipped), len(tab))
	}
	for i, s := range ne.Skipped {
		if s.Entry != tab[i] {
			t.Errorf("Skipped[%d] is index %d, want the table's order", i, s.Entry.Index)
		}
	}
	for i, want := range map[int]string{
		0:   "RoCE v1 twin of index 1",
		100: "RoCE v1 twin of index 101",
		101: "address is not 198.18.0.9",
		265: "index past 255",
	} {
		if !strings.Contains(ne.Skipped[i].Reason, want) {
			t.Errorf("Skipped[%d].Reason = %q, want it to say %q", i, ne.Skipped[i].Reason, want)
		}
	}
}

// TestNoGIDErrorCap: 300 reasons that each differ (one netdev an entry)
// stop at about noGIDErrorMax bytes, and the rest are counted.
func TestNoGIDErrorCap(t *testing.T) {
	var tab []GIDEntry
	for i := range 300 {
		tab = append(tab, GIDEntry{Index: i, GID: mustGID(t, "::ffff:10.0."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256)),
			Type: GIDTypeRoCEv2, Netdev: "eth" + strconv.Itoa(i), Ifindex: i + 2})
	}
	stubNetdevs(t, "eth0")
	_, err := SelectGID(tab, GIDRule{Netdev: "eth999"})
	var ne *NoGIDError
	if !errors.As(err, &ne) || len(ne.Skipped) != 300 {
		t.Fatalf("err = %v, want a NoGIDError with all 300 entries", err)
	}
	s := err.Error()
	shown := strings.Count(s, ", not eth999")
	if len(s) > noGIDErrorMax || shown < 10 || !strings.HasSuffix(s, "; "+strconv.Itoa(300-shown)+" more entries not shown") {
		t.Errorf("%d bytes, %d entries shown: %q; want at most %d bytes ending with the count of the %d left out",
			len(s), shown, s, noGIDErrorMax, 300-shown)
	}
	if !strings.HasPrefix(s, "no GID matches RoCE v2 GID, on eth999: there is no netdev eth999 (the port's GIDs are on eth0, eth1, eth2 and 297 more)"+
		"; index 0 ::ffff:10.0.0.0: on eth0, not eth999; index 1 ") {
		t.Errorf("%.200q does not begin with the rule and index 0", s)
	}
}

// TestNoGIDErrorByHand: a NoGIDError made by hand, with no record of the
// checks, groups its reasons in table order.
func TestNoGIDErrorByHand(t *testing.T) {
	var sk []SkippedGID
	for i, r := range []string{"a", "b", "a", "a", "a", "b"} {
		sk = append(sk, SkippedGID{GIDEntry{Index: i, GID: mustGID(t, "::ffff:10.0.0."+strconv.Itoa(i))}, r})
	}
	got := (&NoGIDError{Rule: GIDRule{Family: 4}, Skipped: sk}).Error()
	want := "no GID matches RoCE v2 GID, IPv4; index 0 ::ffff:10.0.0.0, index 2 ::ffff:10.0.0.2, index 3 ::ffff:10.0.0.3 and 1 more: a" +
		"; index 1 ::ffff:10.0.0.1: b; index 5 ::ffff:10.0.0.5: b"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
