//go:build linux && cgo

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/internal/report"
)

// TestSourceIPLinkLocal: --source_ip and --bind_source_ip with a
// link-local address pick that address's GID, on the netdev of its zone
// where it has one, through the rule gidRule makes and SelectGID. They
// asked for a /128 prefix, which SelectGID's link-local refusal met
// first ("no GID matches ...: link-local (fe80::/10), not routable"), and
// the prefix dropped the zone.
func TestSourceIPLinkLocal(t *testing.T) {
	gid := func(s string) ibverbs.GID { return ibverbs.GID(netip.MustParseAddr(s).As16()) }
	table := []ibverbs.GIDEntry{
		{Index: 0, GID: gid("fe80::1"), Type: ibverbs.GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
		{Index: 1, GID: gid("::ffff:198.18.0.1"), Type: ibverbs.GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
		{Index: 2, GID: gid("fe80::2"), Type: ibverbs.GIDTypeRoCEv2, Netdev: "eth1", Ifindex: 3},
		{Index: 3, GID: gid("fd00::1"), Type: ibverbs.GIDTypeRoCEv2, Netdev: "eth0", Ifindex: 2},
	}
	for _, tc := range []struct {
		ip, netdev string
		want       int // the index chosen, or -1 for a NoGIDError
	}{
		{ip: "fe80::1", want: 0},
		{ip: "fe80::1%eth0", want: 0},
		{ip: "fe80::1%2", want: 0},
		{ip: "fe80::1%eth0", netdev: "eth0", want: 0},
		{ip: "fe80::2%eth1", want: 2},
		{ip: "fe80::1%eth1", want: -1},
		{ip: "fe80::1%3", want: -1},
		{ip: "fe80::9", want: -1},
		// Routable addresses as before.
		{ip: "198.18.0.1", want: 1},
		{ip: "::ffff:198.18.0.1", want: 1},
		{ip: "fd00::1", want: 3},
		{ip: "fd00::1", netdev: "eth1", want: -1},
	} {
		for _, bind := range []bool{false, true} {
			o := &testOptions{GIDIndex: -1, GIDNetdev: tc.netdev}
			flag := "--source_ip"
			if bind {
				o.BindIP, flag = tc.ip, "--bind_source_ip"
			} else {
				o.SourceIP = tc.ip
			}
			r, err := o.gidRule()
			if err != nil {
				t.Errorf("%s %s: %v", flag, tc.ip, err)
				continue
			}
			if a := netip.MustParseAddr(tc.ip).Unmap(); r.Addr != a || r.Prefix.IsValid() {
				t.Errorf("%s %s: rule %+v, want Addr %v and no prefix", flag, tc.ip, r, a)
			}
			c, err := ibverbs.SelectGID(table, r)
			var nge *ibverbs.NoGIDError
			switch {
			case tc.want >= 0 && (err != nil || c.Entry.Index != tc.want):
				t.Errorf("%s %s (rule %v): index %d, %v; want index %d", flag, tc.ip, r, c.Entry.Index, err, tc.want)
			case tc.want < 0 && !errors.As(err, &nge):
				t.Errorf("%s %s (rule %v): index %d, %v; want a NoGIDError", flag, tc.ip, r, c.Entry.Index, err)
			}
		}
	}
}

// TestGIDRuleCompatibleFlags: the combinations gidRule refuses (see
// TestTestFlagErrors) leave these alone: a family or netdev that agrees
// with --source_ip's address, a numeric zone beside --gid-netdev (which
// SelectGID checks against the entry), and --bind_source_ip with -x or
// --gid-subnet, which then pick the GID.
func TestGIDRuleCompatibleFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    testOptions
		want ibverbs.GIDRule
	}{
		{"--source_ip v4 --gid-family 4", testOptions{GIDIndex: -1, SourceIP: "198.18.0.1", GIDFamily: 4},
			ibverbs.GIDRule{Family: 4, Addr: netip.MustParseAddr("198.18.0.1")}},
		{"--source_ip v6 --ipv6", testOptions{GIDIndex: -1, SourceIP: "fd00::2", IPv6: true},
			ibverbs.GIDRule{Family: 6, Addr: netip.MustParseAddr("fd00::2")}},
		{"--source_ip %eth0 --gid-netdev eth0", testOptions{GIDIndex: -1, SourceIP: "fe80::1%eth0", GIDNetdev: "eth0"},
			ibverbs.GIDRule{Family: 6, Addr: netip.MustParseAddr("fe80::1%eth0"), Netdev: "eth0"}},
		{"--source_ip %2 --gid-netdev eth0", testOptions{GIDIndex: -1, SourceIP: "fe80::1%2", GIDNetdev: "eth0"},
			ibverbs.GIDRule{Family: 6, Addr: netip.MustParseAddr("fe80::1%2"), Netdev: "eth0"}},
		{"--bind_source_ip v4 --gid-subnet v6 --ipv6", testOptions{GIDIndex: -1, BindIP: "198.18.0.2", GIDSubnet: "fd00::/64", IPv6: true},
			ibverbs.GIDRule{Family: 6, Prefix: netip.MustParsePrefix("fd00::/64")}},
		{"--bind_source_ip -x 1", testOptions{GIDIndex: 1, BindIP: "198.18.0.2"}, ibverbs.GIDRule{}},
		{"-x 0", testOptions{GIDIndex: 0}, ibverbs.GIDRule{}},
		// perftest's --ipv6 beside -x changes nothing, as there.
		{"-x 1 --ipv6", testOptions{GIDIndex: 1, IPv6: true}, ibverbs.GIDRule{}},
	} {
		if r, err := tc.o.gidRule(); err != nil || r != tc.want {
			t.Errorf("%s: rule %+v, %v; want %+v", tc.name, r, err, tc.want)
		}
	}
}

