package report

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"
)

// csvHeader names the columns of WriteCSV, after the JSON field names.
var csvHeader = []string{
	"test", "bytes", "iterations",
	"bw_peak_mbps", "bw_avg_mbps", "bw_avg_gbps", "msg_rate_mpps",
	"t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us",
	"percentile_99_us", "percentile_99_9_us",
	"p50_us", "p90_us", "p99_us", "p99_9_us", "p99_99_us", "max_us",
}

// csvColumns are the columns of one CSV document beyond the fixed ones
// (csvHeader): the measuring window's, the CPU's, the port counters' and
// the intervals'.
type csvColumns struct {
	window    bool
	cpu       bool
	counters  []string
	intervals bool
}

// columns returns the columns of the CSV of r: the window's for a
// latency test of a duration (hasWindow), the CPU's if any size has it,
// a counter's for each that any size has, and the intervals' for a run
// of --run_infinitely. The run's whole result decides them.
func columns(r Result) csvColumns {
	return csvColumns{window: hasWindow(r), cpu: hasCPU(r.Results), counters: counterColumns(r.Results), intervals: r.Intervals != nil}
}

// windowColumns name the CSV columns of a latency test of a duration
// (-D): its measuring window's figures, the text's row's (WindowS,
// WindowTAvgUs, TPSAverage).
var windowColumns = []string{"window_s", "window_t_avg_us", "tps_average"}

// hasWindow reports whether the CSV of r has the window's columns: r is
// a latency test of a duration, on either side (the side the peer
// measured has empty cells, as its latency cells), or a size of it has
// the window's figures.
func hasWindow(r Result) bool {
	if r.DurationS > 0 && !r.RunInfinitely && isLatencyTest(r.Test) {
		return true
	}
	for _, s := range r.Results {
		if s.WindowS > 0 {
			return true
		}
	}
	return false
}

// header returns the header row.
func (c csvColumns) header() []string {
	header := slices.Clip(csvHeader)
	if c.window {
		header = append(header, windowColumns...)
	}
	if c.cpu {
		header = append(header, cpuColumns...)
	}
	header = append(header, c.counters...)
	if c.intervals {
		header = append(header, intervalColumns...)
	}
	return header
}

// row returns the row of s, a size of test.
func (c csvColumns) row(test string, s SizeResult) []string {
	row := []string{
		test,
		strconv.Itoa(s.Bytes),
		strconv.FormatUint(s.Iterations, 10),
	}
	bw := !s.latency() // its bandwidth cells are written even when zero
	for i, v := range []float64{s.BWPeakMBps, s.BWAvgMBps, s.BWAvgGbps, s.MsgRateMpps} {
		// No peak (NoPeak) is an empty cell, as an interval's: csvFloat's
		// of 0; so are rates unknown (RateUnknown).
		if bw && v == 0 && (i > 0 || !s.NoPeak()) && !s.RateUnknown() {
			row = append(row, "0")
			continue
		}
		row = append(row, csvFloat(v))
	}
	lat := s.latency() && !s.MeasuredByPeer // its latency cells are written even when zero
	for _, v := range []float64{
		s.TMinUs, s.TMaxUs, s.TTypicalUs, s.TAvgUs, s.TStdevUs,
		s.Percentile99Us, s.Percentile999Us,
		s.P50Us, s.P90Us, s.P99Us, s.P999Us, s.P9999Us, s.MaxUs,
	} {
		if lat && v == 0 {
			row = append(row, "0")
			continue
		}
		row = append(row, csvFloat(v))
	}
	if c.window {
		row = append(row, csvFloat(s.WindowS), csvFloat(s.WindowTAvgUs), csvFloat(s.TPSAverage))
	}
	if c.cpu {
		row = append(row, cpuCells(s)...)
	}
	row = append(row, counterCells(s, c.counters)...)
	if c.intervals {
		row = append(row, "", "")
	}
	return row
}

