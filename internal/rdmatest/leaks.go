//go:build linux && cgo

package rdmatest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Usage is what a leak check compares before and after (CheckGrowth):
// this process's open file descriptors, its memory, and its RDMA objects.
//
// GoHeap and CHeap count live bytes exactly, so a leak check can hold them
// to a tight bound (CHeap only with glibc's per-thread caches off, whose
// chunks mallinfo2 counts as in use: ci/device-tests.sh turns them off,
// and without that CheckGrowth widens its C heap bound); RSS also counts
// what allocators keep for reuse, thread stacks and page cache, which grow
// to a plateau at their own pace.
type Usage struct {
	FDs     int
	GoHeap  uint64 // bytes in live Go heap objects, after a GC
	CHeap   uint64 // bytes malloc has handed out and not had back (mallinfo2)
	RSSKiB  int    // VmRSS: all resident memory
	AnonKiB int    // RssAnon: resident memory not backed by a file
	// RDMA counts this process's RDMA objects (`rdma -j resource show
	// KIND`, kept where the pid is one of this process's threads), one
	// line a device, e.g. "rxe0: ctx 1 pd 1 cq 2 qp 1 mr 1 srq 0 cm_id 0",
	// or "no RDMA objects"; other processes' and the kernel's own are not
	// counted, so tests in other processes do not disturb it. "" where
	// they could not be counted (the rdma tool is missing or failed:
	// RDMAErr says why).
	RDMA    string
	RDMAErr error
}

// rdmaKinds are the kinds of RDMA object Measure counts. ctx and srq are
// newer than the others in the rdma tool and the kernel: where asking for
// one fails, its count reads "?" (the same before and after).
var rdmaKinds = []struct {
	name     string
	optional bool
}{{"ctx", true}, {"pd", false}, {"cq", false}, {"qp", false}, {"mr", false}, {"srq", true}, {"cm_id", false}}

// Measure takes a Usage, after a GC that returns freed heap to the OS so
// that RSS reflects live memory.
//
// The first Measure turns transparent huge pages off for this process
// (prctl PR_SET_THP_DISABLE). Where they are on for all memory, as in
// Debian's kernel (enabled "always", khugepaged max_ptes_none 511),
// khugepaged fills 2 MiB ranges of the Go heap that the runtime has
// given back to the OS with resident pages again: a bench test seen
// after a package's other tests grew its anonymous RSS by 8 MiB a half
// of 500 tests, all of it in the Go heap's mapping and as huge pages,
// while the live Go heap, the C heap and the runtime's own count of
// unreleased memory stayed flat. That growth is the kernel's, not a leak,
// and without THP it does not happen.
func Measure(t testing.TB) Usage {
	t.Helper()
	thpOff.Do(func() {
		if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
			t.Logf("prctl PR_SET_THP_DISABLE: %v (transparent huge pages may add to RSS)", err)
		}
	})
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
	u.RDMA, u.RDMAErr = ownRDMA()
	return u
}

// thpOff turns transparent huge pages off once (Measure).
var thpOff sync.Once

// ownRDMA counts the RDMA objects of this process, by device and kind
// (Usage.RDMA).
func ownRDMA() (string, error) {
	// The kernel names the thread that made an object (task_pid_vnr of
	// the task that made it), which need not be the main one.
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return "", err
	}
	mine := map[int]bool{os.Getpid(): true}
	for _, e := range tasks {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			mine[id] = true
		}
	}
	perKind := make([]map[string]int, len(rdmaKinds)) // nil where unknown
	devs := map[string]bool{}
	for k, kind := range rdmaKinds {
		var stderr bytes.Buffer
		cmd := exec.Command("rdma", "-j", "resource", "show", kind.name)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			perKind[k], err = countOwn(out, mine)
		}
		if err != nil && (!kind.optional || errors.Is(err, exec.ErrNotFound)) {
			return "", fmt.Errorf("rdma -j resource show %s: %v %s", kind.name, err, strings.TrimSpace(stderr.String()))
		}
		for d := range perKind[k] {
			devs[d] = true
		}
	}
	if len(devs) == 0 {
		return "no RDMA objects\n", nil
	}
	var s strings.Builder
	for _, d := range slices.Sorted(maps.Keys(devs)) {
		s.WriteString(d + ":")
		for k, kind := range rdmaKinds {
			if perKind[k] == nil {
				fmt.Fprintf(&s, " %s ?", kind.name)
			} else {
				fmt.Fprintf(&s, " %s %d", kind.name, perKind[k][d])
			}
		}
		s.WriteString("\n")
	}
	return s.String(), nil
}

// countOwn counts, by device, the objects in out (the JSON of `rdma -j
// resource show KIND`: one array of objects, or several one after
// another) whose pid is in mine. An object without a pid is the kernel's,
// or one whose thread has exited.
func countOwn(out []byte, mine map[int]bool) (map[string]int, error) {
	n := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var objs []struct {
			Ifname string `json:"ifname"`
			PID    *int   `json:"pid"`
		}
		err := dec.Decode(&objs)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading its JSON: %v", err)
		}
		for _, o := range objs {
			if o.PID != nil && mine[*o.PID] {
				n[o.Ifname]++
			}
		}
	}
}

