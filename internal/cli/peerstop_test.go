//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestPeerStoppedFails: a run that the peer's stop cut short prints its
// results and fails, exit status 1, with a line that says how the peer
// was stopped, in its words (an older peer's, which sent none we know,
// are Ctrl-C's), and which pass marks were not judged; the JSON
// document has the results, peer_interrupted and the code "peer". A
// --run_infinitely run, which ends only so, and a run that this side's
// own stop ended too, keep their exit statuses, 0 and 130.
func TestPeerStoppedFails(t *testing.T) {
	for _, tc := range []struct {
		name, role, stop string
		limits           report.Limits
		want             string
	}{
		{"client, SIGTERM", "client", "stopped (SIGTERM)", report.Limits{},
			"the server was stopped (SIGTERM) before the run ended: the results above are what was measured until then"},
		{"server, an older peer", "server", "", report.Limits{},
			"the client was interrupted (Ctrl-C) before the run ended"},
		{"client, -w and -y", "client", "interrupted (Ctrl-C)", report.Limits{BW: 1, MsgRate: 1e-9},
			"the server was interrupted (Ctrl-C) before the run ended: the results above are what was measured until then, and -w and -y were not judged"},
	} {
		for _, format := range []string{"text", "json", "csv"} {
			name := tc.name + " " + format
			res := fakeBW()
			res.PeerInterrupted, res.PeerStop = true, tc.stop
			f, out, _ := newTestFactory(nil, nil)
			o := testOptions{Test: exchange.WriteBW, limits: tc.limits, JSON: format == "json", CSV: format == "csv"}
			err := o.finish(f, tc.role, res, nil)
			want := tc.want
			if format == "json" {
				want = strings.Replace(want, "the results above are", "the results are", 1)
			}
			if code := exitCode(err); code != exitError || errorCode(err) != "peer" || !strings.Contains(fmt.Sprint(err), want) {
				t.Errorf("%s: finish = %v (exit %d, code %q), want exit 1, code peer, saying %q", name, err, code, errorCode(err), want)
			}
			if tc.limits == (report.Limits{}) && strings.Contains(fmt.Sprint(err), "judged") {
				t.Errorf("%s: %v: no pass mark was given", name, err)
			}
			switch format {
			case "text":
				if !strings.Contains(out.String(), "#bytes") || !strings.Contains(out.String(), " 65536 ") {
					t.Errorf("%s: the results were not printed:\n%s", name, out)
				}
			case "csv":
				if n := strings.Count(out.String(), "\n"); n != 3 {
					t.Errorf("%s: %d CSV lines, want a header and 2 rows:\n%s", name, n, out)
				}
			case "json":
				var r report.Result
				if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil || !r.PeerInterrupted || r.Interrupted || len(r.Results) != 2 ||
					r.Error == nil || r.Error.Code != "peer" || !strings.Contains(r.Error.Message, want) {
					t.Errorf("%s: JSON (%v) %+v, want the results, peer_interrupted and the error %q with code peer:\n%s", name, jerr, r, want, out)
				}
			}
		}
	}

	// An infinite run ends with the peer's stop: exit 0, and the peer's
	// words.
	res, _ := fakeInfinite()
	res.Interrupted, res.PeerInterrupted, res.PeerStop = false, true, "stopped (SIGTERM)"
	f, _, errOut := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, limits: report.Limits{BW: 1e9}}
	if err := o.finish(f, "client", res, nil); err != nil {
		t.Errorf("an infinite run the peer ended: %v (exit %d), want exit 0", err, exitCode(err))
	}
	if !strings.Contains(errOut.String(), "the server was stopped (SIGTERM); the results above") {
		t.Errorf("an infinite run the peer ended said:\n%s", errOut)
	}
	// Both sides stopped (loopback's one Ctrl-C): this side's stop, 130.
	res = fakeBW()
	res.Interrupted, res.PeerInterrupted = true, true
	f, _, _ = newTestFactory(nil, nil)
	if err := o.finish(f, "loopback", res, nil); exitCode(err) != exitInterrupted {
		t.Errorf("both sides stopped: %v (exit %d), want 130", err, exitCode(err))
	}
}

