//go:build linux && cgo

package bench

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sampleStore holds a latency loop's samples, in ns. Adding one neither
// allocates nor copies: with a count of iterations the store is a slice
// of that many, made before the loop; with a duration, whose count is not
// known, it is an address range reserved before the loop for more samples
// than any device takes in that time (mmap with MAP_NORESERVE), which the
// kernel backs with pages only as they are needed: the first chunk before
// the loop, each next one by another goroutine while the samples fill
// the one before. A slice grown by append instead copied every sample so
// far at each doubling, tens of MB in a long run, inside the sample that
// happened to grow it, and left the old arrays to the collector; pages
// faulted in by the samples themselves would each lengthen one.
type sampleStore struct {
	v   []float64 // the samples; its capacity is the room
	mem []byte    // the reserved range that v lies in, or nil
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
	// maxSampleRange bounds the range reserved: at the rate above it
	// lasts almost four hours, at a real device's rate days. A run that
	// outlasts it goes on in a slice that grows.
	maxSampleRange = 1 << 40
	// sampleChunk is the samples of the range backed at a time: a
	// second's at 500,000 a second, 4 MiB.
	sampleChunk = 1 << 19
)

// newSampleStore returns the store for iters samples, or with a duration
// for the samples of dur.
func newSampleStore(iters uint64, dur time.Duration) *sampleStore {
	if dur <= 0 {
		return &sampleStore{v: make([]float64, 0, iters)}
	}
	n := uint64((dur + time.Second).Seconds() * maxSampleRate)
	return reserveSamples(int(min(n, maxSampleRange/8)))
}

// reserveSamples returns a store in a reserved range of room for n
// samples.
func reserveSamples(n int) *sampleStore {
	mem, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		// No room for the range (a strict overcommit policy, a limit on
		// the address space): a slice that grows as the samples come.
		return &sampleStore{v: make([]float64, 0, 1<<16)}
	}
	v := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/8)
	st := &sampleStore{v: v[:0], mem: mem}
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
	if from == to {
		return nil
	}
	return unix.Madvise(mem[from:to], unix.MADV_POPULATE_WRITE)
}

// add appends a sample.
func (st *sampleStore) add(x float64) {
	n := len(st.v)
	if n == st.next && st.ahead != nil {
		st.backNext()
	}
	if n == cap(st.v) {
		st.grow()
	}
	st.v = st.v[:n+1]
	st.v[n] = x
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

// grow moves the samples to a slice on the heap of twice the room: a run
// that outlasted its reserved range, or one without.
func (st *sampleStore) grow() {
	v := make([]float64, len(st.v), max(2*cap(st.v), 1<<16))
	copy(v, st.v)
	st.free()
	st.v = v
}

// take returns the samples, on the heap, and empties the store.
func (st *sampleStore) take() []float64 {
	v := st.v
	if st.mem != nil {
		v = append([]float64(nil), v...) // nil if none: nothing points into the range
	}
	st.free()
	return v
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
