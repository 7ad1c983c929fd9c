//go:build linux && cgo

package bench_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestWarmUpCounters: -W's port counters count a size's messages, not
// the warm-up's (--perform_warm_up) before them, on either side. The
// server runs on the test device and the client on the second one, so
// that each side's counters see only the wire between them, and over
// UC, which has no acknowledgements: each side receives exactly the
// packets the peer sends. A warm-up that starts late (100 ms, its first
// side's only) lands after a side that was not warming up was ready:
// that side's first reading of the counters, taken before the barrier
// that waited for the peer's warm-up, counted the warm-up's TX depth of
// writes as the size's.
func TestWarmUpCounters(t *testing.T) {
	rdmatest.Device(t)
	second := rdmatest.SecondAddr(t)
	const iters, tx = 200, 128
	for _, bidi := range []bool{false, true} {
		name := "one-way"
		if bidi {
			name = "bidirectional"
		}
		t.Run(name, func(t *testing.T) {
			var once sync.Once
			defer bench.SetBeforeWarmUp(func() { once.Do(func() { time.Sleep(100 * time.Millisecond) }) })()
			spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeUC, Size: 64, Iterations: iters,
				NumQPs: 1, TXDepth: tx, CQModeration: 16, WarmUp: true, Bidirectional: bidi}
			c, s := loopback(t, spec, func(l *bench.Local, client bool) {
				l.Counters = []string{"sent_pkts", "rcvd_pkts"}
				if client {
					l.Device, l.Port = second.Dev, 1
				}
			})
			for _, r := range []*bench.Result{c, s} {
				if len(r.Sizes) != 1 {
					t.Fatalf("%s: %d sizes", r.Role, len(r.Sizes))
				}
				got := map[string]uint64{}
				for _, ch := range r.Sizes[0].Counters {
					got[strings.TrimPrefix(ch.Name, "hw_counters/")] = ch.Delta
				}
				t.Logf("%s: counters %v, warmed up %d", r.Role, got, r.WarmedUp)
				// What each side sent and received: the client's writes
				// reach the server, and the server's too where both ways.
				want := map[string]uint64{"sent_pkts": iters, "rcvd_pkts": iters}
				if !bidi {
					want[map[string]string{"client": "rcvd_pkts", "server": "sent_pkts"}[r.Role]] = 0
				}
				for name, w := range want {
					g, ok := got[name]
					if !ok {
						t.Errorf("%s: no %s in %v", r.Role, name, r.Sizes[0].Counters)
						continue
					}
					// A few packets of slack for whatever else crosses the
					// wire; a warm-up's is a TX depth of them.
					if g+tx/8 < w || g > w+tx/8 {
						t.Errorf("%s: %s moved by %d over the size's %d messages, want %d", r.Role, name, g, iters, w)
					}
				}
			}
		})
	}
}
