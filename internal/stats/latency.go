package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrNoSamples is returned by Summarize when it is given no samples.
var ErrNoSamples = errors.New("stats: no latency samples")

// PerftestTail is how many of the largest samples perftest's latency
// columns leave out: print_report_lat sorts its samples and drops the
// last LAT_MEASURE_TAIL (2) before it takes t_max, t_typical, t_avg,
// t_stdev and its percentiles.
const PerftestTail = 2

// Latency summarizes per-iteration latency samples. Every field except N
// and Kept is in the unit of the samples, which gorperf keeps in
// nanoseconds.
//
// Two sets of figures come out of the same sorted samples. Typical, Avg,
// Stdev, TMax, T99 and T999, with Min, are perftest's columns as its
// print_report_lat computes them: over the Kept = N-PerftestTail smallest
// samples, the largest two left out. Max and the percentiles P50 to
// P9999 are gorperf's own, over all N samples.
type Latency struct {
	// N is the number of samples summarized.
	N int
	// Min and Max are the smallest and largest of all N samples. Min is
	// perftest's t_min too; Max is the true maximum, which perftest does
	// not print (its t_max is TMax).
	Min, Max float64

	// Kept is the number of samples perftest's columns summarize: N less
	// the PerftestTail largest, N-2, but at least 1, so that 1, 2 or 3
	// samples still give every figure (perftest itself divides by zero
	// or reads before its array with fewer than 3).
	Kept int
	// TMax is perftest's t_max: the sorted sample at index Kept, the
	// smallest of those left out, so the second largest of N > 2.
	TMax float64
	// Typical is the median of the Kept samples, perftest's t_typical:
	// the middle sample for an odd Kept, the mean of the two middle
	// samples for an even Kept.
	Typical float64
	// Avg is the arithmetic mean of the Kept samples, perftest's t_avg.
	Avg float64
	// Stdev is the population standard deviation (divided by Kept, not
	// Kept-1) of the Kept samples, perftest's t_stdev, computed in
	// floating point. perftest truncates each deviation from the mean
	// to a whole microsecond (an int) before squaring it, so that its
	// t_stdev is too small, often 0.00, for deviations under 1 µs; that
	// is a bug of perftest's, not copied here.
	Stdev float64
	// T99 and T999 are perftest's "99% percentile" and "99.9%
	// percentile": the sorted sample at index ceil(Kept*0.99) and
	// ceil(Kept*0.999), in float64 as perftest computes them (an index
	// past the last sample, which only N < 3 can give, is the last).
	T99, T999 float64

	// P50, P90, P99, P999 and P9999 are the 50th, 90th, 99th, 99.9th
	// and 99.99th percentiles of all N samples by the nearest-rank
	// method (see Percentile): gorperf's percentile line.
	P50, P90, P99, P999, P9999 float64

	// Every is, for a run whose samples outgrew the memory set aside for
	// them, how many samples each one kept stands for: one in Every, a
	// power of two, was kept, evenly through the run (a systematic
	// sample), and Stored is how many that is. SummarizeKept makes such
	// a Latency: N, Min, Max, and perftest's TMax, Avg and Stdev are
	// still exact, of all N samples, while Typical, T99, T999 and the
	// percentiles P50 to P9999 are of the Stored samples kept. Every and
	// Stored are 0 where every sample was kept.
	Every, Stored int
}

