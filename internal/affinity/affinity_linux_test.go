//go:build linux

package affinity

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTopology lays out a sysfs tree whose online CPUs are this host's and
// whose node 0 holds the first of them, node 1 the rest, and points
// sysDir at it; it restores sysDir and the process's affinity after the
// test. It skips on a host with one CPU, where no node could hold less
// than all of them.
func fakeTopology(t *testing.T) (online []int) {
	t.Helper()
	orig, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	online, err = readList("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 || len(orig) < 2 {
		t.Skipf("CPUs %s online, %s allowed: the tests need two", FormatList(online), FormatList(orig))
	}
	dir := t.TempDir()
	for path, text := range map[string]string{
		"cpu/online":         FormatList(online),
		"node/online":        "0-1",
		"node/node0/cpulist": FormatList(online[:1]),
		"node/node1/cpulist": FormatList(online[1:]),
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := sysDir
	sysDir = dir
	t.Cleanup(func() {
		sysDir = old
		if err := pinAll(orig); err != nil {
			t.Errorf("restoring the affinity %s: %v", FormatList(orig), err)
		}
	})
	return online
}

// threadCPUs is the affinity of a new goroutine's own thread: one the
// runtime may make after the pinning, which must inherit it.
func threadCPUs(t *testing.T) []int {
	t.Helper()
	ch := make(chan []int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Error(err)
		}
		var cpus []int
		for c := range maxCPUs {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
		ch <- cpus
	}()
	return <-ch
}

func TestApplyPins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plan   func(online []int) Plan
		cpus   func(online []int) []int
		node   int
		reason string
	}{
		{"pin_cores", func(o []int) Plan { return Plan{CPUs: o[len(o)-1:], Node: -1, DeviceNode: 0} },
			func(o []int) []int { return o[len(o)-1:] }, -1, "--pin_cores"},
		{"numa_node", func(o []int) Plan { return Plan{Node: 1, DeviceNode: 0} },
			func(o []int) []int { return o[1:] }, 1, "--numa_node 1"},
		{"device's node", func(o []int) Plan { return Plan{Node: -1, DeviceNode: 0, Device: "mlx5_0"} },
			func(o []int) []int { return o[:1] }, 0, "NUMA node 0, mlx5_0's"},
		{"disabled", func(o []int) Plan { return Plan{Node: -1, DeviceNode: 0, Off: true} },
			func(o []int) []int { return o }, -1, "--disable_numa"},
		{"no node", func(o []int) Plan { return Plan{Node: -1, DeviceNode: -1, Device: "rxe0"} },
			func(o []int) []int { return o }, -1, "rxe0 reports no NUMA node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			online := fakeTopology(t)
			c, err := Apply(tc.plan(online))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.cpus(online)
			if !slices.Equal(c.CPUs, want) || c.Node != tc.node || !strings.Contains(c.Reason, tc.reason) {
				t.Errorf("Apply: %+v, want CPUs %v on node %d for %q", c, want, tc.node, tc.reason)
			}
			if got := threadCPUs(t); !slices.Equal(got, want) {
				t.Errorf("a thread made after Apply runs on %v, want %v", got, want)
			}
		})
	}
}

// A process started on fewer CPUs than are online stays there by default,
// and what cannot be had fails before anything moves.
func TestApplyLeavesAndRefuses(t *testing.T) {
	online := fakeTopology(t)
	if err := pinAll(online[1:]); err != nil {
		t.Fatal(err)
	}
	c, err := Apply(Plan{Node: -1, DeviceNode: 0, Device: "mlx5_0"})
	if err != nil || !slices.Equal(c.CPUs, online[1:]) || !strings.Contains(c.Reason, "restricted already") {
		t.Errorf("restricted process: %+v, %v; want it left on %v", c, err, online[1:])
	}
	for _, tc := range []struct {
		plan Plan
		want string
	}{
		{Plan{CPUs: []int{maxCPUs - 1}, Node: -1}, "CPU 1023 is not online here"},
		{Plan{Node: 5}, "no NUMA node 5 here (nodes: 0-1)"},
	} {
		if _, err := Apply(tc.plan); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Apply(%+v) = %v, want %q", tc.plan, err, tc.want)
		}
		if cur, _ := Current(); !slices.Equal(cur, online[1:]) {
			t.Errorf("a refused Apply moved the process to %v", cur)
		}
	}
}

