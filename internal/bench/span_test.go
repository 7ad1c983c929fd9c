//go:build linux && cgo

package bench

import (
	"testing"
	"time"
)

// A run of 10 s with a margin of 2 s reports what completed from the
// first count seen at 2 s or later to the first at 8 s or later; one
// without a margin, or one that stopped early, reports the whole run.
func TestSpan(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	type obs struct {
		ms    int
		total uint64
	}
	run := []obs{{500, 10}, {1900, 40}, {2100, 50}, {5000, 100}, {7990, 160}, {8200, 170}, {9900, 200}, {10000, 205}}
	for _, c := range []struct {
		name   string
		margin time.Duration
		upTo   int // observations made
		n      uint64
		el     time.Duration
	}{
		{"margin 2 s", 2 * time.Second, len(run), 170 - 50, 6100 * time.Millisecond},
		{"no margin", 0, len(run), 205, 10 * time.Second},
		{"stopped before the far edge", 2 * time.Second, 5, 205, 10 * time.Second},
		{"margin of half the run", 5 * time.Second, len(run), 205, 10 * time.Second},
	} {
		w := newSpan(start, 10*time.Second, c.margin, false)
		for _, o := range run[:c.upTo] {
			w.observe(at(o.ms), o.total)
		}
		if n, el := w.measured(205, 10*time.Second); n != c.n || el != c.el {
			t.Errorf("%s: %d messages in %v, want %d in %v", c.name, n, el, c.n, c.el)
		}
	}
	for _, c := range []struct {
		el   time.Duration
		keep bool
	}{{time.Second, false}, {2 * time.Second, true}, {5 * time.Second, true}, {8 * time.Second, true}, {8*time.Second + 1, false}} {
		if got := inSpan(c.el, 10*time.Second, 2*time.Second); got != c.keep {
			t.Errorf("a sample at %v of 10 s with 2 s margins: kept %v, want %v", c.el, got, c.keep)
		}
	}
	if !inSpan(time.Second, 10*time.Second, 0) {
		t.Error("without a margin a sample was dropped")
	}
}

// TestCPUEdges: a passive side's CPU time samples at its span's edges,
// taken by timers at margin after the start and margin before the end,
// bound a run that passed both; one that ended before the far edge has
// none, but for a latency peer, whose count then ends with the run: the
// near edge to the end. A run without a margin has no timers.
func TestCPUEdges(t *testing.T) {
	// Bounds with room for timers and polls that run late on a loaded
	// host (the race detector, an emulator's stalls): the test waits
	// for each sample rather than sleeping a fixed time.
	const dur, margin = 1200 * time.Millisecond, 400 * time.Millisecond
	if e := newCPUEdges(time.Now(), dur, 0); e != nil {
		t.Error("timers without a margin")
	}
	var none *cpuEdges
	if _, _, ok := none.span(sampleCPU(), true); ok {
		t.Error("no edges gave a span")
	}
	waitEdge := func(e *cpuEdges, i int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			e.mu.Lock()
			done := !e.c[i].at.IsZero()
			e.mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("edge %d not sampled after 10s", i)
			}
		}
	}
	start := time.Now()
	e := newCPUEdges(start, dur, margin)
	waitEdge(e, 1)
	end := sampleCPU()
	from, to, ok := e.span(end, false)
	if !ok || from.at.Before(start.Add(margin)) || to.at.Before(start.Add(dur-margin)) || to.at.After(end.at) {
		t.Fatalf("edges at %v and %v of a run from %v to %v (ok %v)", from.at.Sub(start), to.at.Sub(start), 0, end.at.Sub(start), ok)
	}
	if w, want := to.since(from, 1).Wall, dur-2*margin; w < want/2 || w > 2*want {
		t.Errorf("the span's CPU time over %v, want about %v", w, want)
	}

	// A run that ends past the near edge, long before the far one.
	const long = time.Hour
	for _, latency := range []bool{false, true} {
		start = time.Now()
		e = newCPUEdges(start, long, margin)
		waitEdge(e, 0)
		end = sampleCPU()
		from, to, ok := e.span(end, latency) // stops the far edge's timer
		switch {
		case !latency && ok:
			t.Error("a bandwidth run that ended before the far edge got a span")
		case latency && (!ok || from.at.Before(start.Add(margin)) || to != end):
			t.Errorf("a latency run that ended at %v: span %v to %v (ok %v), want the near edge to the end",
				end.at.Sub(start), from.at.Sub(start), to.at.Sub(start), ok)
		}
	}
}

// A latency loop's window runs from the first reported iteration's post
// to the end of the last: the next post, or the loop's end; an iteration
// not completed ends it where it was posted. Pauses between posts (the
// yields the samples leave out) are in it.
func TestLatWindow(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type post struct {
		at       int
		reported bool
	}
	for _, c := range []struct {
		name  string
		posts []post
		end   int  // the loop's end
		drop  bool // the last iteration did not complete
		want  int
	}{
		// A margin: posts before and after the span are not reported;
		// the last reported one ends at the next post, not the end.
		{"margin", []post{{0, false}, {990, false}, {1001, true}, {1500, true}, {2998, true}, {3002, false}, {3999, false}}, 4000, false, 3002 - 1001},
		// No margin: every post, to the loop's end.
		{"no margin", []post{{0, true}, {700, true}, {1990, true}}, 2003, false, 2003},
		// The last post's answer never came: the window ends at it.
		{"unanswered", []post{{0, true}, {700, true}, {1990, true}}, 2100, true, 1990},
		{"one dropped", []post{{5, true}}, 100, true, 0},
		{"none reported", []post{{0, false}, {10, false}}, 20, false, 0},
	} {
		var w latWindow
		for _, p := range c.posts {
			w.post(ms(p.at), p.reported)
		}
		if c.drop {
			w.drop()
		}
		w.end(ms(c.end))
		if got := w.length(); got != ms(c.want) {
			t.Errorf("%s: window %v, want %v", c.name, got, ms(c.want))
		}
	}
}
