//go:build linux && cgo

package bench

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t0 := time.Unix(0, 0)
	// 1 MiB/s of 1 KiB messages: 1024 a second, bursts of 8.
	l := newLimiter(RateLimit{Rate: 1, Unit: RateMiBs, Burst: 8}, 1024, t0)
	if n := l.take(t0, 100); n != 1 {
		t.Fatalf("at the start: %d, want 1", n)
	}
	if n := l.take(t0.Add(time.Millisecond), 100); n != 1 {
		t.Errorf("after 1 ms: %d, want 1 (1.024 tokens)", n)
	}
	// Idle for a second: no more than a burst waits.
	if n := l.take(t0.Add(time.Second), 100); n != 8 {
		t.Errorf("after an idle second: %d, want the burst, 8", n)
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
	// Tokens given back are there to take again, up to a burst.
	l.tokens = 0
	l.giveBack(3)
	if n := l.take(now, 100); n != 3 {
		t.Errorf("after giving back 3: %d", n)
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