// Summarize computes a Latency from samples in nanoseconds.
//
// Summarize neither keeps nor reorders the caller's slice: it sorts a
// copy, which costs O(N) extra memory and O(N log N) time. It returns
// ErrNoSamples and a zero Latency for an empty slice, and an error for a
// NaN or infinite sample. Like perftest, it leaves the PerftestTail
// largest samples out of perftest's columns (see Latency).
func Summarize(samples []float64) (Latency, error) {
	if len(samples) == 0 {
		return Latency{}, ErrNoSamples
	}
	sorted := slices.Clone(samples)
	for i, v := range sorted {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Latency{}, fmt.Errorf("stats: latency sample %d is %v", i, v)
		}
	}
	slices.Sort(sorted)

	n := len(sorted)
	m := max(n-PerftestTail, 1)
	kept := sorted[:m]
	var sum float64
	for _, v := range kept {
		sum += v
	}
	avg := sum / float64(m)
	var sq float64
	for _, v := range kept {
		d := v - avg
		sq += d * d
	}
	// at is perftest's delta[i], kept within the samples.
	at := func(i int) float64 { return sorted[min(i, n-1)] }

	return Latency{
		N:       n,
		Min:     sorted[0],
		Max:     sorted[n-1],
		Kept:    m,
		TMax:    at(m),
		Typical: median(kept),
		Avg:     avg,
		Stdev:   math.Sqrt(sq / float64(m)),
		T99:     at(int(math.Ceil(float64(m) * 0.99))),
		T999:    at(int(math.Ceil(float64(m) * 0.999))),
		P50:     Percentile(sorted, 0.50),
		P90:     Percentile(sorted, 0.90),
		P99:     Percentile(sorted, 0.99),
		P999:    Percentile(sorted, 0.999),
		P9999:   Percentile(sorted, 0.9999),
	}, nil
}

// rankULPs is how many units in the last place of the rank p*N its
// rounding error may reach: half an ulp for p's decimal value, half for
// the product, and room to spare. A true fraction of p*N is at least
// 10^-d for p of d decimals, far above 4 ulps (8.9e-16 of the rank) for
// any slice that fits in memory.
const rankULPs = 4

// median returns the median of a non-empty ascending slice.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Percentile returns the p-quantile (p in [0, 1]) of an ascending slice by
// the nearest-rank method: the element at index ceil(p*N)-1, clamped to
// [0, N-1]. So for the samples 1..100, p=0.99 gives 99 and p=0.999 gives
// 100; for 1..1000, p=0.999 gives 999. A product p*N within a few units
// in the last place of an integer is taken as that integer, so that
// binary rounding of p (0.999 is not exact) and of the product never
// moves the rank, while a true fraction, however small against a large N,
// still rounds up. Percentile returns 0 for an empty slice and does not
// check that the slice is sorted.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := p * float64(n)
	if r := math.Round(rank); math.Abs(rank-r) <= rankULPs*r*0x1p-52 {
		rank = r
	}
	i := int(math.Ceil(rank)) - 1
	i = max(0, min(i, n-1))
	return sorted[i]
}

// Tally holds exact figures of a stream of latency samples, taken one at
// a time in O(1) and without allocating, for a store that keeps only some
// of the samples themselves (see SummarizeKept): their count, the
// smallest, the two largest, and the sums that perftest's mean and
// standard deviation without the two largest need. Its zero value is an
// empty Tally.
type Tally struct {
	// N is the number of samples added.
	N int
	// Min is the smallest sample, Max the largest, and Max2 the second
	// largest (-Inf while N < 2).
	Min, Max, Max2 float64
	// The sums are of each sample's difference from shift, a value near
	// the mean, so that the variance is not the small difference of two
	// large numbers; and they are compensated (Neumaier's summation) so
	// that a run of billions of samples loses no more than one addition
	// would. shift is the first sample, then (reshift) the mean without
	// the two largest at each power of two up to maxReshift samples: a
	// first sample far from the rest (a slow first round trip) is soon
	// forgotten.
	shift     float64
	s1, c1    float64 // the sum of the differences, and its compensation
	s2, c2    float64 // the sum of their squares, and its compensation
	reshiftAt int     // the count at which shift moves next; 0: never
	started   bool
}

// maxReshift is the count at which a Tally moves its shift the last time.
const maxReshift = 1 << 20

