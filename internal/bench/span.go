//go:build linux && cgo

package bench

import (
	"sync"
	"time"
)

// span is the measured part of a bandwidth run with a duration and a
// margin (perftest's -D and -f): from margin after the start to margin
// before the end. A loop shows it its count of completed messages each
// time the count moves; the counts at the first moves at or past the two
// edges bound what is reported. Without a margin, or in a run that ended
// before the far edge, the whole run is reported. With cpu, it also takes
// the process's CPU time at the edges, for --cpu_util.
type span struct {
	from, to time.Time // the edges; zero: no span
	n0, n1   uint64    // the counts seen at the edges
	t0, t1   time.Time // when they were seen
	cpu      bool
	c0, c1   cpuSample
}

// newSpan returns the span of a run that started at start and lasts
// dur, with margin at each end; a zero margin makes no span.
func newSpan(start time.Time, dur, margin time.Duration, cpu bool) span {
	if margin <= 0 || dur <= 2*margin {
		return span{}
	}
	return span{from: start.Add(margin), to: start.Add(dur - margin), cpu: cpu}
}

// observe records that total messages had completed at now, and reports
// whether that was the span's first edge: its count starts there.
func (w *span) observe(now time.Time, total uint64) (started bool) {
	switch {
	case w.from.IsZero() || !w.t1.IsZero():
	case w.t0.IsZero():
		if !now.Before(w.from) {
			w.n0, w.t0 = total, now
			if w.cpu {
				w.c0 = sampleCPU()
			}
			return true
		}
	case !now.Before(w.to):
		w.n1, w.t1 = total, now
		if w.cpu {
			w.c1 = sampleCPU()
		}
	}
	return false
}

// open reports whether the span has started and not ended: a count
// seen now, before observe takes it, is one of those it reports.
func (w *span) open() bool { return !w.t0.IsZero() && w.t1.IsZero() }

// passed reports whether the run passed both edges: measured reports the
// span's counts, not the whole run's.
func (w *span) passed() bool { return !w.t1.IsZero() }

// measured returns the messages and the time to report: the span's if
// the run passed both its edges, else the whole run's, total in el.
func (w *span) measured(total uint64, el time.Duration) (uint64, time.Duration) {
	if !w.passed() {
		return total, el
	}
	return w.n1 - w.n0, w.t1.Sub(w.t0)
}

// cpuSpan returns the CPU time samples at the edges, if it took them and
// the run passed both.
func (w *span) cpuSpan() *[2]cpuSample {
	if w.t1.IsZero() || w.c1.at.IsZero() {
		return nil
	}
	return &[2]cpuSample{w.c0, w.c1}
}

// inSpan reports whether a latency sample taken el into a run of dur
// with margin at each end is one to keep.
func inSpan(el, dur, margin time.Duration) bool {
	return margin <= 0 || el >= margin && el <= dur-margin
}

// cpuEdges takes the process's CPU time at the edges of a run's measured
// span by the clock, for --cpu_util on a side that runs no loop (passive):
// its figures are the peer's count of the span's messages, which its CPU
// time must cover too, not the whole run's D where the messages counted
// came in D-2f (with the default margin, twice the time a message). Two
// timers take the samples, at margin after the start and margin before
// the end.
type cpuEdges struct {
	mu     sync.Mutex
	c      [2]cpuSample
	timers [2]*time.Timer
}

// newCPUEdges returns the edges' timers for a run that started at start
// and lasts dur, with margin at each end, or nil where no span is
// measured (newSpan).
func newCPUEdges(start time.Time, dur, margin time.Duration) *cpuEdges {
	w := newSpan(start, dur, margin, false)
	if w.from.IsZero() {
		return nil
	}
	e := &cpuEdges{}
	for i, at := range []time.Time{w.from, w.to} {
		e.timers[i] = time.AfterFunc(time.Until(at), func() {
			c := sampleCPU()
			e.mu.Lock()
			e.c[i] = c
			e.mu.Unlock()
		})
	}
	return e
}

// span stops the timers and returns the CPU time samples that bound the
// peer's count: those at the two edges, where both were taken by end
// (the end of the run, a sample). Where only the near edge's was, the
// count of a bandwidth peer is its whole run's (span.measured), and ok is
// false; that of a latency peer (upToEnd) is of the iterations it posted
// in the span, which ended with the run, and the samples are the near
// edge's and end. A nil e has none.
func (e *cpuEdges) span(end cpuSample, upToEnd bool) (from, to cpuSample, ok bool) {
	if e == nil {
		return cpuSample{}, cpuSample{}, false
	}
	for _, t := range e.timers {
		t.Stop()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c0, c1 := e.c[0], e.c[1]
	switch {
	case c0.at.IsZero() || c0.at.After(end.at):
		return cpuSample{}, cpuSample{}, false
	case !c1.at.IsZero() && !c1.at.After(end.at):
		return c0, c1, true
	case upToEnd:
		return c0, end, true
	}
	return cpuSample{}, cpuSample{}, false
}

// latWindow measures the time a latency loop's reported iterations took,
// perftest's measuring window of a run of a duration (-D): its
// print_report_lat_duration divides the cycles between the start and the
// end of its SAMPLE_STATE by its iterations for t_avg, and its
// iterations by them for tps. An iteration runs from its post to the
// next post, or for the last to the loop's end, pauses included (the
// yields to the scheduler the samples leave out), so that the window is
// from the first reported iteration's post to the end of the last: with
// a margin, about the span between the margins; without, the whole run.
// The times are since the loop's start.
type latWindow struct {
	from, to time.Duration
	open     bool // the last iteration posted is reported: it ends at the next post or the loop's end
	any      bool // an iteration was reported
}

// post records an iteration posted at el, reported or not: it ends the
// one before.
func (w *latWindow) post(el time.Duration, reported bool) {
	if w.open {
		w.to = el
	}
	if reported && !w.any {
		w.from, w.to, w.any = el, el, true
	}
	w.open = reported
}

// end ends the last iteration, if reported, at el, the loop's end.
func (w *latWindow) end(el time.Duration) {
	if w.open {
		w.to, w.open = el, false
	}
}

// drop takes the last iteration, not completed, out of the window, which
// ends where it was posted.
func (w *latWindow) drop() { w.open = false }

// length returns the window's time; zero where no iteration was reported.
func (w *latWindow) length() time.Duration {
	if !w.any {
		return 0
	}
	return w.to - w.from
}
