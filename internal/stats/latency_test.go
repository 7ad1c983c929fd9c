package stats

import (
	"errors"
	"math"
	"math/rand/v2"
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
			want: Latency{N: 1, Min: 7, Max: 7, Kept: 1, TMax: 7, Typical: 7, Avg: 7, T99: 7, T999: 7,
				P50: 7, P90: 7, P99: 7, P999: 7, P9999: 7},
		},
		{
			// Of two, the smaller is kept and the larger is t_max.
			name:    "two",
			samples: []float64{5, 1},
			want: Latency{N: 2, Min: 1, Max: 5, Kept: 1, TMax: 5, Typical: 1, Avg: 1, T99: 5, T999: 5,
				P50: 1, P90: 5, P99: 5, P999: 5, P9999: 5},
		},
		{
			// perftest's smallest case: one sample kept.
			name:    "three",
			samples: []float64{3, 1, 2},
			want: Latency{N: 3, Min: 1, Max: 3, Kept: 1, TMax: 2, Typical: 1, Avg: 1, T99: 2, T999: 2,
				P50: 2, P90: 3, P99: 3, P999: 3, P9999: 3},
		},
		{
			name:    "four",
			samples: []float64{4, 3, 2, 1},
			want: Latency{N: 4, Min: 1, Max: 4, Kept: 2, TMax: 3, Typical: 1.5, Avg: 1.5, Stdev: 0.5, T99: 3, T999: 3,
				P50: 2, P90: 4, P99: 4, P999: 4, P9999: 4},
		},
		{
			// The kept eight are a classic set of population stdev 2;
			// the two outliers are left out of perftest's figures.
			name:    "stdev",
			samples: []float64{9, 2, 200, 5, 4, 4, 7, 100, 4, 5},
			want: Latency{N: 10, Min: 2, Max: 200, Kept: 8, TMax: 100, Typical: 4.5, Avg: 5, Stdev: 2, T99: 100, T999: 100,
				P50: 5, P90: 100, P99: 200, P999: 200, P9999: 200},
		},
		{
			name:    "1..100",
			samples: seq(100),
			want: Latency{N: 100, Min: 1, Max: 100, Kept: 98, TMax: 99, Typical: 49.5, Avg: 49.5,
				Stdev: math.Sqrt((98*98 - 1) / 12.0), T99: 99, T999: 99,
				P50: 50, P90: 90, P99: 99, P999: 100, P9999: 100},
		},
		{
			name:    "1..1000",
			samples: seq(1000),
			want: Latency{N: 1000, Min: 1, Max: 1000, Kept: 998, TMax: 999, Typical: 499.5, Avg: 499.5,
				Stdev: math.Sqrt((998*998 - 1) / 12.0), T99: 990, T999: 999,
				P50: 500, P90: 900, P99: 990, P999: 999, P9999: 1000},
		},
		{
			name:    "1..10000",
			samples: seq(10000),
			want: Latency{N: 10000, Min: 1, Max: 10000, Kept: 9998, TMax: 9999, Typical: 4999.5, Avg: 4999.5,
				Stdev: math.Sqrt((9998*9998 - 1) / 12.0), T99: 9900, T999: 9990,
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

// perftestLat is perftest's print_report_lat (src/perftest_parameters.c)
// transcribed line by line, on samples already in the report's unit: it
// sorts them, drops LAT_MEASURE_TAIL, and reads t_max, the median and the
// percentiles at the same indexes. stdev is its formula in floating
// point, intStdev the one it runs, which truncates each deviation to an
// int. perftest's samples are whole cycles, so its median of an even
// count truncates to a cycle; these are floats, and that step is left
// out. It needs 3 samples or more, as perftest does.
func perftestLat(samples []float64) (tMin, tMax, typical, avg, stdev, intStdev, p99, p999 float64) {
	delta := slices.Clone(samples)
	slices.Sort(delta)
	measureCnt := len(delta) - 2 // measure_cnt - LAT_MEASURE_TAIL
	var median float64           // get_median(measure_cnt, delta)
	if (measureCnt-1)%2 != 0 {
		median = (delta[measureCnt/2] + delta[measureCnt/2-1]) / 2
	} else {
		median = delta[measureCnt/2]
	}
	var averageSum float64
	for i := 0; i < measureCnt; i++ {
		averageSum += delta[i]
	}
	average := averageSum / float64(measureCnt)
	var stdevSum, intStdevSum float64
	for i := 0; i < measureCnt; i++ {
		d := average - delta[i]
		stdevSum += d * d
		tempVar := int(d)                                          // int temp_var = average - delta[i]
		intStdevSum += float64(int(math.Pow(float64(tempVar), 2))) // int pow_var
	}
	iters99 := int(math.Ceil(float64(measureCnt) * 0.99))
	iters999 := int(math.Ceil(float64(measureCnt) * 0.999))
	return delta[0], delta[measureCnt], median, average,
		math.Sqrt(stdevSum / float64(measureCnt)), math.Sqrt(intStdevSum / float64(measureCnt)),
		delta[iters99], delta[iters999]
}

// TestSummarizeAsPerftest: perftest's columns from Summarize are what
// perftest's own arithmetic gives, on sets whose largest samples are
// outliers that perftest leaves out (and on sets that have none), of
// every size from perftest's least, 3, up; the true maximum stays in Max.
func TestSummarizeAsPerftest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sets [][]float64
	for n := 3; n <= 2100; n += 1 + n/8 {
		s := make([]float64, n)
		for i := range s {
			s[i] = 2 + rng.Float64() // µs
		}
		for k := range min(n/100+2, n) { // outliers, 10 to 1000 times as slow
			s[rng.IntN(n)] = (2 + rng.Float64()) * float64(int(10)<<(k%7))
		}
		sets = append(sets, s, seq(n))
	}
	sets = append(sets, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000})
	for _, s := range sets {
		l, err := Summarize(s)
		if err != nil {
			t.Fatal(err)
		}
		tMin, tMax, typical, avg, stdev, _, p99, p999 := perftestLat(s)
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
		if l.Min != tMin || l.TMax != tMax || l.Typical != typical || !near(l.Avg, avg) ||
			!near(l.Stdev, stdev) || l.T99 != p99 || l.T999 != p999 {
			t.Fatalf("%d samples: Summarize gives t_min %v t_max %v t_typical %v t_avg %v t_stdev %v 99%% %v 99.9%% %v;\n"+
				"perftest: %v %v %v %v %v %v %v", len(s),
				l.Min, l.TMax, l.Typical, l.Avg, l.Stdev, l.T99, l.T999, tMin, tMax, typical, avg, stdev, p99, p999)
		}
		if l.Max != slices.Max(s) || l.Kept != len(s)-PerftestTail {
			t.Fatalf("%d samples: Max %v (want %v), Kept %d", len(s), l.Max, slices.Max(s), l.Kept)
		}
	}

	// 1..10 and two outliers, worked by hand: the outliers are t_max
	// (the smaller one) and Max, and move neither the mean nor the
	// stdev. perftest's int deviations (4, 3, 2, 1, 0, 0, -1, ...)
	// would give sqrt(6) for the true sqrt(8.25).
	l, _ := Summarize([]float64{1000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100})
	_, _, _, _, _, intStdev, _, _ := perftestLat([]float64{1000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100})
	if l.TMax != 100 || l.Max != 1000 || l.Avg != 5.5 || l.Typical != 5.5 || !(math.Abs(l.Stdev-math.Sqrt(8.25)) < 1e-12) ||
		l.T99 != 100 || l.T999 != 100 || intStdev != math.Sqrt(6) {
		t.Errorf("1..10, 100, 1000: %+v (perftest's int stdev %v)", l, intStdev)
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

// tallied returns the Tally of samples.
func tallied(samples []float64) Tally {
	var t Tally
	for _, v := range samples {
		t.Add(v)
	}
	return t
}

// near reports whether got is within rel of want, relatively.
func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1)
}

