//go:build linux && cgo

package bench_test

import (
	"slices"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestLatencySampledOnDevice runs latency tests that take far more
// samples than a store of room for 256 keeps: write_lat and read_lat for
// a duration (-D 1, some 10,000 round trips under emulation; the
// ping-pong loop and the one-sided one) and
// send_lat for 5,000 iterations. Each keeps one sample in a power of two,
// evenly through the run, between half the room and the room, and
// reports so (Lat.Every, Lat.Stored, the samples listed), while the count
// is of every sample: 5,000 iterations less the last (perftest's
// iters-1) and at most one a decimation (the sample that holds a
// decimation's time is left out), and the
// extremes bound the samples kept.
func TestLatencySampledOnDevice(t *testing.T) {
	const room = 256
	defer bench.SetMaxSampleRoom(room)()
	for _, tc := range []struct {
		test  exchange.Test
		iters uint64
	}{{exchange.WriteLat, 0}, {exchange.ReadLat, 0}, {exchange.SendLat, 5000}} {
		t.Run(tc.test.String(), func(t *testing.T) {
			spec := exchange.TestSpec{Test: tc.test, ConnType: ibverbs.QPTypeRC, Size: 8, Iterations: tc.iters,
				NumQPs: 1, TXDepth: 1, RXDepth: 64, CQModeration: 1}
			if tc.iters == 0 {
				spec.Duration = 1
			}
			c, _ := loopback(t, spec)
			if len(c.Sizes) != 1 {
				t.Fatalf("sizes: %+v", c.Sizes)
			}
			r := c.Sizes[0]
			l := r.Lat
			t.Logf("%d samples, 1 in %d kept (%d): t_min %.2f, t_avg %.2f, p50 %.2f, max %.2f us",
				l.N, l.Every, l.Stored, l.Min/1000, l.Avg/1000, l.P50/1000, l.Max/1000)
			if l.Every < 2 || l.Every&(l.Every-1) != 0 || l.Stored <= room/2 || l.Stored > room || len(r.Samples) != l.Stored {
				t.Fatalf("1 in %d kept, %d of them, %d listed; want a power of two over 1, %d to %d", l.Every, l.Stored, len(r.Samples), room/2+1, room)
			}
			// The kept are the samples every divides the index of.
			if l.N <= (l.Stored-1)*l.Every || l.N > l.Stored*l.Every {
				t.Errorf("%d samples for %d kept of 1 in %d", l.N, l.Stored, l.Every)
			}
			decimations := 0
			for e := l.Every; e > 1; e /= 2 {
				decimations++
			}
			if tc.iters > 0 && (uint64(l.N) > tc.iters-1 || uint64(l.N)+uint64(decimations) < tc.iters-1) {
				t.Errorf("%d samples of %d iterations, %d decimations", l.N, tc.iters, decimations)
			}
			// The iterations are those run, as perftest prints them, not
			// the samples, which the decimations left fewer.
			if tc.iters > 0 && r.Iterations != tc.iters || r.Iterations < uint64(l.N) {
				t.Errorf("%d iterations reported, %d samples; want %d", r.Iterations, l.N, max(tc.iters, uint64(l.N)))
			}
			if lo, hi := slices.Min(r.Samples), slices.Max(r.Samples); l.Min > lo || l.Max < hi || l.Min <= 0 ||
				l.Avg < l.Min || l.Avg > l.Max || l.T999 > l.TMax || l.P50 < lo || l.P9999 > hi {
				t.Errorf("figures out of order: %+v; kept from %v to %v", l, lo, hi)
			}
		})
	}
}
