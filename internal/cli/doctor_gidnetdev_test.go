package cli

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// rxeVLANPort is rxe0's port 1 on rxeveth0 (198.18.0.1, the default
// GID), with a VLAN netdev, rxeveth0.10 (198.18.10.1), and a macvlan,
// mv0 (198.18.20.1), over it, and a netdev with a link-local GID alone.
func rxeVLANPort() []deviceReport {
	return []deviceReport{{
		Name: "rxe0", NodeType: "CA", Transport: "InfiniBand", NUMANode: -1,
		Ports: []portReport{{
			Port: 1, State: "ACTIVE", PhysState: "LINK_UP", ActiveMTU: 1024, MaxMTU: 4096, LinkLayer: "Ethernet",
			GIDs: []gidReport{
				{Index: 0, GID: "fe80::1", Type: "RoCE v2", Netdev: "rxeveth0", IP: "fe80::1"},
				{Index: 1, GID: "::ffff:198.18.0.1", Type: "RoCE v2", Netdev: "rxeveth0", IP: "198.18.0.1"},
				{Index: 2, GID: "fe80::2", Type: "RoCE v2", Netdev: "ll0", IP: "fe80::2"},
				{Index: 3, GID: "::ffff:198.18.10.1", Type: "RoCE v1", Netdev: "rxeveth0.10", IP: "198.18.10.1"},
				{Index: 4, GID: "::ffff:198.18.10.1", Type: "RoCE v2", Netdev: "rxeveth0.10", IP: "198.18.10.1"},
				{Index: 5, GID: "::ffff:198.18.20.1", Type: "RoCE v2", Netdev: "mv0", IP: "198.18.20.1"},
			},
			DefaultGID: &gidChoice{Index: 1, Reason: "first routable IPv4 RoCE v2 entry"},
		}},
	}}
}

// rxeVLANFiles is rxeVLANPort's sysfs: the VLAN's MTU is 700, which
// carries RDMA MTU 512 with rxe's 80 bytes of headers, not the port's
// 1024.
func rxeVLANFiles() map[string]string {
	return map[string]string{
		"dev/infiniband/uverbs0":                   "",
		"dev/infiniband/rdma_cm":                   "",
		"sys/class/infiniband_verbs/uverbs0/ibdev": "rxe0\n",
		"sys/class/infiniband/rxe0/parent":         "rxeveth0\n",
		"sys/class/net/rxeveth0/mtu":               "1500\n",
		"sys/class/net/rxeveth0.10/mtu":            "700\n",
		"sys/class/net/rxeveth0.10/lower_rxeveth0": symlinkTo + "../rxeveth0",
		"sys/class/net/mv0/mtu":                    "9000\n",
		"sys/class/net/mv0/lower_rxeveth0":         symlinkTo + "../rxeveth0",
		"sys/class/net/ll0/mtu":                    "100\n",
	}
}

// TestDoctorGIDNetdevsMTU: doctor judges the MTU of every netdev with a
// routable GID on the port, each a finding naming it, and warns of a
// VLAN's that carries less than the port's active MTU: a test over its
// GID gets a smaller path MTU. It judged the default GID's netdev alone,
// and said nothing of rxeveth0.10, over which a 4 KiB test timed out.
func TestDoctorGIDNetdevsMTU(t *testing.T) {
	out, _ := doctorOn(t, rxeVLANFiles(), rxeVLANPort(), "", 0)
	for _, want := range []string{
		"[ ok ] rxe0 port 1: rxeveth0 MTU 1500 carries RDMA MTU 1024 (+80 bytes",
		"[warn] rxe0 port 1: rxeveth0.10 MTU 700 is too small for RDMA MTU 1024, which needs 1024+80 bytes of RoCE v2 headers: a test over its GIDs gets path MTU 512",
		"`ip link set rxeveth0.10 mtu 1104`",
		"give perftest -m 512",
		// A macvlan's MTU over its lower netdev's would not raise the
		// port's: no "would carry" for it.
		"[ ok ] rxe0 port 1: mv0 MTU 9000 carries RDMA MTU 1024",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ll0") || strings.Count(out, "rxeveth0.10 MTU") != 1 {
		t.Errorf("a netdev with a link-local GID alone was judged, or the VLAN twice:\n%s", out)
	}
}

