//go:build linux && cgo

package bench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/internal/stats"
)

// sampleStore holds a latency loop's samples, in ns, in bounded memory.
// Adding one neither allocates nor copies, except as said below: with a
// count of iterations that fits, the store is a slice of that many, made
// before the loop; otherwise (a duration, whose count is not known, or
// more iterations than fit) it is an address range reserved before the
// loop for as many samples as it may keep (mmap with MAP_NORESERVE),
// which the kernel backs with pages only as they are needed: the first
// chunk before the loop, each next one by another goroutine while the
// samples fill the one before. A slice grown by append instead copied
// every sample so far at each doubling, inside the sample that happened
// to grow it; pages faulted in by the samples themselves would each
// lengthen one.
//
// The store keeps at most room samples (sampleRoom: 512 MiB of them at
// most, less where memory is short). A run that takes more is decimated
// rather than run out of memory: once the store is full it keeps every
// second sample it holds (moved together in place) and from then on
// only every second sample that comes, and when it is full again every
// fourth, and so on: one in every, evenly spread over the whole run.
// The percentiles are then those of the samples kept, while tally keeps
// the count, the extremes and the mean of all of them exactly
// (stats.SummarizeKept). A decimation moves room/2 samples inside the
// loop, 26 ms for a full store of 2^26 on the CI host (the first one also
// tallies the samples so far: 250 ms), but happens only log2(samples /
// room) times in a run, and the loops keep its time out of the samples (add's
// result). Until then an add costs what it did before there was a
// tally: a run that fits pays nothing for the bound.
type sampleStore struct {
	v     []float64   // the samples kept; its capacity is the room at hand
	room  int         // the most samples v may hold, even: then it is decimated
	every int         // one sample in every is kept
	skip  int         // the samples to pass over before the next one kept
	drop  bool        // dropNext: the next sample is left out
	tally stats.Tally // of every sample, once every is over 1 (decimate)
	mem   []byte      // the reserved range that v lies in, or nil
	// With a range: when len(v) reaches next, a goroutine is asked
	// (ahead) to back the range's next chunk, half a chunk before the
	// samples reach it, so that its pages are not faulted in one by one
	// inside the samples; backer is closed once it has returned.
	next   int
	ahead  chan int // the end, in samples, of the part to back
	backer chan struct{}
}

const (
	// maxSampleRate bounds the samples a second a latency loop takes: one
	// every 100 ns, a tenth of the fastest round trip of any device.
	maxSampleRate = 10_000_000
	// sampleChunk is the samples of the range backed at a time: a
	// second's at 500,000 a second, 4 MiB.
	sampleChunk = 1 << 19
	// minSampleRoom is the room a store gets however short memory is:
	// 512 KiB of samples, still enough for a 99.99th percentile.
	minSampleRoom = 1 << 16
	// sampleMemShare is the part of the memory available that a store
	// may take: 1/8. Its samples are copied to the heap once the loop is
	// done (take), and stats.Summarize sorts a copy of those, so a run
	// needs three times the store for a moment, and -U or -H another
	// copy or two: well under the memory available.
	sampleMemShare = 8
)

// maxSampleRoom bounds the samples a store keeps: 2^26, 512 MiB, some two
// minutes of samples at a 2 µs round trip. It is enough for every
// percentile reported, and a decimation of a full store, inside the loop,
// takes tens of milliseconds. A variable, for the tests.
var maxSampleRoom = 1 << 26

// newSampleStore returns the store for iters samples, or with a duration
// for the samples of dur, keeping at most most of them where most is
// over 0 (a server's Limits.MaxIterations: see Local.maxSamples).
func newSampleStore(iters uint64, dur time.Duration, most int) *sampleStore {
	room := sampleRoom()
	if most > 0 {
		room = max(min(room, most), 2) &^ 1
	}
	if dur <= 0 && iters <= uint64(room) {
		return &sampleStore{v: make([]float64, 0, iters), room: (max(int(iters), 2) + 1) &^ 1, every: 1}
	}
	n := iters
	if dur > 0 {
		n = uint64((dur + time.Second).Seconds() * maxSampleRate)
	}
	return reserveSamples(int(min(n, uint64(room))))
}

// sampleRoom is the most samples a store may keep now: maxSampleRoom, or
// fewer where a share of the memory available (sampleMemShare) holds
// fewer, but at least minSampleRoom (or maxSampleRoom, if that is less);
// an even number.
func sampleRoom() int {
	n := maxSampleRoom
	if avail, ok := memAvailable(); ok {
		n = min(n, int(min(avail/8/sampleMemShare, 1<<40)))
	}
	return max(n, min(minSampleRoom, maxSampleRoom), 2) &^ 1
}

// memAvailable returns the bytes of memory the process may still take
// without swapping or meeting its limit: the kernel's estimate of what is
// available (MemAvailable in /proc/meminfo), or less where the process's
// memory cgroup has a limit that leaves less. ok is false where neither
// could be read.
func memAvailable() (n uint64, ok bool) {
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "MemAvailable:" && f[2] == "kB" {
				if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					n, ok = kb<<10, true
				}
			}
		}
	}
	if left, lok := cgroupMemLeft(); lok && (!ok || left < n) {
		n, ok = left, true
	}
	return n, ok
}

