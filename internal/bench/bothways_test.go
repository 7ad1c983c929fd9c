//go:build linux && cgo

package bench

import (
	"math"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// TestBothWays: a bidirectional figure adds each direction's bandwidth
// and message rate, each over its own time, as perftest does; here one
// side sent 1000 MiB in 1 s and the other 1000 MiB in 0.8 s: 1000 + 1250
// MB/sec, where the bytes over the longer time would give 2000. Its
// messages are this side's, as perftest's row and JSON have them, not
// both sides' (the CPU time's are, SizeResult.messages).
func TestBothWays(t *testing.T) {
	local := stats.ComputeBandwidth(1<<20, 1000, time.Second, 0)
	remote := stats.ComputeBandwidth(1<<20, 1000, 800*time.Millisecond, 0)
	bw := bothWays(local, remote)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*b }
	if !near(bw.AvgMBps, 2250) || !near(bw.MsgRateMpps, 0.00225) {
		t.Errorf("average %v MB/sec, %v Mpps; want 2250 and 0.00225", bw.AvgMBps, bw.MsgRateMpps)
	}
	local.Iterations = 900 // fewer than the peer's
	bw = bothWays(local, remote)
	if bw.Iterations != 900 || bw.Elapsed != time.Second || bw.PeakMBps < bw.AvgMBps {
		t.Errorf("%+v: want this side's 900 messages in 1 s, a peak at least the average", bw)
	}
	r := SizeResult{BW: bw, Local: &local, Remote: &remote}
	if n := r.messages(); n != 1900 {
		t.Errorf("the CPU time is spread over %d messages, want both ways' 1900", n)
	}
}
