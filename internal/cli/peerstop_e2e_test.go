//go:build linux && cgo

package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/report"
)

// TestPeerStopFailsOnDevice: a run that the peer's stop cut short fails
// on this side, exit status 1, after its results, where it exited 0 and
// a CI gate (gorperf ... -w X host || fail) passed it. The client of an
// -a sweep with -w whose server gets SIGINT part way prints the sizes it
// measured, none of them a row of 0 messages, and says that the server
// was interrupted and -w not judged; a one-test --json server whose
// client gets SIGTERM says that the client was stopped (SIGTERM), not
// interrupted (Ctrl-C), and its document has the figures,
// peer_interrupted and the code "peer". The two run side by side
// (t.Parallel).
func TestPeerStopFailsOnDevice(t *testing.T) {
	t.Run("client of an interrupted server", func(t *testing.T) {
		t.Parallel()
		srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
		srv, _ := startServer(t, ctx, srvDev, port, "write-bw")
		cli, cliOut := start(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-a", "-D", "1", "-w", "0.001", addr)
		rows := func() (n int, zero bool) {
			for _, l := range strings.Split(cliOut.String(), "\n") {
				if f := strings.Fields(l); len(f) == 5 && strings.Trim(f[0], "0123456789") == "" && strings.Trim(f[1], "0123456789") == "" {
					n++
					zero = zero || f[1] == "0"
				}
			}
			return n, zero
		}
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if n, _ := rows(); n >= 2 {
				break
			}
		}
		srv.Process.Signal(syscall.SIGINT)
		if err := srv.Wait(); procExit(err) != 130 {
			t.Errorf("the interrupted server: %v, want exit 130\n%s", err, srv.Stderr)
		}
		err := cli.Wait()
		e := cli.Stderr.(*bytes.Buffer).String()
		const want = "gorperf: the server was interrupted (Ctrl-C) before the run ended: the results above are what was measured until then, and -w was not judged\n"
		if procExit(err) != 1 || !strings.HasSuffix(e, want) {
			t.Errorf("the client of the interrupted server: %v, want exit 1, its stderr ending %q:\n%s", err, want, e)
		}
		if n, zero := rows(); n < 2 || n >= 23 || zero {
			t.Errorf("the client printed %d rows of the sweep's 23 (a row of 0 messages: %v), want those it measured:\n%s", n, zero, cliOut)
		}
	})
	t.Run("one-test server of a client stopped by SIGTERM", func(t *testing.T) {
		t.Parallel()
		srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
		srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", "--json")
		cli, cliOut := start(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-D", "30", addr)
		waitOutput(t, cliOut, "GID index")
		time.Sleep(time.Second)
		cli.Process.Signal(syscall.SIGTERM)
		if err := cli.Wait(); procExit(err) != 143 {
			t.Errorf("the client stopped by SIGTERM: %v, want exit 143\n%s%s", err, cliOut, cli.Stderr)
		}
		err := srv.Wait()
		e := srv.Stderr.(*bytes.Buffer).String()
		const want = "gorperf: the client was stopped (SIGTERM) before the run ended: the results are what was measured until then\n"
		if procExit(err) != 1 || !strings.HasSuffix(e, want) {
			t.Errorf("the server: %v, want exit 1, its stderr ending %q:\n%s", err, want, e)
		}
		var r report.Result
		if jerr := json.Unmarshal(srvOut.Bytes(), &r); jerr != nil || r.Error == nil || r.Error.Code != "peer" ||
			!strings.Contains(r.Error.Message, "stopped (SIGTERM)") || !r.PeerInterrupted || r.Interrupted ||
			len(r.Results) != 1 || r.Results[0].Iterations == 0 {
			t.Errorf("the server's JSON (%v): want the client's figures, peer_interrupted, the code peer:\n%s", jerr, srvOut)
		}
	})
}