// TestSummarizeKeptAll: where every sample was kept, SummarizeKept is
// Summarize, figure for figure, and says nothing of sampling.
func TestSummarizeKeptAll(t *testing.T) {
	samples := []float64{9, 2, 200, 5, 4, 4, 7, 100, 4, 5}
	want, err := Summarize(samples)
	if err != nil {
		t.Fatal(err)
	}
	for _, every := range []int{0, 1} {
		got, err := SummarizeKept(samples, every, tallied(samples))
		if err != nil || got != want {
			t.Errorf("every %d: %+v, %v; want %+v", every, got, err, want)
		}
	}
	if _, err := SummarizeKept(nil, 1, Tally{}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("no samples: %v", err)
	}
}

// TestTallyExact: the exact figures SummarizeKept takes from a Tally are
// those Summarize computes from all the samples (perftest's t_max, t_avg
// and t_stdev without the two largest), here with outliers, the first
// sample among them (the sums' shift), and ties at the top; the order
// figures are the kept samples', and Every and Stored say how many.
func TestTallyExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	samples := make([]float64, 100_003)
	for i := range samples {
		samples[i] = 2000 + float64(r.IntN(400))/2
		if r.IntN(1000) == 0 {
			samples[i] += float64(r.IntN(100_000))
		}
	}
	samples[0] = 50_000
	samples[1000], samples[2000] = 1e6, 1e6 // the largest two tie
	all, err := Summarize(samples)
	if err != nil {
		t.Fatal(err)
	}
	var kept []float64
	for i := 0; i < len(samples); i += 4 {
		kept = append(kept, samples[i])
	}
	fromKept, err := Summarize(kept)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SummarizeKept(kept, 4, tallied(samples))
	if err != nil {
		t.Fatal(err)
	}
	if got.N != all.N || got.Min != all.Min || got.Max != all.Max || got.TMax != all.TMax || got.Kept != all.Kept ||
		!near(got.Avg, all.Avg, 1e-12) || !near(got.Stdev, all.Stdev, 1e-9) {
		t.Errorf("exact figures %+v\nwant those of all the samples %+v", got, all)
	}
	if got.Typical != fromKept.Typical || got.T99 != fromKept.T99 || got.T999 != fromKept.T999 ||
		got.P50 != fromKept.P50 || got.P99 != fromKept.P99 || got.P9999 != fromKept.P9999 {
		t.Errorf("order figures %+v\nwant those of the kept samples %+v", got, fromKept)
	}
	if got.Every != 4 || got.Stored != len(kept) {
		t.Errorf("every %d, stored %d; want 4, %d", got.Every, got.Stored, len(kept))
	}
	if got.T999 > got.TMax || got.P9999 > got.Max || got.P50 < got.Min {
		t.Errorf("figures out of order: %+v", got)
	}
	// A tally of fewer samples than were kept is not the run's.
	if _, err := SummarizeKept(kept, 4, tallied(kept[:10])); err == nil {
		t.Error("a tally of 10 samples for more kept: no error")
	}
}

