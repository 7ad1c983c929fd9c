//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// TestReceiverTimesAfterFirstPoll: a receiver's rate is that of the
// messages that came after its first poll that took any, over the time
// from that poll to the last: the first poll's came before it, when is
// not known. Its Elapsed is the time every message took at that rate, so
// that its Iters, all of them, over Elapsed is the rate. Where every
// message came in that first poll, nothing was timed: Elapsed is 0 and
// the rate unknown. The old result counted the first poll's messages
// over a time that left them out (5 messages over the 4 ms that 4 took:
// 25% fast), and over no time at all where they all came at once,
// which read as a rate of 0.00.
func TestReceiverTimesAfterFirstPoll(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name          string
		total, firstN uint64
		last          time.Duration // after the first poll
		want          time.Duration
	}{
		{"one a poll", 5, 1, 4 * time.Millisecond, 5 * time.Millisecond},
		{"a batch first", 20, 10, 10 * time.Millisecond, 20 * time.Millisecond},
		{"all in the first poll", 20, 20, 0, 0},
		{"all in the first poll, the clock moved", 20, 20, time.Millisecond, 0},
		{"nothing", 0, 0, 0, 0},
	} {
		r := receiver{start: t0.Add(-time.Second), total: c.total, firstN: c.firstN, last: t0.Add(c.last)}
		if c.total > 0 {
			r.first = t0
		} else {
			r.last = r.start // as newReceiver leaves it
		}
		got := r.result(1024)
		if got.Iters != c.total || got.Bytes != c.total*1024 || got.Elapsed != c.want {
			t.Errorf("%s: %d messages, %d bytes in %v; want %d in %v", c.name, got.Iters, got.Bytes, got.Elapsed, c.total, c.want)
		}
		bw := stats.ComputeBandwidth(1024, got.Iters, got.Elapsed, 0)
		if unknown := c.total > 0 && c.total == c.firstN; bw.RateUnknown() != unknown {
			t.Errorf("%s: rate unknown %v, want %v (%+v)", c.name, bw.RateUnknown(), unknown, bw)
		}
		if c.want > 0 {
			timed := float64(c.total-c.firstN) / c.last.Seconds() / 1e6
			if d := bw.MsgRateMpps/timed - 1; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: %.6f Mpps, want the timed messages' %.6f", c.name, bw.MsgRateMpps, timed)
			}
		}
	}
}
