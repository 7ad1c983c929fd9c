//go:build linux && cgo

package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestRowsAsSizesEnd: the text table's row of a size is printed as the
// size ends (bench's SizeDone), the column line before the first, and
// what a run prints by its end is byte for byte what it printed when
// the whole table came at the end: bandwidth, --report-both,
// bidirectional, latency (with its percentiles and histogram) and -D's
// latency table. So are --csv's rows, the header row before the first,
// with --cpu_util's columns too, and a test of several threads' (whose
// sizes bench gives as the threads' sums). A run that fails part way
// prints the rest after the rows of the sizes it measured, as when it
// printed them all at the end. An infinite run and a CSV with port
// counters (-W, whose columns are known at the end) print nothing before
// the end.
func TestRowsAsSizesEnd(t *testing.T) {
	three := func(res *bench.Result) *bench.Result {
		s := res.Sizes[0]
		s.Size *= 2
		res.Sizes = append(res.Sizes, s)
		return res
	}
	latDur, _ := fakeLatDuration(exchange.WriteLat)
	infinite, ivs := fakeInfinite()
	threads := twoThreads(fakeBW()) // the threads' sums, and each thread's part
	cpu := three(fakeBW())
	for i := range cpu.Sizes {
		cpu.Sizes[i].CPU = &stats.CPU{User: time.Duration(i+1) * time.Millisecond, System: 3 * time.Millisecond, Wall: time.Second, Messages: 5000}
	}
	withCounters := three(fakeBW())
	withCounters.Sizes[1].Counters = []counters.Change{{Name: "hw_counters/sent_pkts", Delta: 7}}
	failed := errors.New("peer: the server's loop failed")
	for _, tc := range []struct {
		name   string
		res    *bench.Result
		err    error // the run's
		opts   testOptions
		stream bool
	}{
		{"write_bw", three(fakeBW()), nil, testOptions{Test: exchange.WriteBW}, true},
		{"write_bw gbits", fakeBW(), nil, testOptions{Test: exchange.WriteBW, Gbits: true}, true},
		{"send_bw -b --report-both", three(fakeBidi()), nil, testOptions{Test: exchange.SendBW, Bidir: true, ReportBoth: true}, true},
		{"send_lat", three(fakeLat()), nil, testOptions{Test: exchange.SendLat, Histogram: true, Sorted: true}, true},
		{"send_lat -U", three(fakeLat()), nil, testOptions{Test: exchange.SendLat, Unsorted: true}, true},
		{"write_lat -D", latDur, nil, testOptions{Test: exchange.WriteLat}, true},
		{"write_bw --cpu_util", cpu, nil, testOptions{Test: exchange.WriteBW, CPUUtil: true}, true},
		{"write_bw failed", three(fakeBW()), failed, testOptions{Test: exchange.WriteBW}, true},
		{"infinite", infinite, nil, testOptions{Test: exchange.WriteBW, Infinite: true}, false},
		{"threads", threads, nil, testOptions{Test: exchange.WriteBW}, true},
		{"write_bw --csv", three(fakeBW()), nil, testOptions{Test: exchange.WriteBW, CSV: true}, true},
		{"send_bw -b --csv", three(fakeBidi()), nil, testOptions{Test: exchange.SendBW, Bidir: true, CSV: true}, true},
		{"send_lat --csv", three(fakeLat()), nil, testOptions{Test: exchange.SendLat, CSV: true}, true},
		{"write_lat -D --csv", latDur, nil, testOptions{Test: exchange.WriteLat, CSV: true}, true},
		{"write_bw --csv --cpu_util", cpu, nil, testOptions{Test: exchange.WriteBW, CSV: true, CPUUtil: true}, true},
		{"write_bw --csv failed", three(fakeBW()), failed, testOptions{Test: exchange.WriteBW, CSV: true}, true},
		{"write_bw --csv -W", withCounters, nil, testOptions{Test: exchange.WriteBW, CSV: true, Counters: []string{"all"}}, false},
		{"infinite --csv", infinite, nil, testOptions{Test: exchange.WriteBW, CSV: true, Infinite: true, intervals: ivs}, false},
		{"threads --csv", threads, nil, testOptions{Test: exchange.WriteBW, CSV: true}, true},
	} {
		f, out, _ := newTestFactory(nil, nil)
		o := tc.opts
		wantErr := o.finish(f, "client", tc.res, tc.err) // an infinite run's is interrupted
		want := out.String()

		f, out, _ = newTestFactory(nil, nil)
		o = tc.opts
		if o.rows = o.newRowStream(out); o.rows != nil {
			o.rows.start(tc.res.Spec)
		}
		lists := 0 // of samples a size (-U, -H)
		for _, l := range []bool{o.Unsorted, o.Sorted} {
			if l {
				lists++
			}
		}
		for i, s := range tc.res.Sizes {
			if o.rows != nil {
				o.rows.size(s)
			}
			got := out.String()
			switch {
			case !tc.stream && got != "":
				t.Errorf("%s: printed before the end:\n%s", tc.name, got)
			case tc.stream && (!strings.HasPrefix(want, got) || lists == 0 && strings.Count(got, "\n") != i+2):
				// The column line (header row) and a row a size so far.
				t.Errorf("%s: after %d sizes printed\n%s\nwant the start of\n%s", tc.name, i+1, got, want)
			case lists > 0 && strings.Count(got, "#, usec\n") != lists*(i+1):
				// -U, -H: each size's lists, then its row.
				t.Errorf("%s: after %d sizes printed\n%s\nwant %d lists a size", tc.name, i+1, got, lists)
			}
		}
		if err := o.finish(f, "client", tc.res, tc.err); exitCode(err) != exitCode(wantErr) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
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

// twoThreads makes res the result of a test of two threads: its sizes
// are the threads' sums, and each thread's part is half of their
// messages, in the same time.
func twoThreads(res *bench.Result) *bench.Result {
	res.Spec.Threads = 2
	for i := range 2 {
		tr := bench.ThreadResult{Thread: i, QPs: 1, CPU: -1}
		for _, s := range res.Sizes {
			tr.Sizes = append(tr.Sizes, stats.ComputeBandwidth(s.Size, s.BW.Iterations/2, s.BW.Elapsed, 0))
		}
		res.Threads = append(res.Threads, tr)
	}
	return res
}
