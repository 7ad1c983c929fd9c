//go:build linux && cgo

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSweepStallNamesMTU: a sweep (-a) whose small sizes get through and
// whose first size of packets over 1 KiB is dropped (a tc filter on the
// server's netdev drops the RoCE packets of an IP length of 1024 or more
// that come in, as a link of a smaller MTU would; on the sender's way
// out, rxe would resend a dropped packet for ever) fails, where the peer runs on, with
// an error that names a link of a smaller MTU and -m 512 to try; it
// asked only whether the peer was still running. The client's copy of
// the server's error, which the protocol cuts short, keeps the -m: it
// came last, and was cut.
func TestSweepStallNamesMTU(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	nd := os.Getenv("RXE_NETDEV")
	if os.Getenv("RXE_VM") == "" || nd == "" || srvDev == cliDev {
		t.Skip("needs the rxe VM's two devices (ci/rxe-vm/run -2): it filters a netdev's packets")
	}
	tc := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			t.Fatalf("tc %q: %v: %s", args, err, out)
		}
	}
	exec.Command("tc", "qdisc", "del", "dev", nd, "clsact").Run() // a run cut short may have left it
	tc("qdisc", "add", "dev", nd, "clsact")
	t.Cleanup(func() { exec.Command("tc", "qdisc", "del", "dev", nd, "clsact").Run() })
	// UDP to RoCE v2's port 4791, with bit 10 of the IP total length set:
	// a 1024-byte payload's packets (1076 bytes), not a 512-byte one's.
	tc("filter", "add", "dev", nd, "ingress", "protocol", "ip", "u32",
		"match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", "4791", "0xffff",
		"match", "u16", "0x0400", "0x0400", "at", "2", "action", "drop")
	port := freshPort()
	ctx := testContext(t, 40*time.Second)
	args := []string{"-c", "UC", "-a", "-n", "20", "--peer-timeout", "3"}
	srv, srvOut := startServer(t, ctx, srvDev, port, "send-bw", args...)
	out, err := gorperf(ctx, append(append([]string{"send-bw", "-d", cliDev, "-p", port}, args...), addr)...).CombinedOutput()
	serr := srv.Wait()
	const hint = "try -m 512: a link between them may drop packets of 1024 bytes and headers, over its MTU, where those of 512 got through"
	// The server's receives stall, and it says so in full; the client
	// says what it was told (the protocol cuts the text short, after the
	// hint's flag, at a word, and ends it with "…").
	const flag = "try -m 512: a link between them may drop packets of 1024 bytes and headers"
	srvErr := srv.Stderr.(*bytes.Buffer).String()
	if err == nil || serr == nil || !strings.Contains(srvErr, hint) || !strings.Contains(srvErr, "`ip link`") ||
		!strings.Contains(string(out), "gorperf: peer: the peer stopped answering") || !strings.Contains(string(out), flag) {
		t.Errorf("client %v, server %v; want both to fail, naming %q\nclient:\n%s\nserver:\n%s%s", err, serr, hint, out, srvOut, srvErr)
	}
	if !strings.Contains(string(out), "\n 512 ") {
		t.Errorf("no row of 512 bytes:\n%s", out)
	}
}
