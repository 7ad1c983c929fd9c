//go:build linux && cgo

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// setVLANMTU sets the MTU of the VLAN netdevs of setUpVLAN: the
// server's, then the client's.
func setVLANMTU(t *testing.T, srv, cli int) (srvND, cliND string) {
	t.Helper()
	srvND, cliND = os.Getenv("RXE_NETDEV")+".10", os.Getenv("RXE_NETDEV2")+".10"
	for nd, mtu := range map[string]int{srvND: srv, cliND: cli} {
		if out, err := exec.Command("ip", "link", "set", nd, "mtu", fmt.Sprint(mtu)).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s mtu %d: %v: %s", nd, mtu, err, out)
		}
	}
	return srvND, cliND
}

// TestVLANNetdevMTUCarriesNothing: a test over the GID of a VLAN netdev
// whose MTU, 300, carries no RDMA MTU with rxe's 80 bytes of headers
// fails at once on that side, naming the netdev and the MTU it needs,
// and its peer is told: where only one side's netdev is too small, its
// reason reaches the other (a client's before it asks for its test, a
// server's in the test's set-up). The test went ahead at path MTU 256,
// whose packets the netdev dropped, and both sides waited out the peer
// timeout, blaming VLANs or subnets.
func TestVLANNetdevMTUCarriesNothing(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	const within = 4 * time.Second // well under the peer timeout, 8 s
	for _, tc := range []struct {
		name             string
		srvMTU, cliMTU   int
		srvArgs, cliArgs []string
		// small is the side whose netdev is too small: "both",
		// "client" or "server".
		small string
	}{
		{"both, --source_ip", 300, 300, []string{"--source_ip", n.srvAddr}, []string{"--source_ip", n.cliAddr}, "both"},
		{"client, --source_ip", 1500, 300, []string{"--source_ip", n.srvAddr}, []string{"--source_ip", n.cliAddr}, "client"},
		// No flag names the GIDs: the control connection, to and from
		// the VLAN's addresses, picks them, in the test's set-up.
		{"server, control connection", 300, 1500, nil, nil, "server"},
	} {
		srvND, cliND := setVLANMTU(t, tc.srvMTU, tc.cliMTU)
		want := map[string]string{}
		for _, nd := range []string{srvND, cliND} {
			want[nd] = fmt.Sprintf("%s's MTU 300 carries no RDMA MTU (256 bytes and 80 of headers): raise it to at least 336 (`ip link set %s mtu 336`)", nd, nd)
		}
		port := freshPort()
		ctx := testContext(t, 60*time.Second)
		common := []string{"-s", "4096", "-n", "20", "--peer-timeout", "8"}
		started := time.Now()
		srvArgs := append(append([]string{"write-bw", "-d", srvDev, "-p", port}, common...), tc.srvArgs...)
		var srv *exec.Cmd
		var srvOut *syncBuffer
		if tc.small == "both" {
			// It fails before it listens.
			srv, srvOut = start(t, ctx, srvArgs...)
		} else {
			srv, srvOut = startServer(t, ctx, srvDev, port, "write-bw", append(common, tc.srvArgs...)...)
		}
		args := append(append([]string{"write-bw", "-d", cliDev, "-p", port}, common...), append(tc.cliArgs, n.srvAddr)...)
		cmd := gorperf(ctx, args...)
		var cliOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &cliOut, &cliOut
		err := cmd.Run()
		serr := srv.Wait()
		took := time.Since(started)
		srvText := srvOut.String() + srv.Stderr.(*bytes.Buffer).String()
		// What each side says: its own netdev's, or where only the
		// peer's is too small, the peer's.
		cliWant, srvWant := want[cliND], want[srvND]
		switch tc.small {
		case "client":
			srvWant = want[cliND]
		case "server":
			cliWant = want[srvND]
		}
		if procExit(err) <= 0 || procExit(serr) <= 0 || took > within ||
			!strings.Contains(cliOut.String(), cliWant) || !strings.Contains(srvText, srvWant) {
			t.Errorf("%s: client exit %d, server exit %d, after %v; want both non-zero within %v, the client saying %q and the server %q\nclient %q:\n%s\nserver %q:\n%s",
				tc.name, procExit(err), procExit(serr), took.Round(time.Millisecond), within, cliWant, srvWant, args, &cliOut, srvArgs, srvText)
		}
	}
}

