package stats_test

import (
	"fmt"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

func ExampleSummarize() {
	// Round-trip halves in nanoseconds, one per iteration.
	samples := []float64{1520, 1480, 1500, 1510, 9000, 1490}
	l, err := stats.Summarize(samples)
	if err != nil {
		fmt.Println(err)
		return
	}
	// perftest's columns leave out the two largest samples; Max and
	// the percentiles keep them.
	fmt.Printf("n=%d min=%.0f t_max=%.0f typical=%.0f p99=%.0f max=%.0f\n", l.N, l.Min, l.TMax, l.Typical, l.P99, l.Max)
	// Output: n=6 min=1480 t_max=1520 typical=1495 p99=9000 max=9000
}

func ExampleComputeBandwidth() {
	// 5000 messages of 64 KiB in one second; the fastest took 100 us.
	b := stats.ComputeBandwidth(65536, 5000, time.Second, 100*time.Microsecond)
	peak, avg := b.Gbps()
	fmt.Printf("%.2f MB/s peak, %.2f MB/s avg, %.6f Mpps, %.5f Gb/s avg, %.5f Gb/s peak\n",
		b.PeakMBps, b.AvgMBps, b.MsgRateMpps, avg, peak)
	// Output: 625.00 MB/s peak, 312.50 MB/s avg, 0.005000 Mpps, 2.62144 Gb/s avg, 5.24288 Gb/s peak
}

func ExampleAccumulator() {
	start := time.Unix(0, 0)
	acc := stats.NewAccumulator(start)
	acc.Add(1000*4096, 1000) // from the completion loop
	b := acc.Snapshot(start.Add(time.Second))
	fmt.Printf("%d x %d B: %.6f MB/s\n", b.Iterations, b.Bytes, b.AvgMBps)
	// Output: 1000 x 4096 B: 3.906250 MB/s
}
