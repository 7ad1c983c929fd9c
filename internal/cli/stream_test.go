//go:build linux && cgo

package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestRowsAsSizesEnd: the text table's row of a size is printed as the
// size ends (bench's SizeDone), the column line before the first, and
// what a run prints by its end is byte for byte what it printed when
// the whole table came at the end: bandwidth, --report-both,
// bidirectional, latency (with its percentiles and histogram) and -D's
// latency table. An infinite run and a test of several threads print
// nothing before the end.
func TestRowsAsSizesEnd(t *testing.T) {
	three := func(res *bench.Result) *bench.Result {
		s := res.Sizes[0]
		s.Size *= 2
		res.Sizes = append(res.Sizes, s)
		return res
	}
	latDur, _ := fakeLatDuration(exchange.WriteLat)
	infinite, _ := fakeInfinite()
	threads := fakeBW()
	threads.Spec.Threads = 2
	for _, tc := range []struct {
		name   string
		res    *bench.Result
		opts   testOptions
		stream bool
	}{
		{"write_bw", three(fakeBW()), testOptions{Test: exchange.WriteBW}, true},
		{"write_bw gbits", fakeBW(), testOptions{Test: exchange.WriteBW, Gbits: true}, true},
		{"send_bw -b --report-both", three(fakeBidi()), testOptions{Test: exchange.SendBW, Bidir: true, ReportBoth: true}, true},
		{"send_lat", three(fakeLat()), testOptions{Test: exchange.SendLat, Histogram: true, Sorted: true}, true},
		{"write_lat -D", latDur, testOptions{Test: exchange.WriteLat}, true},
		{"infinite", infinite, testOptions{Test: exchange.WriteBW, Infinite: true}, false},
		{"threads", threads, testOptions{Test: exchange.WriteBW}, false},
	} {
		f, out, _ := newTestFactory(nil, nil)
		o := tc.opts
		wantErr := o.finish(f, "client", tc.res, nil) // an infinite run's is interrupted
		want := out.String()

		f, out, _ = newTestFactory(nil, nil)
		o = tc.opts
		o.rows = &rowStream{w: out, gbits: o.Gbits}
		o.rows.start(tc.res.Spec)
		for i, s := range tc.res.Sizes {
			o.rows.size(s)
			got := out.String()
			switch {
			case !tc.stream && got != "":
				t.Errorf("%s: printed before the end:\n%s", tc.name, got)
			case tc.stream && (!strings.HasPrefix(want, got) || strings.Count(got, "\n") != i+2):
				// The column line and a row a size so far.
				t.Errorf("%s: after %d sizes printed\n%s\nwant the start of\n%s", tc.name, i+1, got, want)
			}
		}
		if err := o.finish(f, "client", tc.res, nil); exitCode(err) != exitCode(wantErr) {
			t.Errorf("%s: streamed, %v, want %v", tc.name, err, wantErr)
		}
		if got := out.String(); got != want {
			t.Errorf("%s: streamed, the output is\n%s\nwant\n%s", tc.name, got, want)
		}
	}
}

// TestRowStreamClearsProgress: on a terminal a row first clears the
// progress line on stderr, so that it does not start after it.
func TestRowStreamClearsProgress(t *testing.T) {
	var out, errOut strings.Builder
	r := &rowStream{w: &out, clear: &errOut}
	r.start(exchange.TestSpec{Test: exchange.WriteBW})
	r.size(bench.SizeResult{Size: 2, BW: stats.ComputeBandwidth(2, 5, time.Millisecond, 0)})
	if errOut.String() != "\r\033[K" || r.printed() != 1 {
		t.Errorf("stderr %q, %d rows", errOut.String(), r.printed())
	}
}

// TestIsTerminal: /dev/null and a pipe are not terminals (/dev/null, a
// character device, was taken for one, and every error line got the
// progress line's clearing); a pseudo-terminal is.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Error("/dev/null is taken for a terminal")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if isTerminal(pw) {
		t.Error("a pipe is taken for a terminal")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("the pseudo-terminal's number: %v", err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	defer pts.Close()
	if !isTerminal(pts) {
		t.Error("a pseudo-terminal is not taken for a terminal")
	}
}
