//go:build linux && cgo

package bench_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestLatencyReceiveQueue runs send_lat, and write_lat with immediate
// data, whose messages complete receives, with receive queues that leave
// no slack: each side must keep exactly its RX depth of receives posted.
// With -r 63 rxe makes a queue of exactly 63 (a ring of 64 slots, one
// kept empty), as mlx5 does for a power of two: a receive posted before
// one was used overflows it. With -r 1 (perftest's default with -n 1) the
// one receive is replaced before each answer; the receive the last
// answer of a size used must be replaced too, or the next size's first
// answer finds none, and RC retries it until the idle timeout (5 s here).
func TestLatencyReceiveQueue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		test  exchange.Test
		imm   bool
		rx    uint32
		all   bool
		iters uint64
	}{
		{"send_lat/rx=63", exchange.SendLat, false, 63, false, 200},
		{"write_lat_imm/rx=63", exchange.WriteLat, true, 63, false, 200},
		// Three round trips a size: one receive replaced between two
		// answers, and the last one's at the size's end. More only
		// lengthen the sweep's sizes of megabytes under emulation.
		{"send_lat/rx=1/all_sizes", exchange.SendLat, false, 1, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got int
			defer bench.SetAfterConnect(func(client bool, qps []*ibverbs.QP) {
				if client {
					got = qps[0].Cap().MaxRecvWR
				}
			})()
			spec := exchange.TestSpec{Test: tc.test, ConnType: ibverbs.QPTypeRC, Size: 64, AllSizes: tc.all,
				Iterations: tc.iters, Immediate: tc.imm, NumQPs: 1, TXDepth: 1, RXDepth: tc.rx, CQModeration: 1,
				ValidateData: !tc.all} // the sweep's 8 MiB patterns are slow to fill and check under emulation
			start := time.Now()
			c, s := loopback(t, spec)
			t.Logf("the device made a receive queue of %d for %d; %v in all", got, tc.rx, time.Since(start))
			if want := len(spec.Sizes()); len(c.Sizes) != want || len(s.Sizes) != want {
				t.Fatalf("sizes: client %d, server %d, want %d", len(c.Sizes), len(s.Sizes), want)
			}
			for _, r := range c.Sizes {
				if r.Lat.N != int(tc.iters)-1 { // perftest's iters-1
					t.Errorf("size %d: %d samples, want %d", r.Size, r.Lat.N, tc.iters-1)
				}
			}
			if c.Mismatches != 0 || s.Mismatches != 0 {
				t.Errorf("mismatches: client %d, server %d", c.Mismatches, s.Mismatches)
			}
		})
	}
}

// TestLatencySweepForADuration runs send_lat with immediate data over
// every size (-a) for a second each, the client starting each size 200 ms
// after the server. The server's time runs out first: it stops after an
// answer, and the client's next message completes a receive on the
// server that no loop polls. That stray completion must not reach the
// next size, where the server's first wait would take it and answer
// before the client's first message has come: two messages would go
// round at once (about half the latency, silently), each out of step with
// the numbers --validate checks in the immediate data. The first few
// sizes tell (each ends so): the client is stopped after 5 s, about three
// sizes, as Ctrl-C does, which the server, whose next size then finds the
// client gone, reports.
func TestLatencySweepForADuration(t *testing.T) {
	defer bench.SetBeforeLoop(func(client bool) {
		if client {
			time.Sleep(200 * time.Millisecond)
		}
	})()
	spec := exchange.TestSpec{Test: exchange.SendLat, ConnType: ibverbs.QPTypeRC, AllSizes: true, Duration: 1,
		Immediate: true, ValidateData: true, NumQPs: 1, TXDepth: 1, RXDepth: 64, CQModeration: 1}
	c, _, _ := stopPair(t, spec, true, 5*time.Second, nil)
	if c.err != nil || c.r == nil || len(c.r.Sizes) < 2 {
		t.Fatalf("client: %v; want the first sizes' results", c)
	}
	if c.r.Mismatches != 0 {
		t.Errorf("%d mismatches in the first %d sizes (messages out of step from one size to the next)", c.r.Mismatches, len(c.r.Sizes))
	}
	for _, r := range c.r.Sizes {
		t.Logf("size %d: %d samples, t_typical %.2f us", r.Size, r.Lat.N, r.Lat.Typical/1000)
	}
}
