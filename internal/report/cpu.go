package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/gorperf/gorperf/internal/stats"
)

// CPU is the processor time a side's process used during one size's run
// (gorperf's --cpu_util): all its threads, from the start of the size to
// the moment both sides were done; and, over the same stretch, the
// host's user share, which is perftest's --cpu_util figure.
type CPU struct {
	UserUsPerMsg float64 `json:"user_us_per_msg"`
	SysUsPerMsg  float64 `json:"sys_us_per_msg"`
	// UtilPct is user and system time over wall time, in percent: 100 is
	// one CPU kept busy.
	UtilPct float64 `json:"util_pct"`
	UserS   float64 `json:"user_s"`
	SysS    float64 `json:"sys_s"`
	WallS   float64 `json:"wall_s"`
	// HostUserPct is perftest's CPU_Util[%] over the same stretch: the
	// user time of all the host's CPUs as a share of their user and idle
	// time (/proc/stat), 0 to 100, every process counted. The text's
	// results rows and perftest's JSON file (--out_json's CPU_util) give
	// it where perftest does, and the CSV as cpu_host_user_pct; 0 where
	// /proc/stat could not be read.
	HostUserPct float64 `json:"host_user_pct"`
}

// CPUFrom returns the report of c.
func CPUFrom(c stats.CPU) *CPU {
	u, s := c.PerMessage()
	return &CPU{UserUsPerMsg: u, SysUsPerMsg: s, UtilPct: c.Percent(),
		UserS: c.User.Seconds(), SysS: c.System.Seconds(), WallS: c.Wall.Seconds(),
		HostUserPct: c.HostUserPercent()}
}

// perftest's --cpu_util column, which it adds to whichever results table
// it prints: RESULT_EXT_CPU_UTIL ends the column line, REPORT_EXT_CPU_UTIL
// a row, in place of their newline.
const (
	cpuColumnTitle = "    CPU_Util[%]\n"
	cpuColumnCell  = "\t    %-3.2f\n"
)

// WriteCPUColumns writes the column line that columns writes (one of
// the results tables', WriteBWHeader's, WriteLatHeader's or
// WriteLatDurHeader's) with perftest's CPU_Util[%] after it, as
// perftest's --cpu_util has it.
func WriteCPUColumns(w io.Writer, columns func(io.Writer) error) error {
	return withColumn(w, columns, cpuColumnTitle)
}

// WriteCPURow writes the row that row writes (WriteBWRow's, WriteLatRow's
// ...) with perftest's CPU_Util[%] of c after it, its sixth column in a
// bandwidth table: the host's user share over the size
// (stats.CPU.HostUserPercent), perftest's quantity, not the process's
// time that WriteCPU gives.
func WriteCPURow(w io.Writer, row func(io.Writer) error, c stats.CPU) error {
	return withColumn(w, row, fmt.Sprintf(cpuColumnCell, c.HostUserPercent()))
}

// withColumn writes line's one line with cell, which ends in a newline,
// in place of its own newline.
func withColumn(w io.Writer, line func(io.Writer) error, cell string) error {
	var b bytes.Buffer
	if err := line(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))+cell)
	return err
}

// WriteCPU writes the CPU time of this process in each size of results
// that has it, as a table under a title: user and system µs a message,
// and their sum over the wall time in percent of one CPU (process[%],
// UtilPct), which is not perftest's CPU_Util[%] (the host's user share,
// the results rows' last column). It writes nothing if no size has it.
func WriteCPU(w io.Writer, results []SizeResult) error {
	if !hasCPU(results) {
		return nil
	}
	p := &printer{w: w}
	p.printf(" CPU time of this process during each size (all its threads; 100%% is one CPU):\n")
	p.printf(" %-10s %-16s %-16s %s\n", "#bytes", "user[usec/msg]", "sys[usec/msg]", "process[%]")
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
// (and the window's) when any size has it: the process's time a message
// (UserUsPerMsg, SysUsPerMsg) and over the wall time (cpu_util_pct,
// UtilPct, 100 one CPU), then the host's user share (cpu_host_user_pct,
// HostUserPct), perftest's CPU_Util[%], the text's rows' last column.
var cpuColumns = []string{"cpu_user_us_per_msg", "cpu_sys_us_per_msg", "cpu_util_pct", "cpu_host_user_pct"}

// cpuCells returns r's CPU cells, empty where r has none.
func cpuCells(r SizeResult) []string {
	if r.CPU == nil {
		return make([]string, len(cpuColumns))
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{f(r.CPU.UserUsPerMsg), f(r.CPU.SysUsPerMsg), f(r.CPU.UtilPct), f(r.CPU.HostUserPct)}
}
