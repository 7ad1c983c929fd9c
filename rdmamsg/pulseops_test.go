package rdmamsg

import (
	"testing"
	"time"
)

// SetOpByteTime sets the time a byte of a one-sided operation on the
// send queue adds to the stall's bound, for a test, and returns what puts
// it back.
func SetOpByteTime(d time.Duration) (restore func()) {
	old := opByteTime
	opByteTime = d
	return func() { opByteTime = old }
}

// TestPulseStallSlack: the time the requests on the send queue may take
// beyond the bound (the bytes of one-sided operations) puts the stall
// off by as many ticks, rounded up; once they complete, the bound is the
// plain one again.
func TestPulseStallSlack(t *testing.T) {
	p := newPulse(time.Second, -1, 5*time.Second) // 5 ticks
	p.tick(10, 0, 0)
	n := 0
	for n = 1; n <= 20; n++ {
		if _, s := p.tick(11, 1, 2500*time.Millisecond); s {
			break
		}
	}
	if n != 5+3+1 {
		t.Errorf("with 2.5 s of slack, stalled at tick %d, want %d (5 ticks, 3 more, and the tick it came in)", n, 5+3+1)
	}
	// The slack gone (a smaller operation on the queue now), the stuck
	// ticks already counted are a stall at once.
	p = newPulse(time.Second, -1, 5*time.Second)
	p.tick(10, 1, 10*time.Second)
	for i := range 6 {
		if _, s := p.tick(10, 1, 10*time.Second); s {
			t.Fatalf("stalled at tick %d with 10 s of slack", i)
		}
	}
	if _, s := p.tick(10, 1, 0); !s {
		t.Error("no stall once the slack is gone, 7 ticks without a completion")
	}
}
