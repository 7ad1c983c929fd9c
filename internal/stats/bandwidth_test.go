package stats

import (
	"testing"
	"time"
)

func TestComputeBandwidth(t *testing.T) {
	tests := []struct {
		name             string
		size             int
		iters            uint64
		elapsed, peak    time.Duration
		want             Bandwidth
		wantPeakG, wantG float64
	}{
		{
			// 64 KiB x 5000 in 1 s = 327680000 B/s = 312.5 MiB/s.
			name: "64K no peak", size: 65536, iters: 5000, elapsed: time.Second,
			want:      Bandwidth{Bytes: 65536, Iterations: 5000, Elapsed: time.Second, PeakMBps: 312.5, AvgMBps: 312.5, MsgRateMpps: 0.005},
			wantPeakG: 2.62144, wantG: 2.62144,
		},
		{
			// The fastest message took 100 us: 65536 B / 1e-4 s = 625 MiB/s.
			name: "64K with peak", size: 65536, iters: 5000, elapsed: time.Second, peak: 100 * time.Microsecond,
			want:      Bandwidth{Bytes: 65536, Iterations: 5000, Elapsed: time.Second, PeakMBps: 625, AvgMBps: 312.5, MsgRateMpps: 0.005},
			wantPeakG: 5.24288, wantG: 2.62144,
		},
		{
			// A "peak" slower than the average is ignored.
			name: "slow peak", size: 1 << 20, iters: 1000, elapsed: 500 * time.Millisecond, peak: time.Millisecond,
			want:      Bandwidth{Bytes: 1 << 20, Iterations: 1000, Elapsed: 500 * time.Millisecond, PeakMBps: 2000, AvgMBps: 2000, MsgRateMpps: 0.002},
			wantPeakG: 16.777216, wantG: 16.777216,
		},
		{
			// 2 bytes, 4M messages in 2 s: 2 Mpps, 8 MiB/s.
			name: "small", size: 2, iters: 4 << 20, elapsed: 2 * time.Second,
			want:      Bandwidth{Bytes: 2, Iterations: 4 << 20, Elapsed: 2 * time.Second, PeakMBps: 4, AvgMBps: 4, MsgRateMpps: 2.097152},
			wantPeakG: 0.033554432, wantG: 0.033554432,
		},
		{
			name: "no time", size: 8, iters: 10,
			want: Bandwidth{Bytes: 8, Iterations: 10},
		},
		{
			name: "no iterations", size: 8, elapsed: time.Second,
			want: Bandwidth{Bytes: 8, Elapsed: time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeBandwidth(tt.size, tt.iters, tt.elapsed, tt.peak)
			if got != tt.want {
				t.Errorf("ComputeBandwidth = %+v, want %+v", got, tt.want)
			}
			peak, avg := got.Gbps()
			if peak != tt.wantPeakG || avg != tt.wantG {
				t.Errorf("Gbps() = %v, %v; want %v, %v", peak, avg, tt.wantPeakG, tt.wantG)
			}
		})
	}
}

// TestPeakWindow: a peak is the fastest window's messages over its time,
// not a whole number of nanoseconds a message, which read 4.5% high at
// 20.9 ns a message (rounded down to 20) and 11% at 6.67 ns (to 6).
func TestPeakWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		peak     Window
		wantMBps float64 // size*Messages/Elapsed, worked out by hand
	}{
		// 64 B, 1000 messages in 20.9 us: 47.85 million a second.
		{"50 Mpps", 64, Window{Messages: 1000, Elapsed: 20900}, 64 * 1000 / 20.9e-6 / (1 << 20)},
		// 64 B, 3 messages in 20 ns: 150 million a second.
		{"150 Mpps", 64, Window{Messages: 3, Elapsed: 20}, 64 * 3 / 20e-9 / (1 << 20)},
		// 8 B, 65536 messages in 1 ms.
		{"65536 in 1 ms", 8, Window{Messages: 65536, Elapsed: time.Millisecond}, 8 * 65536 / 1e-3 / (1 << 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The whole run: ten times the window's messages at a fifth
			// of its rate.
			iters := tc.peak.Messages * 10
			b := ComputeBandwidthPeak(tc.size, iters, tc.peak.Elapsed*50, tc.peak)
			if rel := b.PeakMBps/tc.wantMBps - 1; rel > 1e-12 || rel < -1e-12 {
				t.Errorf("peak %v MB/s, want %v (%+.2g)", b.PeakMBps, tc.wantMBps, rel)
			}
			perMsg := tc.peak.Elapsed / time.Duration(tc.peak.Messages) // whole ns, the old way
			old := ComputeBandwidth(tc.size, iters, tc.peak.Elapsed*50, perMsg)
			t.Logf("peak %.2f MB/s; whole ns a message gave %.2f (%+.1f%%)", b.PeakMBps, old.PeakMBps, 100*(old.PeakMBps/b.PeakMBps-1))
			if wantAvg := tc.wantMBps / 5; b.AvgMBps/wantAvg-1 > 1e-12 || b.AvgMBps/wantAvg-1 < -1e-12 {
				t.Errorf("average %v MB/s, want %v", b.AvgMBps, wantAvg)
			}
		})
	}
}

// TestWindowFaster: windows compare by rate, exactly, even where their
// products differ by one in 2^106; an empty window is never faster.
func TestWindowFaster(t *testing.T) {
	for _, tc := range []struct {
		a, b Window
		want bool
	}{
		{Window{3, 20}, Window{1, 7}, true},  // 6.67 ns against 7
		{Window{3, 21}, Window{1, 7}, false}, // the same rate
		{Window{1, 7}, Window{3, 20}, false},
		{Window{1000, 20900}, Window{1, 21}, true},
		{Window{1 << 53, 1<<53 - 1}, Window{1<<53 + 1, 1 << 53}, true},
		{Window{1<<53 + 1, 1 << 53}, Window{1 << 53, 1<<53 - 1}, false},
		{Window{1, 1}, Window{}, true},
		{Window{}, Window{1, 1}, false},
		{Window{5, 0}, Window{1, 1 << 40}, false},
		{Window{1, 1 << 40}, Window{5, 0}, true},
		{Window{}, Window{}, false},
	} {
		if got := tc.a.Faster(tc.b); got != tc.want {
			t.Errorf("%+v.Faster(%+v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
