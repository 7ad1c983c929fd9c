//go:build linux && cgo

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestServeIntervalNoPeak: gorperf serve's row of an interval reads 0.00
// in its BW peak column, as perftest's intervals do and as the CSV and
// JSON give none: an interval has no peak. It printed the interval's
// average there.
func TestServeIntervalNoPeak(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := &serveOptions{}
	var l bench.Local
	onHeader := o.streamRows(f, &l)
	res, _ := fakeInfinite()
	l.Admit(res.Spec)
	onHeader(res.Header)
	from := out.Len()
	l.Interval(time.Second, stats.ComputeBandwidth(4096, 256000, time.Second, 0)) // 1000 MB/sec
	var row []string
	for _, line := range strings.Split(out.String()[from:], "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[0] == "4096" {
			row = f
		}
	}
	if len(row) != 5 || row[2] != "0.00" || row[3] != "1000.00" {
		t.Errorf("the interval's row %q, want its BW peak 0.00 and its average 1000.00:\n%s", row, out.String()[from:])
	}
}
