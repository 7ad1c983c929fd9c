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
	st := newSampleStore(0, time.Second, 0)
	defer st.free()
	if st.mem == nil {
		t.Skip("no address range could be reserved here (strict overcommit?): the store grows a slice")
	}
	const n = 2 << 20
	if st.room < 3*n+1 {
		t.Skipf("room for %d samples here (memory is short): they would be decimated", st.room)
	}
	st.add(0)
	first := &st.v[0]
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
	if len(got.v) != int(added) || got.every != 1 || st.mem != nil || st.v != nil {
		t.Fatalf("take: %d samples of %v, 1 in %d kept; the store still holds %d", len(got.v), added, got.every, len(st.v))
	}
	for i, v := range got.v {
		if v != float64(i) {
			t.Fatalf("sample %d is %v", i, v)
		}
	}
}

// TestSampleStoreBounded fills a store of room for 65,536 samples with
// sixteen times as many: it keeps them in that room, not a slice that
// grows (which reached 2 TiB in a day-long run and was a fatal
// out-of-memory), one in sixteen, evenly spaced from the first. A store
// for a day's samples reserves no more than its bounded room either (the
// old one reserved 1 TiB of address space). This test uses only what the
// store had before it was bounded; there it failed.
func TestSampleStoreBounded(t *testing.T) {
	const room = 1 << 16
	st := reserveSamples(room)
	defer st.free()
	for i := range 16 * room {
		st.add(float64(i))
	}
	if cap(st.v) != room || len(st.v) != room {
		t.Fatalf("after %d samples in a room of %d: %d kept in a slice of %d", 16*room, room, len(st.v), cap(st.v))
	}
	for i, v := range st.v {
		if v != float64(16*i) {
			t.Fatalf("kept sample %d is %v, want %d", i, v, 16*i)
		}
	}
	st.free()

	day := newSampleStore(0, 24*time.Hour, 0)
	defer day.free()
	if len(day.mem) > 1<<30 || cap(day.v) > 1<<27 {
		t.Errorf("a store for a day's samples reserved %d bytes, room for %d samples", len(day.mem), cap(day.v))
	}
}

// withRoom sets maxSampleRoom to n for the test.
func withRoom(t *testing.T, n int) {
	old := maxSampleRoom
	maxSampleRoom = n
	t.Cleanup(func() { maxSampleRoom = old })
}

// TestSampleStoreDecimates keeps a run far longer than a tiny room:
// each time the store is full it halves what it holds, so the samples
// kept are always one in a power of two, evenly spaced from the first,
// between half the room and the room, and from the first decimation on
// the tally of all of them is exact (count, smallest, largest). Adding, decimations included, does
// not allocate. A store for a huge duration (far past the range the old
// store capped, after which it asked for a slice of 2 TiB) and one for
// more iterations than the room are both bounded by it.
func TestSampleStoreDecimates(t *testing.T) {
	const room = 1 << 10
	withRoom(t, room)
	for _, st := range []*sampleStore{newSampleStore(0, 1000*time.Hour, 0), newSampleStore(1<<40, 0, 0)} {
		if st.room != room || cap(st.v) > room || len(st.mem) > room*8 {
			t.Errorf("a store for 1,000 hours or 2^40 iterations: room %d, a slice of %d, %d bytes reserved", st.room, cap(st.v), len(st.mem))
		}
		st.free()
	}
	// A server's limit keeps a store smaller still.
	if st := newSampleStore(0, 1000*time.Hour, room/4+1); st.room != room/4 || len(st.mem) > room/4*8 {
		t.Errorf("a store of at most %d samples: room %d, %d bytes reserved", room/4+1, st.room, len(st.mem))
	} else {
		st.free()
	}

	st := newSampleStore(0, 1000*time.Hour, 0)
	defer st.free()
	var added int // samples 0, 1, 2, ...: a sample is its index
	add := func(n int) {
		for range n {
			st.add(float64(added))
			added++
		}
	}
	check := func(when string) {
		t.Helper()
		every := 1
		for (added+every-1)/every > room {
			every *= 2
		}
		want := (added + every - 1) / every // the indices below added that every divides
		if st.every != every || len(st.v) != want || cap(st.v) != room {
			t.Fatalf("%s (%d samples): %d kept of 1 in %d in a slice of %d; want %d of 1 in %d", when, added, len(st.v), st.every, cap(st.v), want, every)
		}
		for i, v := range st.v {
			if v != float64(i*every) {
				t.Fatalf("%s: kept sample %d is %v, want %d", when, i, v, i*every)
			}
		}
		// The tally is taken from the first decimation on.
		if tl := st.tally; every > 1 && (tl.N != added || tl.Min != 0 || tl.Max != float64(added-1) || tl.Max2 != float64(added-2)) {
			t.Fatalf("%s: tally of %d, min %v, max %v, %v; want %d, 0, %d, %d", when, tl.N, tl.Min, tl.Max, tl.Max2, added, added-1, added-2)
		}
	}
	add(room)
	check("full")
	add(1)
	check("one more")
	// Best of three, as TestSampleStoreForADuration: 1,000 samples a
	// run, past five decimations in all.
	var allocs float64
	for range 3 {
		allocs = testing.AllocsPerRun(10, func() { add(1000) })
		if allocs == 0 {
			break
		}
	}
	if allocs != 0 {
		t.Errorf("%v allocations for 1,000 samples, decimations among them, in each of three runs", allocs)
	}
	check("after the allocation runs")
	add(1_000_003 - added)
	check("a million and three")

	// What the run reports: the order figures of the samples kept, the
	// rest exact; perftest's mean of 0 .. n-3 is (n-3)/2.
	got := st.take()
	l, err := got.summarize()
	if err != nil {
		t.Fatal(err)
	}
	n := float64(added)
	if l.N != added || l.Min != 0 || l.Max != n-1 || l.TMax != n-2 || l.Avg != (n-3)/2 || l.Every != got.every || l.Stored != len(got.v) {
		t.Errorf("summary of %d samples, 1 in %d kept: %+v", added, got.every, l)
	}
	if d := l.P50 - n/2; d < -float64(got.every) || d > float64(got.every) {
		t.Errorf("median %v of 0 .. %v", l.P50, n-1)
	}
}

