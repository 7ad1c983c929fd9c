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

// TestLatencyYieldOutOfSamples: the initiator's yields to the scheduler
// in write_lat and send_lat are not in its samples. The client's first
// five yields are made to take 200 ms each (its measuring loop's
// thread's; the server's yields are as usual): a sample that held one
// would be over 150 ms, where an emulated round trip takes under a
// millisecond, a few milliseconds at most, and a stall of the emulator
// some 30 (33 to 38 ms are routine under TCG, and CI runs about 1.6
// times slower still). A yield after a post, as before, lay in the round
// trip of each of the five: 5 samples over 150 ms, where at most 2 are
// allowed.
func TestLatencyYieldOutOfSamples(t *testing.T) {
	for _, spec := range []exchange.TestSpec{
		{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 300, NumQPs: 1, TXDepth: 1, RXDepth: 1, CQModeration: 1},
		{Test: exchange.SendLat, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 300, NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1},
	} {
		var tid, slow atomic.Int32
		restoreLoop := bench.SetBeforeLoop(func(client bool) {
			if client {
				tid.Store(int32(unix.Gettid())) // the loop keeps its thread
			}
		})
		restoreYield := bench.SetGosched(func() {
			if int32(unix.Gettid()) == tid.Load() && slow.Add(1) <= 5 {
				time.Sleep(200 * time.Millisecond)
			}
			runtime.Gosched()
		})
		c, _ := loopback(t, spec)
		restoreYield()
		restoreLoop()
		if slow.Load() < 5 {
			t.Fatalf("%v: the client yielded %d times, want at least 5", spec.Test, slow.Load())
		}
		var long []float64
		for _, x := range c.Sizes[0].Samples {
			if x > 150e6 {
				long = append(long, x/1e6)
			}
		}
		// A wait's own yield (one that has lasted 5 ms) may take one of
		// the slow ones, and a rare stall of the emulator another.
		if len(long) >= 3 {
			t.Errorf("%v: %d samples over 150 ms (%.1f ms): the slow yields are in them", spec.Test, len(long), long)
		}
		t.Logf("%v: %d samples, max %.1f µs, %d over 150 ms", spec.Test, len(c.Sizes[0].Samples), c.Sizes[0].Lat.Max/1e3, len(long))
	}
}
