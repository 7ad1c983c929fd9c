//go:build linux && cgo

package bench_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestThreadsPeakNoWindow: threads that each timed no window (fewer
// messages than a window of -t × -q) have a peak that is only their own
// average; the side's peak is then its average, on both sides, not
// those averages added up, which is above it where one thread took
// longer than the other.
func TestThreadsPeakNoWindow(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 10,
		TXDepth: 16, CQModeration: 4, NumQPs: 2, Threads: 2}
	cr, sr := loopback(t, spec)
	for _, r := range []*bench.Result{cr, sr} {
		var sum float64
		for _, th := range r.Threads {
			if b := th.Sizes[0]; b.PeakMBps != b.AvgMBps {
				t.Fatalf("%s thread %d: peak %.4f MB/s over %.4f: it timed a window", r.Role, th.Thread, b.PeakMBps, b.AvgMBps)
			}
			sum += th.Sizes[0].AvgMBps
		}
		if b := r.Sizes[0].BW; b.Iterations != 20 || b.PeakMBps != b.AvgMBps {
			t.Errorf("%s: %d messages, peak %.4f MB/s over an average of %.4f (the threads' averages add up to %.4f); want 20, the average",
				r.Role, b.Iterations, b.PeakMBps, b.AvgMBps, sum)
		}
	}
}