// TestServePeerStoppedServed: gorperf serve reports a test whose client
// was stopped with its results and the client's stop, counted as served,
// not failed, and goes on.
func TestServePeerStoppedServed(t *testing.T) {
	f, out, errOut := newTestFactory(nil, nil)
	o := &serveOptions{}
	var l bench.Local
	onHeader := o.streamRows(f, &l)
	res := fakeBW()
	res.Role, res.PeerInterrupted, res.PeerStop = "server", true, "stopped (SIGTERM)"
	l.Admit(res.Spec)
	onHeader(res.Header)
	for _, s := range res.Sizes {
		l.SizeDone(s)
	}
	o.done(context.Background(), f, res, nil)
	if o.served != 1 || o.failed != 0 {
		t.Errorf("served %d, failed %d; want 1 and 0", o.served, o.failed)
	}
	if !strings.Contains(errOut.String(), "gorperf: the client was stopped (SIGTERM) before the run ended") || !strings.Contains(out.String(), " 65536 ") {
		t.Errorf("serve reported\n%s%s", out, errOut)
	}
}

// TestUnmeasuredSizeLeftOut: a size that a stop cut short at its start
// measured nothing (bench adds the size it was at, 0 messages, 0 MB/sec)
// and is left out of the text table, streamed or not, the CSV and the
// JSON, and of each thread's part; a size that measured some messages
// stays. So is a latency size of no iterations and no samples (a passive
// read_lat server's, which the stopped client did not send).
func TestUnmeasuredSizeLeftOut(t *testing.T) {
	cut := func() *bench.Result {
		res := fakeBW()
		res.PeerInterrupted = true
		res.Sizes = append(res.Sizes,
			bench.SizeResult{Size: 131072, BW: stats.ComputeBandwidth(131072, 3, time.Millisecond, 0)},
			bench.SizeResult{Size: 262144, BW: stats.ComputeBandwidth(262144, 0, 0, 0)})
		return res
	}
	for _, format := range []string{"text", "streamed", "csv", "streamed csv", "json"} {
		res := cut()
		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: exchange.WriteBW, JSON: format == "json", CSV: strings.HasSuffix(format, "csv")}
		if strings.HasPrefix(format, "streamed") {
			o.rows = o.newRowStream(out)
			o.rows.start(res.Spec)
			for _, s := range res.Sizes {
				o.rows.size(s)
			}
		}
		o.finish(f, "client", res, nil)
		s := out.String()
		switch format {
		case "json":
			var r report.Result
			if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Results) != 3 || r.Results[2].Bytes != 131072 {
				t.Errorf("JSON (%v): want the 3 sizes measured, not the last:\n%s", err, s)
			}
		default:
			if strings.Contains(s, "262144") || strings.Count(s, "131072") != 1 {
				t.Errorf("%s: want 131072's row once and none of 262144's:\n%s", format, s)
			}
		}
	}

	// A test of threads: the sums' and each thread's sizes alike.
	res := cut()
	for i := range 2 {
		tr := bench.ThreadResult{Thread: i, QPs: 1, CPU: -1}
		for _, s := range res.Sizes {
			tr.Sizes = append(tr.Sizes, stats.ComputeBandwidth(s.Size, s.BW.Iterations/2, s.BW.Elapsed, 0))
		}
		res.Threads = append(res.Threads, tr)
	}
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, JSON: true}
	o.finish(f, "client", res, nil)
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Results) != 3 || len(r.ThreadResults) != 2 ||
		len(r.ThreadResults[0].Results) != 3 || len(r.ThreadResults[1].Results) != 3 {
		t.Errorf("threads' JSON (%v): want 3 sizes, each thread's too:\n%s", err, out)
	}
	if len(res.Sizes) != 4 {
		t.Errorf("finish changed its result's sizes: %d, want 4", len(res.Sizes))
	}

	// Latency: a passive side's size of no iterations.
	lat := fakeLat()
	lat.PeerInterrupted = true
	lat.Sizes = append(lat.Sizes, bench.SizeResult{Size: 128, IsLatency: true})
	f, out, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.SendLat}
	o.finish(f, "client", lat, nil)
	if strings.Contains(out.String(), " 128 ") || !strings.Contains(out.String(), " 64 ") {
		t.Errorf("latency: want 64's row and not 128's:\n%s", out)
	}
}

// lostSizes is a complete send_bw run over UC or UD as its receiver
// reports it: its first size lost every message (0 received, which
// sizeResult reports as zeros), its second received some.
func lostSizes() *bench.Result {
	return &bench.Result{Spec: exchange.TestSpec{Test: exchange.SendBW}, Role: "server", Header: fakeHeader("Send BW Test"),
		Sizes: []bench.SizeResult{{Size: 4096, BW: stats.ComputeBandwidth(4096, 0, 0, 0)},
			{Size: 8192, BW: stats.ComputeBandwidth(8192, 5000, 800*time.Millisecond, 0)}}}
}

