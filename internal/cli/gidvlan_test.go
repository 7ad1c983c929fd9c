//go:build linux && cgo

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// vlanNet is the VLAN 10 that setUpVLAN adds in the rxe VM on the veth
// pair's two ends: the server's device (rxe0, on rxeveth0) has
// 198.18.10.1 on rxeveth0.10, the client's (rxe1) 198.18.10.2 on
// rxeveth1.10, besides their untagged 198.18.0.1 and .2, which stay the
// first routable GIDs.
type vlanNet struct {
	srvAddr, cliAddr   string // the VLAN's addresses
	srvVLAN, cliVLAN   int    // their GIDs' indices
	srvPlain, cliPlain int    // the untagged addresses' GIDs' indices
}

// setUpVLAN adds VLAN 10 over the VM's veth pair, with policy routes that
// send each end's traffic to the other's VLAN address out of its own
// VLAN netdev (as guest.sh does for the untagged addresses), waits for
// the devices' GIDs of the VLAN's addresses, and removes it all as the
// test ends. Outside the rxe VM it skips: it changes the host's
// networking.
func setUpVLAN(t *testing.T, srvDev, cliDev string) vlanNet {
	t.Helper()
	nd0, nd1 := os.Getenv("RXE_NETDEV"), os.Getenv("RXE_NETDEV2")
	if os.Getenv("RXE_VM") == "" || nd0 == "" || nd1 == "" || srvDev == cliDev {
		t.Skip("needs the rxe VM's two devices (ci/rxe-vm/run -2): it adds a VLAN to their netdevs")
	}
	v0, v1 := nd0+".10", nd1+".10"
	run := func(args ...string) error {
		if args[0] == "sysctl" { // by its path: the netdev's name has a dot
			return os.WriteFile("/proc/sys/net/ipv4/conf/"+args[1]+"/"+args[2], []byte(args[3]), 0)
		}
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%q: %v: %s", args, err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		run("ip", "link", "del", v0)
		run("ip", "link", "del", v1)
		run("ip", "rule", "del", "pref", "12")
		run("ip", "rule", "del", "pref", "13")
		// The GIDs go with the netdevs, later: the next setUpVLAN
		// would take those still there for its own. (A sleep of 500 ms
		// assumed they had gone.)
		removed := time.Now()
		for gidIndexOf(srvDev, "c612:0a01") >= 0 || gidIndexOf(cliDev, "c612:0a02") >= 0 {
			if time.Since(removed) > 10*time.Second {
				t.Errorf("the VLAN's GIDs are still there 10 s after its netdevs were removed")
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("the VLAN's GIDs gone %v after its netdevs were removed", time.Since(removed))
	})
	for _, c := range [][]string{
		{"ip", "link", "add", "link", nd0, "name", v0, "type", "vlan", "id", "10"},
		{"ip", "link", "add", "link", nd1, "name", v1, "type", "vlan", "id", "10"},
		{"sysctl", v0, "accept_local", "1"},
		{"sysctl", v0, "rp_filter", "0"},
		{"sysctl", v1, "accept_local", "1"},
		{"sysctl", v1, "rp_filter", "0"},
		{"ip", "addr", "add", "198.18.10.1/24", "dev", v0},
		{"ip", "addr", "add", "198.18.10.2/24", "dev", v1},
		{"ip", "link", "set", v0, "up"},
		{"ip", "link", "set", v1, "up"},
		{"ip", "rule", "add", "pref", "12", "to", "198.18.10.1", "iif", "lo", "lookup", "103"},
		{"ip", "route", "add", "198.18.10.1", "dev", v1, "src", "198.18.10.2", "table", "103"},
		{"ip", "rule", "add", "pref", "13", "to", "198.18.10.2", "iif", "lo", "lookup", "104"},
		{"ip", "route", "add", "198.18.10.2", "dev", v0, "src", "198.18.10.1", "table", "104"},
	} {
		if err := run(c...); err != nil {
			t.Fatal(err)
		}
	}
	n := vlanNet{srvAddr: "198.18.10.1", cliAddr: "198.18.10.2"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.srvVLAN, n.cliVLAN = gidIndexOf(srvDev, "c612:0a01"), gidIndexOf(cliDev, "c612:0a02")
		n.srvPlain, n.cliPlain = gidIndexOf(srvDev, "c612:0001"), gidIndexOf(cliDev, "c612:0002")
		if n.srvVLAN >= 0 && n.cliVLAN >= 0 && n.srvPlain >= 0 && n.cliPlain >= 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no GIDs of the VLAN's addresses after 10s: %+v", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gidIndexOf is the index of dev's port 1 RoCE v2 GID whose text ends in
// suffix, or -1.
func gidIndexOf(dev, suffix string) int {
	d := "/sys/class/infiniband/" + dev + "/ports/1/"
	for i := range 64 {
		g, err := os.ReadFile(fmt.Sprintf("%sgids/%d", d, i))
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(g)), ":ffff:"+suffix) {
			continue
		}
		if ty, _ := os.ReadFile(fmt.Sprintf("%sgid_attrs/types/%d", d, i)); strings.Contains(string(ty), "v2") {
			return i
		}
	}
	return -1
}

// gidLines are the " GID: " lines of a side's output: its own GID's
// first, then the peer's.
func gidLines(out string) []string {
	var gids []string
	for _, l := range strings.Split(out, "\n") {
		if g, ok := strings.CutPrefix(l, " GID: "); ok {
			gids = append(gids, g)
		}
	}
	return gids
}

// onVLAN reports whether every GID of gids (perftest's form) is one of
// 198.18.10.0/24's, and there are some.
func onVLAN(gids []string) bool {
	for _, g := range gids {
		if !strings.HasSuffix(g, ":255:255:198:18:10:01") && !strings.HasSuffix(g, ":255:255:198:18:10:02") {
			return false
		}
	}
	return len(gids) > 0
}

// TestControlConnectionPicksGID: a client that reaches the server at its
// VLAN address, with no GID flag, carries the test over the VLAN's GIDs
// on both sides, whose reason says they are the control connection's
// addresses, where each side took its first routable GID, the untagged
// one, and the RDMA traffic left the VLAN; with -R the server listened on
// its untagged address and the client dialed the VLAN one, and the test
// failed after 30 s.
func TestControlConnectionPicksGID(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	for _, extra := range [][]string{nil, {"-R"}} {
		port := freshPort()
		ctx := testContext(t, 90*time.Second)
		srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", append([]string{"-n", "100", "-s", "64"}, extra...)...)
		args := append([]string{"write-bw", "-d", cliDev, "-p", port, "-n", "100", "-s", "64"}, extra...)
		out, err := gorperf(ctx, append(args, n.srvAddr)...).CombinedOutput()
		serr := srv.Wait()
		cg, sg := gidLines(string(out)), gidLines(srvOut.String())
		if err != nil || serr != nil || !onVLAN(cg) || !onVLAN(sg) ||
			!strings.Contains(string(out), n.cliAddr+" on "+os.Getenv("RXE_NETDEV2")+".10: the control connection's local address") ||
			!strings.Contains(srvOut.String(), n.srvAddr+" on "+os.Getenv("RXE_NETDEV")+".10: the control connection's local address") {
			t.Errorf("%q: client %v, GIDs %q; server %v, GIDs %q\nclient:\n%s\nserver:\n%s", args, err, cg, serr, sg, out, srvOut)
		}
	}
}

// TestLoopbackPeerDevVLAN: a loopback whose client side's GID is the
// VLAN's (--source_ip, --gid-netdev) gives the server side on --peer-dev
// its GID in the same subnet, where it took the first routable one, the
// untagged address, and the run failed after the peer timeout.
func TestLoopbackPeerDevVLAN(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	for _, pick := range [][]string{
		{"--source_ip", n.cliAddr},
		{"--gid-netdev", os.Getenv("RXE_NETDEV2") + ".10"},
		{"-x", fmt.Sprint(n.cliVLAN), "-R"},
	} {
		ctx := testContext(t, 60*time.Second)
		args := append([]string{"loopback", "write-bw", "-d", cliDev, "--peer-dev", srvDev, "-s", "64", "-n", "100", "--peer-timeout", "4"}, pick...)
		out, err := gorperf(ctx, args...).CombinedOutput()
		if g := gidLines(string(out)); err != nil || len(g) != 2 || !onVLAN(g) {
			t.Errorf("%q: %v, GIDs %q:\n%s", args, err, g, out)
		}
	}
}

// TestGIDMismatchNamesGIDs: a server on its VLAN GID (-x) and a client
// on its untagged one (-x) cannot reach each other over RDMA, though the
// control connection works: the client's error names both GIDs and that
// they may not reach each other, where it said only that the peer
// stopped answering (is it still running?), which it was.
func TestGIDMismatchNamesGIDs(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	port := freshPort()
	ctx := testContext(t, 60*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", "-n", "100", "-s", "64", "-x", fmt.Sprint(n.srvVLAN), "--peer-timeout", "3")
	args := []string{"write-bw", "-d", cliDev, "-p", port, "-n", "100", "-s", "64", "-x", fmt.Sprint(n.cliPlain), "--peer-timeout", "3", n.srvAddr}
	out, err := gorperf(ctx, args...).CombinedOutput()
	srv.Wait()
	want := []string{"the peer stopped answering", "this side's GID 198.18.0.2 on " + os.Getenv("RXE_NETDEV2"), "the peer's " + n.srvAddr, "may not reach each other"}
	for _, w := range want {
		if err == nil || !strings.Contains(string(out), w) {
			t.Errorf("%q: %v; want %q in the client's output:\n%s\nserver:\n%s", args, err, w, out, srvOut)
		}
	}
}
