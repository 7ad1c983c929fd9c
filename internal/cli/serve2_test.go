//go:build linux && cgo

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/internal/report"
)

// TestServeGIDSelectorAndDeepRX: `gorperf serve --ipv6` picks its port's
// IPv6 GID, as a test's server does (serve had -x alone, and picked the
// IPv4 one), and serves UD and UC send tests of 2000 iterations, whose RX
// depth is then perftest's, -n (it was 512); on eight QPs of 5000
// iterations it is 4095, for a receive CQ of 32760 entries, which
// soft-RoCE makes (perftest's 5000 would ask for 40000 and fail).
func TestServeGIDSelectorAndDeepRX(t *testing.T) {
	ip6 := needIP6(t)
	dev := rdmatest.Device(t).Name
	ctx := testContext(t, 120*time.Second)
	waitGID(t, dev, ip6)
	port := freshPort()
	srv, srvOut := startServer(t, ctx, dev, port, "serve", "--ipv6", "--peer-timeout", "5")
	for _, args := range [][]string{
		{"-c", "UD", "-s", "64", "-n", "2000"},
		{"-c", "UC", "-s", "64", "-n", "2000"},
		{"-c", "UD", "-s", "64", "-q", "8"},
	} {
		cmd := gorperf(ctx, append(append([]string{"send-bw", "-d", dev, "-p", port, "--ipv6", "--json"}, args...), ip6)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client %v: %v\n%s%s\nserver:\n%s", args, err, out, stderr.String(), srvOut)
		}
		var r report.Result
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if r.Error != nil || len(r.Results) != 1 || r.Results[0].Iterations == 0 {
			t.Errorf("%v: result %+v", args, r)
		}
	}
	srv.Process.Signal(syscall.SIGINT)
	err := srv.Wait()
	e := srv.Stderr.(*bytes.Buffer).String()
	if procExit(err) != 0 || !strings.Contains(e, "served 3 tests, 0 failed") {
		t.Errorf("serve: %v:\n%s", err, e)
	}
	o := srvOut.String()
	if n := strings.Count(o, ip6+" on "); n != 3 {
		t.Errorf("the server's headers name %s %d times, want 3:\n%s", ip6, n, o)
	}
	if n, m := strings.Count(o, " RX depth        : 2000\n"), strings.Count(o, " RX depth        : 4095\n"); n != 2 || m != 1 {
		t.Errorf("%d of the server's headers have an RX depth of 2000 and %d of 4095, want 2 and 1:\n%s", n, m, o)
	}
}

// TestServeQueuedClientNotice: a client of a serve that is running
// another client's test says on stderr that its test comes next, once,
// and its test runs after (it waited in silence); a --json client says
// nothing on stderr. Each queued client starts once the server has
// printed the running test's header (runningTest), a second into the
// running test's 6 s. The two cases, each its own serve, run side by
// side (t.Parallel): each mostly waits for the running test's end.
func TestServeQueuedClientNotice(t *testing.T) {
	for _, json := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", json), func(t *testing.T) {
			t.Parallel()
			testServeQueuedClientNotice(t, json)
		})
	}
}

func testServeQueuedClientNotice(t *testing.T, json bool) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "serve")
	first, firstOut := start(t, ctx, "write-bw", "-d", cliDev, "-p", port, "-D", "6", addr)
	runningTest(t, srvOut, 1) // its test is taken, and runs 6 s
	args := []string{"write-bw", "-d", cliDev, "-p", port, "-n", "100", addr}
	if json {
		args = append(args, "--json")
	}
	cmd := gorperf(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the queued client (--json %v): %v\n%s%s\nserver:\n%s", json, err, stdout.String(), stderr.String(), srvOut)
	}
	const notice = "gorperf: the server is busy with another client's test: this one comes next\n"
	switch n := strings.Count(stderr.String(), notice); {
	case !json && (n != 1 || !strings.HasPrefix(stderr.String(), notice)):
		t.Errorf("the queued client's stderr: want the notice once, first:\n%s", stderr.String())
	case json && stderr.Len() != 0:
		t.Errorf("the queued --json client's stderr: want nothing:\n%s", stderr.String())
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first client: %v\n%s", err, firstOut)
	}
	srv.Process.Signal(syscall.SIGINT)
	if err := srv.Wait(); procExit(err) != 0 {
		t.Errorf("serve: %v\n%s", err, srv.Stderr.(*bytes.Buffer).String())
	}
}
