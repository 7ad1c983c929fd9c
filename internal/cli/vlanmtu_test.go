//go:build linux && cgo

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/report"
)

// TestVLANNetdevMTUCapsPathMTU: over a VLAN whose netdevs' MTU, 700,
// carries RDMA MTU 512 with rxe's 80 bytes of headers, under ports
// active at 1024, a test over the VLAN's GIDs runs at path MTU 512,
// which the header shows, and says why; a UD test's default size over
// the GID -x names is 512. Each side took the port's 1024, whose packets the VLAN netdevs
// dropped: the test timed out, blaming different VLANs or subnets.
func TestVLANNetdevMTUCapsPathMTU(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	srvND, cliND := os.Getenv("RXE_NETDEV")+".10", os.Getenv("RXE_NETDEV2")+".10"
	for _, nd := range []string{srvND, cliND} {
		if out, err := exec.Command("ip", "link", "set", nd, "mtu", "700").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s mtu 700: %v: %s", nd, err, out)
		}
	}
	// doctor judges the VLAN's netdev too, not the port's alone.
	ctx := testContext(t, 60*time.Second)
	doc, _ := gorperf(ctx, "doctor", "-d", srvDev).CombinedOutput()
	if w := fmt.Sprintf("[warn] %s port 1: %s MTU 700 is too small for RDMA MTU 1024", srvDev, srvND); !strings.Contains(string(doc), w) {
		t.Errorf("doctor lacks %q:\n%s", w, doc)
	}
	for _, tc := range []struct {
		test     string
		srv, cli []string
	}{
		{"write-bw", []string{"-s", "4096", "-n", "20", "-x", fmt.Sprint(n.srvVLAN)}, []string{"-s", "4096", "-n", "20", "-x", fmt.Sprint(n.cliVLAN)}},
		// UD's default size is the MTU that the GID -x names carries.
		{"send-bw", []string{"-c", "UD", "-n", "20", "-x", fmt.Sprint(n.srvVLAN)}, []string{"-c", "UD", "-n", "20", "-x", fmt.Sprint(n.cliVLAN)}},
		// No -x: the control connection, to and from the VLAN's
		// addresses, picks the VLAN's GIDs, and UD's default size is
		// what they carry; the client judged it by the rule's GID
		// before it dialed, the port's 1024, which then failed at once
		// ("a UD message is at most the path MTU, 512 bytes here, not
		// 1024").
		{"send-bw", []string{"-c", "UD", "-n", "20"}, []string{"-c", "UD", "-n", "20"}},
	} {
		port := freshPort()
		ctx := testContext(t, 60*time.Second)
		srv, srvOut := startServer(t, ctx, srvDev, port, tc.test, append(tc.srv, "--peer-timeout", "5")...)
		args := append(append([]string{tc.test, "-d", cliDev, "-p", port}, tc.cli...), "--peer-timeout", "5", n.srvAddr)
		out, err := gorperf(ctx, args...).CombinedOutput()
		serr := srv.Wait()
		const mtu = " Mtu             : 512[B]"
		cliWhy := fmt.Sprintf("path MTU at most 512: %s's MTU 700 carries RDMA MTU 512 (+80 bytes of headers), not the port's active 1024", cliND)
		srvWhy := fmt.Sprintf("path MTU at most 512: %s's MTU 700 carries RDMA MTU 512 (+80 bytes of headers)", srvND)
		if err != nil || serr != nil || !strings.Contains(string(out), mtu) || !strings.Contains(string(out), cliWhy) ||
			!strings.Contains(srvOut.String(), mtu) || !strings.Contains(srvOut.String(), srvWhy) {
			t.Errorf("%q: client %v, server %v; want %q and %q\nclient:\n%s\nserver:\n%s", args, err, serr, mtu, cliWhy, out, srvOut)
		}
		if tc.test == "send-bw" && !strings.Contains(string(out), "\n 512 ") {
			t.Errorf("%q: no row of 512 bytes:\n%s", args, out)
		}
		note := fmt.Sprintf("gorperf: a UD message is at most what the GID's netdev %s (MTU 700) carries, under the port's active 1024: sending 512 bytes (-s to choose)", cliND)
		if tc.test == "send-bw" && !strings.Contains(string(out), note) {
			t.Errorf("%q: lacks %q:\n%s", args, note, out)
		}
	}
}