// TestSourceIPLinkLocalDevice: on a device, loopback with --source_ip (and
// --bind_source_ip) of the port's IPv6 link-local GID runs over that GID,
// with its netdev as the zone or without one; a zone of another netdev
// fails before the test. Both failed with "no GID matches".
func TestSourceIPLinkLocalDevice(t *testing.T) {
	info := rdmatest.Device(t)
	ll := rdmatest.LinkLocalGID(t, info.Name, info.Port)
	dc, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	table, err := dc.GIDTable(info.Port)
	dc.Close()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[ibverbs.GID]int{}
	for _, e := range table {
		seen[e.GID]++
	}
	ip := ll.IP().String()
	ctx := testContext(t, 90*time.Second)
	runs := [][]string{{"--source_ip", ip + "%" + ll.Netdev}, {"--bind_source_ip", ip + "%" + ll.Netdev}}
	if seen[ll.GID] == 1 {
		runs = append(runs, []string{"--source_ip", ip})
	}
	for _, flags := range runs {
		args := append([]string{"loopback", "write-bw", "-d", info.Name, "-i", fmt.Sprint(info.Port), "-s", "64", "-n", "20", "--json"}, flags...)
		cmd := gorperf(ctx, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var r report.Result
		if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || r.Error != nil || len(r.Results) != 1 {
			t.Errorf("%v: %v, %v\n%s%s", flags, err, jerr, out, stderr.String())
			continue
		}
		if r.GIDIndex != ll.Index {
			t.Errorf("%v: GID index %d (%q), want %d", flags, r.GIDIndex, r.GIDReason, ll.Index)
		}
	}
	out, err := gorperf(ctx, "loopback", "write-bw", "-d", info.Name, "-i", fmt.Sprint(info.Port), "-s", "64", "-n", "20", "--source_ip", ip+"%lo").CombinedOutput()
	if procExit(err) != 1 || !strings.Contains(string(out), "no GID matches") {
		t.Errorf("--source_ip %s%%lo: %v\n%s", ip, err, out)
	}
}
