//go:build linux && cgo

package bench_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestSlowRateWithPostList: a rate limit slower than two post lists a
// second (24 messages a second in lists of 16) still spaces the
// messages 1/rate apart, not a list's worth apart: a UD receiver, which
// ends after 500 ms without a datagram, gets every one of them.
func TestSlowRateWithPostList(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 64, Iterations: 48,
		NumQPs: 1, TXDepth: 16, RXDepth: 64, CQModeration: 16, PostList: 16}
	c, s := loopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.Rate = bench.RateLimit{Rate: 24, Unit: bench.RatePps}
		}
	})
	if c.Sizes[0].BW.Iterations != 48 || s.Sizes[0].BW.Iterations != 48 {
		t.Errorf("sent %d, received %d; want 48 both", c.Sizes[0].BW.Iterations, s.Sizes[0].BW.Iterations)
	}
}

// TestBidirectionalRateOutlastsIdle: in a bidirectional send_bw over RC
// where only the client has a rate limit, the server's messages have all
// come long before the client's own sends are done. The client waits for
// no more of them: it does not fail "no message" after the idle timeout
// (1 s here; its sends take some 2.5 s).
func TestBidirectionalRateOutlastsIdle(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 50,
		NumQPs: 1, TXDepth: 4, RXDepth: 64, CQModeration: 1, Bidirectional: true}
	start := time.Now()
	c, s := loopback(t, spec, func(l *bench.Local, client bool) {
		l.IdleTimeout = time.Second
		if client {
			l.Rate = bench.RateLimit{Rate: 20, Unit: bench.RatePps}
		}
	})
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("the run took %v: the rate limit did not make it outlast the idle timeout", d)
	}
	for _, r := range []*bench.Result{c, s} {
		if r.Sizes[0].Local == nil || r.Sizes[0].Remote == nil ||
			r.Sizes[0].Local.Iterations != 50 || r.Sizes[0].Remote.Iterations != 50 {
			t.Errorf("%s: %+v; want 50 messages each way", r.Role, r.Sizes[0])
		}
	}
}

// TestSlowRateLateDatagrams: a UD receiver ends once the datagrams pause
// for 500 ms. A sender held to 0.8 datagrams a second sends the second
// of each size 1.25 s after the first, 750 ms after the size's receiver
// has ended (room for a slow VM's delays; 300 ms was not always): it
// completes a receive that no loop takes. The next size must not count
// it as its own: the server counts one datagram at every size of the
// sweep, where from the second size on it counted two, the first of them
// the last size's. Its 10 s of sweep, 8 sizes (2 to 256 bytes, the MTU
// it asks for) of a datagram every 1.25 s, run beside
// TestServeTellsQueuedClients, TestServeDropsSilentClients and
// TestRefusedHintNamesABusyServer, which mostly wait (t.Parallel).
func TestSlowRateLateDatagrams(t *testing.T) {
	t.Parallel()
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, AllSizes: true, Iterations: 2,
		NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1, MTU: ibverbs.MTU256}
	c, s := loopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.Rate = bench.RateLimit{Rate: 0.8, Unit: bench.RatePps}
		}
	})
	if len(s.Sizes) < 2 || len(c.Sizes) != len(s.Sizes) {
		t.Fatalf("sizes: client %d, server %d, want the same, at least 2", len(c.Sizes), len(s.Sizes))
	}
	for k, r := range s.Sizes {
		if sent := c.Sizes[k].BW.Iterations; sent != 2 || r.BW.Iterations != 1 {
			t.Errorf("size %d: sent %d, received %d; want 2 sent, the first received", r.Size, sent, r.BW.Iterations)
		}
	}
}
