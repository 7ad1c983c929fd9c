package rdmamsg

import "time"

// A pulse is the arithmetic of a Conn's ticker (keepAlives), one tick at
// a time, on counts the hot path keeps anyway: the requests posted to
// the send queue and those still on it. It says when a keepalive is due,
// within the keepalive of the last post, and when the sends have stalled:
// requests on the send queue and none completed for stallAfter ticks, a
// connection that neither delivers nor fails (soft-RoCE's QP on a link
// that went down never completes or fails its requests, even once the
// link is back), or for longer where those requests take longer (slack).
type pulse struct {
	period time.Duration // of the ticks
	// every is the ticks a keepalive waits for since the last post (0 for
	// none); stallAfter is the ticks without a send's completion, while
	// requests are on the send queue, that make a stall.
	every, stallAfter int
	// quiet bounds the time since the last post from above, in ticks: a
	// post seen at a tick came within the tick before it. stuck counts
	// the ticks since which no request completed, all of them with
	// requests on the send queue.
	quiet, stuck int
	posts, done  uint64 // the counts at the last tick
	out          bool   // requests were on the send queue at the last tick
}

// newPulse is the pulse of a ticker of period tick, for keepalives every
// keepAlive (none where it is not positive) and a stall after stall.
func newPulse(tick, keepAlive, stall time.Duration) pulse {
	p := pulse{period: tick}
	if keepAlive > 0 {
		p.every = max(1, int(keepAlive/tick))
	}
	p.stallAfter = max(1, int((stall+tick-1)/tick))
	return p
}

// tick takes, at a tick, the count of requests ever posted and of those
// still on the send queue, and slack, the time those may take beyond the
// stall's bound (the bytes of the one-sided operations among them, which
// may be many), and says whether a keepalive is due and whether the sends
// have stalled.
func (p *pulse) tick(posts uint64, out int, slack time.Duration) (keepAlive, stalled bool) {
	done := posts - uint64(out)
	if out > 0 && p.out && done == p.done {
		p.stuck++
	} else {
		p.stuck = 0
	}
	if posts != p.posts {
		p.quiet = 1
	} else {
		p.quiet++
	}
	p.posts, p.done, p.out = posts, done, out > 0
	return p.every > 0 && p.quiet >= p.every, p.stuck >= p.stallAfter+int((slack+p.period-1)/p.period)
}

// posted notes the keepalive the tick posted: posts and out are the
// counts after it.
func (p *pulse) posted(posts uint64, out int) {
	p.posts, p.out, p.quiet = posts, out > 0, 0
}

// stallFor is stallBound's arithmetic: twice (retries+1) ACK timeouts of
// 4.096 µs × 2^timeout, plus maxSend bytes at 10 MB/s, at least
// stallAfter.
func stallFor(timeout, retries, maxSend int) time.Duration {
	ack := 4096 * time.Nanosecond << timeout
	b := 2*time.Duration(retries+1)*ack + time.Duration(maxSend)*time.Second/10e6
	return max(b, stallAfter)
}

// stallAfter is the least time without a send's completion, while
// requests are on the send queue, that fails a connection (stallBound).
var stallAfter = 20 * time.Second // a var for tests

// opByteTime is the time a byte of a one-sided operation on the send
// queue adds to the stall's bound (keepAlives): 10 MB/s, as stallFor
// counts a message's. One operation is at most the port's largest
// message (2 GiB; 8 MiB on soft-RoCE), and 16 are on the send queue at
// most.
var opByteTime = 100 * time.Nanosecond // a var for tests
