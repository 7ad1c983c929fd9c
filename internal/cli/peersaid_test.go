//go:build linux && cgo

package cli

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGIDMismatchSaidOnce: a server on GID index 0 (fe80::, IPv6) and a
// client on index 1 (IPv4) both find the GIDs incompatible, and each
// says so once, in its own words, with the fix whole. The client printed
// the server's copy ("peer: incompatible GIDs: this side's is index 0,
// ..."), false on its side and cut short before its end, then "this side
// then found:" and its own; serve --json's error did the same.
func TestGIDMismatchSaidOnce(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	if srvDev == cliDev {
		t.Skip("needs two devices (ci/rxe-vm/run -2)")
	}
	for _, test := range []string{"write-bw", "serve"} {
		port := freshPort()
		ctx := testContext(t, 60*time.Second)
		srvArgs := []string{test, "-d", srvDev, "-p", port, "-x", "0"}
		if test == "serve" {
			srvArgs = append(srvArgs, "--json")
		}
		srv, srvOut := start(t, ctx, srvArgs...)
		serverUp(t, srv, port)
		args := []string{"write-bw", "-d", cliDev, "-p", port, "-x", "1", "-n", "100", addr}
		out, err := gorperf(ctx, args...).CombinedOutput()
		if test == "serve" {
			time.Sleep(500 * time.Millisecond) // its error line follows the client's end
			srv.Process.Signal(syscall.SIGINT)
		}
		srv.Wait()
		const fix = "or leave -x out on both sides and give --gid-family 4 or 6"
		// once is whether text, one stream, says the GIDs' error once, as
		// the side of index i finds it, whole.
		once := func(text string, i int) bool {
			return strings.Count(text, "incompatible GIDs") == 1 && strings.Contains(text, fmt.Sprintf("incompatible GIDs: this side's is index %d, ", i)) &&
				strings.Contains(text, fix) && !strings.Contains(text, "then found") && !strings.Contains(text, "peer:")
		}
		if err == nil || !once(string(out), 1) {
			t.Errorf("%s: client %v; want the GIDs' error once, this side's (index 1), whole\n%s", test, err, out)
		}
		// serve --json's error, on its standard output, and its log line.
		sout, serr := srvOut.String(), srv.Stderr.(*bytes.Buffer).String()
		if !once(serr, 0) || test == "serve" && !once(sout, 0) {
			t.Errorf("%s: server: want the GIDs' error once, this side's (index 0), whole\n%s%s", test, sout, serr)
		}
	}
}

// TestUDSizeOverMTUBeforeDial: a UD client whose -s is over its own
// port's active MTU fails at once, before it dials, saying so: with no
// server it waited out its dial and blamed the connection ("nothing
// accepted the connection"); under a busy serve it queued first.
func TestUDSizeOverMTUBeforeDial(t *testing.T) {
	_, cliDev, addr := peers(t)
	ctx := testContext(t, 30*time.Second)
	port := freshPort() // nothing listens there
	began := time.Now()
	out, err := gorperf(ctx, "send-bw", "-d", cliDev, "-x", "1", "-c", "UD", "-s", "4096", "-p", port, addr).CombinedOutput()
	took := time.Since(began)
	if err == nil || !strings.Contains(string(out), "gorperf: a UD message is at most the path MTU, ") ||
		!strings.Contains(string(out), "not 4096: choose a smaller -s") || strings.Contains(string(out), "accepted") || took > 2*time.Second {
		t.Errorf("-c UD -s 4096, no server: %v after %v; want the UD size's error at once\n%s", err, took.Round(time.Millisecond), out)
	}
}
