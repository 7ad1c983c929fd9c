//go:build linux && cgo

package bench_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestLatWindowMeasured: a latency test of a duration measures its
// window, the time its reported iterations took, pauses included, from
// which perftest computes its t_avg and tps (report.LatDur): about the
// whole run without a margin, the span between the margins with one; the
// samples, which leave out the client's yields to the scheduler, fill no
// more of it. A side that only lets its memory be read (read_lat's
// server) measures none.
func TestLatWindowMeasured(t *testing.T) {
	for _, c := range []struct {
		test        exchange.Test
		dur, margin uint32
	}{
		{exchange.WriteLat, 2, 0},
		{exchange.ReadLat, 2, 0},
		{exchange.SendLat, 3, 1},
	} {
		t.Run(fmt.Sprintf("%v/D%d/f%d", c.test, c.dur, c.margin), func(t *testing.T) {
			spec := exchange.TestSpec{Test: c.test, ConnType: ibverbs.QPTypeRC, Size: 2, Duration: c.dur, Margin: c.margin,
				NumQPs: 1, TXDepth: 1, RXDepth: 64, CQModeration: 1}
			cr, sr := loopback(t, spec)
			want := time.Duration(c.dur-2*c.margin) * time.Second
			per := 2.0 // a write or send's sample is half a round trip
			if c.test == exchange.ReadLat {
				per = 1
			}
			for _, side := range []struct {
				name string
				r    *bench.Result
			}{{"client", cr}, {"server", sr}} {
				if len(side.r.Sizes) != 1 {
					t.Fatalf("%s: %+v", side.name, side.r.Sizes)
				}
				s := side.r.Sizes[0]
				if side.name == "server" && c.test == exchange.ReadLat {
					if s.Window != 0 {
						t.Errorf("server: window %v, where the peer times the test", s.Window)
					}
					continue
				}
				var sum float64
				for _, v := range s.Samples {
					sum += per * v
				}
				// The window's edges are a post's each, within a round
				// trip of the nominal ones, with a margin; a run without
				// one ends on a check every 64 iterations and the last
				// answer, or where the peer's ended: the two sides' runs
				// begin apart (under emulation, by up to 160 ms seen), and
				// the later one's is cut short by that. Under emulation a
				// stall can delay either edge: a window with margins may
				// be 400 ms short or 700 ms long, where the whole run's
				// is of 3 s (and a run less one margin's of 2 s); one
				// without, 400 ms short or 500 ms long. (Bounds of 50
				// and 100 ms, and 200 ms long without a margin, were a
				// loaded VM's stall away from failing.)
				low, high := want*6/10, want*17/10
				if c.margin == 0 {
					low, high = want-want/5, want+want/4
				}
				if s.Window < low || s.Window > high {
					t.Errorf("%s: window %v, want about %v", side.name, s.Window, want)
				}
				if covered := time.Duration(sum); s.Lat.N == 0 || covered > s.Window+s.Window/100 {
					t.Errorf("%s: %d samples covering %v, over the window %v", side.name, s.Lat.N, covered, s.Window)
				}
				t.Logf("%s: %d iterations in a window of %v (tps %.2f), samples covering %v",
					side.name, s.Iterations, s.Window, float64(s.Iterations)/s.Window.Seconds(), time.Duration(sum))
			}
		})
	}
}
