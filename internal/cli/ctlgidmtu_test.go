//go:build linux && cgo

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
)

// vlanFirst gives the VLAN's addresses of setUpVLAN (n) the GIDs before
// the untagged ones' on both devices, as where the VLAN's addresses came
// first: the rule (no GID flag) then picks the VLAN's GID. It takes the
// four IPv4 addresses off, puts the VLAN's back first (a GID takes the
// lowest free index), then the untagged ones, and the policy routes that
// went with them (guest.sh's and setUpVLAN's). As the test ends, before
// setUpVLAN's clean-up, it puts them back the other way round, so that
// the untagged GIDs have their indices again (RXE_GID_INDEX).
func vlanFirst(t *testing.T, srvDev, cliDev string, n vlanNet) {
	t.Helper()
	nd0, nd1 := os.Getenv("RXE_NETDEV"), os.Getenv("RXE_NETDEV2")
	type addr struct{ dev, cidr, netdev, suffix string }
	plain := []addr{{srvDev, "198.18.0.1/24", nd0, "c612:0001"}, {cliDev, "198.18.0.2/24", nd1, "c612:0002"}}
	vlan := []addr{{srvDev, n.srvAddr + "/24", nd0 + ".10", "c612:0a01"}, {cliDev, n.cliAddr + "/24", nd1 + ".10", "c612:0a02"}}
	wait := func(as []addr, there bool) error {
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			done := true
			for _, a := range as {
				done = done && (gidIndexOf(a.dev, a.suffix) >= 0) == there
			}
			switch {
			case done:
				return nil
			case time.Now().After(end):
				return fmt.Errorf("GIDs of %v still not there=%v after 10 s", as, there)
			}
		}
	}
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %q: %v: %s", args, err, out)
		}
		return nil
	}
	order := func(first, second []addr) error {
		for _, a := range append(append([]addr{}, first...), second...) {
			if err := ip("addr", "del", a.cidr, "dev", a.netdev); err != nil {
				return err
			}
		}
		if err := wait(append(append([]addr{}, first...), second...), false); err != nil {
			return err
		}
		for _, as := range [][]addr{first, second} {
			for _, a := range as {
				if err := ip("addr", "add", a.cidr, "dev", a.netdev); err != nil {
					return err
				}
			}
			if err := wait(as, true); err != nil {
				return err
			}
		}
		// The routes whose source address went with it.
		for _, r := range [][]string{
			{"198.18.0.1", nd1, "198.18.0.2", "101"}, {"198.18.0.2", nd0, "198.18.0.1", "102"},
			{n.srvAddr, nd1 + ".10", n.cliAddr, "103"}, {n.cliAddr, nd0 + ".10", n.srvAddr, "104"},
		} {
			if err := ip("route", "replace", r[0], "dev", r[1], "src", r[2], "table", r[3]); err != nil {
				return err
			}
		}
		return nil
	}
	t.Cleanup(func() {
		if err := order(plain, vlan); err != nil {
			t.Errorf("putting the untagged addresses' GIDs first again: %v", err)
		}
		if i := gidIndexOf(srvDev, "c612:0001"); i != n.srvPlain {
			t.Errorf("%s's GID of 198.18.0.1 is at index %d again, not %d", srvDev, i, n.srvPlain)
		}
	})
	if err := order(vlan, plain); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{srvDev, cliDev} {
		sfx := map[string][2]string{srvDev: {"c612:0a01", "c612:0001"}, cliDev: {"c612:0a02", "c612:0002"}}[dev]
		if v, p := gidIndexOf(dev, sfx[0]), gidIndexOf(dev, sfx[1]); v < 0 || p < 0 || v > p {
			t.Fatalf("%s: the VLAN's GID at index %d, the untagged one at %d: want the VLAN's first", dev, v, p)
		}
	}
}

// serverUp waits until the server srv listens on port, for at most 10 s;
// where it does not, it stops it and fails with what it said.
func serverUp(t *testing.T, srv *exec.Cmd, port string) {
	t.Helper()
	if listensWithin(port, 10*time.Second) {
		return
	}
	srv.Process.Kill()
	err := srv.Wait()
	t.Fatalf("%q: no server on port %s after 10 s (%v): %s", srv.Args[1:], port, err, srv.Stderr.(*bytes.Buffer))
}

// onPlain reports whether every GID of gids (perftest's form) is one of
// the untagged 198.18.0.1's and .2's, and there are some.
func onPlain(gids []string) bool {
	for _, g := range gids {
		if !strings.HasSuffix(g, ":255:255:198:18:00:01") && !strings.HasSuffix(g, ":255:255:198:18:00:02") {
			return false
		}
	}
	return len(gids) > 0
}

