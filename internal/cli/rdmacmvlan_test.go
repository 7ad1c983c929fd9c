//go:build linux && cgo

package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRdmaCMVLANNetdevCapsBothSides: with -R on RC, where one side's GID
// is on a VLAN netdev of MTU 700, which carries RDMA MTU 512 (with rxe's
// 80 bytes of headers or rdma_cm's 96), and the other's carries the
// ports' 1024, read-bw runs at path MTU 512 on both sides, as without
// -R: the two sides swap their offers before rdma_cm connects the QPs,
// and both cap them to the least. rdma_cm takes the path MTU from the
// active side's (the client's) route and the passive side's QPs copy it
// from the request: where the server's VLAN was the small one, its QPs
// got 1024, the VLAN dropped its read responses, and the test failed
// with the idle error ("... or try -m 512"), the server's header saying
// "path MTU 1024, as rdma_cm set it, where the two sides offered 512".
// doctor, on the server's device, says a test over the VLAN's GIDs gets
// 512 from gorperf and rdma_cm (-R), which now holds whichever side the
// VLAN's host is.
func TestRdmaCMVLANNetdevCapsBothSides(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	n := setUpVLAN(t, srvDev, cliDev)
	for _, tc := range []struct {
		name           string
		srvMTU, cliMTU int
	}{
		{"the server's VLAN at 700", 700, 1500},
		{"the client's VLAN at 700", 1500, 700},
	} {
		srvND, cliND := setVLANMTU(t, tc.srvMTU, tc.cliMTU)
		ctx := testContext(t, 60*time.Second)
		if tc.srvMTU == 700 {
			doc, _ := gorperf(ctx, "doctor", "-d", srvDev).CombinedOutput()
			if w := fmt.Sprintf("%s MTU 700 is too small for RDMA MTU 1024, which needs 1024+80 bytes of RoCE v2 headers: a test over its GIDs gets path MTU 512 from gorperf and rdma_cm (-R)", srvND); !strings.Contains(string(doc), w) {
				t.Errorf("doctor lacks %q:\n%s", w, doc)
			}
		}
		port := freshPort()
		common := []string{"-R", "-s", "4096", "-n", "20", "--peer-timeout", "5"}
		srv, srvOut := startServer(t, ctx, srvDev, port, "read-bw", common...)
		// No flag names the GIDs: the control connection, to and from
		// the VLAN's addresses, picks them.
		args := append(append([]string{"read-bw", "-d", cliDev, "-p", port}, common...), n.srvAddr)
		out, err := gorperf(ctx, args...).CombinedOutput()
		serr := srv.Wait()
		srvText := srvOut.String() + srv.Stderr.(*bytes.Buffer).String()
		const mtu = " Mtu             : 512[B]"
		small := srvND
		if tc.cliMTU == 700 {
			small = cliND
		}
		why := fmt.Sprintf("path MTU at most 512: %s's MTU 700 carries RDMA MTU 512 (+96 bytes of headers, as rdma_cm counts them), not the port's active 1024", small)
		smallOut := srvText
		if tc.cliMTU == 700 {
			smallOut = string(out)
		}
		if err != nil || serr != nil || !strings.Contains(string(out), mtu) || !strings.Contains(srvText, mtu) || !strings.Contains(smallOut, why) ||
			!strings.Contains(string(out), "\n 4096 ") {
			t.Errorf("%s: %q: client %v, server %v; want both at %q, and %q\nclient:\n%s\nserver:\n%s", tc.name, args, err, serr, mtu, why, out, srvText)
		}
		for _, o := range []string{string(out), srvText} {
			if w := "as rdma_cm set it"; strings.Contains(o, w) {
				t.Errorf("%s: says %q, where the QPs got the path MTU the two sides offered:\n%s", tc.name, w, o)
			}
		}
	}
}
