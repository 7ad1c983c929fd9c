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
// one back. Giving the scheduler a turn (runtime.Gosched) more often than
// every 10 ms avoids that; the loops here do it about every millisecond.
// On soft-RoCE, where posting is a system call, this raised 64-byte
// write_bw from a median of 1.09 to 1.17 MB/s with the loop's thread
// locked (1.14/0.68/1.10 to 1.35/1.28/1.21 before the lock) and ended a
// storm of futex calls. It does not quiet sysmon's own 20 µs wake-ups,
// whose count stayed the same (docs/performance.md). On a locked thread a
// yield hands the P off and back, so waits yield only once they last.
const (
	pacerPeriod = 100 * time.Microsecond // how often a loop's periodic work runs
	yieldPeriod = time.Millisecond       // how often a loop yields to the scheduler
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
	last      time.Time // the last clock reading
	yielded   time.Time // the last yield
}

// due reports whether the periodic work is due, and the time if it is.
func (p *pacer) due() (time.Time, bool) {
	if p.n++; p.n < p.stride {
		return time.Time{}, false
	}
	p.n = 0
	now := time.Now()
	switch d := now.Sub(p.last); {
	case d > 2*pacerPeriod && p.stride > 1:
		p.stride /= 2
	case d < pacerPeriod/2 && p.stride < maxStride:
		p.stride = max(2*p.stride, 1)
	}
	p.last = now
	p.yield(now)
	return now, true
}

// yield gives the scheduler a turn if the last was yieldPeriod ago.
func (p *pacer) yield(now time.Time) {
	if now.Sub(p.yielded) >= yieldPeriod {
		p.yielded = now
		runtime.Gosched()
	}
}

// start is the start time of a latency iteration: the scheduler gets its
// turn, when due, before the clock is read, outside what is measured.
func (p *pacer) start() time.Time {
	now := time.Now()
	if now.Sub(p.yielded) < yieldPeriod {
		return now
	}
	p.yield(now)
	return time.Now()
}
