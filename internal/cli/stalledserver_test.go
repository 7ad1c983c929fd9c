//go:build linux && cgo

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestServerStoppedMidRun stops a send-bw server (SIGSTOP) while its
// client's timed loop runs: the client fails within its peer timeout and
// says that the server stopped answering after completions had come, and
// has sent nothing, not even a keepalive: stopped or hung. It said the
// two sides' GIDs might not reach each other (different VLANs or
// subnets?), on RoCE, though the completions had flowed between them.
func TestServerStoppedMidRun(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "send-bw", "--peer-timeout", "2")
	cli, cliOut := start(t, ctx, "send-bw", "-d", cliDev, "-p", port, "-D", "20", "--peer-timeout", "2", addr)
	waitOutput(t, srvOut, "GID index") // connected: the test runs
	time.Sleep(1500 * time.Millisecond)
	stopped := stop(t, srv)
	err := cli.Wait()
	e := cli.Stderr.(*bytes.Buffer).String()
	if code := procExit(err); code == 0 {
		t.Fatalf("the client of a stopped server: exit 0:\n%s%s", cliOut, e)
	}
	if d := time.Since(stopped); d > 15*time.Second {
		t.Errorf("the client gave up %v after the server stopped", d)
	}
	for _, want := range []string{"the peer stopped answering, after ", " completions and messages from it in the run: no completion for ", "not even a keepalive (was it stopped, with Ctrl-Z or SIGSTOP, or hung, or is the network between the two sides down?)"} {
		if !strings.Contains(e, want) {
			t.Errorf("the client's error lacks %q:\n%s", want, e)
		}
	}
	if strings.Contains(e, "may not reach each other") {
		t.Errorf("the client blames the path between the GIDs, which carried its completions:\n%s", e)
	}
}