// CheckGrowth fails t if this process's open file descriptors or RDMA
// objects changed at all from a to b, or its memory grew, across n
// iterations of what the test repeats (named in the message, e.g.
// "cycles"), by more than a leak-free process grows once warm: 64 KiB of
// Go heap or of C heap, 8 MiB of anonymous RSS. Over 500 iterations,
// 64 KiB is 128 bytes each, less than any object a verb allocates; the
// exact heap counts, seen to vary by under 12 KiB, make that bound safe.
// RSS, which also counts what the allocators keep for reuse, was seen to
// grow by up to 2 MiB with no leak. The test takes b once its last
// iteration has closed what it opened.
//
// The C heap is held to 64 KiB only with glibc's per-thread caches off
// (GLIBC_TUNABLES=glibc.malloc.tcache_count=0, as ci/device-tests.sh
// sets): with them on, what they hold counts as in use, and which thread
// holds what varies (seen: 70 KiB), so the bound is 1 MiB, and the test's
// log says so. Where the RDMA objects could not be counted (no rdma
// tool), that check fails under GORPERF_REQUIRE_DEVICE=1 and is logged as
// off otherwise.
func CheckGrowth(t testing.TB, a, b Usage, n int, what string) {
	t.Helper()
	checkCounts(t, a, b, n, what)
	checkMemory(t, a, b, n, what)
}

// checkCounts is CheckGrowth's check of the fds and RDMA objects.
func checkCounts(t testing.TB, a, b Usage, n int, what string) {
	t.Helper()
	if b.FDs != a.FDs {
		t.Errorf("open file descriptors went from %d to %d over %d %s", a.FDs, b.FDs, n, what)
	}
	switch err := errors.Join(a.RDMAErr, b.RDMAErr); {
	case err != nil && Required():
		t.Errorf("GORPERF_REQUIRE_DEVICE=1 but this process's RDMA objects could not be counted: %v", err)
	case err != nil:
		t.Logf("the RDMA object check is off: %v", err)
	case a.RDMA != b.RDMA:
		t.Errorf("this process's RDMA objects changed over %d %s, from\n%sto\n%s", n, what, a.RDMA, b.RDMA)
	}
}

// checkMemory is CheckGrowth's check of the memory.
func checkMemory(t testing.TB, a, b Usage, n int, what string) {
	t.Helper()
	if b.GoHeap > a.GoHeap+heapSlack {
		t.Errorf("the live Go heap grew by %d bytes over %d %s", b.GoHeap-a.GoHeap, n, what)
	}
	cSlack := uint64(heapSlack)
	if !tcacheOff() {
		cSlack = cHeapSlackTcache
		t.Logf("glibc's per-thread malloc caches are on (GLIBC_TUNABLES lacks glibc.malloc.tcache_count=0): "+
			"the C heap may grow by %d KiB, not %d KiB", cSlack>>10, heapSlack>>10)
	}
	if b.CHeap > a.CHeap+cSlack {
		t.Errorf("the C heap in use grew by %d bytes over %d %s", b.CHeap-a.CHeap, n, what)
	}
	if b.AnonKiB > a.AnonKiB+rssSlackKiB {
		t.Errorf("anonymous RSS grew by %d KiB over %d %s", b.AnonKiB-a.AnonKiB, n, what)
	}
}

// CheckGrowth's bounds, which CheckSteadyGrowth holds its second half to.
const (
	heapSlack        = 64 << 10
	cHeapSlackTcache = 1 << 20
	rssSlackKiB      = 8 << 10
)

// tcacheOff reports whether GLIBC_TUNABLES turns glibc's per-thread malloc
// caches off: its last glibc.malloc.tcache_count is 0.
func tcacheOff() bool {
	off := false
	for _, kv := range strings.Split(os.Getenv("GLIBC_TUNABLES"), ":") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "glibc.malloc.tcache_count" {
			off = v == "0"
		}
	}
	return off
}

// CheckSteadyGrowth is CheckGrowth over a run in two halves of n
// iterations each, measured at its start (a), middle (b) and end (c). The
// fds and RDMA objects must be the same at the end as at the start: the
// middle, taken while the run goes on, may catch an iteration's still
// closing. The memory is held to CheckGrowth's bounds from b to c, once
// the first half has warmed up what grows to a plateau (the allocators'
// free lists, thread stacks, a new thread's malloc arena).
func CheckSteadyGrowth(t testing.TB, a, b, c Usage, n int, what string) {
	t.Helper()
	checkCounts(t, a, c, 2*n, what)
	checkMemory(t, b, c, n, what)
}

// String gives the counts on one line, for a test's log.
func (u Usage) String() string {
	return fmt.Sprintf("fds %d, Go heap %d, C heap %d, RSS %d KiB (anonymous %d KiB)", u.FDs, u.GoHeap, u.CHeap, u.RSSKiB, u.AnonKiB)
}
