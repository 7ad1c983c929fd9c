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
	}
}
