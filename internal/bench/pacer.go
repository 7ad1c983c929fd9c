//go:build linux && cgo

package bench

import (
	"runtime"
	"time"
)

// Busy-polling loops and the Go scheduler.
//
// A goroutine that polls a CQ without ever blocking stays on one
// scheduling tick. After 10 ms of that the runtime's monitor thread
// (sysmon) preempts it; when the goroutine is inside a cgo call at that
// moment, as a poller nearly always is, preemption cannot reach it and
// sysmon takes its P away instead, so the call's return must wait to get
// one back, and sysmon, having found work, goes back to waking every
// 20 µs. Giving the scheduler a turn (runtime.Gosched) more often than
// every 10 ms avoids that. On soft-RoCE, where posting is a system call,
// this raised 64-byte write_bw from a median of 1.09 to 1.17 MB/s with the
// loop's thread locked and ended a storm of futex calls.
//
// A turn is not free: from a locked thread, a yield hands the P to another
// thread and waits to be handed it back, two thread wake-ups on the
// loop's path. On the 2-core CI host that cost about 100 µs of the loop's
// time per yield (BenchmarkPacedLoop: a yield every millisecond took 9-12%
// of a busy loop's throughput, every 5 ms 1-3%). So the loops yield about
// every 5 ms, half the runtime's limit, and a loop whose iterations are
// slow yields at the check before the one that would pass it. Waits yield
// only once they last, so that a latency sample rarely holds a yield
// (docs/performance.md).
const (
	pacerPeriod = 100 * time.Microsecond // how often a loop's periodic work runs
	yieldPeriod = 5 * time.Millisecond   // how often a loop yields to the scheduler
	// maxStride bounds the calls between clock readings, so that a loop
	// that slows down suddenly is noticed within that many iterations.
	maxStride = 256
)

// pacer tells a busy loop when to run its periodic work (deadline,
// progress, liveness checks) and yields to the scheduler for it. It reads
// the clock only every stride calls, a stride it fits to the loop's speed
// so that the work comes about every pacerPeriod whether an iteration
// takes 100 ns (a NIC) or 100 µs (an emulated soft-RoCE).
type pacer struct {
	stride, n int
	last      time.Time     // the last clock reading
	yielded   time.Time     // the last yield
	period    time.Duration // between yields: yieldPeriod if 0, never if negative
}

// due reports whether the periodic work is due, and the time if it is.
func (p *pacer) due() (time.Time, bool) { return p.dueAt(time.Time{}) }

// dueAt is due for a loop that may have read the clock this iteration
// anyway (now; zero where it did not), as the bandwidth loops do when
// completions come: where a period has passed since the last reading,
// the work is due at once, whatever the stride, and the stride shrinks
// to the calls that took it. Without it a loop whose stride grew while
// its iterations were quick (polls that found nothing) and whose
// iterations then slowed (on soft-RoCE, each posting a list of 4 KiB
// messages: milliseconds under emulation) came to its work only after
// maxStride of them, and with each reading only halved its stride. (A
// thread of an infinite run in a loaded VM reported its first 1 s
// interval after 4.9 s, which that explains: 256 iterations of 15 ms.)
func (p *pacer) dueAt(now time.Time) (time.Time, bool) {
	p.n++
	early := p.n < p.stride
	if early && (now.IsZero() || p.last.IsZero() || now.Sub(p.last) < pacerPeriod) {
		return time.Time{}, false
	}
	calls := p.n
	p.n = 0
	if now.IsZero() {
		now = time.Now()
	}
	d := now.Sub(p.last)
	switch {
	case early:
		p.stride = max(calls, 1)
	case d > 2*pacerPeriod && p.stride > 1:
		p.stride /= 2
	case d < pacerPeriod/2 && p.stride < maxStride:
		p.stride = max(2*p.stride, 1)
	}
	if p.last.IsZero() {
		d = 0
	}
	p.last = now
	// The next reading is likely as far off as this one was from the
	// last: yield now if waiting for it would pass the period.
	p.yieldWithin(now, d)
	return now, true
}

// slept makes the next due report the work due, whatever the stride: a
// loop calls it after a sleep (-e's wait for a completion event, up to
// eventSlice), which may have lasted far longer than the stride's calls
// took while messages flowed. Without it a loop whose stride had grown
// to maxStride, and whose messages then stopped, slept maxStride times
// (2.5 s) before its next check of its deadline, its peer, its idle
// timeout or Ctrl-C. The reading then fits the stride to the sleeps.
func (p *pacer) slept() { p.n = p.stride }

// yield gives the scheduler a turn if the last was the period ago, and
// reports whether it did.
func (p *pacer) yield(now time.Time) bool { return p.yieldWithin(now, 0) }

// yieldDue reports whether a yield is due at now: yield would give the
// scheduler its turn.
func (p *pacer) yieldDue(now time.Time) bool { return p.dueWithin(now, 0) }

// dueWithin reports whether the period will have passed since the last
// yield within ahead.
func (p *pacer) dueWithin(now time.Time, ahead time.Duration) bool {
	period := p.period
	if period == 0 {
		period = yieldPeriod
	}
	return period >= 0 && now.Sub(p.yielded)+ahead >= period
}

// yieldWithin gives the scheduler a turn if the period will have passed
// since the last one within ahead, and reports whether it did.
func (p *pacer) yieldWithin(now time.Time, ahead time.Duration) bool {
	if !p.dueWithin(now, ahead) {
		return false
	}
	p.yielded = now
	gosched()
	return true
}

// gosched is runtime.Gosched; a test makes some yields slow.
var gosched = runtime.Gosched
