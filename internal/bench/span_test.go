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
