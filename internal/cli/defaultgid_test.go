package cli

import (
	"net/netip"
	"strings"
	"testing"
)

// The default GID (devices' *, doctor's GID line) is what a test with no
// GID flag takes only where its control connection's local address has
// no GID on the port: elsewhere it takes that address's GID (bench's
// controlGID). devices' help, its "default GID" line and doctor's line
// said the default was what gorperf uses, while a test whose client dialed
// a VLAN's address used the VLAN's GID.
func TestDefaultGIDSaysWhenUsed(t *testing.T) {
	const when = "a test with no GID flag uses it only where its control connection's local address has no GID on this port"
	long := strings.Join(strings.Fields(newCmdDevices(&Factory{IO: &IOStreams{}}, nil).Long), " ")
	// --ipv6 names no GID where the control connection is IPv6 too: the
	// test then takes that address's GID.
	for _, want := range []string{"The GID marked with * is the port's default", "takes the GID of its control connection's local address where the port has one",
		"--ipv6 over an IPv4 control connection", "over loopback"} {
		if !strings.Contains(long, want) {
			t.Errorf("devices' help lacks %q:\n%s", want, long)
		}
	}
	if strings.Contains(long, "the one gorperf uses") {
		t.Errorf("devices' help still says the * GID is the one gorperf uses:\n%s", long)
	}

	var b strings.Builder
	if err := writeDevicesText(&b, fakeDevices()); err != nil {
		t.Fatal(err)
	}
	if want := "    default GID: index 1, first routable IPv4 RoCE v2 entry; " + when + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("devices' text lacks %q:\n%s", want, b.String())
	}

	p := fakeDevices()[0].Ports[0]
	has := func(string) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, nil
	}
	fs := checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", has)
	wantFinding(t, fs[0], levelOK, "rxe0 port 1: RoCE v2 GID index 1 (198.18.0.1 on rxeveth0) is the default: first routable IPv4 RoCE v2 entry; "+when)
	if strings.Contains(fs[0].Msg, "would be used") {
		t.Errorf("doctor still says the default GID would be used: %q", fs[0].Msg)
	}
}

// The tie warning says when the tie matters (where the control connection
// is not on the port) and that the order of the tied entries is the
// kernel's lowest free slot, not the order the addresses were added in:
// deleting 198.18.0.1 and adding it again put it back at index 1, ahead
// of a VLAN's GID at index 3.
func TestCheckGIDTieSaysWhenAndWhy(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	p.GIDs = append(p.GIDs, gidReport{Index: 3, GID: "::ffff:198.19.100.1", Type: "RoCE v2", Netdev: "rxeveth0.100", IP: "198.19.100.1"})
	p.DefaultGID.Tied = []int{3}
	addrs := func(nd string) ([]netip.Prefix, error) {
		if nd == "rxeveth0.100" {
			return []netip.Prefix{netip.MustParsePrefix("198.19.100.1/24")}, nil
		}
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, nil
	}
	fs := checkGIDTie("rxe0 port 1", p, p.GIDs[1], addrs)
	if len(fs) != 1 {
		t.Fatalf("findings %+v, want the tie warning", fs)
	}
	wantFinding(t, fs[0], levelWarn, "the default GID index 1 ties with 1 other entries (netdevs rxeveth0, rxeveth0.100; subnets 198.18.0.0/24, 198.19.100.0/24): "+
		"where a test's control connection's local address has no GID on this port (loopback, a control connection over another NIC), another host may pick another network")
	for _, want := range []string{"--gid-netdev", "lowest-numbered of the tied entries", "reusing those of addresses removed", "not the order the addresses were added in"} {
		if !strings.Contains(fs[0].Fix, want) {
			t.Errorf("fix %q lacks %q", fs[0].Fix, want)
		}
	}
	if strings.Contains(fs[0].Fix, "which is the order its addresses were added in") {
		t.Errorf("fix %q still says the index order is the order addresses were added in", fs[0].Fix)
	}
}
