package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrNoSamples is returned by Summarize when it is given no samples.
var ErrNoSamples = errors.New("stats: no latency samples")

// Latency summarizes per-iteration latency samples. Every field except N
// is in the unit of the samples, which gorperf keeps in nanoseconds.
type Latency struct {
	// N is the number of samples summarized.
	N int
	// Min and Max are the smallest and largest samples.
	Min, Max float64
	// Typical is the median, perftest's t_typical: the middle sample for
	// an odd N, the mean of the two middle samples for an even N.
	Typical float64
	// Avg is the arithmetic mean.
	Avg float64
	// Stdev is the population standard deviation (divided by N, not
	// N-1), as perftest computes it.
	Stdev float64
	// P50, P90, P99, P999 and P9999 are the 50th, 90th, 99th, 99.9th
	// and 99.99th percentiles by the nearest-rank method (see Percentile).
	P50, P90, P99, P999, P9999 float64
}

// Summarize computes a Latency from samples in nanoseconds.
//
// Summarize neither keeps nor reorders the caller's slice: it sorts a
// copy, which costs O(N) extra memory and O(N log N) time. It returns
// ErrNoSamples and a zero Latency for an empty slice, and an error for a
// NaN or infinite sample. Unlike perftest, it does not drop the largest
// samples; a caller that wants perftest's tail trimming removes them first.
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
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	avg := sum / float64(n)
	var sq float64
	for _, v := range sorted {
		d := v - avg
		sq += d * d
	}

	return Latency{
		N:       n,
		Min:     sorted[0],
		Max:     sorted[n-1],
		Typical: median(sorted),
		Avg:     avg,
		Stdev:   math.Sqrt(sq / float64(n)),
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
