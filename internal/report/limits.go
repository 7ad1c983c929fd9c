package report

import (
	"fmt"
	"strings"
)

// Limits are the pass marks of a run, as perftest's verifier limits
// (-w, -y) and two of gorperf's own for latency. A zero field sets no
// limit. Unlike perftest's, every size must pass, not one of them.
type Limits struct {
	// BW is the least average bandwidth, in MB/sec, or in Gbit/sec when
	// Gbits is set (the unit the report shows).
	BW    float64
	Gbits bool
	// MsgRate is the least average message rate, in Mpps.
	MsgRate float64
	// Typical and P99 are the most t_typical and 99th percentile, in µs.
	Typical float64
	P99     float64
}

// Set reports whether l sets any limit.
func (l Limits) Set() bool { return l != Limits{Gbits: l.Gbits} }

// LimitError is a run that measured what it should and missed a limit.
type LimitError struct {
	// Misses says, one line each, which size missed which limit.
	Misses []string
}

func (e *LimitError) Error() string {
	if len(e.Misses) == 1 {
		return "limit missed: " + e.Misses[0]
	}
	return fmt.Sprintf("%d limits missed: %s", len(e.Misses), strings.Join(e.Misses, "; "))
}

// Check returns a *LimitError naming each size of results that misses
// one of l's limits, or nil if they all pass. A limit the test does not
// report (a latency limit in a bandwidth test, say) fails every size,
// and so does an empty results: a run that measured nothing has not
// shown that it meets the mark. The exception is a latency test's size
// that the peer measured (MeasuredByPeer: the server's side of read_lat
// and atomic_lat, which only lets its memory be used): it has no latency
// figures to check, and its latency limits are left to the side that
// timed it, which checks its own figures where it was given them: such
// a server, given --limit_lat or --limit_p99, does not fail for lack of
// samples. A write_lat or send_lat server times the test too, and its
// limits apply to its own figures.
// (perftest's latency tests have no such limits at all, and their
// passive side checks nothing.)
func (l Limits) Check(results []SizeResult) error {
	if !l.Set() {
		return nil
	}
	var misses []string
	if len(results) == 0 {
		misses = append(misses, "nothing was measured")
	}
	unit := "MB/sec"
	if l.Gbits {
		unit = "Gbit/sec"
	}
	for _, r := range results {
		if r.RateUnknown() && (l.BW > 0 || l.MsgRate > 0) {
			// A pass mark is not met by a rate not measured.
			misses = append(misses, fmt.Sprintf("%d bytes: rates unknown (%s)", r.Bytes, rateUnknownNote))
			continue
		}
		bw := r.BWAvgMBps
		if l.Gbits {
			bw = r.BWAvgGbps
		}
		if l.BW > 0 && !(bw >= l.BW) {
			misses = append(misses, fmt.Sprintf("%d bytes: bandwidth %.2f %s, below %g", r.Bytes, bw, unit, l.BW))
		}
		if l.MsgRate > 0 && !(r.MsgRateMpps >= l.MsgRate) {
			misses = append(misses, fmt.Sprintf("%d bytes: message rate %.6f Mpps, below %g", r.Bytes, r.MsgRateMpps, l.MsgRate))
		}
		if r.MeasuredByPeer {
			continue // no latency figures here; the peer checks them
		}
		if l.Typical > 0 && !(r.TTypicalUs > 0 && r.TTypicalUs <= l.Typical) {
			misses = append(misses, fmt.Sprintf("%d bytes: t_typical %.2f µs, above %g", r.Bytes, r.TTypicalUs, l.Typical))
		}
		// The table's 99% column, perftest's (the two largest samples
		// left out), not the nearest rank over every sample (p99).
		if l.P99 > 0 && !(r.Percentile99Us > 0 && r.Percentile99Us <= l.P99) {
			misses = append(misses, fmt.Sprintf("%d bytes: 99%% percentile %.2f µs, above %g", r.Bytes, r.Percentile99Us, l.P99))
		}
	}
	if len(misses) == 0 {
		return nil
	}
	return &LimitError{Misses: misses}
}
