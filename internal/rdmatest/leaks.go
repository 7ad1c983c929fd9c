//go:build linux && cgo

package rdmatest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// Usage is what a leak check compares before and after: this process's
// open file descriptors, its memory, and the kernel's count of RDMA objects
// (`rdma resource show`: PDs, CQs, QPs, MRs per device).
//
// GoHeap and CHeap count live bytes exactly, so a leak check can hold them
// to a tight bound (CHeap only with glibc's per-thread caches off, whose
// chunks mallinfo2 counts as in use: ci/device-tests.sh turns them off);
// RSS also counts what allocators keep for reuse, thread
// stacks and page cache, which grow to a plateau at their own pace.
type Usage struct {
	FDs     int
	GoHeap  uint64 // bytes in live Go heap objects, after a GC
	CHeap   uint64 // bytes malloc has handed out and not had back (mallinfo2)
	RSSKiB  int    // VmRSS: all resident memory
	AnonKiB int    // RssAnon: resident memory not backed by a file
	RDMA    string // "" where the rdma tool is missing
}

// Measure takes a Usage, after a GC that returns freed heap to the OS so
// that RSS reflects live memory.
func Measure(t testing.TB) Usage {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	u := Usage{FDs: len(ents), GoHeap: ms.HeapAlloc, CHeap: cHeapInUse()}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			u.RSSKiB, _ = strconv.Atoi(f[1])
		case "RssAnon:":
			u.AnonKiB, _ = strconv.Atoi(f[1])
		}
	}
	if out, err := exec.Command("rdma", "resource", "show").Output(); err == nil {
		u.RDMA = string(out)
	}
	return u
}

// CheckGrowth fails t if memory grew from a to b, across n iterations of
// what the test repeats (named in the message, e.g. "cycles"), by more than
// a leak-free process grows once warm: 64 KiB of Go heap or of C heap, 8 MiB
// of anonymous RSS. Over 500 iterations, 64 KiB is 128 bytes each, less
// than any object a verb allocates; the exact heap counts, seen to vary by
// under 12 KiB, make that bound safe. RSS, which also counts what the
// allocators keep for reuse, was seen to grow by up to 2 MiB with no leak.
func CheckGrowth(t testing.TB, a, b Usage, n int, what string) {
	t.Helper()
	if b.GoHeap > a.GoHeap+heapSlack {
		t.Errorf("the live Go heap grew by %d bytes over %d %s", b.GoHeap-a.GoHeap, n, what)
	}
	if b.CHeap > a.CHeap+heapSlack {
		t.Errorf("the C heap in use grew by %d bytes over %d %s", b.CHeap-a.CHeap, n, what)
	}
	if b.AnonKiB > a.AnonKiB+rssSlackKiB {
		t.Errorf("anonymous RSS grew by %d KiB over %d %s", b.AnonKiB-a.AnonKiB, n, what)
	}
}

// CheckGrowth's bounds.
const heapSlack, rssSlackKiB = 64 << 10, 8 << 10

// CheckSteadyGrowth is CheckGrowth from b to c, across n iterations, but
// anonymous RSS fails it only where it also grew by more than its bound
// from a to b, over as many iterations before: a leak grows through both.
// A process that has run a package's other tests first was seen to take
// one step of 16 MiB of anonymous RSS in a later half (a malloc arena or
// thread stacks, for all it showed), with the Go and C heaps, fds and
// RDMA objects flat, and the same test alone flat to 150 KiB. The heaps
// are still held to CheckGrowth's exact bounds from b to c.
func CheckSteadyGrowth(t testing.TB, a, b, c Usage, n int, what string) {
	t.Helper()
	if c.AnonKiB > b.AnonKiB+rssSlackKiB && b.AnonKiB <= a.AnonKiB+rssSlackKiB {
		t.Logf("anonymous RSS grew by %d KiB over the last %d %s, by %d KiB over the %d before: one step, not a leak's steady growth",
			c.AnonKiB-b.AnonKiB, n, what, b.AnonKiB-a.AnonKiB, n)
		c.AnonKiB = b.AnonKiB
	}
	CheckGrowth(t, b, c, n, what)
}

// String gives the counts on one line, for a test's log.
func (u Usage) String() string {
	return fmt.Sprintf("fds %d, Go heap %d, C heap %d, RSS %d KiB (anonymous %d KiB)", u.FDs, u.GoHeap, u.CHeap, u.RSSKiB, u.AnonKiB)
}
