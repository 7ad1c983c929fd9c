package stats

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNewHistogramLog2(t *testing.T) {
	// 1..16 with 4 buckets: ratio 16 split in four log2 steps of 1.
	h := NewHistogram(seq(16), 4)
	want := []Bucket{
		{Lo: 1, Hi: 2, Count: 1},
		{Lo: 2, Hi: 4, Count: 2},
		{Lo: 4, Hi: 8, Count: 4},
		{Lo: 8, Hi: 16, Count: 9}, // 8..16, the maximum included
	}
	if !slices.Equal(h.Buckets, want) {
		t.Errorf("buckets = %v, want %v", h.Buckets, want)
	}
	if h.Total() != 16 {
		t.Errorf("Total = %d, want 16", h.Total())
	}
}

func TestNewHistogramEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		buckets int
		want    []Bucket
	}{
		{"empty", nil, 4, nil},
		{"only NaN", []float64{math.NaN()}, 4, nil},
		{"all equal", []float64{3, 3, 3}, 8, []Bucket{{3, 3, 3}}},
		{"zero buckets", []float64{1, 2}, 0, []Bucket{{1, 2, 2}}},
		{"linear from zero", []float64{0, 1, 2, 3, 4}, 2, []Bucket{{0, 2, 2}, {2, 4, 3}}},
		{"skips NaN and Inf", []float64{1, math.NaN(), 4, math.Inf(1)}, 2, []Bucket{{1, 2, 1}, {2, 4, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHistogram(tt.samples, tt.buckets)
			if !slices.Equal(h.Buckets, tt.want) {
				t.Errorf("buckets = %v, want %v", h.Buckets, tt.want)
			}
		})
	}
}

func TestHistogramCountsEverySample(t *testing.T) {
	var s []float64
	for i := range 1000 {
		s = append(s, 1000+math.Pow(1.01, float64(i)))
	}
	for _, n := range []int{1, 3, 7, 16, 64} {
		h := NewHistogram(s, n)
		if len(h.Buckets) != n || h.Total() != len(s) {
			t.Errorf("%d buckets: got %d buckets holding %d samples", n, len(h.Buckets), h.Total())
		}
		for i, b := range h.Buckets {
			if b.Lo > b.Hi || (i > 0 && h.Buckets[i-1].Hi != b.Lo) {
				t.Errorf("%d buckets: bucket %d = %v does not follow %v", n, i, b, h.Buckets[max(i-1, 0)])
			}
		}
	}
}

func TestHistogramRender(t *testing.T) {
	h := NewHistogram(seq(16), 4).Scale(10)
	got := h.String()
	want := "" +
		" [10.00,  20.00) |####                                    | 1\n" +
		" [20.00,  40.00) |#########                               | 2\n" +
		" [40.00,  80.00) |##################                      | 4\n" +
		" [80.00, 160.00] |########################################| 9\n"
	if got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}

	var sb strings.Builder
	if err := (Histogram{}).Render(&sb, 10); err != nil || sb.Len() != 0 {
		t.Errorf("empty Render wrote %q, %v", sb.String(), err)
	}
}
