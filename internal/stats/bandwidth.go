package stats

import (
	"math/bits"
	"time"
)

// BytesPerMB is the size of perftest's "MB": 2^20 bytes. perftest's
// default report is in MiB/sec, labelled MB/sec; gorperf keeps both.
const BytesPerMB = 1 << 20

// Bandwidth is the result of a bandwidth test for one message size.
type Bandwidth struct {
	// Bytes is the message size.
	Bytes int
	// Iterations is the number of messages completed.
	Iterations uint64
	// Elapsed is the time the messages took, from the first post to the
	// last completion.
	Elapsed time.Duration
	// PeakMBps is the peak bandwidth in MB/sec (MB = 2^20 bytes).
	PeakMBps float64
	// AvgMBps is the average bandwidth in MB/sec (MB = 2^20 bytes).
	AvgMBps float64
	// MsgRateMpps is the average message rate in millions of messages a
	// second.
	MsgRateMpps float64
}

// ComputeBandwidth computes the bandwidth of iters messages of size bytes
// completed in elapsed, as perftest does:
//
//	average  = size*iters/elapsed / 2^20      MB/sec
//	msg rate = iters/elapsed / 1e6             Mpps
//	peak     = size/peakInterval / 2^20        MB/sec
//
// peakInterval is the shortest time observed to complete one message;
// ComputeBandwidthPeak takes the window of messages it was measured over
// instead, which keeps fractions of a nanosecond. When it is zero, or
// longer than the average time per message, the peak is the average:
// perftest's search includes the whole run, so its peak is never below
// the average either.
//
// A non-positive elapsed or zero iters gives zero rates: with iters
// above zero, rates that are unknown (RateUnknown), not zero.
func ComputeBandwidth(size int, iters uint64, elapsed, peakInterval time.Duration) Bandwidth {
	return ComputeBandwidthPeak(size, iters, elapsed, Window{Messages: 1, Elapsed: peakInterval})
}

// Window is a run of consecutive messages and the time they took. A
// bandwidth test's peak is its fastest window, as perftest's is the
// shortest time per message over any run of consecutive messages (from
// the first one's post to the last one's completion, in whole CPU cycles
// a message). The window is kept whole, count and time, so that its time
// per message is not rounded: in whole nanoseconds a message, a peak of
// 50 million messages a second (20.9 ns each, rounded down to 20) would
// read 4.5% high, and of 150 million 11%.
type Window struct {
	Messages uint64        // messages completed in the window
	Elapsed  time.Duration // the time they took
}

// Faster reports whether w's messages came at a higher rate than o's,
// compared exactly. A window without messages or time is never faster,
// and any other is faster than it.
func (w Window) Faster(o Window) bool {
	if w.Messages == 0 || w.Elapsed <= 0 {
		return false
	}
	if o.Messages == 0 || o.Elapsed <= 0 {
		return true
	}
	// w.Elapsed/w.Messages < o.Elapsed/o.Messages, in 128-bit products.
	hw, lw := bits.Mul64(uint64(w.Elapsed), o.Messages)
	ho, lo := bits.Mul64(uint64(o.Elapsed), w.Messages)
	return hw < ho || hw == ho && lw < lo
}

// ComputeBandwidthPeak is ComputeBandwidth with the peak given as the
// fastest window of messages:
//
//	peak = size*peak.Messages/peak.Elapsed / 2^20   MB/sec
//
// A window without messages or time, or slower than the whole run's
// average, gives a peak equal to the average.
func ComputeBandwidthPeak(size int, iters uint64, elapsed time.Duration, peak Window) Bandwidth {
	b := Bandwidth{Bytes: size, Iterations: iters, Elapsed: elapsed}
	if elapsed <= 0 || iters == 0 {
		return b
	}
	// Divide by whole nanoseconds rather than by Duration.Seconds(), whose
	// rounding would show in results such as 781.2499999999999.
	ns := float64(elapsed)
	b.AvgMBps = float64(size) * float64(iters) * 1e9 / ns / BytesPerMB
	b.MsgRateMpps = float64(iters) * 1e3 / ns
	b.PeakMBps = b.AvgMBps
	if peak.Faster(Window{Messages: iters, Elapsed: elapsed}) {
		b.PeakMBps = float64(size) * float64(peak.Messages) * 1e9 / float64(peak.Elapsed) / BytesPerMB
	}
	return b
}

// RateUnknown reports whether b has messages and no rates: they had no
// time to be rated over (ComputeBandwidth's elapsed of 0), as where a
// receiver saw them all at once (every one in its first poll, before its
// clock started) and timed none. Its rates are to be shown as unknown,
// not as rates of zero; a rate measured is never zero.
func (b Bandwidth) RateUnknown() bool {
	return b.Iterations > 0 && b.AvgMBps == 0 && b.MsgRateMpps == 0
}

// Gbps returns the peak and average bandwidth in Gbit/sec (bytes*8/1e9 a
// second), the unit of perftest's --report_gbits.
func (b Bandwidth) Gbps() (peak, avg float64) {
	return mbpsToGbps(b.PeakMBps), mbpsToGbps(b.AvgMBps)
}

func mbpsToGbps(mbps float64) float64 {
	return mbps * BytesPerMB * 8 / 1e9
}
