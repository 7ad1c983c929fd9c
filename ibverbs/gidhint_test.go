package ibverbs

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// stubNetdevs makes netdevExists answer that this host has the named
// netdevs and no others, for the rest of the test.
func stubNetdevs(t *testing.T, names ...string) {
	t.Helper()
	old := netdevExists
	netdevExists = func(name string) bool { return slices.Contains(names, name) }
	t.Cleanup(func() { netdevExists = old })
}

// rxeVLANTable is soft-RoCE's table in the VM with a VLAN over the veth:
// the parent's link-local and IPv4 GIDs, then the VLAN's, which shares
// the parent's MAC address and so its link-local GID.
func rxeVLANTable(t *testing.T) []GIDEntry {
	return []GIDEntry{
		{Index: 0, GID: mustGID(t, "fe80::5054:ff:fe12:3457"), Type: GIDTypeRoCEv2, Netdev: "rxeveth1", Ifindex: 3},
		{Index: 1, GID: mustGID(t, "::ffff:198.18.0.2"), Type: GIDTypeRoCEv2, Netdev: "rxeveth1", Ifindex: 3},
		{Index: 2, GID: mustGID(t, "fe80::5054:ff:fe12:3457"), Type: GIDTypeRoCEv2, Netdev: "rxeveth1.100", Ifindex: 5},
		{Index: 3, GID: mustGID(t, "::ffff:198.19.100.2"), Type: GIDTypeRoCEv2, Netdev: "rxeveth1.100", Ifindex: 5},
	}
}

// A NoGIDError says how to take a link-local entry that failed the rule
// only for being link-local: by its index. Before, `write-bw --ipv6` on a
// port with only fe80:: and IPv4 GIDs said that the fe80:: one was not
// routable, and nothing of how to use it all the same.
func TestNoGIDErrorLinkLocalHint(t *testing.T) {
	rxe1 := rxeVLANTable(t)[:2]
	_, err := SelectGID(rxe1, GIDRule{Family: 6})
	want := "no GID matches RoCE v2 GID, IPv6; index 1 ::ffff:198.18.0.2: IPv4, IPv6 wanted" +
		"; index 0 fe80::5054:ff:fe12:3457: link-local (fe80::/10), not routable" +
		"; to use a link-local GID anyway, name its index (0)"
	var ne *NoGIDError
	if !errors.As(err, &ne) || err.Error() != want || !slices.Equal(ne.LinkLocal, []int{0}) {
		t.Fatalf("got %v (LinkLocal %v)\nwant %s (LinkLocal [0])", err, ne.LinkLocal, want)
	}

	past := append(rxeVLANTable(t), GIDEntry{Index: 300, GID: mustGID(t, "fe80::9"), Type: GIDTypeRoCEv2, Netdev: "rxeveth1"})
	many := rxeVLANTable(t)
	for i := 4; i < 8; i++ {
		many = append(many, GIDEntry{Index: i, GID: mustGID(t, "fe80::1:"+string(rune('0'+i))), Type: GIDTypeRoCEv2, Netdev: "rxeveth1"})
	}
	for _, tc := range []struct {
		name  string
		table []GIDEntry
		rule  GIDRule
		want  []int  // LinkLocal
		hint  string // how the text ends; "" for no hint
	}{
		{"one per netdev", rxeVLANTable(t), GIDRule{Family: 6}, []int{0, 2}, "; to use a link-local GID anyway, name its index (0 or 2)"},
		{"on the netdev named", rxeVLANTable(t), GIDRule{Family: 6, Netdev: "rxeveth1.100"}, []int{2}, "; to use a link-local GID anyway, name its index (2)"},
		{"more than three", many, GIDRule{Family: 6}, []int{0, 2, 4, 5, 6, 7}, "; to use a link-local GID anyway, name its index (0, 2, 4 or one of 3 more)"},
		// Link-local and of another family, subnet or netdev: allowing
		// link-local would not take them.
		{"IPv4 wanted", rxeVLANTable(t)[:1], GIDRule{Family: 4}, nil, ""},
		{"another subnet", rxeVLANTable(t), GIDRule{Prefix: netip.MustParsePrefix("2001:2::/64")}, nil, ""},
		{"another netdev", rxeVLANTable(t)[:1], GIDRule{Family: 6, Netdev: "rxeveth1.100"}, nil, ""},
		{"past index 255", past[4:], GIDRule{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stubNetdevs(t, "rxeveth1", "rxeveth1.100")
			_, err := SelectGID(tc.table, tc.rule)
			var ne *NoGIDError
			if !errors.As(err, &ne) {
				t.Fatalf("err = %v, want a NoGIDError", err)
			}
			if !slices.Equal(ne.LinkLocal, tc.want) {
				t.Errorf("LinkLocal = %v, want %v", ne.LinkLocal, tc.want)
			}
			s := err.Error()
			if tc.hint == "" && strings.Contains(s, "link-local GID anyway") || tc.hint != "" && !strings.HasSuffix(s, tc.hint) {
				t.Errorf("%q\ndoes not end with %q", s, tc.hint)
			}
			if tc.hint != "" {
				// The rule with AllowLinkLocal takes the first of them.
				r := tc.rule
				r.AllowLinkLocal = true
				if c, err := SelectGID(tc.table, r); err != nil || c.Entry.Index != tc.want[0] {
					t.Errorf("with AllowLinkLocal: index %d, %v; want %d", c.Entry.Index, err, tc.want[0])
				}
			}
		})
	}
}

