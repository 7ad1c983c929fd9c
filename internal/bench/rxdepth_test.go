//go:build linux && cgo

package bench_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestReceiverBacklogRXDepth: a receiver held back 300 ms with 128
// receives posted (RC send_bw -r 128) finds at most 128 messages come,
// the RX depth: the sender's next ones wait on RNR NAKs for receives to
// be replaced. Its polls take them in two full polls of 64, and where
// they are all it had posted the clock starts at the second
// (TestReceiverClockAfterBacklog's bound on the RX depth), here on a
// device. With -n 128 every message came before the clock could start:
// the server's rate is unknown. Before 75f633b the server timed the
// second poll's 64 over the µs between the two: 296 and 755 MB/s
// against the client's 13 in the rxe VM. With -n 384 the 256 after the
// backlog come as the receives are replaced, and the server times them:
// it gets a rate. (That rate is not held to the client's, which counts
// the 300 ms the sender waited on RNR NAKs: the server's was 2 to 4
// times it, and within the rate of a run not held back.)
//
// The -n 128 check holds only where the client sent all 128 within the
// hold: on a host so loaded that it took longer, the test says so and
// leaves that check out, rather than fail on the host's speed.
func TestReceiverBacklogRXDepth(t *testing.T) {
	const hold = 300 * time.Millisecond
	defer bench.SetBeforeLoop(func(client bool) {
		if !client {
			time.Sleep(hold)
		}
	})()
	for _, n := range []uint64{128, 384} {
		spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: n,
			TXDepth: 128, RXDepth: 128, CQModeration: 1, NumQPs: 1}
		cr, sr := loopback(t, spec)
		c, s := cr.Sizes[0].BW, sr.Sizes[0].BW
		t.Logf("-n %d: client %.2f MB/s; server %.2f MB/s, rate unknown %v", n, c.AvgMBps, s.AvgMBps, s.RateUnknown())
		if c.Iterations != n || c.RateUnknown() || !(c.AvgMBps > 0) || s.Iterations != n {
			t.Fatalf("-n %d: client: %d messages at %.2f MB/s, server: %d; want %d, the client's at a rate measured",
				n, c.Iterations, c.AvgMBps, s.Iterations, n)
		}
		if n == 128 && c.Elapsed > hold/2 {
			t.Logf("-n 128: the client took %v, too near the server's %v hold for every message to have come before its first poll: its rate is not checked", c.Elapsed, hold)
		} else if n == 128 && !s.RateUnknown() {
			t.Errorf("-n 128: the server's %.2f MB/s (client's %.2f); want its rate unknown: every message came before its first poll", s.AvgMBps, c.AvgMBps)
		}
		if n > 128 && (s.RateUnknown() || !(s.AvgMBps > 0)) {
			t.Errorf("-n %d: the server's rate unknown (%.2f MB/s); want one measured from the %d messages after the backlog", n, s.AvgMBps, n-128)
		}
	}
}
