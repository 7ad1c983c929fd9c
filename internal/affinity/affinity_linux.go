//go:build linux

package affinity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// sysDir is where the CPU and NUMA topology is read: sysfs, or a tree
// laid out like it in the tests.
var sysDir = "/sys/devices/system"

// Plan says which CPUs to run on: CPUs if set, else those of Node if it
// is 0 or more, else, unless Off, those of DeviceNode, the node of the
// RDMA device (-1 when it reports none).
type Plan struct {
	CPUs       []int // --pin_cores
	Node       int   // --numa_node, or -1
	Off        bool  // --disable_numa
	DeviceNode int
	Device     string // the device's name, for the reason
}

// Choice is what Apply did: the CPUs the process's threads may run on
// afterwards, the NUMA node they are on if it chose one (else -1), and
// why, in words.
type Choice struct {
	CPUs   []int
	Node   int
	Reason string
}

// Apply pins every thread of the process to the CPUs p asks for
// (sched_setaffinity on each thread; threads made later inherit it from
// their maker) and says what it did. By default it pins to the device's
// node, as perftest does since 26.04, unless the process was started
// restricted already (taskset, a cpuset), the device has no node, or the
// node holds every CPU. A CPU that is not online, or a node there is not,
// fails before anything is pinned. Where the topology cannot be read (a
// container without /sys), the default leaves the process as it started
// and says why; only what was asked for fails.
func Apply(p Plan) (Choice, error) {
	online, err := Online()
	if err != nil {
		if len(p.CPUs) > 0 || p.Node >= 0 {
			return Choice{}, fmt.Errorf("the online CPUs: %w", err)
		}
		return Choice{Node: -1, Reason: fmt.Sprintf("as started: the online CPUs cannot be read: %v", err)}, nil
	}
	c := Choice{Node: -1}
	// want is where to move; back, for a move nobody asked for, where to
	// return if it is refused, since that must not fail the run.
	var want, back []int
	switch {
	case len(p.CPUs) > 0:
		for _, cpu := range p.CPUs {
			if !slices.Contains(online, cpu) {
				return Choice{}, fmt.Errorf("--pin_cores: CPU %d is not online here (online: %s)", cpu, FormatList(online))
			}
		}
		want, c.Reason = p.CPUs, "--pin_cores"
	case p.Node >= 0:
		if want, err = NodeCPUs(p.Node); err != nil {
			return Choice{}, fmt.Errorf("--numa_node: %w", err)
		}
		c.Node, c.Reason = p.Node, fmt.Sprintf("--numa_node %d", p.Node)
	case p.Off:
		c.Reason = "as started: --disable_numa"
	default:
		cur, err := Current()
		switch {
		case err != nil:
			c.Reason = fmt.Sprintf("as started: this process's CPUs cannot be read: %v", err)
		case len(cur) < len(online):
			c.Reason = "as started: restricted already (taskset or a cpuset), so not moved to the device's NUMA node"
		case p.DeviceNode < 0:
			c.Reason = fmt.Sprintf("as started: %s reports no NUMA node", p.Device)
		default:
			cpus, err := NodeCPUs(p.DeviceNode)
			switch {
			case err != nil:
				c.Reason = fmt.Sprintf("as started: %s's NUMA node %d: %v", p.Device, p.DeviceNode, err)
			case slices.Equal(cpus, online):
				c.Node, c.Reason = p.DeviceNode, fmt.Sprintf("as started: %s's NUMA node %d holds every CPU", p.Device, p.DeviceNode)
			default:
				want, back, c.Node = cpus, cur, p.DeviceNode
				c.Reason = fmt.Sprintf("NUMA node %d, %s's (--disable_numa to leave the CPUs alone)", p.DeviceNode, p.Device)
			}
		}
	}
	if want != nil {
		if err := pinAll(want); err != nil {
			if back == nil {
				return Choice{}, fmt.Errorf("pinning to CPUs %s: %w", FormatList(want), err)
			}
			// A cpuset without the node's CPUs, say: go back.
			c.Node = -1
			c.Reason = fmt.Sprintf("as started: moving to %s's NUMA node %d (CPUs %s) failed: %v", p.Device, p.DeviceNode, FormatList(want), err)
			if err := pinAll(back); err != nil {
				return Choice{}, fmt.Errorf("returning to CPUs %s: %w", FormatList(back), err)
			}
		}
	}
	// Where nothing moved, CPUs that cannot be read were said already.
	if c.CPUs, err = Current(); err != nil && want != nil {
		return Choice{}, err
	}
	return c, nil
}

