//go:build linux && cgo

package cli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
)

// TestServerMTUNotice: a server for one test whose client asks for an -m
// over the server's port's active MTU says so on its stderr, as the
// client does of its own port: the server's header alone showed the
// lower MTU. Once, and not in its stdout.
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
}