// WriteCSV writes r.Results as CSV: a header row, then one row per message
// size. The columns are the same for every test; a field that the JSON
// document leaves out (the bandwidth fields of a latency test, say) is
// an empty cell, and a bandwidth test's zero bandwidth is 0, as is a
// measured latency test's zero figure (t_stdev_us of one sample), but
// for bw_peak_mbps where a size has no peak (SizeResult.NoPeak: a
// one-way send test's receiving side), which the JSON leaves out. The
// first column repeats r.Test, so that the output of several runs can be
// concatenated (without their header rows).
// A latency test of a duration (-D) adds three columns after these
// (windowColumns): window_s, window_t_avg_us and tps_average, its
// measuring window's figures, the text's row's t_avg and tps average, as
// the JSON's fields of the same names; empty on the side the peer
// measured. --cpu_util adds four after those (cpuColumns), and port
// counters (-W) a column each after those, named as the counter
// ("hw_counters/sent_pkts"), so runs with the same flags concatenate too.
//
// A run of --run_infinitely (r.Intervals not nil, if empty) has two
// columns more, last: interval_end_s and interval_duration_s, the
// Interval's end_s and duration_s. Its intervals come first, a row each
// in order, with the run's message size, their iterations, average
// bandwidth and message rate, and the two, and bw_peak_mbps empty, as an
// interval has no peak (Interval); then the run's result, whose two
// cells are empty.
//
// CSVRows writes the same a size at a time, where the columns are known
// before the run.
func WriteCSV(w io.Writer, r Result) error {
	cw := csv.NewWriter(w)
	cols := columns(r)
	header := cols.header()
	if err := cw.Write(header); err != nil {
		return err
	}
	size := "" // the intervals' message size: the run's one
	if len(r.Results) == 1 {
		size = strconv.Itoa(r.Results[0].Bytes)
	}
	for _, iv := range r.Intervals {
		row := make([]string, 0, len(header))
		row = append(row, r.Test, size, strconv.FormatUint(iv.Iterations, 10), "")
		for _, v := range []float64{iv.BWAvgMBps, iv.BWAvgGbps, iv.MsgRateMpps} {
			row = append(row, csvFloat0(v))
		}
		for len(row) < len(header)-len(intervalColumns) {
			row = append(row, "") // latency, window, CPU and counter cells
		}
		row = append(row, csvFloat0(iv.EndS), csvFloat0(iv.DurationS))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	for _, s := range r.Results {
		if err := cw.Write(cols.row(r.Test, s)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVRows writes the CSV of WriteCSV a size at a time, as each size of a
// run ends: the header row with the first, so that a run with no size
// writes nothing. It can only where the columns are known before the
// first size ends, as they are for a run of test without port counters
// and intervals, whose sizes all have CPU figures or none have, and that
// is or is not a latency test of a duration: the
// counters' columns are those that any size of the whole run has (with
// -W all, those that moved), and an infinite run's intervals come before
// its result. Then what it writes of the run's sizes is what WriteCSV
// writes of a Result that has them, byte for byte.
type CSVRows struct {
	cw   *csv.Writer
	test string
	cols csvColumns
	rows int
}

// NewCSVRows returns a CSVRows that writes the sizes of test to w, with
// the measuring window's columns if window (a latency test of a
// duration, -D, as WriteCSV's hasWindow) and the CPU's if cpu.
func NewCSVRows(w io.Writer, test string, window, cpu bool) *CSVRows {
	return &CSVRows{cw: csv.NewWriter(w), test: test, cols: csvColumns{window: window, cpu: cpu}}
}

// Write writes the row of s, after the header row if it is the first,
// and flushes them to the writer.
func (c *CSVRows) Write(s SizeResult) error {
	if c.rows == 0 {
		if err := c.cw.Write(c.cols.header()); err != nil {
			return err
		}
	}
	if err := c.cw.Write(c.cols.row(c.test, s)); err != nil {
		return err
	}
	c.rows++
	c.cw.Flush()
	return c.cw.Error()
}

// Rows returns how many rows of sizes c wrote, the header row not
// counted.
func (c *CSVRows) Rows() int { return c.rows }

// intervalColumns name the CSV columns of a --run_infinitely run's
// intervals, last.
var intervalColumns = []string{"interval_end_s", "interval_duration_s"}

// csvFloat0 is csvFloat, with 0 for zero: an interval's figures are
// there whatever their value.
func csvFloat0(v float64) string {
	if v == 0 {
		return "0"
	}
	return csvFloat(v)
}

// csvFloat formats v in the fewest digits that read back exactly, or as
// an empty cell when v is zero.
func csvFloat(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
