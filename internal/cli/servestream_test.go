//go:build linux && cgo

package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestServeRowsPerTest drives serve's hooks (streamRows, which serveRun
// gives bench.Serve, and done) through one server's tests in a row, as
// Serve calls them: Admit, the header, a SizeDone a size, then done. A
// test's row of a size is printed as the size ends, under its header
// and one column line, and what the test prints by its done is byte for
// byte what serve printed when the whole table came at the end: each
// row once. Each test has its own columns (a write_bw sweep, then a
// send_lat one, then -D's latency table), a test that fails part way
// keeps its rows and the error follows, one refused or failed before
// its header prints nothing and leaves nothing to the next, an infinite
// run prints no rows before its end, and a test of several threads'
// rows are the sums bench gives. With --json nothing is printed before
// a test's one document, which a test that failed before its header
// has too.
func TestServeRowsPerTest(t *testing.T) {
	sweep := func(res *bench.Result, n int) *bench.Result {
		for len(res.Sizes) < n {
			s := res.Sizes[len(res.Sizes)-1]
			s.Size *= 2
			res.Sizes = append(res.Sizes, s)
		}
		return res
	}
	lat := sweep(fakeLat(), 3)
	latDur, _ := fakeLatDuration(exchange.WriteLat)
	latDur.Header.Test = "RDMA_Write Latency Test"
	infinite, _ := fakeInfinite()
	infinite.Interrupted, infinite.PeerInterrupted = false, true // the client's Ctrl-C
	threads := twoThreads(sweep(fakeBW(), 3))
	failed := sweep(fakeBW(), 3)
	failed.Sizes = failed.Sizes[:2]
	type test struct {
		name    string
		res     *bench.Result // nil: refused, or failed before its header
		admit   bool          // whether Admit was called (a set-up that failed after)
		err     error
		stream  bool // whether the rows come as the sizes end
		errText string
	}
	tests := []test{
		{name: "write_bw sweep", res: sweep(fakeBW(), 4), stream: true},
		{name: "refused", err: errors.New("refused: 4 QPs exceed the server's limit of 2"), errText: "refused"},
		{name: "send_lat sweep", res: lat, stream: true},
		{name: "failed in its set-up", admit: true, err: errors.New("client 198.18.0.2:4242: the peer closed the connection"), errText: "the peer closed"},
		{name: "write_bw failed part way", res: failed, err: errors.New("client 198.18.0.2:4242: the peer closed the connection"), stream: true, errText: "the peer closed"},
		{name: "write_lat -D", res: latDur, stream: true},
		{name: "infinite", res: infinite},
		{name: "threads", res: threads, stream: true},
		{name: "write_bw again", res: sweep(fakeBW(), 3), stream: true},
	}
	for _, json := range []bool{false, true} {
		f, out, errOut := newTestFactory(nil, nil)
		o := &serveOptions{test: testOptions{JSON: json}}
		var l bench.Local
		onHeader := o.streamRows(f, &l)
		if l.Admit == nil || l.SizeDone == nil {
			t.Fatal("streamRows set no Admit or SizeDone")
		}
		for _, tc := range tests {
			name := tc.name
			if json {
				name += " --json"
			}
			// What serve printed of the test when its table came
			// whole at its end.
			wf, wout, werr := newTestFactory(nil, nil)
			wo := &serveOptions{test: testOptions{JSON: json}}
			if tc.res != nil && !json {
				h := tc.res.Header
				wo.test.placeHeader(&h)
				report.WriteHeader(wout, h)
			}
			if tc.admit {
				wo.admitted, wo.noted = exchange.TestSpec{Test: exchange.WriteBW}, true // as Admit below
			}
			wo.done(context.Background(), wf, tc.res, tc.err)
			want, wantErr := wout.String(), werr.String()

			from, fromErr := out.Len(), errOut.Len()
			got := func() string { return out.String()[from:] }
			if tc.res != nil || tc.admit {
				spec := exchange.TestSpec{Test: exchange.WriteBW}
				if tc.res != nil {
					spec = tc.res.Spec
				}
				if err := l.Admit(spec); err != nil {
					t.Fatalf("%s: Admit: %v", name, err)
				}
			}
			if tc.res != nil {
				onHeader(tc.res.Header)
				header := got()
				for i, s := range tc.res.Sizes {
					l.SizeDone(s)
					printed := got()
					switch n := strings.Count(printed[len(header):], "\n"); {
					case !strings.HasPrefix(want, printed):
						t.Errorf("%s: after %d sizes printed\n%s\nwant the start of\n%s", name, i+1, printed, want)
					case (!tc.stream || json) && n != 0:
						t.Errorf("%s: printed rows before the end:\n%s", name, printed)
					case tc.stream && !json && n != i+2: // the column line and a row a size so far
						t.Errorf("%s: after %d sizes printed %d lines after the header, want %d:\n%s", name, i+1, n, i+2, printed)
					}
				}
			}
			o.done(context.Background(), f, tc.res, tc.err)
			if got() != want {
				t.Errorf("%s: streamed, the output is\n%s\nwant\n%s", name, got(), want)
			}
			if e := errOut.String()[fromErr:]; e != wantErr || tc.errText != "" && !strings.Contains(e, tc.errText) {
				t.Errorf("%s: stderr %q, want %q", name, e, wantErr)
			}
			if json && tc.res != nil && !bytes.HasPrefix([]byte(got()), []byte("{")) {
				t.Errorf("%s: not one JSON document:\n%s", name, got())
			}
		}
		if o.served != 9 || o.failed != 3 {
			t.Errorf("--json %v: served %d, failed %d; want 9 and 3", json, o.served, o.failed)
		}
	}
}

// TestServeRowsNotStale: a row that comes when no test of serve has its
// header (after a test's done, or before any) is not printed, nor kept
// for the next test, whose rows start under their own column line.
func TestServeRowsNotStale(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := &serveOptions{}
	var l bench.Local
	onHeader := o.streamRows(f, &l)
	stray := bench.SizeResult{Size: 2, BW: stats.ComputeBandwidth(2, 5, time.Millisecond, 0)}
	l.SizeDone(stray)
	if out.Len() != 0 {
		t.Fatalf("a row with no test:\n%s", out)
	}
	res := fakeLat()
	l.Admit(res.Spec)
	onHeader(res.Header)
	l.SizeDone(res.Sizes[0])
	o.done(context.Background(), f, res, nil)
	l.SizeDone(stray)
	s := out.String()
	if strings.Count(s, "#bytes") != 1 || strings.Contains(s, "BW peak") || strings.Contains(s, "\n 2 ") {
		t.Errorf("a latency test between stray rows:\n%s", s)
	}
}
