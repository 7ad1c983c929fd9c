package report

import (
	"fmt"
	"io"

	"github.com/gorperf/gorperf/internal/stats"
)

// Value is the one figure perftest's --output prints for each size,
// instead of its header and tables.
type Value int

// The figures --output can print.
const (
	NoValue      Value = iota // the full report
	BWValue                   // average bandwidth, MB/sec or, with --report_gbits, Gbit/sec
	MsgRateValue              // average message rate, Mpps
	LatValue                  // average latency, µs
)

// ParseValue parses --output's argument: bandwidth, message_rate or
// latency, as perftest spells them.
func ParseValue(s string) (Value, error) {
	switch s {
	case "bandwidth":
		return BWValue, nil
	case "message_rate":
		return MsgRateValue, nil
	case "latency":
		return LatValue, nil
	}
	return NoValue, fmt.Errorf("%q: want bandwidth, message_rate or latency", s)
}

// Latency reports whether v is a latency test's figure.
func (v Value) Latency() bool { return v == LatValue }

// WriteBWValue writes b's figure for v on a line of its own, with
// perftest's six decimals.
func WriteBWValue(w io.Writer, v Value, b stats.Bandwidth, gbits bool) error {
	x := b.MsgRateMpps
	if v == BWValue {
		x = b.AvgMBps
		if gbits {
			_, x = b.Gbps()
		}
	}
	_, err := fmt.Fprintf(w, "%f\n", x)
	return err
}

// WriteLatValue writes l's average latency on a line of its own, in
// microseconds with perftest's six decimals; l is in nanoseconds, as
// stats.Summarize gives it. A side that kept no samples (l.N is 0: the
// peer measured the latency) writes nothing, as perftest's passive side
// prints no figure.
func WriteLatValue(w io.Writer, l stats.Latency) error {
	if l.N == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "%f\n", l.Avg/nsPerUsec)
	return err
}

// WriteLatWindowValue writes, for a latency test of a duration (-D), the
// t_avg of its table (WriteLatWindowRow): the measuring window divided by
// the rtt_factor and the iterations (LatDur.Figures), in microseconds
// with perftest's six decimals, as perftest's --output latency prints
// print_report_lat_duration's. A side that kept no samples writes
// nothing, as WriteLatValue.
func WriteLatWindowValue(w io.Writer, d LatDur, l stats.Latency) error {
	if l.N == 0 {
		return nil
	}
	avg, _ := d.Figures()
	_, err := fmt.Fprintf(w, "%f\n", avg/nsPerUsec)
	return err
}