// TestVLANUDDefaultSizeServerCapped: a UD test's default size, the most
// the client offers (its VLAN netdev carries the port's 1024), is over
// the path MTU where only the server's VLAN netdev is capped (MTU 700
// carries 512): both sides send 512, and the client says so, once. Both
// sides failed at once: "a UD message is at most the path MTU, 512 bytes
// here, not 1024: choose a smaller -s"; then the client said it sent
// 1024 (its own port's MTU) before the dial, and 512 after.
func TestVLANUDDefaultSizeServerCapped(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	setVLANMTU(t, 700, 1500)
	port := freshPort()
	ctx := testContext(t, 60*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "send-bw", "-c", "UD", "-n", "20", "--peer-timeout", "5", "--source_ip", n.srvAddr)
	args := []string{"send-bw", "-d", cliDev, "-p", port, "-c", "UD", "-n", "20", "--peer-timeout", "5", "--source_ip", n.cliAddr, n.srvAddr}
	out, err := gorperf(ctx, args...).CombinedOutput()
	serr := srv.Wait()
	srvText := srvOut.String() + srv.Stderr.(*bytes.Buffer).String()
	const mtu = " Mtu             : 512[B]"
	const note = "gorperf: a UD message is at most the path MTU, 512 bytes, the least the two sides offer: sending 512 bytes, not 1024 (-s to choose)"
	if err != nil || serr != nil || !strings.Contains(string(out), mtu) || !strings.Contains(srvText, mtu) || !strings.Contains(string(out), note) ||
		!strings.Contains(string(out), "\n 512 ") || !strings.Contains(srvText, "\n 512 ") {
		t.Errorf("%q: client %v, server %v; want both to send 512 bytes, the client saying %q\nclient:\n%s\nserver:\n%s", args, err, serr, note, out, srvText)
	}
	if n := strings.Count(string(out), "gorperf: a UD message is at most"); n != 1 || strings.Contains(string(out), "sending 1024") {
		t.Errorf("%q: the client noted UD's size %d times, want once, with 512:\n%s", args, n, out)
	}
}

// TestVLANUDSizeServerCapped: a UD -s 1024, within what the client
// offers (its VLAN netdev carries the port's 1024), over the path MTU
// where only the server's VLAN netdev is capped (MTU 700 carries 512):
// the client passes its own check before the dial, and both sides then
// fail at once on the path MTU they agree on, each saying so once, in its
// own words.
func TestVLANUDSizeServerCapped(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	setVLANMTU(t, 700, 1500)
	port := freshPort()
	ctx := testContext(t, 60*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "send-bw", "-c", "UD", "-s", "1024", "-n", "20", "--peer-timeout", "5", "--source_ip", n.srvAddr)
	args := []string{"send-bw", "-d", cliDev, "-p", port, "-c", "UD", "-s", "1024", "-n", "20", "--peer-timeout", "5", "--source_ip", n.cliAddr, n.srvAddr}
	start := time.Now()
	out, err := gorperf(ctx, args...).CombinedOutput()
	serr := srv.Wait()
	took := time.Since(start)
	srvText := srvOut.String() + srv.Stderr.(*bytes.Buffer).String()
	const refusal = "a UD message is at most the path MTU, 512 bytes here, not 1024: choose a smaller -s"
	for side, text := range map[string]string{"client": string(out), "server": srvText} {
		if c := strings.Count(text, refusal); c != 1 || strings.Contains(text, "this side then found") {
			t.Errorf("%s: the refusal said %d times, want once, in this side's words:\n%s", side, c, text)
		}
	}
	if err == nil || serr == nil {
		t.Errorf("%q: client %v, server %v; want both to fail", args, err, serr)
	}
	if took > 15*time.Second {
		t.Errorf("the refusal took %v", took)
	}
}
