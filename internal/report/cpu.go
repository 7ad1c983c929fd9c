package report

import (
	"io"
	"strconv"

	"github.com/gorperf/gorperf/internal/stats"
)

// CPU is the processor time a side's process used during one size's run
// (gorperf's --cpu_util): all its threads, from the start of the size to
// the moment both sides were done.
type CPU struct {
	UserUsPerMsg float64 `json:"user_us_per_msg"`
	SysUsPerMsg  float64 `json:"sys_us_per_msg"`
	// UtilPct is user and system time over wall time, in percent: 100 is
	// one CPU kept busy.
	UtilPct float64 `json:"util_pct"`
	UserS   float64 `json:"user_s"`
	SysS    float64 `json:"sys_s"`
	WallS   float64 `json:"wall_s"`
}

// CPUFrom returns the report of c.
func CPUFrom(c stats.CPU) *CPU {
	u, s := c.PerMessage()
	return &CPU{UserUsPerMsg: u, SysUsPerMsg: s, UtilPct: c.Percent(),
		UserS: c.User.Seconds(), SysS: c.System.Seconds(), WallS: c.Wall.Seconds()}
}

// WriteCPU writes the CPU time of each size of results that has it, as a
// table under a title: user and system µs a message and perftest's
// CPU_Util[%] column. It writes nothing if no size has it.
func WriteCPU(w io.Writer, results []SizeResult) error {
	if !hasCPU(results) {
		return nil
	}
	p := &printer{w: w}
	p.printf(" CPU time of this process during each size (all its threads; 100%% is one CPU):\n")
	p.printf(" %-10s %-16s %-16s %s\n", "#bytes", "user[usec/msg]", "sys[usec/msg]", "CPU_Util[%]")
	for _, r := range results {
		if c := r.CPU; c != nil {
			p.printf(" %-10d %-16.2f %-16.2f %.2f\n", r.Bytes, c.UserUsPerMsg, c.SysUsPerMsg, c.UtilPct)
		}
	}
	p.printf("%s", rule)
	return p.err
}

func hasCPU(results []SizeResult) bool {
	for _, r := range results {
		if r.CPU != nil {
			return true
		}
	}
	return false
}

// cpuColumns names the CSV columns of CPU, which follow the fixed ones
// when any size has it.
var cpuColumns = []string{"cpu_user_us_per_msg", "cpu_sys_us_per_msg", "cpu_util_pct"}

// cpuCells returns r's CPU cells, empty where r has none.
func cpuCells(r SizeResult) []string {
	if r.CPU == nil {
		return []string{"", "", ""}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{f(r.CPU.UserUsPerMsg), f(r.CPU.SysUsPerMsg), f(r.CPU.UtilPct)}
}
