package stats

import (
	"sync/atomic"
	"time"
)

// Accumulator counts bytes and messages as a test runs and reports the
// bandwidth of each interval, for --run-infinitely and periodic reports.
//
// Add may be called from any goroutine, concurrently with Snapshot; it
// does not allocate. Snapshot and Reset must not be called concurrently
// with each other. The byte and message counters are read one after the
// other, so an Add racing with Snapshot may fall into two intervals.
type Accumulator struct {
	bytes, msgs atomic.Uint64

	lastBytes, lastMsgs uint64
	last                time.Time
}

// NewAccumulator returns an Accumulator whose first interval starts at
// start.
func NewAccumulator(start time.Time) *Accumulator {
	a := new(Accumulator)
	a.Reset(start)
	return a
}

// Reset starts a new interval at now without discarding the totals.
func (a *Accumulator) Reset(now time.Time) {
	a.lastBytes, a.lastMsgs = a.bytes.Load(), a.msgs.Load()
	a.last = now
}

// Add records msgs completed messages carrying bytes bytes in total.
func (a *Accumulator) Add(bytes, msgs uint64) {
	a.bytes.Add(bytes)
	a.msgs.Add(msgs)
}

// Totals returns the bytes and messages added since the Accumulator was
// made.
func (a *Accumulator) Totals() (bytes, msgs uint64) {
	return a.bytes.Load(), a.msgs.Load()
}

// Snapshot returns the bandwidth of the interval from the previous
// Snapshot (or Reset) to now, and starts the next interval at now.
//
// Bytes in the result is the mean message size of the interval and
// Iterations its message count; the peak equals the average, since an
// interval has no per-message timing. An interval of zero or negative
// length reports zero rates.
func (a *Accumulator) Snapshot(now time.Time) Bandwidth {
	bytes, msgs := a.bytes.Load(), a.msgs.Load()
	db, dm := bytes-a.lastBytes, msgs-a.lastMsgs
	elapsed := now.Sub(a.last)
	a.lastBytes, a.lastMsgs, a.last = bytes, msgs, now

	b := Bandwidth{Iterations: dm, Elapsed: elapsed}
	if dm > 0 {
		b.Bytes = int(db / dm)
	}
	if elapsed > 0 {
		ns := float64(elapsed)
		b.AvgMBps = float64(db) * 1e9 / ns / BytesPerMB
		b.MsgRateMpps = float64(dm) * 1e3 / ns
		b.PeakMBps = b.AvgMBps
	}
	return b
}
