//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// TestAddBandwidthPeak: the peak of threads that ran at once is the sum
// of theirs only where each timed a window faster than its own run;
// where one's peak is only its average (a short run: no window, or none
// faster than the run), the sum's peak is its average, not the
// threads' averages over their own times added up, which is above it
// where one thread took longer (write-bw -q 4 -n 200 -s 4096 --threads 2
// read 29.78 = 12.23 + 17.54 over an average of 24.47). It is never
// below the average, and a one-way test's receivers have none.
func TestAddBandwidthPeak(t *testing.T) {
	const size = 4096
	// run is a thread's 400 messages in el, its fastest window of 256
	// taking win (0: none timed).
	run := func(el, win time.Duration) stats.Bandwidth {
		return stats.ComputeBandwidthPeak(size, 400, el, stats.Window{Messages: 256, Elapsed: win})
	}
	slow, fast := run(128*time.Millisecond, 0), run(89*time.Millisecond, 0)
	slowWin := run(128*time.Millisecond, 40*time.Millisecond) // 25 MB/s, above its 12.2
	fastWin := run(89*time.Millisecond, 50*time.Millisecond)  // 20 MB/s, above its 17.6
	lateWin := run(89*time.Millisecond, 80*time.Millisecond)  // a window slower than its run
	if lateWin.PeakMBps != lateWin.AvgMBps || slowWin.PeakMBps <= slowWin.AvgMBps {
		t.Fatalf("the threads' own peaks: %+v, %+v", lateWin, slowWin)
	}
	receiver := func(b stats.Bandwidth) stats.Bandwidth { b.PeakMBps = 0; return b }
	avg := float64(size) * 800 / 0.128 / stats.BytesPerMB // 24.41 MB/s
	for _, tc := range []struct {
		name string
		bs   []stats.Bandwidth
		want float64
	}{
		{"no thread timed a window", []stats.Bandwidth{slow, fast}, avg},
		{"one's window slower than its run", []stats.Bandwidth{slowWin, lateWin}, avg},
		{"one timed none", []stats.Bandwidth{fastWin, slow}, avg},
		{"each timed one", []stats.Bandwidth{slowWin, fastWin}, slowWin.PeakMBps + fastWin.PeakMBps},
		{"one sent nothing", []stats.Bandwidth{slowWin, {Bytes: size}}, slowWin.PeakMBps},
		{"receivers", []stats.Bandwidth{receiver(slow), receiver(fast)}, 0},
	} {
		got := addBandwidth(tc.bs)
		if d := got.PeakMBps/tc.want - 1; tc.want == 0 && got.PeakMBps != 0 || tc.want != 0 && (d > 1e-12 || d < -1e-12) {
			t.Errorf("%s: peak %.4f MB/s (average %.4f), want %.4f", tc.name, got.PeakMBps, got.AvgMBps, tc.want)
		}
		if tc.want != 0 && got.PeakMBps < got.AvgMBps {
			t.Errorf("%s: peak %.4f MB/s below the average %.4f", tc.name, got.PeakMBps, got.AvgMBps)
		}
	}

	// Both ways, each direction so: without windows the row's peak is
	// its average, as a bidirectional connection's is.
	l0, r0, l1, r1 := slow, fast, fast, slow
	s := addSizes([]SizeResult{{Size: size, BW: bothWays(l0, r0), Local: &l0, Remote: &r0},
		{Size: size, BW: bothWays(l1, r1), Local: &l1, Remote: &r1}})
	if s.BW.PeakMBps != s.BW.AvgMBps || s.Local.PeakMBps != s.Local.AvgMBps || s.Remote.PeakMBps != s.Remote.AvgMBps {
		t.Errorf("both ways: peak %.4f MB/s over %.4f (each way %.4f over %.4f, %.4f over %.4f), want the averages",
			s.BW.PeakMBps, s.BW.AvgMBps, s.Local.PeakMBps, s.Local.AvgMBps, s.Remote.PeakMBps, s.Remote.AvgMBps)
	}
}
