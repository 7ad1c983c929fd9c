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
	return fmt.Sprintf("%g %s, bursts of %d (SW)", r.Rate, r.unitName(), r.Burst)
}

func (r RateLimit) unitName() string {
	return map[RateUnit]string{RateGbps: "Gbit/sec", RateMiBs: "MiB/sec", RatePps: "messages/sec"}[r.Unit]
}

// threads is the header's limit of a test of n threads, r being each
// one's share.
func (r RateLimit) threads(n int) string {
	return fmt.Sprintf("%g %s, %g a thread in bursts of %d (SW)", r.Rate*float64(n), r.unitName(), r.Rate, r.Burst)
}

// limiter is a token bucket: a message takes a token, and tokens come
// at the limit's rate. Tokens not taken wait, up to a burst or, if more,
// catchUp's worth: perftest's limiter keeps a schedule of bursts, and
// after a stall (the loop preempted, a yield of the pacer, a full send
// queue) sends the bursts it missed back to back, so that the run's
// average is the limit; a bucket of one burst lost that time for good
// (about 2% of a 10 Mpps limit with a 100 µs stall every 5 ms). Unlike
// perftest's, the catch-up is bounded: a process stopped for a minute
// does not then flood the link for a minute.
type limiter struct {
	perNs  float64 // tokens a nanosecond
	most   float64 // the tokens that may wait
	tokens float64
	last   time.Time
}

// catchUp bounds the time whose unsent messages a limiter sends after a
// stall.
const catchUp = 10 * time.Millisecond

// newLimiter starts a limiter for messages of size bytes, posted in lists
// of list, at now, with one message to send: a run of n messages then lasts (n-1)/rate, its average
// the limit, where a full first burst would raise a short run's.
func newLimiter(r RateLimit, size int, now time.Time, list uint64) *limiter {
	perNs := r.perSecond(size) / 1e9
	// At least a post list: the loop posts only whole lists.
	most := max(float64(max(r.Burst, 1)), float64(list), perNs*float64(catchUp))
	return &limiter{perNs: perNs, most: most, tokens: 1, last: now}
}

// take returns how many of want messages may be sent at now, and takes
// their tokens.
func (l *limiter) take(now time.Time, want uint64) uint64 {
	if d := now.Sub(l.last); d > 0 {
		l.tokens = min(l.most, l.tokens+float64(d)*l.perNs)
		l.last = now
	}
	n := min(want, uint64(l.tokens))
	l.tokens -= float64(n)
	return n
}

// giveBack returns n tokens that take gave and were not used.
func (l *limiter) giveBack(n uint64) { l.tokens = min(l.most, l.tokens+float64(n)) }

// due returns how long from its last take the limiter's next whole token
// is: 0 when one is there.
func (l *limiter) due() time.Duration {
	if l.tokens >= 1 || l.perNs <= 0 {
		return 0
	}
	return time.Duration((1-l.tokens)/l.perNs) + 1
}
