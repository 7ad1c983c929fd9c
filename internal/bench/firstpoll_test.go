//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
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

// TestReceiverClockAfterBacklog: a poll takes at most len(wcs)
// completions, so a receiver that comes late to a backlog takes it in
// several polls, µs apart. The clock starts where the backlog is taken:
// at the first poll that comes back short, at the last full one where
// the next comes back empty, or once the polls have taken what was
// posted, the most that can have waited (later full polls are the
// sender's pace: a saturated receiver still times them). The old
// receiver started its clock at the first poll and timed the rest of
// the backlog over the µs it took to drain (RC send_bw -n 400 -r 512, a
// receiver held back: 1444 MB/s against the sender's 14).
func TestReceiverClockAfterBacklog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type poll struct {
		k  int
		at time.Duration
	}
	polls := func(n, k int, from, every time.Duration) []poll {
		var ps []poll
		for i := range n {
			ps = append(ps, poll{k, from + time.Duration(i)*every})
		}
		return ps
	}
	cat := func(pss ...[]poll) []poll {
		var ps []poll
		for _, p := range pss {
			ps = append(ps, p...)
		}
		return ps
	}
	for _, c := range []struct {
		name      string
		posted    uint64
		polls     []poll
		wantFirst time.Duration // when the clock started
		wantN     uint64        // messages before it
	}{
		{"late, 400 of 512 posted", 512, cat(polls(6, 64, 0, time.Microsecond), polls(1, 16, 6*time.Microsecond, 0)),
			6 * time.Microsecond, 400},
		{"late, then the sender's pace", 512, cat(polls(6, 64, 0, time.Microsecond), polls(1, 16, 6*time.Microsecond, 0),
			polls(3, 1, time.Millisecond, time.Millisecond)), 6 * time.Microsecond, 400},
		{"a backlog of whole polls", 512, cat(polls(2, 64, 0, time.Microsecond), polls(1, 0, 2*time.Microsecond, 0),
			polls(5, 1, time.Millisecond, time.Millisecond)), time.Microsecond, 128},
		{"saturated", 128, polls(100, 64, 0, 10*time.Microsecond), 10 * time.Microsecond, 128},
		{"saturated, posted not a whole poll", 100, polls(100, 64, 0, 10*time.Microsecond), 10 * time.Microsecond, 128},
		{"short first poll", 512, cat(polls(1, 3, 0, 0), polls(2, 64, time.Millisecond, time.Millisecond)), 0, 3},
		{"one a poll", 512, polls(5, 1, 0, time.Millisecond), 0, 1},
	} {
		r := receiver{wcs: make([]ibverbs.WC, 64), posted: c.posted, start: t0.Add(-time.Second)}
		r.last = r.start
		for _, p := range c.polls {
			if p.k > 0 {
				r.last = t0.Add(p.at)
				r.total += uint64(p.k)
			}
			r.clock(p.k)
		}
		if r.first != t0.Add(c.wantFirst) || r.firstN != c.wantN {
			t.Errorf("%s: the clock started at %v after %d messages, want at %v after %d",
				c.name, r.first.Sub(t0), r.firstN, c.wantFirst, c.wantN)
		}
		got := r.result(4096)
		bw := stats.ComputeBandwidth(4096, got.Iters, got.Elapsed, 0)
		if r.total == c.wantN {
			if !bw.RateUnknown() {
				t.Errorf("%s: every message before the clock, rate %.2f MB/s, want unknown", c.name, bw.AvgMBps)
			}
			continue
		}
		timed := float64(r.total-c.wantN) / r.last.Sub(t0.Add(c.wantFirst)).Seconds() / 1e6
		if d := bw.MsgRateMpps/timed - 1; bw.RateUnknown() || d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %.6f Mpps (unknown %v), want the timed messages' %.6f", c.name, bw.MsgRateMpps, bw.RateUnknown(), timed)
		}
	}
}
