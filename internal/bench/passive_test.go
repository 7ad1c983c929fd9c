//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestSizeResultPassiveByRole: only a side that runs no loop of its own
// (write_bw's target, read_lat's server) reports the peer's figures. A
// receiver (send_bw's, write_bw's with immediate data, send_lat's
// responder) that received nothing, as a UD one whose datagrams were all
// lost or one stopped before the first message, reports nothing, not
// the sender's rate as its own: the old code took any side with no
// messages for a passive one.
func TestSizeResultPassiveByRole(t *testing.T) {
	const size = 4096
	peer := exchange.Result{Iterations: 1000, Bytes: 1000 * size, Elapsed: time.Second}
	got := sideResult{Iters: 10, Bytes: 10 * size, Elapsed: time.Second}
	for _, tc := range []struct {
		name   string
		spec   exchange.TestSpec
		client bool
		mine   sideResult
		want   uint64 // messages (iterations) reported
	}{
		{"write_bw server: the client's", exchange.TestSpec{Test: exchange.WriteBW}, false, sideResult{}, 1000},
		{"read_bw -R client: the server's", exchange.TestSpec{Test: exchange.ReadBW, Reversed: true}, true, sideResult{}, 1000},
		{"send_bw server, nothing received", exchange.TestSpec{Test: exchange.SendBW}, false, sideResult{}, 0},
		{"send_bw server, some received", exchange.TestSpec{Test: exchange.SendBW}, false, got, 10},
		{"write_bw --write_with_imm server, nothing received", exchange.TestSpec{Test: exchange.WriteBW, Immediate: true}, false, sideResult{}, 0},
		{"send_bw -R client, nothing received", exchange.TestSpec{Test: exchange.SendBW, Reversed: true}, true, sideResult{}, 0},
		{"send_bw client, nothing sent", exchange.TestSpec{Test: exchange.SendBW}, true, sideResult{}, 0},
		{"read_lat server: the client's", exchange.TestSpec{Test: exchange.ReadLat}, false, sideResult{}, 1000},
		{"atomic_lat server: the client's", exchange.TestSpec{Test: exchange.AtomicLat}, false, sideResult{}, 1000},
		{"send_lat server, nothing received", exchange.TestSpec{Test: exchange.SendLat}, false, sideResult{}, 0},
		{"write_lat server, nothing received", exchange.TestSpec{Test: exchange.WriteLat}, false, sideResult{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{spec: tc.spec}
			r := s.sizeResult(size, tc.mine, peer, tc.client)
			n := r.BW.Iterations
			if r.IsLatency {
				n = r.Iterations
			}
			if n != tc.want {
				t.Errorf("%d messages reported, want %d (bandwidth %+v)", n, tc.want, r.BW)
			}
			if tc.want == 0 && (r.BW.AvgMBps != 0 || r.BW.PeakMBps != 0 || r.BW.MsgRateMpps != 0) {
				t.Errorf("nothing received, yet a bandwidth: %+v", r.BW)
			}
		})
	}
}