// A rule whose Netdev no entry is on says so, with the netdevs the
// entries are on, and whether the host has a netdev of that name at all.
// Before, each entry was only "on rxeveth1, not nosuch0".
func TestNoGIDErrorNetdevAbsent(t *testing.T) {
	stubNetdevs(t, "rxeveth1", "rxeveth1.100", "eth0")
	for _, tc := range []struct {
		rule GIDRule
		want string // what the text says after the rule; "" for nothing
	}{
		{GIDRule{Netdev: "nosuch0"}, ": there is no netdev nosuch0 (the port's GIDs are on rxeveth1, rxeveth1.100); index 1 "},
		{GIDRule{Netdev: "eth0"}, ": the port has no GID on eth0 (its GIDs are on rxeveth1, rxeveth1.100); index 1 "},
		// Entries are on the netdev, but fail for another reason.
		{GIDRule{Netdev: "rxeveth1", Family: 6}, "; index 1 "},
		{GIDRule{Family: 6}, "; index 1 "},
	} {
		_, err := SelectGID(rxeVLANTable(t), tc.rule)
		if err == nil {
			t.Errorf("%v: no error", tc.rule)
			continue
		}
		if want := "no GID matches " + tc.rule.String() + tc.want; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got  %q\nwant %q...", err, want)
		}
	}
	_, err := SelectGID([]GIDEntry{{Index: 0, GID: mustGID(t, "::ffff:10.0.0.1"), Type: GIDTypeRoCEv2}}, GIDRule{Netdev: "nosuch0"})
	if want := "no GID matches RoCE v2 GID, on nosuch0: there is no netdev nosuch0 (the port's GIDs are on no netdev); index 0 "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got  %v\nwant %q...", err, want)
	}
}

// netdevExists knows this host's netdevs, and that a name too long to be
// one (IFNAMSIZ is 16 with its NUL) is none.
func TestNetdevExists(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) == 0 {
		t.Fatalf("net.Interfaces() = %v, %v: want lo at least", ifs, err)
	}
	if !netdevExists(ifs[0].Name) {
		t.Errorf("netdevExists(%q) = false, want true", ifs[0].Name)
	}
	if netdevExists("gorperf-nosuch-0") {
		t.Error(`netdevExists("gorperf-nosuch-0") = true, want false`)
	}
}
