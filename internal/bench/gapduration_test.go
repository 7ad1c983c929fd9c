//go:build linux && cgo

package bench_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestLatencyGapKeepsTheDuration: a latency test with a duration (-D 1)
// and a latency gap of 100 ms ends about its second after its loop
// starts, with about ten samples. read_lat and atomic_lat looked at the
// deadline once in 64 iterations and ran up to 63 gaps over: 6.4 s.
// write_lat's client is bounded by its responder's deadline.
func TestLatencyGapKeepsTheDuration(t *testing.T) {
	const gap = 100 * time.Millisecond
	loop := newLoopClock(t)
	for _, test := range []exchange.Test{exchange.ReadLat, exchange.AtomicLat, exchange.WriteLat} {
		t.Run(test.String(), func(t *testing.T) {
			spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 8, Duration: 1,
				NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1}
			loop.reset()
			c, _ := loopback(t, spec, func(l *bench.Local, client bool) {
				if client {
					l.LatencyGap = gap
				}
			})
			took := loop.since()
			if len(c.Sizes) != 1 {
				t.Fatalf("%d sizes", len(c.Sizes))
			}
			n := c.Sizes[0].Lat.N
			t.Logf("%d samples, %v from the client's loop's start to the test's end", n, took)
			if took > 2500*time.Millisecond {
				t.Errorf("a 1 s test with a %v gap took %v from its loop's start", gap, took)
			}
			if n < 5 || n > 11 {
				t.Errorf("%d samples in 1 s with a %v gap, want about 10", n, gap)
			}
		})
	}
}
