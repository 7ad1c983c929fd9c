//go:build linux && cgo

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/report"
)

// TestPeerStopped stops a peer mid-test with SIGSTOP: its connection stays
// open and its NIC (rxe, in the kernel) still answers, so neither the
// control socket's state nor the completions tell; only its silence on the
// control connection does. The side waiting for its result fails within
// --peer-timeout and says why, where perftest waits for ever.
// Its two cases run one after the other: side by side, the stopped
// server's case failed in CI (its client gave no "gave up" message).
func TestPeerStopped(t *testing.T) {
	t.Run("client", func(t *testing.T) { testClientStopped(t) })
	t.Run("server", func(t *testing.T) { testServerStopped(t) })
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
// the test failed and serves the next client, and the client, let go on,
// learns why.
func testClientStopped(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "serve", "--peer-timeout", "2")
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
	// The stopped client, let go on, fails with the server's word that
	// it gave up on it, where it said that the server had closed the
	// connection ("it exited or was killed").
	if err := cli.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err = cli.Wait()
	want := "the server gave up on this client, which had sent nothing for 2s"
	if code, e := procExit(err), cli.Stderr.(*bytes.Buffer).String(); code == 0 || !strings.Contains(e, want) {
		t.Errorf("the stopped client, let go on: exit %d (%v), want a failure that says %q:\n%s", code, err, want, e)
	}
}

// testServerStopped stops a server between sizes of an -a run: the
// client, waiting for it at the next size's barrier, fails with the
// reason, where it waited out the control protocol's 30 s; the server,
// let go on (SIGCONT), fails with the client's word that it gave up on
// it, where it said that the client had closed the connection.
func testServerStopped(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", "--peer-timeout", "2")
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
	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err = srv.Wait()
	want := "the client gave up on this server, which had sent nothing for 2s"
	if code, e := procExit(err), srv.Stderr.(*bytes.Buffer).String(); code == 0 || !strings.Contains(e, want) {
		t.Errorf("the stopped server, let go on: exit %d (%v), want a failure that says %q:\n%s%s", code, err, want, srvOut, e)
	}
}

// TestInterruptedPeer stops one side of a test with SIGINT (Ctrl-C): that
// side prints what it measured, marked interrupted, and exits 130; the
// other learns at once that its peer was interrupted, prints its own
// figures (a passive side: the peer's), says so and exits 1: its run was
// cut short (only an infinite run, which ends so, exits 0 there).
// `gorperf serve` logs such a test as served, not failed, and serves the
// next client. "At once" is within interruptLimit of the SIGINT: the
// ways of ending it guards against take 30 s here (a side's
// --peer-timeout, a test's -D). The two cases run side by side
// (t.Parallel).
func TestInterruptedPeer(t *testing.T) {
	t.Run("write-lat client of serve", func(t *testing.T) { t.Parallel(); testLatClientInterrupted(t) })
	t.Run("write-bw passive server", func(t *testing.T) { t.Parallel(); testBWServerInterrupted(t) })
}

// interruptLimit is how soon after a SIGINT TestInterruptedPeer wants
// both sides ended, their teardown and exit included: well under the 30 s
// of the ways of ending it guards against, and wide for a slow VM (TCG).
const interruptLimit = 8 * time.Second

// watched is a gorperf process whose stdout and stderr can be read while
// it runs, and whose end is recorded.
type watched struct {
	cmd         *exec.Cmd
	out, errOut *syncBuffer
	done        chan struct{} // closed once it has exited
	err         error         // Wait's, once done
	at          time.Time     // when it exited
}

func startWatched(t *testing.T, ctx context.Context, args ...string) *watched {
	t.Helper()
	w := &watched{cmd: gorperf(ctx, args...), out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan struct{})}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.errOut
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		w.at = time.Now()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// wait waits up to d for the process to exit and returns its exit status,
// or -1 if it is still running.
func (w *watched) wait(d time.Duration) int {
	select {
	case <-w.done:
		return procExit(w.err)
	case <-time.After(d):
		return -1
	}
}

// waitText waits up to d for out to contain want, and reports whether it
// did.
func waitText(out *syncBuffer, want string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(out.String(), want) {
			return true
		}
	}
	return strings.Contains(out.String(), want)
}

