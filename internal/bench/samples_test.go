//go:build linux && cgo

package bench

import (
	"testing"
	"time"
)

// TestSampleStoreForADuration adds the samples of a long latency run with
// a duration, far more than the 65,536 a growing slice started with:
// no add allocates, and the samples never move (a slice grown by append
// copied all of them at each doubling, inside the loop). take returns
// them all, in order, on the heap.
func TestSampleStoreForADuration(t *testing.T) {
	st := newSampleStore(0, time.Second)
	defer st.free()
	if st.mem == nil {
		t.Skip("no address range could be reserved here (strict overcommit?): the store grows a slice")
	}
	st.add(0)
	first := &st.v[0]
	const n = 2 << 20
	var added float64 = 1
	// AllocsPerRun counts the process's allocations: a goroutine another
	// test left behind may allocate during one run. A store that
	// allocates does so in every run; three runs (6 M samples) fit in the
	// room reserved.
	var allocs float64
	for range 3 {
		allocs = testing.AllocsPerRun(1, func() {
			for range n {
				st.add(added)
				added++
			}
		})
		if allocs == 0 {
			break
		}
	}
	if allocs != 0 {
		t.Errorf("%v allocations for %d samples, in each of three runs", allocs, n)
	}
	if &st.v[0] != first || len(st.v) != int(added) {
		t.Errorf("the samples moved, or %d of %v are there", len(st.v), added)
	}
	got := st.take()
	if len(got) != int(added) || st.mem != nil || st.v != nil {
		t.Fatalf("take: %d samples of %v; the store still holds %d", len(got), added, len(st.v))
	}
	for i, v := range got {
		if v != float64(i) {
			t.Fatalf("sample %d is %v", i, v)
		}
	}
}

// TestSampleStoreGrows fills a store's room: the samples move to a slice
// on the heap, twice the size, and none is lost. Iterations get a slice
// of their count up front.
func TestSampleStoreGrows(t *testing.T) {
	const room = 1 << 16
	st := reserveSamples(room)
	defer st.free()
	for i := range room + 1 {
		st.add(float64(i))
	}
	if st.mem != nil || cap(st.v) != 2*room || len(st.v) != room+1 || st.v[room-1] != room-1 || st.v[room] != room {
		t.Errorf("after filling the room of %d: %d samples in %d, mapped %v", room, len(st.v), cap(st.v), st.mem != nil)
	}
	st.free()

	it := newSampleStore(1000, 0)
	if it.mem != nil || cap(it.v) != 1000 {
		t.Errorf("a store for 1,000 iterations has room for %d, mapped %v", cap(it.v), it.mem != nil)
	}
	for i := range 1000 {
		it.add(float64(i))
	}
	if got := it.take(); len(got) != 1000 || got[999] != 999 {
		t.Errorf("take: %d samples", len(got))
	}
}
