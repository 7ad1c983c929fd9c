//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestSelectGIDAddrFlagsOnDevice gives the rxe VM's netdev a deprecated
// IPv6 address before a preferred one of the same /32, an address that
// fails duplicate address detection (the peer netdev has it first), and
// ::ffff:198.18.0.99 as an IPv6 address. SelectGID must prefer the
// preferred address, refuse the dadfailed one and the mapped one by
// name, and say why. It changes the netdevs' addresses, so it runs only
// in the VM with both netdevs (-2).
func TestSelectGIDAddrFlagsOnDevice(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	nd, peer := os.Getenv("RXE_NETDEV"), os.Getenv("RXE_NETDEV2")
	if nd == "" || peer == "" || os.Getenv("GORPERF_TEST_DEVICE") != os.Getenv("RXE_DEV") {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("in the rxe VM but RXE_NETDEV or RXE_NETDEV2 is unset (run the VM with -2)")
		}
		t.Skip("needs the rxe VM's two netdevs (RXE_NETDEV, RXE_NETDEV2) to add addresses to")
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// Cleanup runs last-registered first: each del is registered after
	// its add succeeds.
	add := func(dev string, args ...string) {
		t.Helper()
		ip(append([]string{"-6", "addr", "add"}, append(args, "dev", dev)...)...)
		t.Cleanup(func() { exec.Command("ip", "-6", "addr", "del", args[0], "dev", dev).Run() })
	}
	add(nd, "2001:4:0:5::1/64", "nodad", "preferred_lft", "0")
	add(nd, "2001:4::1/64", "nodad")
	add(peer, "2001:4::77/64", "nodad")
	add(nd, "2001:4::77/64") // with DAD: the peer answers, so it fails
	add(nd, "::ffff:198.18.0.99/128", "nodad")

	depr, pref, dup, mapped := netip.MustParseAddr("2001:4:0:5::1"), netip.MustParseAddr("2001:4::1"),
		netip.MustParseAddr("2001:4::77"), netip.MustParseAddr("198.18.0.99")
	// Wait for the kernel to add the GIDs and for DAD of 2001:4::77 to
	// fail (about a second).
	var table []ibverbs.GIDEntry
	byIP := map[netip.Addr]ibverbs.GIDEntry{}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var err error
		if table, err = ctx.GIDTable(info.Port); err != nil {
			t.Fatal(err)
		}
		clear(byIP)
		for _, e := range table {
			if e.Type == ibverbs.GIDTypeRoCEv2 && e.Netdev == nd {
				byIP[e.IP()] = e
			}
		}
		_, a := byIP[depr]
		_, b := byIP[pref]
		d, c := byIP[dup]
		_, m := byIP[mapped]
		if a && b && c && m && d.AddrFlags&ibverbs.AddrDADFailed != 0 {
			break
		}
		if time.Now().After(deadline) {
			out, _ := exec.Command("ip", "-6", "addr", "show", "dev", nd).CombinedOutput()
			t.Fatalf("GIDs of the added addresses not all in 15s, or %s not dadfailed: %v\n%s", dup, byIP, out)
		}
	}
	for _, a := range []netip.Addr{depr, pref, dup, mapped} {
		t.Logf("%v: flags %q, mapped IPv6 %v", byIP[a], byIP[a].AddrFlags, byIP[a].MappedIPv6)
	}
	if f := byIP[depr].AddrFlags; f&ibverbs.AddrDeprecated == 0 {
		t.Errorf("%s: flags %q, want deprecated", depr, f)
	}
	if f := byIP[pref].AddrFlags; f&(ibverbs.AddrDeprecated|ibverbs.AddrTentative|ibverbs.AddrDADFailed) != 0 {
		t.Errorf("%s: flags %q, want none", pref, f)
	}
	if !byIP[mapped].MappedIPv6 {
		t.Errorf("%s: not marked as an IPv6 address", byIP[mapped])
	}
	if byIP[depr].Index > byIP[pref].Index {
		t.Logf("the deprecated address's GID (index %d) comes after the preferred one's (%d): the ranking is not what decides here",
			byIP[depr].Index, byIP[pref].Index)
	}

	ch, err := ibverbs.SelectGID(table, ibverbs.GIDRule{Prefix: netip.MustParsePrefix("2001:4::/32")})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Entry.IP() != pref || len(ch.Tied) != 0 {
		t.Errorf("2001:4::/32 chose %v (tied %v), want %s alone\n%s", ch.Entry, ch.Tied, pref, ch.Explain())
	}
	if !strings.Contains(ch.Explain(), "deprecated (preferred lifetime 0)") {
		t.Errorf("the choice does not say the deprecated address was passed over for it:\n%s", ch.Explain())
	}
	for a, want := range map[netip.Addr]string{
		dup:    "dadfailed",
		mapped: "IPv4-mapped GID of the IPv6 address ::ffff:198.18.0.99 on " + nd,
	} {
		_, err := ctx.SelectGID(info.Port, ibverbs.GIDRule{Addr: a})
		var nog *ibverbs.NoGIDError
		if !errors.As(err, &nog) || !strings.Contains(err.Error(), want) {
			t.Errorf("SelectGID(address %s) = %v, want it refused saying %q", a, err, want)
		}
	}
}
