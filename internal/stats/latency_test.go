package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// seq returns the samples 1, 2, ..., n.
func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		want    Latency
	}{
		{
			name:    "one",
			samples: []float64{7},
			want:    Latency{N: 1, Min: 7, Max: 7, Typical: 7, Avg: 7, P50: 7, P90: 7, P99: 7, P999: 7, P9999: 7},
		},
		{
			// Population stdev of this classic set is exactly 2.
			name:    "stdev",
			samples: []float64{9, 2, 5, 4, 4, 7, 4, 5},
			want:    Latency{N: 8, Min: 2, Max: 9, Typical: 4.5, Avg: 5, Stdev: 2, P50: 4, P90: 9, P99: 9, P999: 9, P9999: 9},
		},
		{
			name:    "odd median",
			samples: []float64{3, 1, 2},
			want:    Latency{N: 3, Min: 1, Max: 3, Typical: 2, Avg: 2, Stdev: math.Sqrt(2.0 / 3), P50: 2, P90: 3, P99: 3, P999: 3, P9999: 3},
		},
		{
			name:    "1..100",
			samples: seq(100),
			want: Latency{N: 100, Min: 1, Max: 100, Typical: 50.5, Avg: 50.5, Stdev: math.Sqrt((100*100 - 1) / 12.0),
				P50: 50, P90: 90, P99: 99, P999: 100, P9999: 100},
		},
		{
			name:    "1..1000",
			samples: seq(1000),
			want: Latency{N: 1000, Min: 1, Max: 1000, Typical: 500.5, Avg: 500.5, Stdev: math.Sqrt((1000*1000 - 1) / 12.0),
				P50: 500, P90: 900, P99: 990, P999: 999, P9999: 1000},
		},
		{
			name:    "1..10000",
			samples: seq(10000),
			want: Latency{N: 10000, Min: 1, Max: 10000, Typical: 5000.5, Avg: 5000.5, Stdev: math.Sqrt((10000*10000 - 1) / 12.0),
				P50: 5000, P90: 9000, P99: 9900, P999: 9990, P9999: 9999},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Summarize(tt.samples)
			if err != nil {
				t.Fatalf("Summarize: %v", err)
			}
			// Stdev goes through a sum of squares and a square root;
			// allow for its last bits.
			if math.Abs(got.Stdev-tt.want.Stdev) > 1e-12*tt.want.Stdev {
				t.Errorf("Stdev = %v, want %v", got.Stdev, tt.want.Stdev)
			}
			got.Stdev = tt.want.Stdev
			if got != tt.want {
				t.Errorf("Summarize =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestSummarizeLeavesInputAlone(t *testing.T) {
	in := []float64{5, 3, 9, 1}
	orig := slices.Clone(in)
	if _, err := Summarize(in); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("Summarize reordered its input: %v, was %v", in, orig)
	}
}

func TestSummarizeErrors(t *testing.T) {
	got, err := Summarize(nil)
	if !errors.Is(err, ErrNoSamples) || got != (Latency{}) {
		t.Errorf("Summarize(nil) = %+v, %v; want zero, ErrNoSamples", got, err)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := Summarize([]float64{1, bad}); err == nil {
			t.Errorf("Summarize with %v: no error", bad)
		}
	}
}

func TestPercentile(t *testing.T) {
	s := seq(10)
	tests := []struct {
		p    float64
		want float64
	}{
		{0, 1}, // clamped up from index -1
		{0.05, 1},
		{0.1, 1},
		{0.11, 2},
		{0.5, 5},
		{0.9, 9},
		{0.91, 10},
		{1, 10},
		{1.5, 10}, // clamped down
	}
	for _, tt := range tests {
		if got := Percentile(s, tt.p); got != tt.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
	// p*N lands a hair above an integer in binary; the rank must not move.
	for n := 1; n <= 5000; n++ {
		s := seq(n)
		for _, pm := range []int{500, 900, 990, 999} { // per mille
			want := float64((pm*n + 999) / 1000) // exact ceil(pm*n/1000)
			want = max(want, 1)
			if got := Percentile(s, float64(pm)/1000); got != want {
				t.Fatalf("Percentile(1..%d, %v) = %v, want %v", n, float64(pm)/1000, got, want)
			}
		}
	}
}

// TestPercentileLargeN: a rank a true fraction above an integer rounds up
// however large N is; one that is an integer but for binary rounding
// does not. The values are their indexes, so a result names its index.
func TestPercentileLargeN(t *testing.T) {
	big := make([]float64, 16_700_099)
	for i := range big {
		big[i] = float64(i)
	}
	for _, tc := range []struct {
		n    int
		p    float64
		want float64 // the index, ceil(p*n)-1
	}{
		{16_700_099, 0.99, 16_533_098},   // p*N = 16533098.01
		{109_999, 0.9999, 109_988},       // p*N = 109988.0001
		{16_700_000, 0.99, 16_532_999},   // p*N = 16533000 exactly
		{10_000_000, 0.999, 9_989_999},   // 9990000 exactly
		{16_700_000, 0.9999, 16_698_329}, // 16698330 exactly
		{1, 0.99, 0},
		{1, 0, 0},
		{2, 0.5, 0},  // rank 1
		{2, 0.51, 1}, // rank 1.02
		{3, 1, 2},
		{100, 0.999, 99},
		{1000, 0.999, 998},
	} {
		if got := Percentile(big[:tc.n], tc.p); got != tc.want {
			t.Errorf("Percentile(0..%d, %v) = sorted[%v], want sorted[%v]", tc.n-1, tc.p, got, tc.want)
		}
	}
}
