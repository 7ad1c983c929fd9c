package report

import (
	"io"
	"strconv"
)

// WriteThreads writes each thread's part of a test of several threads
// (gorperf's --threads), size by size, under a title: its CPU ("-" when
// it was not pinned), its QPs and its own average bandwidth and message
// rate, so that a thread that fell behind shows: a dash where they are
// unknown (SizeResult.RateUnknown), with a note after the rows. It
// writes nothing for a test of one thread.
func WriteThreads(w io.Writer, threads []ThreadResult, gbits bool) error {
	if len(threads) < 2 {
		return nil
	}
	unit := "BW average[MB/sec]"
	if gbits {
		unit = "BW average[Gb/sec]"
	}
	p := &printer{w: w}
	p.printf(" Each thread's part (--threads):\n")
	p.printf(" %-8s %-6s %-6s %-10s %-20s %s\n", "thread", "CPU", "QPs", "#bytes", unit, "MsgRate[Mpps]")
	unknown := false
	for k := range threads[0].Results {
		for _, t := range threads {
			cpu := "-"
			if t.CPU != nil {
				cpu = strconv.Itoa(*t.CPU)
			}
			if k >= len(t.Results) {
				p.printf(" %-8d %-6s %-6d %s\n", t.Thread, cpu, t.QPs, "failed: "+t.Error)
				continue
			}
			r := t.Results[k]
			if r.RateUnknown() {
				p.printf(" %-8d %-6s %-6d %-10d %-20s %s\n", t.Thread, cpu, t.QPs, r.Bytes, "-", "-")
				unknown = true
				continue
			}
			bw := r.BWAvgMBps
			if gbits {
				bw = r.BWAvgGbps
			}
			p.printf(" %-8d %-6s %-6d %-10d %-20.2f %.6f\n", t.Thread, cpu, t.QPs, r.Bytes, bw, r.MsgRateMpps)
		}
	}
	if unknown {
		p.printf(" -: %s\n", rateUnknownNote)
	}
	p.printf("%s", rule)
	return p.err
}
