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
func WriteCSV(w io.Writer, r Result) error {
	cw := csv.NewWriter(w)
	header := slices.Clip(csvHeader)
	cpu := hasCPU(r.Results)
	if cpu {
		header = append(header, cpuColumns...)
	}
	counters := counterColumns(r.Results)
	if err := cw.Write(append(header, counters...)); err != nil {
		return err
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
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvFloat formats v in the fewest digits that read back exactly, or as
// an empty cell when v is zero.
func csvFloat(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
