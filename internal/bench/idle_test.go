//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestCompletionIdle: the sending loop's wait for a completion is the
// idle timeout, or four times a moderation window's worth of messages at
// the rate seen (or allowed by a rate limit) where that is longer.
func TestCompletionIdle(t *testing.T) {
	const mib = 1 << 20
	s := &session{idle: 10 * time.Second, qps: make([]*ibverbs.QP, 2), spec: exchange.TestSpec{Test: exchange.WriteBW}}
	for _, tc := range []struct {
		name     string
		rate     float64 // the last size's bytes a second
		total    uint64  // this size's messages so far
		el       time.Duration
		size     int
		limitMiB float64
		want     time.Duration
	}{
		{"nothing known: the idle timeout a QP", 0, 0, 0, 4 * mib, 0, 20 * time.Second},
		{"fast: the idle timeout", 1e9, 0, 0, 4 * mib, 0, 10 * time.Second},
		{"the last size's rate", 50 * mib, 0, 0, 4 * mib, 0, 64 * time.Second},
		{"this size's rate first", 1e9, 100, 8 * time.Second, 4 * mib, 0, 4 * 200 * 80 * time.Millisecond},
		{"a rate limit, nothing seen", 0, 0, 0, mib, 1, 800 * time.Second},
		{"a rate limit below the rate seen", 1e9, 0, 0, mib, 2, 400 * time.Second},
	} {
		s.sendRate = tc.rate
		s.local.Rate = RateLimit{}
		if tc.limitMiB > 0 {
			s.local.Rate = RateLimit{Rate: tc.limitMiB, Unit: RateMiBs, Burst: 1}
		}
		if got := s.completionIdle(tc.total, tc.el, tc.size, 100*2); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