// TestCheckGIDIndexLimit: routable GIDs past index 255, which the verbs'
// 8-bit GID index cannot name, are warned of, how many and where; doctor
// said nothing of them.
func TestCheckGIDIndexLimit(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	if fs := checkGIDIndexLimit("rxe0 port 1", p); len(fs) != 0 {
		t.Errorf("a small table: %+v", fs)
	}
	for i := 2; i < 300; i++ {
		ip := fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
		p.GIDs = append(p.GIDs, gidReport{Index: i, GID: "::ffff:" + ip, Type: "RoCE v2", Netdev: "rxeveth0", IP: ip})
	}
	p.GIDs = append(p.GIDs,
		gidReport{Index: 300, GID: "::ffff:198.18.9.1", Type: "RoCE v1", Netdev: "rxeveth0", IP: "198.18.9.1"},
		gidReport{Index: 301, GID: "fe80::9", Type: "RoCE v2", Netdev: "rxeveth0", IP: "fe80::9"},
		gidReport{Index: 302, GID: "::ffff:198.18.10.1", Type: "RoCE v2", Netdev: "rxeveth0.10", IP: "198.18.10.1"},
	)
	fs := checkGIDIndexLimit("rxe0 port 1", p)
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	wantFinding(t, fs[0], levelWarn, "rxe0 port 1: 45 routable GIDs are past index 255, where no test can use them (the verbs' GID index is 8 bits): the first, index 256, is 198.18.1.7 on rxeveth0")
	if !strings.Contains(fs[0].Fix, "remove addresses that RDMA does not need from rxeveth0, rxeveth0.10") {
		t.Errorf("fix %q", fs[0].Fix)
	}
	// checkGID says it, with or without a default GID.
	for _, def := range []*gidChoice{p.DefaultGID, nil} {
		p.DefaultGID = def
		var msgs []string
		for _, f := range checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", noAddrs) {
			msgs = append(msgs, f.Msg)
		}
		if !strings.Contains(strings.Join(msgs, "\n"), "45 routable GIDs are past index 255") {
			t.Errorf("default GID %v: checkGID lacks the warning: %q", def, msgs)
		}
	}
}

// TestCheckGIDNetdevDown: the address of a netdev that is down (IFF_UP
// clear, or an operstate of down or lowerlayerdown) is not called
// routable: doctor says the netdev is down, and how to bring it up. It
// said "routable".
func TestCheckGIDNetdevDown(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	has := func(string) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, nil
	}
	for _, tc := range []struct {
		flags, oper string
		lvl         level
		msg         string
	}{
		{"0x1003\n", "up\n", levelOK, "rxeveth0 has 198.18.0.1/24: routable"},
		{"0x1003\n", "unknown\n", levelOK, "rxeveth0 has 198.18.0.1/24: routable"},
		{"", "", levelOK, "rxeveth0 has 198.18.0.1/24: routable"}, // sysfs cannot tell
		{"0x1002\n", "down\n", levelWarn, "rxeveth0 has 198.18.0.1/24, but is down (administratively down: `ip link show` lacks UP): not routable until it is up"},
		{"0x1003\n", "lowerlayerdown\n", levelWarn, "rxeveth0 has 198.18.0.1/24, but is down (operstate lowerlayerdown)"},
		{"0x1003\n", "down\n", levelWarn, "but is down (operstate down)"},
	} {
		files := map[string]string{}
		if tc.flags != "" {
			files["sys/class/net/rxeveth0/flags"] = tc.flags
			files["sys/class/net/rxeveth0/operstate"] = tc.oper
		}
		fs := checkGID(fakeFS(t, files), "rxe0 port 1", p, "rxeveth0", has)
		f := fs[len(fs)-1]
		wantFinding(t, f, tc.lvl, tc.msg)
		if tc.lvl == levelWarn && f.Fix != "bring it up: `ip link set rxeveth0 up`" {
			t.Errorf("fix %q", f.Fix)
		}
	}
}

// TestDoctorVLANMTURdmaCM: where rdma_cm's count of RoCE's headers (96
// bytes, on any device) gives a VLAN's GIDs another path MTU than rxe's
// (80), doctor names both: at MTU 600 a test gets 512, one with -R 256.
// It said 512 from gorperf and rdma_cm alike.
func TestDoctorVLANMTURdmaCM(t *testing.T) {
	files := rxeVLANFiles()
	files["sys/class/net/rxeveth0.10/mtu"] = "600\n"
	out, _ := doctorOn(t, files, rxeVLANPort(), "", 0)
	want := "rxeveth0.10 MTU 600 is too small for RDMA MTU 1024, which needs 1024+80 bytes of RoCE v2 headers: a test over its GIDs gets path MTU 512 from gorperf, 256 from rdma_cm (-R, which counts 96 bytes of headers)"
	if !strings.Contains(out, want) {
		t.Errorf("doctor lacks %q:\n%s", want, out)
	}
}
