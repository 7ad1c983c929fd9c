//go:build linux && cgo

package bench

import (
	"math"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestPeakPrecise: a sending loop's peak keeps its window's time and
// count from the loop through the peer's Result to the reported figure,
// so that a time per message of 20.3 ns reads as such on both sides.
// Whole nanoseconds a message made it 20 ns: a peak 1.5% high, 4.5% at
// 20.9 ns and 11% at 6.67 ns.
func TestPeakPrecise(t *testing.T) {
	const (
		size  = 64
		polls = 60
		batch = 100 // messages a poll finds
	)
	start := time.Unix(1000, 0)
	m := newPeakMeter(start, 128) // windows of 200 messages: two polls
	now := start
	for j := 1; j <= polls; j++ {
		per := 20.9 // ns a message
		if j > 20 && j <= 24 {
			per = 20.3 // two windows at a higher rate
		}
		now = now.Add(time.Duration(math.Round(batch * per)))
		m.observe(now, uint64(j*batch))
	}
	if want := (stats.Window{Messages: 2 * batch, Elapsed: 2 * batch * 20.3}); m.best != want {
		t.Fatalf("peak window %+v, want %+v", m.best, want)
	}
	mine := sideResult{Iters: polls * batch, Bytes: polls * batch * size, Elapsed: now.Sub(start), Peak: m.best}

	// The peer's figures come in its Result, over the wire.
	frame, err := exchange.AppendFrame(nil, exchange.Result{Iterations: mine.Iters, Bytes: mine.Bytes, Elapsed: mine.Elapsed,
		PeakMessages: mine.Peak.Messages, PeakElapsed: mine.Peak.Elapsed})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := exchange.DecodeFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	peer := msg.(exchange.Result)

	s := &session{spec: exchange.TestSpec{Test: exchange.WriteBW, Size: size}}
	want := size / 20.3e-9 / stats.BytesPerMB
	for _, tc := range []struct {
		name string
		r    SizeResult
	}{
		{"this side", s.sizeResult(size, mine, exchange.Result{}, true)},
		{"the passive side, from the Result", s.sizeResult(size, sideResult{}, peer, false)},
	} {
		if got := tc.r.BW.PeakMBps; got/want-1 > 1e-12 || got/want-1 < -1e-12 {
			t.Errorf("%s: peak %v MB/s, want %v (%+.2g)", tc.name, got, want, got/want-1)
		}
		if tc.r.BW.AvgMBps >= tc.r.BW.PeakMBps {
			t.Errorf("%s: average %v MB/s, not below the peak %v", tc.name, tc.r.BW.AvgMBps, tc.r.BW.PeakMBps)
		}
	}
}

// TestPeakInSpan: with a margin (-D -f), the peak is that of the span the
// counts cover, not a faster window in a margin they leave out; a run
// that ends before the span's far edge reports the whole run, its peak
// too. Polls come every 100 ms with 100 messages each (the window), but
// three: one 10 ms after the last in the first margin, 5 ms after it in
// the last, and 80 ms after it in the span, its fastest window.
func TestPeakInSpan(t *testing.T) {
	start := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	moved := map[time.Duration]time.Duration{ms(1100): ms(1010), ms(9100): ms(9005), ms(5100): ms(5080)}
	run := func(until time.Duration) (stats.Window, stats.Window) {
		w := newSpan(start, 10*time.Second, 2*time.Second, false)
		p := newPeaks(start, 100)
		var total uint64
		for at := ms(100); at <= until; at += ms(100) {
			poll := at
			if m, ok := moved[at]; ok {
				poll = m
			}
			total += 100
			p.observe(start.Add(poll), total, &w)
		}
		return p.best(&w), p.whole.best
	}
	best, whole := run(10 * time.Second)
	if want := (stats.Window{Messages: 100, Elapsed: ms(80)}); best != want {
		t.Errorf("the span's peak %+v, want %+v", best, want)
	}
	if want := (stats.Window{Messages: 100, Elapsed: ms(5)}); whole != want {
		t.Errorf("the whole run's peak %+v, want %+v", whole, want)
	}
	if best, _ := run(6 * time.Second); best != (stats.Window{Messages: 100, Elapsed: ms(10)}) {
		t.Errorf("a run that ended in the span: peak %+v, want the whole run's, 100 messages in 10ms", best)
	}
}
