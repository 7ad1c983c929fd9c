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
