//go:build linux && cgo

package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestLoopbackPeerDevLinkLocal: a loopback whose client side has a
// link-local GID (-x) and whose server side is on another device gives
// that side a link-local GID too, though SelectGID ranks a routable one
// first: in the VM rxe0 also has 2001:2::1, which rxe1's netdev has no
// route to. The run completes, and both GIDs printed are link-local.
func TestLoopbackPeerDevLinkLocal(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	if srvDev == cliDev {
		rdmatest.SecondAddr(t) // skips, or fails in the VM
	}
	idx := rdmatest.LinkLocalGID(t, cliDev, 1).Index
	ctx := testContext(t, 90*time.Second)
	out, err := gorperf(ctx, "loopback", "write-bw", "-d", cliDev, "--peer-dev", srvDev, "-x", fmt.Sprint(idx), "-s", "4096", "-n", "100").CombinedOutput()
	var gids []string
	for _, l := range strings.Split(string(out), "\n") {
		if g, ok := strings.CutPrefix(l, " GID: "); ok {
			gids = append(gids, g)
		}
	}
	ok := err == nil && len(gids) == 2
	for _, g := range gids {
		ok = ok && strings.HasPrefix(g, "254:128:") // fe80::/10, as perftest prints a GID
	}
	if !ok {
		t.Errorf("loopback -d %s --peer-dev %s -x %d: %v, GIDs %q:\n%s", cliDev, srvDev, idx, err, gids, out)
	}
}