// Add adds the sample x.
func (t *Tally) Add(x float64) {
	if !t.started {
		t.started = true
		t.Min, t.Max, t.Max2, t.shift = x, math.Inf(-1), math.Inf(-1), x
		t.reshiftAt = 4
	}
	t.N++
	if x < t.Min {
		t.Min = x
	}
	if x > t.Max2 {
		if x > t.Max {
			t.Max, t.Max2 = x, t.Max
		} else {
			t.Max2 = x
		}
	}
	d := x - t.shift
	t.s1, t.c1 = neumaier(t.s1, t.c1, d)
	t.s2, t.c2 = neumaier(t.s2, t.c2, d*d)
	if t.N == t.reshiftAt {
		t.reshift()
	}
}

// reshift moves the sums' shift to the mean of the samples so far less
// the two largest (N is at least 3), and sets when to move it next.
func (t *Tally) reshift() {
	t.reshiftAt *= 2
	if t.reshiftAt > maxReshift {
		t.reshiftAt = 0
	}
	s1, s2, n := t.s1+t.c1, t.s2+t.c2, float64(t.N)
	d := (s1 - (t.Max - t.shift) - (t.Max2 - t.shift)) / (n - PerftestTail)
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return // a sample that was not finite: SummarizeKept says so
	}
	// The sums of x-shift-d: S1 - n*d, and S2 - 2*d*S1 + n*d*d.
	t.shift += d
	t.s1, t.c1 = s1-n*d, 0
	t.s2, t.c2 = s2-d*(2*s1-n*d), 0
}

// neumaier adds x to the sum s with the compensation c (Neumaier's
// variant of Kahan summation): s+c is the sum, to within an ulp or so.
func neumaier(s, c, x float64) (float64, float64) {
	t := s + x
	if math.Abs(s) >= math.Abs(x) {
		c += (s - t) + x
	} else {
		c += (x - t) + s
	}
	return t, c
}

// SummarizeKept computes a Latency from the samples a bounded store kept
// of a run, in nanoseconds: one in every (a power of two, 1 for all of
// them) evenly through the run, in kept, and t, the exact Tally of every
// sample. Where every sample was kept (every <= 1) it is Summarize(kept),
// and t is not read.
//
// Otherwise the figures that need no order come from t, exactly: N, Min,
// Max, and perftest's TMax (the second largest sample), Avg and Stdev,
// which leave out the PerftestTail largest samples of all N as Summarize
// does. The figures that need the samples in order come from the kept
// ones as Summarize computes them: Typical, T99 and T999 (perftest's
// indices into the kept samples less their two largest) and the
// percentiles P50 to P9999. A kept sample lies between Min and Max, and
// T99 and T999 at most at TMax, so that the figures stay in order. Every
// and Stored say how the samples were kept.
func SummarizeKept(kept []float64, every int, t Tally) (Latency, error) {
	if every <= 1 {
		return Summarize(kept)
	}
	l, err := Summarize(kept)
	if err != nil {
		return l, err
	}
	if t.N < len(kept) || t.N <= PerftestTail || math.IsNaN(t.s1+t.s2) || math.IsInf(t.s1+t.s2, 0) {
		return Latency{}, fmt.Errorf("stats: a tally of %d samples for %d kept", t.N, len(kept))
	}
	l.Every, l.Stored = every, len(kept)
	l.N, l.Min, l.Max, l.TMax = t.N, t.Min, t.Max, t.Max2
	m := t.N - PerftestTail
	l.Kept = m
	// The sums less the two largest samples' parts.
	d1, d2 := t.Max-t.shift, t.Max2-t.shift
	s1 := (t.s1 + t.c1) - d1 - d2
	s2 := (t.s2 + t.c2) - d1*d1 - d2*d2
	mean := s1 / float64(m)
	l.Avg = t.shift + mean
	l.Stdev = math.Sqrt(max(s2/float64(m)-mean*mean, 0))
	return l, nil
}