// cgroupMemLeft returns what the memory limit of the process's own cgroup
// leaves, its limit less its usage (cgroup v2's memory.max and
// memory.current, or v1's memory.limit_in_bytes and
// memory.usage_in_bytes), where it has a limit that can be read. An
// ancestor's limit is not looked at.
func cgroupMemLeft() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	read := func(path string) (uint64, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil // "max" (no limit) does not parse
	}
	for _, line := range strings.Split(string(b), "\n") {
		id, rest, _ := strings.Cut(line, ":")
		ctrl, path, _ := strings.Cut(rest, ":")
		var limit, used uint64
		var lok, uok bool
		switch {
		case id == "0" && ctrl == "":
			dir := "/sys/fs/cgroup" + path
			limit, lok = read(dir + "/memory.max")
			used, uok = read(dir + "/memory.current")
		case ctrl == "memory" || strings.Contains(","+ctrl+",", ",memory,"):
			dir := "/sys/fs/cgroup/memory" + path
			limit, lok = read(dir + "/memory.limit_in_bytes")
			used, uok = read(dir + "/memory.usage_in_bytes")
		default:
			continue
		}
		// v1 gives no limit as the largest page-aligned int64.
		if lok && uok && limit < 1<<62 {
			return limit - min(used, limit), true
		}
	}
	return 0, false
}

// reserveSamples returns a store in a reserved range of room for n
// samples (an even number, at least 2), which it keeps at most.
func reserveSamples(n int) *sampleStore {
	n = max(n, 2) &^ 1
	mem, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		// No room for the range (a strict overcommit policy, a limit on
		// the address space): a slice that grows as the samples come,
		// up to n.
		return &sampleStore{v: make([]float64, 0, min(n, 1<<16)), room: n, every: 1}
	}
	v := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/8)
	st := &sampleStore{v: v[:0], room: n, every: 1, mem: mem}
	// The first chunk now; the kernel backs a range on request from
	// Linux 5.14 (MADV_POPULATE_WRITE), before that the samples fault
	// their pages in.
	if back(mem, 0, sampleChunk) != nil {
		return st
	}
	st.next = sampleChunk / 2
	st.ahead, st.backer = make(chan int, 1), make(chan struct{})
	go func() {
		defer close(st.backer)
		from := sampleChunk
		for to := range st.ahead {
			if back(mem, from, to) != nil {
				return
			}
			from = to
		}
	}()
	return st
}

// back asks the kernel to back samples from to to of the range mem.
func back(mem []byte, from, to int) error {
	from, to = min(from*8, len(mem)), min(to*8, len(mem))
	if from >= to {
		return nil
	}
	return unix.Madvise(mem[from:to], unix.MADV_POPULATE_WRITE)
}

// add adds a sample, and reports whether that took long: the store
// decimated its samples, or grew its slice. The loop should then keep
// the time out of its samples, as it does a yield's, or, where the time
// is already in the next sample, leave that one out (dropNext).
func (st *sampleStore) add(x float64) (slow bool) {
	if st.drop {
		st.drop = false
		return false
	}
	if st.every > 1 {
		st.tally.Add(x)
		if st.skip > 0 {
			st.skip--
			return false
		}
	}
	n := len(st.v)
	if n == st.next && st.ahead != nil {
		st.backNext()
	}
	if n == cap(st.v) {
		if n < st.room {
			st.grow()
		} else {
			st.decimate(x)
			n = len(st.v)
		}
		slow = true
	}
	st.v = st.v[:n+1]
	st.v[n] = x
	st.skip = st.every - 1
	return slow
}

// dropNext leaves the next sample out: one that holds the time an add
// took (see add).
func (st *sampleStore) dropNext() { st.drop = true }

// decimate keeps every second sample of a full store, the first among
// them, and doubles every: the samples kept so far and those to come
// are then one in every, evenly spaced, and half the room is free. x is
// the sample being added. The first time, the tally, which a store that
// keeps every sample has no need of, is taken of the samples so far and
// x: a run that is never decimated spends nothing on it.
func (st *sampleStore) decimate(x float64) {
	v := st.v
	if st.every == 1 {
		for _, y := range v {
			st.tally.Add(y)
		}
		st.tally.Add(x)
	}
	h := len(v) / 2
	for i := 1; i < h; i++ {
		v[i] = v[2*i]
	}
	st.v = v[:h]
	st.every *= 2
}

// backNext asks the backing goroutine for the chunk after the one the
// samples are in, and sets when to ask for the next. A request the
// goroutine has not taken yet (it is slow, or has given up) is replaced:
// the new one covers it. Neither blocks nor allocates.
func (st *sampleStore) backNext() {
	end := st.next + sampleChunk + sampleChunk/2 // the next chunk's end
	st.next += sampleChunk
	select {
	case <-st.ahead:
	default:
	}
	st.ahead <- end
}

// grow moves the samples of a store without a reserved range to a slice
// of twice the room, or room.
func (st *sampleStore) grow() {
	v := make([]float64, len(st.v), min(2*cap(st.v), st.room))
	copy(v, st.v)
	st.v = v
}

// keptSamples is what a latency loop's store kept: the samples, on the
// heap, one in every of the run's (every is 1 for all of them), and the
// exact tally of all of them.
type keptSamples struct {
	v     []float64
	every int
	tally stats.Tally
}

// take returns the samples, on the heap, and empties the store.
func (st *sampleStore) take() keptSamples {
	k := keptSamples{v: st.v, every: st.every, tally: st.tally}
	if st.mem != nil {
		k.v = append([]float64(nil), k.v...) // nil if none: nothing points into the range
	}
	st.free()
	return k
}

// summarize is the latency that kept samples give (stats.SummarizeKept).
func (k keptSamples) summarize() (stats.Latency, error) {
	return stats.SummarizeKept(k.v, k.every, k.tally)
}

// free releases the reserved range, if any, and empties the store.
func (st *sampleStore) free() {
	if st.ahead != nil {
		close(st.ahead)
		<-st.backer
		st.ahead = nil
	}
	if st.mem != nil {
		_ = unix.Munmap(st.mem) // cannot fail for a range Mmap made
		st.mem = nil
	}
	st.v = nil
}