// TestUnmeasuredSizeOfCompleteRunKept: a size of no messages in a run
// that nobody cut short is a real result (a UC or UD receiver's, all of
// whose messages were lost), not a stop's: it keeps its row in the text
// table, streamed or not, the CSV, the JSON and --output's lines, and a
// pass mark judges it (-w: exit 3). So does such a size before a cut
// run's last, which ended as the run went on; only the last is the
// stop's.
func TestUnmeasuredSizeOfCompleteRunKept(t *testing.T) {
	f, _, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.SendBW, limits: report.Limits{BW: 1}}
	if err := o.finish(f, "server", lostSizes(), nil); exitCode(err) != exitLimit {
		t.Errorf("-w with a size of no messages: %v (exit %d), want exit 3", err, exitCode(err))
	}

	for _, format := range []string{"text", "streamed", "csv", "streamed csv", "json", "output"} {
		res := lostSizes()
		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: exchange.SendBW, JSON: format == "json", CSV: strings.HasSuffix(format, "csv")}
		if format == "output" {
			o.value = report.BWValue
		}
		if strings.HasPrefix(format, "streamed") {
			o.rows = o.newRowStream(out)
			o.rows.start(res.Spec)
			for _, s := range res.Sizes {
				o.rows.size(s)
			}
		}
		if err := o.finish(f, "server", res, nil); err != nil {
			t.Errorf("%s: %v", format, err)
		}
		s := out.String()
		switch format {
		case "json":
			var r report.Result
			if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Results) != 2 || r.Results[0].Bytes != 4096 {
				t.Errorf("JSON (%v): want both sizes, 4096's first:\n%s", err, s)
			}
		case "output":
			if lines := strings.Split(strings.TrimSpace(s), "\n"); len(lines) != 2 {
				t.Errorf("--output: %d lines, want one a size:\n%s", len(lines), s)
			}
		default:
			if got := rowSizes(s); !slices.Equal(got, []string{"4096", "8192"}) {
				t.Errorf("%s: rows of %v, want 4096's, then 8192's:\n%s", format, got, s)
			}
		}
	}

	// Cut short: the zero size before the last stays; the last, which
	// the stop caught at its start, goes.
	res := lostSizes()
	res.PeerInterrupted = true
	res.Sizes = append(res.Sizes, bench.SizeResult{Size: 16384, BW: stats.ComputeBandwidth(16384, 0, 0, 0)})
	for _, streamed := range []bool{false, true} {
		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: exchange.SendBW}
		if streamed {
			o.rows = o.newRowStream(out)
			o.rows.start(res.Spec)
			for _, s := range res.Sizes {
				o.rows.size(s)
			}
		}
		o.finish(f, "server", res, nil)
		if s := out.String(); !slices.Equal(rowSizes(s), []string{"4096", "8192"}) {
			t.Errorf("cut short, streamed %v: want 4096's and 8192's rows, not 16384's:\n%s", streamed, s)
		}
	}
}

// TestStreamHoldsUnmeasuredRow: the row stream holds a size of no
// messages back, printing nothing for it, until the next size ends; then
// it prints both, in order, once each.
func TestStreamHoldsUnmeasuredRow(t *testing.T) {
	for _, csv := range []bool{false, true} {
		res := lostSizes()
		var out strings.Builder
		o := testOptions{Test: exchange.SendBW, CSV: csv}
		r := o.newRowStream(&out)
		r.start(res.Spec)
		r.size(res.Sizes[0])
		if out.Len() != 0 || r.printed() != 0 {
			t.Errorf("csv %v: the zero row was printed before the next size ended (%d rows):\n%s", csv, r.printed(), out.String())
		}
		r.size(res.Sizes[1])
		s := out.String()
		if got := rowSizes(s); r.printed() != 2 || !slices.Equal(got, []string{"4096", "8192"}) {
			t.Errorf("csv %v: %d rows, of %v, want 4096's then 8192's:\n%s", csv, r.printed(), got, s)
		}
	}
}

// rowSizes returns the sizes of the results rows in out, a text table or
// a CSV, in order: the first field of each line that starts with a
// number (the text's) or a test's name and a number (the CSV's).
func rowSizes(out string) []string {
	var sizes []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' })
		if len(f) > 1 && strings.HasSuffix(f[0], "_bw") {
			f = f[1:]
		}
		if len(f) > 1 && strings.Trim(f[0], "0123456789") == "" {
			sizes = append(sizes, f[0])
		}
	}
	return sizes
}
