//go:build linux && cgo

package rdmatest

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// Usage is what a leak check compares before and after: this process's
// open file descriptors and resident memory, and the kernel's count of
// RDMA objects (`rdma resource show`: PDs, CQs, QPs, MRs per device).
type Usage struct {
	FDs    int
	RSSKiB int
	RDMA   string // "" where the rdma tool is missing
}

// Measure takes a Usage, after a GC that returns freed heap to the OS so
// that RSS reflects live memory.
func Measure(t testing.TB) Usage {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	u := Usage{FDs: len(ents)}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			u.RSSKiB, _ = strconv.Atoi(f[1])
		}
	}
	if out, err := exec.Command("rdma", "resource", "show").Output(); err == nil {
		u.RDMA = string(out)
	}
	return u
}