// Online lists the CPUs that are online.
func Online() ([]int, error) { return readList(filepath.Join(sysDir, "cpu", "online")) }

// NodeCPUs lists the CPUs of NUMA node n.
func NodeCPUs(n int) ([]int, error) {
	cpus, err := readList(filepath.Join(sysDir, "node", "node"+strconv.Itoa(n), "cpulist"))
	if errors.Is(err, os.ErrNotExist) {
		nodes, _ := os.ReadFile(filepath.Join(sysDir, "node", "online"))
		return nil, fmt.Errorf("no NUMA node %d here (nodes: %s)", n, strings.TrimSpace(string(nodes)))
	}
	if err == nil && len(cpus) == 0 {
		err = fmt.Errorf("NUMA node %d has no CPUs", n)
	}
	return cpus, err
}

// Current lists the CPUs any thread of the process may run on: the union
// of each thread's affinity (sched_getaffinity).
func Current() ([]int, error) {
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	var all []int
	for _, tid := range tids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // gone since the listing
			}
			return nil, os.NewSyscallError("sched_getaffinity", err)
		}
		for cpu := range maxCPUs {
			if set.IsSet(cpu) {
				all = append(all, cpu)
			}
		}
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// pinAll sets the affinity of every thread of the process, again over the
// thread list until a pass finds no thread it has not set: a thread made
// meanwhile may have inherited the old mask.
func pinAll(cpus []int) error {
	var set unix.CPUSet
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	done := map[int]bool{}
	for {
		tids, err := threads()
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return os.NewSyscallError("sched_setaffinity", err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// threads lists the process's thread IDs.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// readList reads a file holding a CPU list.
func readList(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, nil
	}
	cpus, err := ParseList(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cpus, nil
}

// PinThread keeps the calling OS thread on one CPU (sched_setaffinity of
// the thread alone). The caller holds the thread with
// runtime.LockOSThread, and should end the goroutine without unlocking
// it, so that the runtime discards the thread instead of giving its
// narrowed mask to other goroutines.
func PinThread(cpu int) error {
	if cpu < 0 || cpu >= maxCPUs {
		return fmt.Errorf("CPU %d: want 0 to %d", cpu, maxCPUs-1)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return os.NewSyscallError("sched_setaffinity", err)
	}
	return nil
}

// SpreadCores orders cpus so that each physical core's first CPU in cpus
// comes before any core's second one there (its SMT sibling), keeping
// their order otherwise: threads that take them in turn then get a core
// each while there are cores. A CPU's rank counts only the siblings that
// cpus holds, so that a core of which cpus has the second hardware
// thread alone still gets a thread early. Siblings are read from sysfs
// (topology/thread_siblings_list); a CPU whose siblings cannot be read
// counts as a core of its own.
func SpreadCores(cpus []int) []int {
	rank := make(map[int]int, len(cpus)) // a CPU's place among its core's siblings in cpus
	for _, cpu := range cpus {
		sib, err := readList(filepath.Join(sysDir, "cpu", "cpu"+strconv.Itoa(cpu), "topology", "thread_siblings_list"))
		if err != nil {
			continue
		}
		for _, s := range sib {
			if s == cpu {
				break
			}
			if slices.Contains(cpus, s) {
				rank[cpu]++
			}
		}
	}
	out := slices.Clone(cpus)
	slices.SortStableFunc(out, func(a, b int) int { return rank[a] - rank[b] })
	return out
}