// TestSampleStoreDropsNext: after a decimation add says so, and the
// sample that dropNext leaves out is in neither the tally nor the store.
func TestSampleStoreDropsNext(t *testing.T) {
	withRoom(t, 4)
	st := newSampleStore(0, time.Hour, 0)
	defer st.free()
	var slow []int
	for i := range 5 {
		if st.add(float64(i)) {
			slow = append(slow, i)
		}
	}
	if len(slow) != 1 || slow[0] != 4 {
		t.Fatalf("adds that said they took long: %v, want [4] (the decimation)", slow)
	}
	st.dropNext()
	st.add(1000) // left out
	st.add(5)    // one in two is kept: not this one
	st.add(6)
	if st.tally.N != 7 || st.tally.Max != 6 || len(st.v) != 4 || st.v[3] != 6 {
		t.Errorf("after a dropped sample: tally of %d, max %v; kept %v", st.tally.N, st.tally.Max, st.v)
	}
}

// TestSampleStoreGrows: a store without a reserved range (mmap failed)
// grows its slice up to its room, not beyond, and then decimates;
// iterations that fit get a slice of their count up front.
func TestSampleStoreGrows(t *testing.T) {
	st := &sampleStore{v: make([]float64, 0, 4), room: 16, every: 1}
	for i := range 33 {
		st.add(float64(i))
	}
	if cap(st.v) != 16 || st.every != 4 || len(st.v) != 9 || st.v[8] != 32 {
		t.Errorf("after 33 samples in a room of 16: %d kept of 1 in %d in %d", len(st.v), st.every, cap(st.v))
	}

	it := newSampleStore(1000, 0, 0)
	if it.mem != nil || cap(it.v) != 1000 {
		t.Errorf("a store for 1,000 iterations has room for %d, mapped %v", cap(it.v), it.mem != nil)
	}
	for i := range 1000 {
		it.add(float64(i))
	}
	if got := it.take(); len(got.v) != 1000 || got.v[999] != 999 || got.every != 1 {
		t.Errorf("take: %d samples, 1 in %d", len(got.v), got.every)
	}
}

// TestSampleRoom: the room a store gets is even, at most maxSampleRoom,
// and no more than the share of the memory available that it may take
// (unless that is under the least room).
func TestSampleRoom(t *testing.T) {
	n := sampleRoom()
	if n%2 != 0 || n > maxSampleRoom || n < minSampleRoom {
		t.Errorf("room %d", n)
	}
	if avail, ok := memAvailable(); !ok {
		t.Log("no memory available could be read here")
	} else if uint64(n)*8*sampleMemShare > avail && n > minSampleRoom {
		t.Errorf("room %d for %d bytes available", n, avail)
	}
	withRoom(t, 6)
	if n := sampleRoom(); n != 6 {
		t.Errorf("room %d of at most 6", n)
	}
}

// SetMaxSampleRoom bounds the samples a latency loop's store keeps by n
// (at least 2), until the returned function restores the default: for
// the device tests of package bench_test.
func SetMaxSampleRoom(n int) (restore func()) {
	old := maxSampleRoom
	maxSampleRoom = n
	return func() { maxSampleRoom = old }
}
