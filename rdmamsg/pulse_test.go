package rdmamsg

import (
	"testing"
	"time"
)

// TestPulseKeepAlive: a keepalive goes out within the keepalive (four
// ticks here) of the last post, wherever in a tick that post came, and
// every keepalive after the last while nothing else is posted. (The old
// ticker, of one keepalive's period, sent one only after a whole tick
// without a post: up to twice the keepalive after it.)
func TestPulseKeepAlive(t *testing.T) {
	p := newPulse(time.Second, 4*time.Second, time.Hour)
	var posts uint64
	// due runs ticks until a keepalive is due, and returns how many.
	due := func() int {
		t.Helper()
		for n := 1; n <= 20; n++ {
			if k, _ := p.tick(posts, 0, 0); k {
				return n
			}
		}
		t.Fatal("no keepalive in 20 ticks")
		return 0
	}
	// From the start, nothing posted: at the fourth tick.
	if n := due(); n != 4 {
		t.Errorf("first keepalive at tick %d, want 4", n)
	}
	posts++
	p.posted(posts, 0)
	if n := due(); n != 4 {
		t.Errorf("keepalive after a keepalive at tick %d, want 4", n)
	}
	posts++
	p.posted(posts, 0)
	// A post just after a tick: at most four ticks after it, at least
	// three (the tick it came in is counted whole).
	p.tick(posts, 0, 0)
	posts++ // a message
	if n := due(); n != 4 {
		t.Errorf("keepalive at tick %d after the tick with a post, want 4 (within 4 s of the post)", n)
	}
	// Posts every tick keep it away.
	for i := range 10 {
		posts++
		if k, _ := p.tick(posts, 0, 0); k {
			t.Fatalf("keepalive at tick %d though a post came in each", i)
		}
	}
	// None where the keepalive is off.
	q := newPulse(time.Second, -1, time.Hour)
	for range 100 {
		if k, _ := q.tick(0, 0, 0); k {
			t.Fatal("a keepalive with KeepAlive negative")
		}
	}
}

// TestPulseStall: requests on the send queue and none completed for the
// bound is a stall; a completion, or an empty send queue, starts it over.
func TestPulseStall(t *testing.T) {
	p := newPulse(time.Second, -1, 5*time.Second) // 5 ticks
	stalledAt := func(posts uint64, out int) int {
		t.Helper()
		for n := 1; n <= 20; n++ {
			if _, s := p.tick(posts, out, 0); s {
				return n
			}
		}
		return 0
	}
	// Idle: never.
	if n := stalledAt(10, 0); n != 0 {
		t.Errorf("idle send queue stalled at tick %d", n)
	}
	// Sends completing at each tick: never.
	for i := range uint64(20) {
		if _, s := p.tick(11+i, 1, 0); s {
			t.Fatalf("stalled at tick %d though a request completed in each", i)
		}
	}
	// One request posted and never completed: once it has been out for
	// five whole ticks (the tick it came in is not counted).
	p = newPulse(time.Second, -1, 5*time.Second)
	p.tick(10, 0, 0)
	if n := stalledAt(11, 1); n != 6 {
		t.Errorf("stalled at tick %d, want 6", n)
	}
	// More posts while none completes: still a stall.
	p = newPulse(time.Second, -1, 5*time.Second)
	p.tick(10, 1, 0)
	for i := range 4 {
		if _, s := p.tick(11+uint64(i), 2+i, 0); s {
			t.Fatalf("stalled at tick %d", i)
		}
	}
	if _, s := p.tick(15, 6, 0); !s {
		t.Error("no stall after five ticks with nothing completed")
	}
	// A completion late in the wait starts it over.
	p = newPulse(time.Second, -1, 5*time.Second)
	p.tick(10, 1, 0)
	p.tick(10, 1, 0)
	p.tick(10, 1, 0)
	p.tick(10, 0, 0) // done
	p.tick(11, 1, 0)
	if n := stalledAt(11, 1); n != 5 {
		t.Errorf("after a completion, stalled at tick %d more, want 5", n)
	}
}

// TestStallFor: the stall bound is twice the device's retries, each an
// ACK timeout of 4.096 µs × 2^timeout, plus the largest message at
// 10 MB/s, and at least 20 s: soft-RoCE's rdma_cm QPs (timeout 19, 2.1 s;
// 6 retries) and a 4 MiB message, about 30.5 s. (The ACK timeout was
// taken 1000 times too short, so every bound was the 20 s floor.)
func TestStallFor(t *testing.T) {
	for _, tc := range []struct {
		timeout, retries, maxSend int
		want                      time.Duration
	}{
		{19, 6, 4 << 20, 2*7*(4096*time.Nanosecond<<19) + 419430400*time.Nanosecond},
		{20, 7, 0, 2 * 8 * (4096 * time.Nanosecond << 20)}, // the default where the QP cannot say: 68.7 s
		{14, 7, 1 << 20, stallAfter},                       // 67 ms ACK timeouts: the floor
	} {
		if got := stallFor(tc.timeout, tc.retries, tc.maxSend); got != tc.want {
			t.Errorf("stallFor(%d, %d, %d) = %v, want %v", tc.timeout, tc.retries, tc.maxSend, got, tc.want)
		}
	}
	if got := stallFor(19, 6, 4<<20); got < 30*time.Second || got > 31*time.Second {
		t.Errorf("soft-RoCE's rdma_cm defaults: %v, want about 30.5 s", got)
	}
}