// Without a readable topology the default leaves the process as it
// started and says why; what was asked for fails.
func TestApplyWithoutTopology(t *testing.T) {
	before, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	old := sysDir
	sysDir = t.TempDir()
	t.Cleanup(func() { sysDir = old })
	c, err := Apply(Plan{Node: -1, DeviceNode: 1, Device: "mlx5_0"})
	if err != nil || !strings.Contains(c.Reason, "the online CPUs cannot be read") {
		t.Errorf("default: %+v, %v; want it left as started", c, err)
	}
	if _, err := Apply(Plan{CPUs: []int{0}, Node: -1}); err == nil {
		t.Error("--pin_cores without a readable topology: no error")
	}
	if after, _ := Current(); !slices.Equal(after, before) {
		t.Errorf("the process moved from %v to %v", before, after)
	}
}

// TestPinThread: the calling thread alone is held to the CPU, and a CPU
// that cannot be named is refused before anything moves.
func TestPinThread(t *testing.T) {
	cpus, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	got := make(chan []int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread ends with this goroutine
		if err := PinThread(cpu); err != nil {
			t.Error(err)
		}
		var set unix.CPUSet
		unix.SchedGetaffinity(0, &set)
		var on []int
		for c := range maxCPUs {
			if set.IsSet(c) {
				on = append(on, c)
			}
		}
		got <- on
	}()
	if on := <-got; !slices.Equal(on, []int{cpu}) {
		t.Errorf("the pinned thread may run on %v, want [%d]", on, cpu)
	}
	if after, _ := Current(); len(cpus) > 1 && !slices.Equal(after, cpus) {
		// Current is the union over the threads: the others kept theirs.
		t.Errorf("the process may run on %v after one thread was pinned, want %v", after, cpus)
	}
	for _, bad := range []int{-1, maxCPUs} {
		if err := PinThread(bad); err == nil || !strings.Contains(err.Error(), "want 0 to 1023") {
			t.Errorf("PinThread(%d): %v", bad, err)
		}
	}
}

// TestSpreadCores: where siblings are numbered next to each other, the
// first thread of every core comes before any core's second; where a
// CPU's siblings cannot be read, it keeps its place.
func TestSpreadCores(t *testing.T) {
	dir := t.TempDir()
	siblings := map[int]string{0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3", 4: "4,12", 12: "4,12"} // 5: unreadable
	for cpu, list := range siblings {
		d := filepath.Join(dir, "cpu", "cpu"+strconv.Itoa(cpu), "topology")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "thread_siblings_list"), []byte(list+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := sysDir
	sysDir = dir
	defer func() { sysDir = old }()
	in := []int{0, 1, 2, 3, 4, 5, 12}
	if got, want := SpreadCores(in), []int{0, 2, 4, 5, 1, 3, 12}; !slices.Equal(got, want) {
		t.Errorf("SpreadCores(%v) = %v, want %v", in, got, want)
	}
	if !slices.Equal(in, []int{0, 1, 2, 3, 4, 5, 12}) {
		t.Errorf("the input changed: %v", in)
	}
	// A core of which the list has the second hardware thread alone is a
	// core all the same: --pin_cores 0,1,3 --threads 2 runs on 0 and 3,
	// not on both of core 0's threads.
	for _, tc := range []struct{ in, want []int }{
		{[]int{0, 1, 3}, []int{0, 3, 1}},
		{[]int{1, 3}, []int{1, 3}},
		{[]int{12, 1, 0}, []int{12, 0, 1}},
	} {
		if got := SpreadCores(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SpreadCores(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
