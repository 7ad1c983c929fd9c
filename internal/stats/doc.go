// Package stats turns raw measurements into the numbers gorperf reports:
// latency summaries and percentiles, latency histograms, bandwidth and
// message rate, and interval accumulators for --run-infinitely.
//
// The package is pure Go and does no I/O except for rendering a histogram
// to an io.Writer. Latency samples are float64 nanoseconds: a float keeps
// the sub-nanosecond resolution of cycle-counter based timing, which a
// time.Duration would round away. Bandwidth follows perftest: "MB" is
// 2^20 bytes (perftest labels MiB/sec as MB/sec) and Gbit/s is
// bytes*8/1e9 per second.
package stats
