//go:build linux && cgo

package bench_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"golang.org/x/sys/unix"
)

// TestPeakLeavesOutMargins: with a margin (-D 3 -f 1) the peak is that of
// the measured second, as the average is, not of a faster stretch in a
// margin the figures leave out. The client sends at 2,000 messages a
// second; its loop stalls for 200 ms early in the first margin, after
// which its rate limit sends the messages it missed back to back, at the
// device's speed: the whole run's peak, many times the rate, where the
// measured second's is about the rate.
func TestPeakLeavesOutMargins(t *testing.T) {
	const rate = 2000
	var tid atomic.Int32
	var start atomic.Int64
	var stalled atomic.Bool
	defer bench.SetBeforeLoop(func(client bool) {
		if client {
			tid.Store(int32(unix.Gettid()))
			start.Store(time.Now().UnixNano())
		}
	})()
	defer bench.SetGosched(func() {
		if int32(unix.Gettid()) == tid.Load() && time.Since(time.Unix(0, start.Load())) > 300*time.Millisecond && stalled.CompareAndSwap(false, true) {
			time.Sleep(200 * time.Millisecond)
		}
		runtime.Gosched()
	})()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 3, Margin: 1,
		NumQPs: 1, TXDepth: 32, CQModeration: 4}
	c, s := loopback(t, spec, func(l *bench.Local, client bool) {
		l.Rate = bench.RateLimit{Rate: rate, Unit: bench.RatePps, Burst: 1000}
	})
	if !stalled.Load() {
		t.Fatal("the client's loop never stalled")
	}
	for _, r := range []*bench.Result{c, s} {
		if len(r.Sizes) != 1 {
			t.Fatalf("%s: %d sizes", r.Role, len(r.Sizes))
		}
		bw := r.Sizes[0].BW
		t.Logf("%s: %d messages in %v, %.3f MB/s average, %.3f peak", r.Role, bw.Iterations, bw.Elapsed, bw.AvgMBps, bw.PeakMBps)
		if bw.Iterations < rate*3/4 || bw.Iterations > rate*5/4 {
			t.Errorf("%s: %d messages in the measured second, want about %d", r.Role, bw.Iterations, rate)
		}
		// The margin's burst gave a peak 24 times the average (2.973
		// MB/s over 0.122) before the fix; a stall of the emulator in
		// the measured second, after which the limiter's credit goes at
		// once, has given 6.4 times (0.786): 10 tells the two apart.
		if bw.PeakMBps > 10*bw.AvgMBps {
			t.Errorf("%s: a peak of %.3f MB/s over an average of %.3f: the margin's burst", r.Role, bw.PeakMBps, bw.AvgMBps)
		}
	}
}