// TestRuleGIDCarriesNothing: where the first routable GID on each side
// is a VLAN's whose netdev's MTU, 300, carries no RDMA MTU, a server and
// a client with no GID flag still start, and a client that reaches the
// server at its untagged address runs the test over the untagged GIDs,
// which the control connection picks (a server for one test, and
// gorperf serve; a client of a server whose GID --source_ip names). Each
// exited at once: "rxeveth0.10's MTU 300 carries no RDMA MTU ...", the
// client "rxeveth1.10's ...", judging the rule's GID before any control
// connection.
// A client that reaches the server at its VLAN address gets the VLAN's
// GIDs, and both sides fail at once, naming a VLAN netdev.
func TestRuleGIDCarriesNothing(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	vlanFirst(t, srvDev, cliDev, n)
	srvND, cliND := setVLANMTU(t, 300, 300)
	common := []string{"-s", "64", "-n", "100", "--peer-timeout", "8"}
	for _, tc := range []struct{ test, srvFlag string }{
		// The server's GID named: the client's check before it dials.
		{"write-bw", "--source_ip"},
		{"write-bw", ""},
		{"serve", ""},
	} {
		test := tc.test
		port := freshPort()
		ctx := testContext(t, 60*time.Second)
		srvArgs := common
		switch {
		case test == "serve":
			srvArgs = nil
		case tc.srvFlag != "":
			srvArgs = append([]string{tc.srvFlag, addr}, common...)
		}
		srv, srvOut := start(t, ctx, append([]string{test, "-d", srvDev, "-p", port}, srvArgs...)...)
		serverUp(t, srv, port)
		args := append(append([]string{"write-bw", "-d", cliDev, "-p", port}, common...), addr)
		out, err := gorperf(ctx, args...).CombinedOutput()
		if test == "serve" {
			srv.Process.Signal(syscall.SIGINT)
		}
		serr := srv.Wait()
		if test == "serve" {
			serr = nil // stopped
		}
		if cg, sg := gidLines(string(out)), gidLines(srvOut.String()); err != nil || serr != nil || !onPlain(cg) || !onPlain(sg) {
			t.Errorf("%s %s: client %v, GIDs %q; server %v, GIDs %q\nclient %q:\n%s\nserver:\n%s%s",
				test, tc.srvFlag, err, cg, serr, sg, args, out, srvOut, srv.Stderr.(*bytes.Buffer))
		}
	}

	port := freshPort()
	ctx := testContext(t, 60*time.Second)
	started := time.Now()
	srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", common...)
	args := append(append([]string{"write-bw", "-d", cliDev, "-p", port}, common...), n.srvAddr)
	out, err := gorperf(ctx, args...).CombinedOutput()
	serr := srv.Wait()
	took := time.Since(started)
	srvText := srvOut.String() + srv.Stderr.(*bytes.Buffer).String()
	names := func(text string) bool {
		for _, nd := range []string{srvND, cliND} {
			if strings.Contains(text, fmt.Sprintf("%s's MTU 300 carries no RDMA MTU (256 bytes and 80 of headers): raise it to at least 336", nd)) {
				return true
			}
		}
		return false
	}
	if procExit(err) <= 0 || procExit(serr) <= 0 || took > 5*time.Second || !names(string(out)) || !names(srvText) {
		t.Errorf("over the VLAN: client exit %d, server exit %d, after %v; want both non-zero within 5 s, naming %s or %s\nclient %q:\n%s\nserver:\n%s",
			procExit(err), procExit(serr), took.Round(time.Millisecond), srvND, cliND, args, out, srvText)
	}
}

// TestServerMTUNoticeControlGID: the server's note of a client's -m over
// what it offers judges the GID the test uses, the control
// connection's, not the rule's. With the untagged GID first, a client
// that reaches the server at its VLAN address, whose netdev's MTU 700
// carries 512, gets the note, where it had none (the rule's untagged GID
// carries the port's active MTU); with the VLAN's GID first, one that
// reaches it at its untagged address gets none, where the note named
// the VLAN's netdev and 512, and the header said 1024 over the untagged
// GID.
func TestServerMTUNoticeControlGID(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	active, err := bench.ActiveMTU(bench.Local{Device: srvDev, Port: 1, GIDIndex: -1})
	if err != nil {
		t.Fatal(err)
	}
	if active < ibverbs.MTU1024 {
		t.Skipf("%s's active MTU is %d: -m 1024 is over it", srvDev, active.Bytes())
	}
	n := setUpVLAN(t, srvDev, cliDev)
	srvND, _ := setVLANMTU(t, 700, 1500)
	note := fmt.Sprintf("gorperf: the client's -m 1024 is over what the GID's netdev %s (MTU 700) carries, under this port's active %d: the path MTU is at most 512\n", srvND, active.Bytes())
	run := func(host, mtu string, noted bool) {
		t.Helper()
		for _, test := range []string{"write-bw", "serve"} {
			port := freshPort()
			ctx := testContext(t, 60*time.Second)
			var srvArgs []string
			if test != "serve" {
				srvArgs = []string{"-s", "64", "-n", "100"}
			}
			srv, srvOut := startServer(t, ctx, srvDev, port, test, srvArgs...)
			args := []string{"write-bw", "-d", cliDev, "-p", port, "-s", "64", "-n", "100", "-m", "1024", host}
			out, err := gorperf(ctx, args...).CombinedOutput()
			if test == "serve" {
				srv.Process.Signal(syscall.SIGINT)
			}
			serr := srv.Wait()
			stderr := srv.Stderr.(*bytes.Buffer).String()
			line := " Mtu             : " + mtu + "[B]"
			got := strings.Count(stderr, "the client's -m")
			if err != nil || (test != "serve" && serr != nil) || !strings.Contains(srvOut.String(), line) ||
				noted && (got != 1 || !strings.Contains(stderr, note)) || !noted && got != 0 {
				t.Errorf("%s, client to %s: client %v, server %v; want %q, and the note %v (%q)\nclient %q:\n%s\nserver:\n%s\nserver's stderr:\n%s",
					test, host, err, serr, line, noted, note, args, out, srvOut, stderr)
			}
		}
	}
	run(n.srvAddr, "512", true)
	vlanFirst(t, srvDev, cliDev, n)
	run(addr, "1024", false)
}
