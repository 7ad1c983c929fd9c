//go:build linux && cgo

package bench

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t0 := time.Unix(0, 0)
	// 1 MiB/s of 1 KiB messages: 1024 a second, bursts of 8.
	l := newLimiter(RateLimit{Rate: 1, Unit: RateMiBs, Burst: 8}, 1024, t0, 1)
	if n := l.take(t0, 100); n != 1 {
		t.Fatalf("at the start: %d, want 1", n)
	}
	if n := l.take(t0.Add(time.Millisecond), 100); n != 1 {
		t.Errorf("after 1 ms: %d, want 1 (1.024 tokens)", n)
	}
	// Idle for a second: no more than 10 ms' worth waits (10.24, more
	// than a burst).
	if n := l.take(t0.Add(time.Second), 100); n != 10 {
		t.Errorf("after an idle second: %d, want 10 ms' worth, 10", n)
	}
	// Over a long run, the rate: 1024 a second.
	var sent uint64
	now := t0.Add(time.Second)
	for range 10000 {
		now = now.Add(100 * time.Microsecond)
		sent += l.take(now, 4)
	}
	if sent < 1020 || sent > 1030 {
		t.Errorf("%d messages in 1 s at 1024 a second", sent)
	}
	if n := l.take(now, 0); n != 0 {
		t.Errorf("take 0: %d", n)
	}
	// A limiter out of tokens says when the next is due: 1024 a second
	// is one every 976.5625 µs.
	l.tokens = 0
	if d := l.due(); d < 976*time.Microsecond || d > 977*time.Microsecond {
		t.Errorf("due with no tokens: %v, want 976.5625µs", d)
	}
	l.tokens = 0.5
	if d := l.due(); d < 488*time.Microsecond || d > 489*time.Microsecond {
		t.Errorf("due with half a token: %v, want about 488µs", d)
	}
	l.tokens = 1
	if d := l.due(); d != 0 {
		t.Errorf("due with a token: %v, want 0", d)
	}
	// Tokens given back are there to take again.
	l.tokens = 0
	l.giveBack(3)
	if n := l.take(now, 100); n != 3 {
		t.Errorf("after giving back 3: %d", n)
	}
}

// TestLimiterCatchesUp: a limiter whose loop stalls now and then sends
// the messages it missed after the stall, as perftest's schedule of
// bursts does, so that the run's rate is the limit: here 10 million a
// second in bursts of 128, a loop that takes 100 ns a round, and a stall
// of 100 µs (a yield on a busy host) every 5 ms. A bucket of one burst
// sent about 98% of the limit. A burst bigger than the catch-up keeps
// its own size.
func TestLimiterCatchesUp(t *testing.T) {
	t0 := time.Unix(0, 0)
	l := newLimiter(RateLimit{Rate: 10e6, Unit: RatePps, Burst: 128}, 64, t0, 1)
	var sent uint64
	now := t0
	for now.Sub(t0) < 200*time.Millisecond {
		sent += l.take(now, 128)
		now = now.Add(100 * time.Nanosecond)
		if now.Sub(t0)%(5*time.Millisecond) == 0 {
			now = now.Add(100 * time.Microsecond)
		}
	}
	if want := 10e6 * now.Sub(t0).Seconds(); float64(sent) < 0.999*want || float64(sent) > want+128 {
		t.Errorf("sent %d in %v, want %.0f", sent, now.Sub(t0), want)
	}
	big := newLimiter(RateLimit{Rate: 1000, Unit: RatePps, Burst: 64}, 64, t0, 1)
	if n := big.take(t0.Add(time.Hour), 1000); n != 64 {
		t.Errorf("a burst of 64 at 1000 a second after an hour: %d, want 64", n)
	}
}

// TestWholeLists: the loop posts whole lists only, as perftest's, but for
// the run's last requests; a limiter holds at least a list's tokens, so
// that a burst smaller than a list cannot stall the loop.
func TestWholeLists(t *testing.T) {
	for _, tc := range []struct{ posted, n, left, pl, want uint64 }{
		{0, 5, 100, 4, 4}, {0, 3, 100, 4, 0}, {0, 8, 100, 4, 8}, {0, 3, 3, 4, 3}, {0, 7, 7, 4, 7}, {0, 5, 100, 1, 5}, {0, 0, 100, 4, 0},
		// A list the rate limit cut: its rest, up to its end.
		{1, 3, 100, 4, 3}, {1, 7, 100, 4, 7}, {1, 2, 100, 4, 0}, {6, 16, 100, 16, 10},
	} {
		if got := wholeLists(tc.posted, tc.n, tc.left, tc.pl); got != tc.want {
			t.Errorf("wholeLists(%d, %d, %d, %d) = %d, want %d", tc.posted, tc.n, tc.left, tc.pl, got, tc.want)
		}
	}
	t0 := time.Unix(0, 0)
	l := newLimiter(RateLimit{Rate: 100, Unit: RatePps, Burst: 1}, 64, t0, 16)
	if n := l.take(t0.Add(time.Second), 16); n != 16 {
		t.Errorf("bursts of 1 in lists of 16 at 100 a second, after a second: %d tokens, want a list, 16", n)
	}
}

func TestRateUnits(t *testing.T) {
	for _, tc := range []struct {
		r    RateLimit
		size int
		want float64
	}{
		{RateLimit{Rate: 8, Unit: RateGbps}, 1000, 1e6},
		{RateLimit{Rate: 2, Unit: RateMiBs}, 4096, 512},
		{RateLimit{Rate: 300, Unit: RatePps}, 64, 300},
	} {
		if got := tc.r.perSecond(tc.size); got != tc.want {
			t.Errorf("%+v at %d bytes: %v a second, want %v", tc.r, tc.size, got, tc.want)
		}
	}
	if _, err := ParseRateUnit("G"); err == nil {
		t.Error("unit G accepted")
	}
	if u, err := ParseRateUnit("p"); err != nil || u != RatePps {
		t.Errorf("p: %v, %v", u, err)
	}
}