// TestRdmaCMPathMTU: with -R, rdma_cm sets the RC QPs' path MTU from
// the route, within -m, and the header shows the one they got. -m 512
// over ports active at 1024 gets 512 on both sides, in the text header
// and in the client's JSON: rdma_cm ignored -m, and the QPs got 1024. And
// rdma_cm counts 96 bytes of headers in the netdev's MTU (iboe_get_mtu)
// where rxe counts 80: netdevs of MTU 4180 make the ports active at 4096
// and the QPs 2048, which the header showed as 4096.
func TestRdmaCMPathMTU(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	nd0, nd1 := os.Getenv("RXE_NETDEV"), os.Getenv("RXE_NETDEV2")
	if os.Getenv("RXE_VM") == "" || nd0 == "" || nd1 == "" || srvDev == cliDev {
		t.Skip("needs the rxe VM's two devices (ci/rxe-vm/run -2): it changes their netdevs' MTU")
	}
	run := func(mtu string, want string, asJSON bool) []string {
		t.Helper()
		port := freshPort()
		ctx := testContext(t, 60*time.Second)
		srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", "-R", "-s", "8192", "-n", "20", "--peer-timeout", "5")
		args := []string{"write-bw", "-d", cliDev, "-p", port, "-R", "-s", "8192", "-n", "20", "--peer-timeout", "5", addr}
		if mtu != "" {
			args = append(args, "-m", mtu)
		}
		var out []byte
		var err error
		if asJSON {
			args = append(args, "--json")
			out, err = gorperf(ctx, args...).Output() // the JSON alone
		} else {
			out, err = gorperf(ctx, args...).CombinedOutput()
		}
		serr := srv.Wait()
		line := fmt.Sprintf(" Mtu             : %s[B]", want)
		if err != nil || serr != nil || (!asJSON && !strings.Contains(string(out), line)) || !strings.Contains(srvOut.String(), line) {
			t.Errorf("%q: client %v, server %v; want %q\nclient:\n%s\nserver:\n%s", args, err, serr, line, out, srvOut)
		}
		return []string{string(out), srvOut.String()}
	}
	outs := run("512", "512", false)
	for _, out := range outs {
		if w := "as rdma_cm set it"; strings.Contains(out, w) {
			t.Errorf("says %q, where the QPs got the path MTU the two sides offered:\n%s", w, out)
		}
	}
	outs = run("512", "512", true)
	var r report.Result
	if err := json.Unmarshal([]byte(outs[0]), &r); err != nil || r.MTU != 512 {
		t.Errorf("-R -m 512 --json: mtu %d, %v; want 512:\n%s", r.MTU, err, outs[0])
	}

	active, err := portActiveMTU(srvDev)
	if err != nil {
		t.Fatal(err)
	}
	was := map[string]string{}
	for _, nd := range []string{nd0, nd1} {
		b, err := os.ReadFile("/sys/class/net/" + nd + "/mtu")
		if err != nil {
			t.Fatal(err)
		}
		was[nd] = strings.TrimSpace(string(b))
	}
	setMTU := func(mtu map[string]string) {
		for _, nd := range []string{nd0, nd1} {
			if out, err := exec.Command("ip", "link", "set", nd, "mtu", mtu[nd]).CombinedOutput(); err != nil {
				t.Errorf("ip link set %s mtu %s: %v: %s", nd, mtu[nd], err, out)
			}
		}
	}
	t.Cleanup(func() {
		setMTU(was)
		waitActiveMTU(t, []string{srvDev, cliDev}, active)
	})
	setMTU(map[string]string{nd0: "4180", nd1: "4180"})
	waitActiveMTU(t, []string{srvDev, cliDev}, ibverbs.MTU4096)
	outs = run("", "2048", false)
	for i, nd := range []string{nd1, nd0} {
		w := fmt.Sprintf("path MTU at most 2048: %s's MTU 4180 carries RDMA MTU 2048 (+96 bytes of headers, as rdma_cm counts them), not the port's active 4096", nd)
		if !strings.Contains(outs[i], w) {
			t.Errorf("lacks %q:\n%s", w, outs[i])
		}
	}
}

// waitActiveMTU waits up to 10 s for port 1 of each of devs to be
// active at mtu (rxe follows its netdev's MTU).
func waitActiveMTU(t *testing.T, devs []string, mtu ibverbs.MTU) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, d := range devs {
		for {
			got, err := portActiveMTU(d)
			if err == nil && got == mtu {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s port 1 is active at %v (%v), not %v, after 10 s", d, got, err, mtu)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// portActiveMTU is the active MTU of dev's port 1.
func portActiveMTU(dev string) (ibverbs.MTU, error) {
	c, err := ibverbs.Open(dev)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	pa, err := c.QueryPort(1)
	return pa.ActiveMTU, err
}
