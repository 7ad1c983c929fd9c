//go:build linux && cgo

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPeerStopped stops a peer mid-test with SIGSTOP: its connection stays
// open and its NIC (rxe, in the kernel) still answers, so neither the
// control socket's state nor the completions tell; only its silence on the
// control connection does. The side waiting for its result fails within
// --peer-timeout and says why, where perftest waits for ever.
func TestPeerStopped(t *testing.T) {
	t.Run("client", testClientStopped)
	t.Run("server", testServerStopped)
}

// stop stops cmd's process (SIGSTOP) and returns when; the process is
// killed when the test ends.
func stop(t *testing.T, cmd *exec.Cmd) time.Time {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Wait()
	})
	return time.Now()
}

// testClientStopped stops a client of `gorperf serve`: the server reports
// the test failed and serves the next client.
func testClientStopped(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	port := fmt.Sprint(19000 + nextPort.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, srvOut := start(t, ctx, "serve", "-d", srvDev, "-p", port, "--peer-timeout", "2")
	waitListening(t, port)
	cli, _ := start(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-D", "30", "--peer-timeout", "2", addr)
	waitOutput(t, srvOut, "GID index") // connected: the test runs
	time.Sleep(time.Second)
	stopped := stop(t, cli)
	// The next client is served once the server has given up on the
	// stopped one: within the peer timeout, not the stopped one's 30 s.
	out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-n", "100", "--json", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("the next client: %v\n%s\nserver:\n%s", err, out, srvOut)
	}
	if d := time.Since(stopped); d > 20*time.Second {
		t.Errorf("the next client was served %v after the first stopped", d)
	}
	srv.Process.Signal(syscall.SIGINT)
	srv.Wait()
	if e := srv.Stderr.(*bytes.Buffer).String(); !strings.Contains(e, "stopped or hung") || !strings.Contains(e, "served 2 tests, 1 failed") {
		t.Errorf("the server did not say the client was stopped:\n%s", e)
	}
}

// testServerStopped stops a server between sizes of an -a run: the
// client, waiting for it at the next size's barrier, fails with the
// reason, where it waited out the control protocol's 30 s.
func testServerStopped(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	port := fmt.Sprint(19000 + nextPort.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, srvOut := start(t, ctx, "write-bw", "-d", srvDev, "-p", port, "--peer-timeout", "2")
	waitListening(t, port)
	cli, cliOut := start(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-a", "-n", "200", "--peer-timeout", "2", addr)
	waitOutput(t, srvOut, "GID index")
	stopped := stop(t, srv)
	err := cli.Wait()
	if code, e := procExit(err), cli.Stderr.(*bytes.Buffer).String(); code == 0 || !strings.Contains(e, "stopped or hung") {
		t.Errorf("the client of a stopped server: exit %d (%v), want a failure that says why:\n%s%s", code, err, cliOut, e)
	}
	if d := time.Since(stopped); d > 20*time.Second {
		t.Errorf("the client gave up %v after the server stopped", d)
	}
}
