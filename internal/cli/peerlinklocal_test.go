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
// link-local GID (by -x, or by --source_ip's address) and whose server
// side is on another device gives that side a link-local GID too, though
// SelectGID ranks a routable one first: in the VM rxe0 also has
// 2001:2::1, which rxe1's netdev has no route to. The run completes, and
// both GIDs printed are link-local.
func TestLoopbackPeerDevLinkLocal(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	if srvDev == cliDev {
		rdmatest.SecondAddr(t) // skips, or fails in the VM
	}
	e := rdmatest.LinkLocalGID(t, cliDev, 1)
	for _, pick := range [][]string{
		{"-x", fmt.Sprint(e.Index)},
		{"--source_ip", e.IP().String() + "%" + e.Netdev},
	} {
		ctx := testContext(t, 90*time.Second)
		args := append([]string{"loopback", "write-bw", "-d", cliDev, "--peer-dev", srvDev, "-s", "4096", "-n", "100"}, pick...)
		out, err := gorperf(ctx, args...).CombinedOutput()
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
			t.Errorf("%q: %v, GIDs %q:\n%s", args, err, gids, out)
		}
	}
}
