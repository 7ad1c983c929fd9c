//go:build linux && cgo

package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/report"
)

// TestServeJSONLinesEndToEnd: serve --json writes one compact document a
// line, a test's with its client's address (peer_addr), and one for a
// test refused by --max-size, which had none; the client gets the
// refusal as its peer's word. Each says when its outcome was known
// (end_time), and the test that ran when it began (start_time), within
// the run's time.
func TestServeJSONLinesEndToEnd(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	began := time.Now().Add(-time.Millisecond)
	srv, srvOut := startServer(t, ctx, srvDev, port, "serve", "--json", "--max-size", "65536")
	if out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-n", "100", "--json", addr).Output(); err != nil {
		t.Fatalf("client: %v\n%s\nserver:\n%s", err, out, srvOut)
	}
	out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "1048576", "-n", "10", "--json", addr).Output()
	var cr report.Result
	if jerr := json.Unmarshal(out, &cr); jerr != nil || procExit(err) != 1 || cr.Error == nil || cr.Error.Code != "peer" {
		t.Errorf("refused client: exit %v, %v:\n%s", err, jerr, out)
	}
	srv.Process.Signal(syscall.SIGINT)
	if err := srv.Wait(); err != nil {
		t.Errorf("serve after SIGINT: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(srvOut.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("serve wrote %d lines, want a document a test:\n%s", len(lines), srvOut)
	}
	for i, line := range lines {
		var r report.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v:\n%s", i+1, err, line)
		}
		host, _, err := net.SplitHostPort(r.PeerAddr)
		if r.Role != "server" || err != nil || !localIP(t, host) {
			t.Errorf("line %d: role %q, peer_addr %q (%v), want server and the client's address:\n%s", i+1, r.Role, r.PeerAddr, err, line)
		}
		if failed := r.Error != nil; failed != (i == 1) {
			t.Errorf("line %d: error %+v:\n%s", i+1, r.Error, line)
		}
		if i == 0 && (r.Test != "write_bw" || len(r.Results) != 1) {
			t.Errorf("line 1: test %q, %d results", r.Test, len(r.Results))
		}
		end, err := time.Parse(time.RFC3339, r.EndTime)
		if err != nil || end.Before(began) || end.After(time.Now()) {
			t.Errorf("line %d: end_time %q (%v), want between %v and now", i+1, r.EndTime, err, began)
		}
		if start, err := time.Parse(time.RFC3339, r.StartTime); i == 0 && (err != nil || start.Before(began) || start.After(end)) {
			t.Errorf("line 1: start_time %q (%v), want between %v and end_time", r.StartTime, err, began)
		} else if i == 1 && r.StartTime != "" {
			t.Errorf("line 2, a test refused: start_time %q, want none", r.StartTime)
		}
	}
}

// localIP reports whether ip is an address of this host's, where the
// client runs: in the VM it comes from either device's address, as the
// VM's routes between them stand (a test that took a link down may
// have removed them), on loopback from 127.0.0.1.
func localIP(t *testing.T, ip string) bool {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
			return true
		}
	}
	return false
}

// latClientOfKilledServer runs a write-lat --json client with args
// (its length of run) against a server it kills 3 s in, and returns the
// client's document, its output, its exit and the parse's error.
func latClientOfKilledServer(t *testing.T, args ...string) (r report.Result, out *syncBuffer, exit, jerr error) {
	t.Helper()
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 120*time.Second)
	srv, _ := startServer(t, ctx, srvDev, port, "write-lat", "--json")
	cliArgs := append([]string{"write-lat", "-d", cliDev, "-p", port}, args...)
	cli, cliOut := start(t, ctx, append(cliArgs, "--peer-timeout", "3", "--json", addr)...)
	sleepFrom(t, time.Now(), 3*time.Second)
	srv.Process.Kill()
	srv.Wait()
	exit = cli.Wait()
	jerr = json.Unmarshal([]byte(cliOut.String()), &r)
	return r, cliOut, exit, jerr
}

// TestPeerKilledJSON: a side whose peer was killed (SIGKILL) reports the
// JSON code "peer" (the peer closed the control connection: it exited or
// was killed), where it said "failed": a latency client whose server
// was killed (one of iterations also keeps what it measured), and a
// server whose bandwidth client was. The killed client
// ran with --out_json_file: the file it was to replace is left as it
// was, where it was left empty, and nothing beside it, where its
// document's file was (.perftest_out.json.PID-0.tmp). The three cases,
// each mostly a wait of 3 s, run side by side: each starts its processes
// before t.Parallel, and kills its peer 3 s after (or, where its turn
// came later, as soon as its turn comes).
func TestPeerKilledJSON(t *testing.T) {
	// A latency client, its server killed.
	t.Run("latency client", func(t *testing.T) {
		r, cliOut, err, jerr := latClientOfKilledServer(t, "-D", "30")
		if jerr != nil || procExit(err) != 1 || r.Error == nil || r.Error.Code != "peer" ||
			!strings.Contains(r.Error.Message, "the peer closed the control connection") {
			t.Errorf("client of a killed server: exit %v, %v, error %+v:\n%s", err, jerr, r.Error, cliOut)
		}
	})
	// A latency client of iterations (-n, no margin), its server killed:
	// it keeps the latency it measured before, as a bandwidth client
	// keeps its figures (its results were empty).
	t.Run("latency client of iterations", func(t *testing.T) {
		r, cliOut, err, jerr := latClientOfKilledServer(t, "-n", "100000000")
		if jerr != nil || procExit(err) != 1 || r.Error == nil || r.Error.Code != "peer" ||
			len(r.Results) != 1 || r.Results[0].Iterations == 0 || r.Results[0].TTypicalUs <= 0 {
			t.Errorf("-n client of a killed server: exit %v, %v, error %+v, results %+v, want what it measured:\n%s", err, jerr, r.Error, r.Results, cliOut)
		}
	})
	// A server, its bandwidth client killed.
	t.Run("bandwidth server", func(t *testing.T) {
		srvDev, cliDev, addr, port, ctx := setUpPeers(t, 120*time.Second)
		file := filepath.Join(t.TempDir(), "perftest_out.json")
		const old = `{"old": true}`
		if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw", "--json")
		cli, _ := start(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-D", "30", "--json", "--out_json_file", file, addr)
		sleepFrom(t, time.Now(), 3*time.Second)
		cli.Process.Kill()
		cli.Wait()
		err := srv.Wait()
		var r report.Result
		if jerr := json.Unmarshal([]byte(srvOut.String()), &r); jerr != nil || procExit(err) != 1 || r.Error == nil || r.Error.Code != "peer" {
			t.Errorf("server of a killed client: exit %v, %v, error %+v:\n%s", err, jerr, r.Error, srvOut)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != old {
			t.Errorf("the killed client's --out_json_file holds %q (%v), want the last run's %q", b, err, old)
		}
		if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
			t.Errorf("the killed client left files beside its --out_json_file: %v", ents)
		}
	})
}

// sleepFrom calls t.Parallel, and then sleeps until d has passed since
// from (not at all where it has): a case that started its processes
// before t.Parallel lets them run for d beside the others.
func sleepFrom(t *testing.T, from time.Time, d time.Duration) {
	t.Parallel()
	time.Sleep(time.Until(from.Add(d)))
}
