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
