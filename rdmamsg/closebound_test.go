//go:build linux && cgo

package rdmamsg

import (
	"strings"
	"testing"
	"time"
)

// TestCloseBound: Close's wait ends closeWait after the last progress,
// not after its start, so a slow transfer is not cut while its sends
// complete; a write deadline still to come bounds it, and one already
// passed when Close began does not (it would cut the wait at once, and
// the disconnect flush the end).
func TestCloseBound(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	check := func(what string, b closeBound, want time.Time, how string) {
		t.Helper()
		got, why := b.limit()
		if !got.Equal(want) || !strings.Contains(why, how) {
			t.Errorf("%s: limit %v (%s); want %v (%s)", what, got.Sub(start), why, want.Sub(start), how)
		}
	}
	b := newCloseBound(start, time.Time{})
	check("no deadline", b, at(closeWait), "without progress")
	b.progress(at(4 * time.Second))
	check("no deadline, a send completed at 4 s", b, at(4*time.Second+closeWait), "without progress")
	b.progress(at(8 * time.Second))
	check("and another at 8 s", b, at(8*time.Second+closeWait), "without progress")

	b = newCloseBound(start, at(-time.Second))
	check("a deadline passed before Close", b, at(closeWait), "without progress")
	b = newCloseBound(start, start)
	check("a deadline passed as Close began", b, at(closeWait), "without progress")

	b = newCloseBound(start, at(300*time.Millisecond))
	check("a deadline 300 ms on", b, at(300*time.Millisecond), "by the write deadline")
	b = newCloseBound(start, at(7*time.Second))
	check("a deadline 7 s on", b, at(closeWait), "without progress")
	b.progress(at(4 * time.Second))
	check("a deadline 7 s on, a send completed at 4 s", b, at(7*time.Second), "by the write deadline")
}
