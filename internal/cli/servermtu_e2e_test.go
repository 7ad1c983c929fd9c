//go:build linux && cgo

package cli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
)

// TestServerMTUNotice: a server for one test whose client asks for an -m
// over the server's port's active MTU says so on its stderr, as the
// client does of its own port: the server's header alone showed the
// lower MTU. Once, and not in its stdout. `gorperf serve` says it too,
// once for a test of two threads.
func TestServerMTUNotice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 60*time.Second)
	active, err := bench.ActiveMTU(bench.Local{Device: srvDev, Port: 1, GIDIndex: -1})
	if err != nil {
		t.Fatal(err)
	}
	if active == ibverbs.MTU4096 {
		t.Skipf("%s's active MTU is 4096: no -m is over it", srvDev)
	}
	over := strconv.Itoa((active + 1).Bytes())
	srv, srvOut := startServer(t, ctx, srvDev, port, "write-bw")
	if out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-n", "20", "-m", over, addr).CombinedOutput(); err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srvOut.String())
	}
	notice := fmt.Sprintf("gorperf: the client's -m %s is over this port's active MTU: the path MTU is at most %d\n", over, active.Bytes())
	stderr := srv.Stderr.(*bytes.Buffer).String()
	if strings.Count(stderr, notice) != 1 || strings.Contains(srvOut.String(), "-m "+over) {
		t.Errorf("server's stderr, want %q once:\n%s\nstdout:\n%s", notice, stderr, srvOut.String())
	}
	srv, srvOut = startServer(t, ctx, srvDev, port, "serve")
	for _, tc := range []struct{ m, threads string }{{over, "1"}, {over, "2"}, {strconv.Itoa(active.Bytes()), "1"}} {
		args := []string{"write-bw", "-d", cliDev, "-p", port, "-s", "4096", "-n", "20", "-m", tc.m, "--threads", tc.threads, addr}
		if out, err := gorperf(ctx, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	srv.Process.Signal(syscall.SIGINT)
	srv.Wait()
	if stderr := srv.Stderr.(*bytes.Buffer).String(); strings.Count(stderr, notice) != 2 {
		t.Errorf("serve's stderr, want %q twice (a test of one thread, one of two, not one within the MTU):\n%s\nstdout:\n%s", notice, stderr, srvOut.String())
	}
}
