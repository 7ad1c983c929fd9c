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

// WriteCSV writes r.Results as CSV: a header row, then one row per message
// size. The columns are the same for every test; a field that the JSON
// document leaves out (the bandwidth fields of a latency test, say) is
// an empty cell, and a bandwidth test's zero bandwidth is 0, as is a
// measured latency test's zero figure (t_stdev_us of one sample). The
// first column repeats r.Test, so that the output of several runs can be
// concatenated (without their header rows).
// --cpu_util adds three columns after these (cpuColumns), and port
// counters (-W) a column each after those, named as the counter
// ("hw_counters/sent_pkts"), so runs with the same flags concatenate too.
//
// A run of --run_infinitely (r.Intervals not nil, if empty) has two
// columns more, last: interval_end_s and interval_duration_s, the
// Interval's end_s and duration_s. Its intervals come first, a row each
// in order, with the run's message size, their iterations, bandwidth
// and message rate, and the two; then the run's result, whose two cells
// are empty.
func WriteCSV(w io.Writer, r Result) error {
	cw := csv.NewWriter(w)
	header := slices.Clip(csvHeader)
	cpu := hasCPU(r.Results)
	if cpu {
		header = append(header, cpuColumns...)
	}
	counters := counterColumns(r.Results)
	header = append(header, counters...)
	intervals := r.Intervals != nil
	if intervals {
		header = append(header, intervalColumns...)
	}
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
			row = append(row, "") // latency, CPU and counter cells
		}
		row = append(row, csvFloat0(iv.EndS), csvFloat0(iv.DurationS))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	for _, s := range r.Results {
		row := []string{
			r.Test,
			strconv.Itoa(s.Bytes),
			strconv.FormatUint(s.Iterations, 10),
		}
		bw := !s.latency() // its bandwidth cells are written even when zero
		for _, v := range []float64{s.BWPeakMBps, s.BWAvgMBps, s.BWAvgGbps, s.MsgRateMpps} {
			if bw && v == 0 {
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
		if cpu {
			row = append(row, cpuCells(s)...)
		}
		row = append(row, counterCells(s, counters)...)
		if intervals {
			row = append(row, "", "")
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

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
