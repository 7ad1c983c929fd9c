package stats

import "time"

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
// peakInterval is the shortest time observed to complete one message,
// averaged over any run of consecutive messages (perftest's minimum
// per-completion interval). When it is zero, or longer than the average
// time per message, the peak is the average: perftest's search includes
// the whole run, so its peak is never below the average either.
//
// A non-positive elapsed or zero iters gives zero rates.
func ComputeBandwidth(size int, iters uint64, elapsed, peakInterval time.Duration) Bandwidth {
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
	if peakInterval > 0 && float64(peakInterval)*float64(iters) < ns {
		b.PeakMBps = float64(size) * 1e9 / float64(peakInterval) / BytesPerMB
	}
	return b
}

// Gbps returns the peak and average bandwidth in Gbit/sec (bytes*8/1e9 a
// second), the unit of perftest's --report_gbits.
func (b Bandwidth) Gbps() (peak, avg float64) {
	return mbpsToGbps(b.PeakMBps), mbpsToGbps(b.AvgMBps)
}

func mbpsToGbps(mbps float64) float64 {
	return mbps * BytesPerMB * 8 / 1e9
}
