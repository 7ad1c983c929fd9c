//go:build linux && cgo

package bench

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// readHostTicks returns the user and idle clock ticks of all the host's
// CPUs so far (hostTicks), or zeros where /proc/stat cannot be read.
func readHostTicks() (user, idle uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	user, idle, _ = hostTicks(b)
	return user, idle
}

// hostTicks returns the user and idle ticks of all the host's CPUs from
// the text of /proc/stat, as perftest's get_cpu_stats reads them for its
// --cpu_util: the first and the fourth figure of the first line, "cpu
// user nice system idle ..."; false where that line is not so.
func hostTicks(stat []byte) (user, idle uint64, ok bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	user, err1 := strconv.ParseUint(f[1], 10, 64)
	idle, err2 := strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return user, idle, true
}
