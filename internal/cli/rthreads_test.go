//go:build linux && cgo

package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/report"
)

// TestRdmaCMThreadsEndToEnd: a write and a send test (RC) of two
// threads through rdma_cm (-R --threads 2) over four QPs, with -m 512
// over ports active at 1024, between a server and a client process on
// the two ends of a wire: both end well, each side's header says path
// MTU 512, four QPs (an address line each) and two threads, the
// server's text has a row for each thread, and the client's JSON has
// path MTU 512, every message, and each thread's part, two QPs and its
// share of the messages at a rate.
func TestRdmaCMThreadsEndToEnd(t *testing.T) {
	const n = 50 // a QP's messages
	for _, test := range []string{"write-bw", "send-bw"} {
		t.Run(test, func(t *testing.T) {
			srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
			srv, srvOut := startServer(t, ctx, srvDev, port, test, "--peer-timeout", "10")
			args := []string{test, "-d", cliDev, "-p", port, "-R", "--threads", "2", "-q", "4", "-m", "512",
				"-s", "1024", "-n", fmt.Sprint(n), "--peer-timeout", "10", "--json", addr}
			cc := gorperf(ctx, args...)
			var cliErr strings.Builder
			cc.Stderr = &cliErr
			out, err := cc.Output()
			serr := srv.Wait()
			if err != nil || serr != nil {
				t.Fatalf("%q: client %v, server %v\nclient:\n%s%s\nserver:\n%s", args, err, serr, out, cliErr.String(), srvOut)
			}
			so := srvOut.String()
			for _, w := range []string{" Mtu             : 512[B]", "Number of qps   : 4", "Threads         : 2", " rdma_cm QPs\t : ON"} {
				if !strings.Contains(so, w) {
					t.Errorf("the server's header lacks %q:\n%s", w, so)
				}
			}
			if k := strings.Count(so, " local address:"); k != 4 {
				t.Errorf("the server has %d local address lines, want one a QP, 4:\n%s", k, so)
			}
			if !regexp.MustCompile(`Each thread's part \(--threads\):\n.*\n 0 +\S+ +2 +1024 .*\n 1 +\S+ +2 +1024 `).MatchString(so) {
				t.Errorf("the server has no row for each thread:\n%s", so)
			}
			var r report.Result
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("client JSON: %v\n%s", err, out)
			}
			if r.MTU != 512 || r.QPs != 4 || !r.RdmaCM || r.Threads != 2 || len(r.Results) != 1 || r.Results[0].Iterations != 4*n || r.Error != nil {
				t.Fatalf("client: path MTU %d, %d QPs, rdma_cm %v, %d threads, results %+v, error %v; want 512, 4, true, 2, %d messages",
					r.MTU, r.QPs, r.RdmaCM, r.Threads, r.Results, r.Error, 4*n)
			}
			if len(r.ThreadResults) != 2 {
				t.Fatalf("client: %d threads' parts, want 2: %+v", len(r.ThreadResults), r.ThreadResults)
			}
			for i, th := range r.ThreadResults {
				if th.Thread != i || th.QPs != 2 || th.Error != "" || len(th.Results) != 1 || th.Results[0].Iterations != 2*n || !(th.Results[0].BWAvgMBps > 0) {
					t.Errorf("client's thread %d: %+v; want thread %d, 2 QPs, %d messages at a rate", i, th, i, 2*n)
				}
			}
		})
	}
}
