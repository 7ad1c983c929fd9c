//go:build linux && cgo

package bench_test

import (
	"testing"

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
