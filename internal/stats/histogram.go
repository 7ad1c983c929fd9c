package stats

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Bucket is one bin of a Histogram: the samples v with Lo <= v < Hi,
// except that the last bucket also holds v == Hi.
type Bucket struct {
	Lo, Hi float64
	Count  int
}

// Histogram counts samples in contiguous buckets that cover the range
// from the smallest to the largest sample.
type Histogram struct {
	// Buckets are in ascending order; Buckets[i].Hi == Buckets[i+1].Lo.
	Buckets []Bucket
}

// NewHistogram counts samples in the given number of buckets (at least
// one; a smaller value is taken as one).
//
// The bucket edges are log2-spaced from the smallest to the largest
// sample: each bucket is the same power of two wider than the one before,
// edge i being min*2^(i*log2(max/min)/buckets). Latency tails are long,
// and equal ratios keep the body of the distribution readable while still
// reaching the worst sample. When the smallest sample is zero or negative
// the logarithm is undefined, and the edges are linearly spaced instead.
// When all samples are equal there is a single bucket [v, v].
//
// NaN and infinite samples are ignored. With no usable samples the
// Histogram has no buckets. The caller's slice is neither kept nor
// modified.
func NewHistogram(samples []float64, buckets int) Histogram {
	buckets = max(buckets, 1)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range samples {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo > hi {
		return Histogram{}
	}
	if lo == hi {
		buckets = 1
	}

	edges := make([]float64, buckets+1)
	for i := range edges {
		f := float64(i) / float64(buckets)
		if lo > 0 {
			edges[i] = lo * math.Exp2(f*math.Log2(hi/lo))
		} else {
			edges[i] = lo + f*(hi-lo)
		}
	}
	// Pin the ends so that rounding can never leave min or max outside.
	edges[0], edges[buckets] = lo, hi

	h := Histogram{Buckets: make([]Bucket, buckets)}
	for i := range h.Buckets {
		h.Buckets[i].Lo, h.Buckets[i].Hi = edges[i], edges[i+1]
	}
	inner := edges[1:buckets] // the edges between buckets
	for _, v := range samples {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		// The bucket index is the number of inner edges <= v.
		i := sort.Search(len(inner), func(j int) bool { return inner[j] > v })
		h.Buckets[i].Count++
	}
	return h
}

// Total returns the number of samples counted in all buckets.
func (h Histogram) Total() int {
	var n int
	for _, b := range h.Buckets {
		n += b.Count
	}
	return n
}

// Scale returns a copy of h whose bucket edges are multiplied by f, for
// example 1e-3 to show nanosecond samples in microseconds. f must be
// positive.
func (h Histogram) Scale(f float64) Histogram {
	s := Histogram{Buckets: make([]Bucket, len(h.Buckets))}
	for i, b := range h.Buckets {
		s.Buckets[i] = Bucket{Lo: b.Lo * f, Hi: b.Hi * f, Count: b.Count}
	}
	return s
}

// Render writes one line per bucket: its range with two decimals, a bar of
// '#' characters at most width long, proportional to the bucket's count,
// and the count. A non-empty bucket always gets at least one '#'. A width
// below one is taken as one. It writes nothing for a Histogram without
// buckets.
func (h Histogram) Render(w io.Writer, width int) error {
	if len(h.Buckets) == 0 {
		return nil
	}
	width = max(width, 1)
	los := make([]string, len(h.Buckets))
	his := make([]string, len(h.Buckets))
	var loW, hiW, peak int
	for i, b := range h.Buckets {
		los[i] = strconv.FormatFloat(b.Lo, 'f', 2, 64)
		his[i] = strconv.FormatFloat(b.Hi, 'f', 2, 64)
		loW, hiW = max(loW, len(los[i])), max(hiW, len(his[i]))
		peak = max(peak, b.Count)
	}
	var sb strings.Builder
	for i, b := range h.Buckets {
		bar := 0
		if peak > 0 {
			bar = int(math.Round(float64(b.Count) * float64(width) / float64(peak)))
		}
		if b.Count > 0 {
			bar = max(bar, 1)
		}
		closer := ")"
		if i == len(h.Buckets)-1 {
			closer = "]"
		}
		fmt.Fprintf(&sb, " [%*s, %*s%s |%-*s| %d\n",
			loW, los[i], hiW, his[i], closer, width, strings.Repeat("#", bar), b.Count)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// String renders the histogram with bars up to 40 characters wide.
func (h Histogram) String() string {
	var sb strings.Builder
	_ = h.Render(&sb, 40)
	return sb.String()
}
