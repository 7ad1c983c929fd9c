//go:build linux && cgo

package bench

import (
	"runtime"
	"testing"
	"time"
)

func TestPacerFitsTheLoop(t *testing.T) {
	var p pacer
	// A tight loop: the stride grows, so most calls do not read the clock.
	calls, due := 0, 0
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; calls++ {
		if _, ok := p.due(); ok {
			due++
		}
	}
	if p.stride < 16 || due*16 > calls {
		t.Errorf("tight loop: stride %d, %d of %d calls due", p.stride, due, calls)
	}
	// A slow loop, each call well past the period: the stride halves at
	// each reading (maxStride calls to get down to 1) and then every call
	// is due.
	late := 0
	for i := range 2*maxStride + 10 {
		time.Sleep(3 * pacerPeriod)
		if _, ok := p.due(); !ok && i >= 2*maxStride {
			late++
		}
	}
	if p.stride != 1 || late > 0 {
		t.Errorf("slow loop: stride %d, %d of the last 10 calls not due", p.stride, late)
	}
}

func TestPacerYields(t *testing.T) {
	var p pacer
	now := time.Now()
	p.yield(now)
	if !p.yielded.Equal(now) {
		t.Fatal("the first yield did not happen")
	}
	p.yield(now.Add(yieldPeriod / 2))
	if !p.yielded.Equal(now) {
		t.Error("yielded again within the period")
	}
	p.yield(now.Add(yieldPeriod))
	if !p.yielded.Equal(now.Add(yieldPeriod)) {
		t.Error("did not yield after the period")
	}
}

func TestPacerYieldsBeforeASlowLoopPassesThePeriod(t *testing.T) {
	p := pacer{stride: 1}
	t0 := time.Now()
	p.last, p.yielded = t0, t0
	// Readings 40% of the period apart: the second is at 80%, and the
	// third would be at 120%, so the second yields.
	step := yieldPeriod * 4 / 10
	if p.yieldWithin(t0.Add(step), step) {
		t.Fatal("yielded at 40% of the period")
	}
	if !p.yieldWithin(t0.Add(2*step), step) {
		t.Fatal("did not yield at 80% of the period with the next reading at 120%")
	}
	never := pacer{period: -1}
	if never.yield(t0.Add(time.Hour)) {
		t.Error("a pacer with a negative period yielded")
	}
}

var loopSink uint64

// BenchmarkPacedLoop measures what the pacer's yields cost a busy loop
// locked to its thread, as the measuring loops are: an iteration of about
// 40 ns of work and a due check, with a yield every millisecond, every
// yieldPeriod, or never. The difference between the rates is the time
// the loop spends handing its P off and getting it back.
func BenchmarkPacedLoop(b *testing.B) {
	for _, c := range []struct {
		name   string
		period time.Duration
	}{{"1ms", time.Millisecond}, {"yieldPeriod", 0}, {"never", -1}} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p := pacer{period: c.period}
			yields := 0
			x := loopSink
			for b.Loop() {
				for range 30 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				if _, ok := p.due(); ok && p.yielded == p.last {
					yields++
				}
			}
			loopSink = x
			b.ReportMetric(float64(yields)/b.Elapsed().Seconds(), "yields/s")
			b.ReportAllocs()
		})
	}
}

// TestPacerDueAfterASleep: a loop whose stride grew while messages
// flowed, and which then sleeps at each call (-e with nothing coming),
// runs its periodic work at the first call after a sleep (slept), where
// it came only after the stride's calls: maxStride sleeps of eventSlice,
// 2.5 s late for its deadline, its idle timeout or Ctrl-C.
func TestPacerDueAfterASleep(t *testing.T) {
	p := grownPacer(t)
	// Without slept, what the loops did: the work comes after the
	// stride's calls (here without sleeping them).
	if calls := callsToDue(p, 0); calls < maxStride-1 {
		t.Fatalf("without slept, due after %d calls, want about %d", calls, maxStride)
	}
	// With it, each call after a sleep is due, and the stride shrinks to
	// the sleeps' pace.
	for i := range 12 {
		time.Sleep(time.Millisecond)
		p.slept()
		if _, ok := p.due(); !ok {
			t.Fatalf("call %d after a sleep not due (stride %d)", i, p.stride)
		}
	}
	if p.stride > 1 {
		t.Errorf("stride %d after 12 sleeps of 1 ms, want 1", p.stride)
	}
}

// TestPacerDueAtTheLoopsReading: a loop whose stride grew while its
// iterations were quick, and whose iterations then take milliseconds
// (posting lists of messages on soft-RoCE under emulation), runs its work
// at the first iteration that read the clock a period after the last
// reading (dueAt), and its stride shrinks to fit; with due alone it came
// after maxStride of them, 256 ms here, seconds in a loaded VM.
func TestPacerDueAtTheLoopsReading(t *testing.T) {
	p := grownPacer(t)
	if calls := callsToDue(p, time.Millisecond); calls < maxStride-1 {
		t.Fatalf("due alone: due after %d slow calls, want about %d", calls, maxStride)
	}
	for i := range 12 {
		time.Sleep(time.Millisecond)
		now := time.Now()
		got, ok := p.dueAt(now)
		if !ok || !got.Equal(now) {
			t.Fatalf("slow call %d, with the loop's reading: due %v at %v, want due at the reading (stride %d)", i, ok, got, p.stride)
		}
	}
	if p.stride > 2 {
		t.Errorf("after 12 calls of 1 ms, each due, the stride is %d, want 1 or 2", p.stride)
	}
	// A reading less than a period after the last is not due early.
	p.stride, p.n = maxStride, 0
	if _, ok := p.dueAt(p.last.Add(pacerPeriod / 2)); ok {
		t.Errorf("due at a reading half a period after the last, with the stride's calls not made")
	}
}

// grownPacer is a pacer whose stride a tight loop grew to maxStride, its
// last reading now. It is set so, not grown: growing past 128 takes 128
// calls within half a period (0.4 µs a call), which a race-instrumented
// binary under emulation does not make (TestPacerFitsTheLoop checks the
// growth).
func grownPacer(t *testing.T) pacer {
	t.Helper()
	return pacer{stride: maxStride, last: time.Now()}
}

// callsToDue counts the calls of due, each after a sleep of d, until one
// is due, on a copy of p; at most 2*maxStride.
func callsToDue(p pacer, d time.Duration) int {
	calls := 1
	for ; calls <= 2*maxStride; calls++ {
		time.Sleep(d)
		if _, ok := p.due(); ok {
			break
		}
	}
	return calls
}
