//go:build linux && cgo

package bench

import (
	"fmt"
	"time"
)

// RateUnit is the unit of a rate limit (perftest's --rate_units).
type RateUnit byte

// The units of perftest's --rate_units: MiB/s, Gbit/s and messages a
// second.
const (
	RateGbps RateUnit = 'g'
	RateMiBs RateUnit = 'M'
	RatePps  RateUnit = 'p'
)

// ParseRateUnit parses perftest's letters, M, g or p.
func ParseRateUnit(s string) (RateUnit, error) {
	switch s {
	case "g", "M", "p":
		return RateUnit(s[0]), nil
	}
	return 0, fmt.Errorf("want M (MiB/s), g (Gbit/s) or p (messages a second), not %q", s)
}

// RateLimit caps the messages a side sends in a bandwidth test
// (perftest's software rate limiter, --rate_limit_type SW): all its QPs
// together send at most Rate, in bursts of at most Burst messages.
type RateLimit struct {
	Rate  float64 // 0: no limit
	Unit  RateUnit
	Burst int // 0: the TX depth
}

// perSecond is the limit in messages a second for messages of size bytes.
func (r RateLimit) perSecond(size int) float64 {
	switch r.Unit {
	case RateMiBs:
		return r.Rate * (1 << 20) / float64(size)
	case RatePps:
		return r.Rate
	}
	return r.Rate * 1e9 / 8 / float64(size)
}

// String is the limit as the header prints it.
func (r RateLimit) String() string {
	unit := map[RateUnit]string{RateGbps: "Gbit/sec", RateMiBs: "MiB/sec", RatePps: "messages/sec"}[r.Unit]
	return fmt.Sprintf("%g %s, bursts of %d (SW)", r.Rate, unit, r.Burst)
}

// limiter is a token bucket: a message takes a token, tokens come at the
// limit's rate, and at most a burst of them wait.
type limiter struct {
	perNs  float64 // tokens a nanosecond
	burst  float64
	tokens float64
	last   time.Time
}

// newLimiter starts a limiter for messages of size bytes at now, with one
// message to send: a run of n messages then lasts (n-1)/rate, its average
// the limit, where a full first burst would raise a short run's.
func newLimiter(r RateLimit, size int, now time.Time) *limiter {
	b := float64(max(r.Burst, 1))
	return &limiter{perNs: r.perSecond(size) / 1e9, burst: b, tokens: 1, last: now}
}

// take returns how many of want messages may be sent at now, and takes
// their tokens.
func (l *limiter) take(now time.Time, want uint64) uint64 {
	if d := now.Sub(l.last); d > 0 {
		l.tokens = min(l.burst, l.tokens+float64(d)*l.perNs)
		l.last = now
	}
	n := min(want, uint64(l.tokens))
	l.tokens -= float64(n)
	return n
}

// giveBack returns n tokens that take gave and were not used.
func (l *limiter) giveBack(n uint64) { l.tokens = min(l.burst, l.tokens+float64(n)) }

// due returns how long from its last take the limiter's next whole token
// is: 0 when one is there.
func (l *limiter) due() time.Duration {
	if l.tokens >= 1 || l.perNs <= 0 {
		return 0
	}
	return time.Duration((1-l.tokens)/l.perNs) + 1
}
