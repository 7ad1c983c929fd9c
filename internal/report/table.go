package report

import (
	"io"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// The column headers and row formats of perftest 4.5. The odd mixes of
// spaces and tabs are perftest's own, kept so that output lines up the
// same way and scripts that parse perftest keep working.
const (
	bwHeaderMB = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	bwHeaderGb = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
	bwRow      = " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n"
	// bwRowExt is perftest's REPORT_FMT_EXT, its row of more decimals
	// for an average under 0.1 Gb/sec with --report_gbits.
	bwRowExt = " %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n"
	// bwRowUnknown is gorperf's row of a size whose rates are unknown
	// (stats.Bandwidth.RateUnknown): perftest's columns, with a dash for
	// the average and the message rate.
	bwRowUnknown = " %-7d    %-10d       %-7.2f            %-7s\t\t   %s\n"

	latHeader = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
	latRow    = " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"

	// latDurHeader and latDurRow are perftest's RESULT_FMT_LAT_DUR and
	// REPORT_FMT_LAT_DUR, its latency table of a run of a duration (-D).
	latDurHeader = " #bytes        #iterations       t_avg[usec]    tps average\n"
	latDurRow    = " %-7d       %d            %-7.2f        %-7.2f\n"
)

// rateUnknownNote says why a size's rates are unknown
// (stats.Bandwidth.RateUnknown), and what to do.
const rateUnknownNote = "not timed: every message had come before the receiver saw the first; raise -n or use -D"

// WriteRateUnknownNote writes, after a bandwidth table's rows, a line
// that says why a row has a dash for its rates, where one of bs has
// (RateUnknown), and what to do; else nothing.
func WriteRateUnknownNote(w io.Writer, bs []stats.Bandwidth) error {
	for _, b := range bs {
		if b.RateUnknown() {
			_, err := io.WriteString(w, " -: "+rateUnknownNote+"\n")
			return err
		}
	}
	return nil
}

// nsPerUsec converts stats' nanosecond samples to the microseconds of the
// reports.
const nsPerUsec = 1e3

// WriteRule writes perftest's dashed rule, which closes a result table.
func WriteRule(w io.Writer) error {
	_, err := io.WriteString(w, rule)
	return err
}

// WriteBWHeader writes the column header of the bandwidth table, in
// MB/sec (MB = 2^20 bytes, perftest's default) or, with gbits, in Gb/sec
// (perftest's --report_gbits).
func WriteBWHeader(w io.Writer, gbits bool) error {
	h := bwHeaderMB
	if gbits {
		h = bwHeaderGb
	}
	_, err := io.WriteString(w, h)
	return err
}

// extGbps is the average bandwidth in Gb/sec under which perftest's
// --report_gbits prints its row with six decimals (print_full_bw_report's
// inc_accuracy), so that a slow link does not show as 0.00.
const extGbps = 0.1

// WriteBWRow writes one row of the bandwidth table, in the units chosen
// by gbits as for WriteBWHeader. As perftest's, a row in Gb/sec whose
// average is under 0.1 has six decimals and perftest's other spacing
// (REPORT_FMT_EXT). A row whose rates are unknown (b.RateUnknown: the
// receiver timed none of its messages) has a dash for them, not 0.00;
// WriteRateUnknownNote, after the rows, says why.
func WriteBWRow(w io.Writer, b stats.Bandwidth, gbits bool) error {
	return writeBWRow(w, b, b, gbits)
}

// WriteIntervalRow writes the row of one interval of a --run_infinitely
// run, b as the run reports it (bench.Local.Interval), as WriteBWRow
// writes a size's, but for its peak. An interval times no window of
// messages, so it has no peak, and its BW peak column reads 0.00, as
// perftest's intervals do (its --run_infinitely measures no peak); the
// same interval's CSV row leaves bw_peak_mbps empty and its JSON
// Interval has no bw_peak_mbps, which is how each of them says that a
// figure was not measured. The figure b carries, its average, would
// pass for a peak measured.
func WriteIntervalRow(w io.Writer, b stats.Bandwidth, gbits bool) error {
	b.PeakMBps = 0
	return writeBWRow(w, b, b, gbits)
}

// WriteBidiRow writes the row of a bidirectional test, whose figures are
// total's (both directions) and whose iterations, as perftest's
// print_full_bw_report prints them, are this side's (local's); local's
// average, not the total's, decides perftest's six decimals.
func WriteBidiRow(w io.Writer, total, local stats.Bandwidth, gbits bool) error {
	return writeBWRow(w, total, local, gbits)
}

func writeBWRow(w io.Writer, b, mine stats.Bandwidth, gbits bool) error {
	peak, avg := b.PeakMBps, b.AvgMBps
	if gbits {
		peak, avg = b.Gbps()
	}
	if b.RateUnknown() {
		p := &printer{w: w}
		p.printf(bwRowUnknown, b.Bytes, mine.Iterations, peak, "-", "-")
		return p.err
	}
	format := bwRow
	if _, myAvg := mine.Gbps(); gbits && myAvg < extGbps {
		format = bwRowExt
	}
	p := &printer{w: w}
	p.printf(format, b.Bytes, mine.Iterations, peak, avg, b.MsgRateMpps)
	return p.err
}

// WriteLatHeader writes the column header of the latency table.
func WriteLatHeader(w io.Writer) error {
	_, err := io.WriteString(w, latHeader)
	return err
}

// WriteLatDurHeader writes the column header of perftest's latency table
// of a run of a duration (-D), which has the average and the rate in
// place of the columns of a run of iterations (WriteLatHeader).
func WriteLatDurHeader(w io.Writer) error {
	_, err := io.WriteString(w, latDurHeader)
	return err
}

// LatDur is what perftest computes its latency table of a run of a
// duration (-D) from, in its print_report_lat_duration: the iterations
// of its measuring window and the window's measured time.
type LatDur struct {
	// Iterations are those run in the window.
	Iterations uint64
	// Window is the time they took, measured, pauses included: perftest's
	// cycles from the start to the end of its SAMPLE_STATE (with a
	// margin, about -D less the two margins; without, -D), gorperf's
	// bench.SizeResult.Window.
	Window time.Duration
	// Halves is perftest's rtt_factor of 2: an iteration of write_lat and
	// send_lat is a round trip, whose latency is half of it; one of
	// read_lat and atomic_lat is a request (rtt_factor 1).
	Halves bool
}

// Figures returns perftest's figures of d: t_avg, the window divided by
// the rtt_factor and by the iterations, in nanoseconds, and "tps
// average", the iterations divided by the window, a second, with no
// rtt_factor (an iteration a transaction). They are zero for a window
// or iterations of zero, where perftest's divisions give inf or nan.
func (d LatDur) Figures() (avg, tps float64) {
	if d.Iterations == 0 || d.Window <= 0 {
		return 0, 0
	}
	w := float64(d.Window)
	avg = w / float64(d.Iterations)
	if d.Halves {
		avg /= 2
	}
	return avg, float64(d.Iterations) / (w / 1e9)
}

// WriteLatWindowRow writes one row of perftest's latency table of a run
// of a duration (its print_report_lat_duration) for messages of size
// bytes, computed as perftest computes it (LatDur.Figures): the
// iterations of the measuring window, t_avg in microseconds and "tps
// average". Both come from the window's time, not from the samples,
// which leave out gorperf's pauses (a yield to the scheduler every few
// milliseconds), so that iterations ÷ tps is the window. Where l has no
// samples (the side the peer measures) the row says so, as WriteLatRow's.
func WriteLatWindowRow(w io.Writer, size int, d LatDur, l stats.Latency) error {
	p := &printer{w: w}
	if l.N == 0 {
		p.printf(" %-7d %s\n", size, peerMeasured)
		return p.err
	}
	avg, tps := d.Figures()
	p.printf(latDurRow, size, d.Iterations, avg/nsPerUsec, tps)
	return p.err
}

// peerMeasured stands in a latency row, after the size, for the figures
// of a side that kept no samples: the peer timed the test (gorperf's
// client, the side that sends first or posts the reads and atomics),
// and this side only answered or let its memory be read.
const peerMeasured = "measured by the peer: this side keeps no latency samples"

// WriteLatRow writes one row of the latency table for messages of size
// bytes. iters is the number of iterations run, which perftest prints
// even though it summarizes fewer samples; l is in nanoseconds and is
// printed in microseconds. The columns are perftest's, as its
// print_report_lat computes them: all but t_min leave out the two largest
// samples (see stats.Latency), so that t_max is the second largest
// sample; the percentile line (WritePercentiles) gives the largest. Where l has no samples (l.N is 0, the side
// the peer measures) the row says so after the size instead of printing
// figures of zero.
func WriteLatRow(w io.Writer, size int, iters uint64, l stats.Latency) error {
	p := &printer{w: w}
	if l.N == 0 {
		p.printf(" %-7d %s\n", size, peerMeasured)
		return p.err
	}
	p.printf(latRow, size, iters,
		l.Min/nsPerUsec, l.TMax/nsPerUsec, l.Typical/nsPerUsec, l.Avg/nsPerUsec,
		l.Stdev/nsPerUsec, l.T99/nsPerUsec, l.T999/nsPerUsec)
	return p.err
}

// WritePercentiles writes gorperf's percentile line, meant to follow the
// perftest latency table: the nearest-rank percentiles and the maximum of
// all the samples, the largest two included (which perftest's columns
// leave out):
//
//	p50: 1.23  p90: 1.45  p99: 2.01  p99.9: 3.50  p99.99: 4.00  max: 9.12 [usec]
//
// Where the run kept only one sample in so many (l.Every over 1, see
// stats.Latency), a note follows that says so and which figures are of
// the samples kept:
//
//	sampled: 1 in 4 samples kept (50000000 of 200000000), evenly through the run: t_typical, 99%, 99.9%,
//	 the percentiles and any samples listed are of those; t_min, t_max, t_avg, t_stdev and max of all
//
// Where l has no samples (l.N is 0) the line says that the peer measured
// them instead.
func WritePercentiles(w io.Writer, l stats.Latency) error {
	p := &printer{w: w}
	if l.N == 0 {
		p.printf(" percentiles: measured by the peer\n")
		return p.err
	}
	p.printf(" p50: %.2f  p90: %.2f  p99: %.2f  p99.9: %.2f  p99.99: %.2f  max: %.2f [usec]\n",
		l.P50/nsPerUsec, l.P90/nsPerUsec, l.P99/nsPerUsec, l.P999/nsPerUsec, l.P9999/nsPerUsec, l.Max/nsPerUsec)
	if l.Every > 1 {
		p.printf(" sampled: 1 in %d samples kept (%d of %d), evenly through the run: t_typical, 99%%, 99.9%%,\n"+
			"  the percentiles and any samples listed are of those; t_min, t_max, t_avg, t_stdev and max of all\n",
			l.Every, l.Stored, l.N)
	}
	return p.err
}

// WriteSamples writes latency samples in nanoseconds as perftest's -U
// and -H list them, in microseconds: a "#, usec" line, then "i, value"
// for each, numbered from 1, the value as C's %g prints it (six
// significant digits, Go's %.6g), as perftest's.
func WriteSamples(w io.Writer, samples []float64) error {
	p := &printer{w: w}
	p.printf("#, usec\n")
	for i, v := range samples {
		p.printf("%d, %.6g\n", i+1, v/nsPerUsec)
	}
	return p.err
}

// WriteHistogram writes a latency histogram of nanosecond samples in
// microseconds, under a title line, with bars at most width characters
// long. It writes nothing for a histogram without buckets.
func WriteHistogram(w io.Writer, h stats.Histogram, width int) error {
	if len(h.Buckets) == 0 {
		return nil
	}
	p := &printer{w: w}
	p.printf(" latency histogram [usec]:\n")
	if p.err != nil {
		return p.err
	}
	return h.Scale(1/nsPerUsec).Render(w, width)
}