// TestTallyLongRun: over ten million samples whose first is far from the
// rest, the tally's mean and standard deviation are those of a two-pass
// computation to within 1e-9: its compensated sums lose nothing to the
// length of the run.
func TestTallyLongRun(t *testing.T) {
	if testing.Short() {
		t.Skip("ten million samples")
	}
	r := rand.New(rand.NewPCG(3, 4))
	samples := make([]float64, 10_000_000)
	for i := range samples {
		samples[i] = 2000 + r.NormFloat64()*3
	}
	samples[0] = 1e7
	tl := tallied(samples)
	m := float64(len(samples) - PerftestTail)
	trimmed := slices.Sorted(slices.Values(samples))[:len(samples)-PerftestTail]
	var sum float64
	for _, v := range trimmed {
		sum += v
	}
	mean := sum / m
	var sq float64
	for _, v := range trimmed {
		sq += (v - mean) * (v - mean)
	}
	got, err := SummarizeKept(samples[:1000], 2, tl)
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Avg, mean, 1e-12) || !near(got.Stdev, math.Sqrt(sq/m), 1e-9) {
		t.Errorf("mean %v, stdev %v; two passes give %v, %v", got.Avg, got.Stdev, mean, math.Sqrt(sq/m))
	}
}

// TestTallyAddAllocs: a Tally takes a sample without allocating.
func TestTallyAddAllocs(t *testing.T) {
	var tl Tally
	x := 1.0
	if n := testing.AllocsPerRun(1000, func() { tl.Add(x); x++ }); n != 0 {
		t.Errorf("%v allocations a sample", n)
	}
}
