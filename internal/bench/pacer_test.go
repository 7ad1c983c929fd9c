//go:build linux && cgo

package bench

import (
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