// testLatClientInterrupted stops a write-lat client of `gorperf serve`:
// it reports its samples, interrupted, and exits 130; the server, whose
// responder waited for the client's next message, logs the test and the
// reason at once and serves the next client.
func testLatClientInterrupted(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv := startWatched(t, ctx, "serve", "-d", srvDev, "-p", port, "--peer-timeout", "30")
	waitListening(t, port)
	cli := startWatched(t, ctx, "write-lat", "-d", cliDev, "-p", port, "-D", "30", "-f", "0", "--json", "--peer-timeout", "30", addr)
	waitOutput(t, srv.out, "GID index")
	time.Sleep(time.Second)
	cli.cmd.Process.Signal(syscall.SIGINT)
	stopped := time.Now()
	if code := cli.wait(2 * interruptLimit); code != 130 {
		t.Errorf("the interrupted client: exit %d, want 130\n%s%s", code, cli.out, cli.errOut)
	} else if d := cli.at.Sub(stopped); d > interruptLimit {
		t.Errorf("the interrupted client exited %v after SIGINT, want within %v", d, interruptLimit)
	}
	var r report.Result
	if err := json.Unmarshal(cli.out.Bytes(), &r); err != nil || !r.Interrupted || r.Error != nil || len(r.Results) != 1 || r.Results[0].Iterations == 0 {
		t.Errorf("the interrupted client's JSON (%v): want its samples, interrupted:\n%s", err, cli.out)
	}
	if !waitText(srv.errOut, "the client was interrupted (Ctrl-C) before the run ended", interruptLimit-time.Since(stopped)) {
		t.Errorf("the server did not say within %v of the SIGINT that the client was interrupted:\n%s%s", interruptLimit, srv.out, srv.errOut)
	}
	out, err := gorperf(ctx, "write-lat", "-d", cliDev, "-p", port, "-n", "200", "--json", addr).CombinedOutput()
	if err != nil {
		t.Errorf("the next client: %v\n%s\nserver:\n%s%s", err, out, srv.out, srv.errOut)
	}
	srv.cmd.Process.Signal(syscall.SIGINT)
	if code := srv.wait(10 * time.Second); code != 130 && code != 0 {
		t.Errorf("serve after SIGINT: exit %d\n%s", code, srv.errOut)
	}
	if e := srv.errOut.String(); !strings.Contains(e, "served 2 tests, 0 failed") {
		t.Errorf("the server said:\n%s", e)
	}
}

// testBWServerInterrupted stops the passive server of a write-bw, which
// only waits for the client's result: it reports the client's figures,
// interrupted, and exits 130; the client stops its writes, reports what
// it measured, says that the server was interrupted and exits 1, its
// JSON document's error the peer's.
func testBWServerInterrupted(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv := startWatched(t, ctx, "write-bw", "-d", srvDev, "-p", port, "--peer-timeout", "30")
	waitListening(t, port)
	cli := startWatched(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-D", "30", "--json", "--peer-timeout", "30", addr)
	waitOutput(t, srv.out, "GID index")
	time.Sleep(time.Second)
	srv.cmd.Process.Signal(syscall.SIGINT)
	stopped := time.Now()
	for _, side := range []struct {
		name string
		w    *watched
		code int
	}{{"server", srv, 130}, {"client", cli, 1}} {
		code := side.w.wait(2 * interruptLimit)
		if code != side.code {
			t.Errorf("the %s: exit %d, want %d\n%s%s", side.name, code, side.code, side.w.out, side.w.errOut)
		} else if d := side.w.at.Sub(stopped); d > interruptLimit {
			t.Errorf("the %s exited %v after the server's SIGINT, want within %v", side.name, d, interruptLimit)
		}
	}
	var r report.Result
	if err := json.Unmarshal(cli.out.Bytes(), &r); err != nil || r.Error == nil || r.Error.Code != "peer" || r.Interrupted || !r.PeerInterrupted || len(r.Results) != 1 || r.Results[0].Iterations == 0 {
		t.Errorf("the client's JSON (%v): want its figures, not interrupted, the peer interrupted, the error the peer's:\n%s", err, cli.out)
	}
	if !strings.Contains(srv.out.String(), " 4096 ") || !strings.Contains(srv.errOut.String(), "interrupted (Ctrl-C); the results above") {
		t.Errorf("the server did not report the client's figures, interrupted:\n%s%s", srv.out, srv.errOut)
	}
	if !strings.Contains(cli.errOut.String(), "the server was interrupted (Ctrl-C) before the run ended") {
		t.Errorf("the client did not say that the server was interrupted:\n%s", cli.errOut)
	}
}
