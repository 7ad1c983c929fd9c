// Package affinity pins gorperf to CPUs: those a user lists (perftest's
// --pin_cores), those of a NUMA node (--numa_node), or by default those of
// the node the RDMA device hangs off, as perftest does since 26.04. Memory
// follows the CPUs: an RDMA buffer's pages are faulted in when it is
// registered, on the node of the CPU that registers it.
//
// The CPU lists are pure Go and build everywhere; pinning needs Linux.
package affinity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseList reads a CPU list as Linux writes them (cpulist files, taskset
// -c) and perftest's --pin_cores takes them: numbers and ranges separated
// by commas, such as "0-3,8,12-15". The CPUs come back sorted, each once.
func ParseList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		switch {
		case err != nil || first < 0:
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or a range of them such as 0-3", s, part)
		case last < first:
			return nil, fmt.Errorf("CPU list %q: the range %q runs backwards", s, part)
		case last >= maxCPUs:
			return nil, fmt.Errorf("CPU list %q: CPU %d is past the %d this build can name", s, last, maxCPUs)
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// maxCPUs bounds the CPU numbers a list may name: a cpu_set_t's 1024.
const maxCPUs = 1024

// FormatList writes sorted CPUs as ParseList reads them, runs as ranges:
// [0 1 2 3 8] is "0-3,8".
func FormatList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			fmt.Fprintf(&b, "-%d", cpus[j])
		}
		i = j + 1
	}
	return b.String()
}
