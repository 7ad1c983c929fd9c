//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

func fakeHeader(title string) report.Header {
	ep := func(qpn uint32, last byte) report.Endpoint {
		var g [16]byte
		copy(g[10:], []byte{255, 255, 198, 18, 0, last})
		return report.Endpoint{QPN: qpn, PSN: 0x1234 * qpn, RKey: 0x2f8, VAddr: 0x7f2bf002c040, OutReads: 16, GID: report.FormatGID(g)}
	}
	return report.Header{Test: title, Device: "rxe1", Port: 1, NumQPs: 1, Transport: "IB", Connection: "RC",
		TXDepth: 128, CQModeration: 100, Mtu: 1024, LinkType: "Ethernet", GIDIndex: 1,
		GIDReason: "RoCE v2, 198.18.0.2 on rxeveth1: first routable IPv4 RoCE v2 entry", DataEx: "Ethernet",
		ShowRKey: true, Local: []report.Endpoint{ep(0x11, 2)}, Remote: []report.Endpoint{ep(0x12, 1)}}
}

func fakeBW() *bench.Result {
	return &bench.Result{Spec: exchange.TestSpec{Test: exchange.WriteBW}, Role: "client", Header: fakeHeader("RDMA_Write BW Test"),
		Sizes: []bench.SizeResult{
			{Size: 4096, BW: stats.ComputeBandwidth(4096, 5000, 800*time.Millisecond, 120*time.Microsecond)},
			{Size: 65536, BW: stats.ComputeBandwidth(65536, 5000, 9*time.Second, 1500*time.Microsecond)},
		}}
}

// fakeBidi is a bidirectional send_bw whose two directions differ. Its
// total is made as bench's bothWays makes it (unexported, so written out
// again here): the two directions' averages and message rates added, as
// perftest adds them, not the messages of both over the longer time.
func fakeBidi() *bench.Result {
	local := stats.ComputeBandwidth(4096, 5000, 800*time.Millisecond, 120*time.Microsecond)
	remote := stats.ComputeBandwidth(4096, 4000, 900*time.Millisecond, 200*time.Microsecond)
	sum := stats.ComputeBandwidth(4096, local.Iterations+remote.Iterations, max(local.Elapsed, remote.Elapsed), 0)
	sum.Iterations = local.Iterations // this side's, as bench's and perftest's
	sum.AvgMBps = local.AvgMBps + remote.AvgMBps
	sum.MsgRateMpps = local.MsgRateMpps + remote.MsgRateMpps
	sum.PeakMBps = max(sum.AvgMBps, local.PeakMBps+remote.PeakMBps)
	return &bench.Result{Spec: exchange.TestSpec{Test: exchange.SendBW, Bidirectional: true}, Role: "client",
		Header: fakeHeader("Send Bidirectional BW Test"),
		Sizes:  []bench.SizeResult{{Size: 4096, BW: sum, Local: &local, Remote: &remote}}}
}

func fakeLat() *bench.Result {
	samples := make([]float64, 1000)
	for i := range samples {
		samples[i] = 20000 + float64(i%50)*300 + float64(i/999)*90000
	}
	l, _ := stats.Summarize(samples)
	h := fakeHeader("Send Latency Test")
	h.TXDepth, h.CQModeration, h.ShowRKey = 0, 0, false
	return &bench.Result{Spec: exchange.TestSpec{Test: exchange.SendLat}, Role: "client", Header: h,
		Sizes: []bench.SizeResult{{Size: 64, Lat: l, Samples: samples, IsLatency: true, Iterations: uint64(len(samples))}}}
}

// The text a user reads: perftest's header block and tables, gorperf's
// percentile line and histogram.
func TestTextOutputGolden(t *testing.T) {
	for name, tc := range map[string]struct {
		res  *bench.Result
		opts testOptions
	}{
		"write_bw.golden":       {fakeBW(), testOptions{Test: exchange.WriteBW}},
		"write_bw_gbits.golden": {fakeBW(), testOptions{Test: exchange.WriteBW, Gbits: true}},
		"send_lat.golden":       {fakeLat(), testOptions{Test: exchange.SendLat, Histogram: true}},
		"send_bw_both.golden":   {fakeBidi(), testOptions{Test: exchange.SendBW, Bidir: true, ReportBoth: true}},
	} {
		f, out, _ := newTestFactory(nil, nil)
		report.WriteHeader(out, tc.res.Header)
		if err := tc.opts.finish(f, "client", tc.res, nil); err != nil {
			t.Fatal(err)
		}
		golden(t, name, out.Bytes())
	}
}

// TestBidiTotalIsSum: in --report-both's text, a bidirectional test's
// row is the sum of its two directions' rows, as bench and perftest add
// them: its average bandwidth and message rate are the local and remote
// rows' added up (to the rounding of the printed figures), and its
// iterations this side's.
func TestBidiTotalIsSum(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.SendBW, Bidir: true, ReportBoth: true}
	if err := o.finish(f, "client", fakeBidi(), nil); err != nil {
		t.Fatal(err)
	}
	type row struct {
		bytes, iters    int
		peak, avg, mpps float64
	}
	var rows []row
	for _, line := range strings.Split(out.String(), "\n") {
		var r row
		if n, _ := fmt.Sscan(line, &r.bytes, &r.iters, &r.peak, &r.avg, &r.mpps); n == 5 {
			rows = append(rows, r)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the total, the local and the remote one:\n%s", len(rows), out)
	}
	total, local, remote := rows[0], rows[1], rows[2]
	if math.Abs(total.avg-(local.avg+remote.avg)) > 0.011 || math.Abs(total.mpps-(local.mpps+remote.mpps)) > 2e-6 ||
		total.iters != local.iters || total.peak < total.avg {
		t.Errorf("total %+v is not local %+v plus remote %+v:\n%s", total, local, remote, out)
	}
}

// TestReportBothOneWay: a server's --report-both (with the -b its flags
// ask for, which its test ignores: the client decides) where the
// client's test was one-way prints the table as without --report-both,
// not two titled tables with a column line and no rows, and says on
// stderr why; where the client's test was bidirectional it prints both
// directions.
func TestReportBothOneWay(t *testing.T) {
	both := testOptions{Test: exchange.WriteBW, Bidir: true, ReportBoth: true}
	f, want, _ := newTestFactory(nil, nil)
	if err := (&testOptions{Test: exchange.WriteBW}).finish(f, "server", fakeBW(), nil); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := newTestFactory(nil, nil)
	if err := both.finish(f, "server", fakeBW(), nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("--report-both of a one-way test printed\n%s\nwant what it prints without --report-both:\n%s", out, want)
	}
	const note = "gorperf: --report-both: the client's test was one-way (no -b), so it has no directions to report\n"
	if errOut.String() != note {
		t.Errorf("stderr %q, want %q", errOut, note)
	}
	// With --json the document is as without the flag, and the note the same.
	f, want, _ = newTestFactory(nil, nil)
	if err := (&testOptions{Test: exchange.WriteBW, JSON: true}).finish(f, "server", fakeBW(), nil); err != nil {
		t.Fatal(err)
	}
	f, out, errOut = newTestFactory(nil, nil)
	both.JSON = true
	if err := both.finish(f, "server", fakeBW(), nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() || errOut.String() != note {
		t.Errorf("--json --report-both of a one-way test: stdout\n%s\nstderr %q; want\n%s\nand %q", out, errOut, want, note)
	}
	// A bidirectional client's test gets both directions, and no note.
	both.JSON = false
	f, out, errOut = newTestFactory(nil, nil)
	if err := both.finish(f, "server", fakeBidi(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Local results") || !strings.Contains(out.String(), "Remote results") || errOut.Len() != 0 {
		t.Errorf("--report-both of a bidirectional test: stdout\n%s\nstderr %q", out, errOut)
	}
}

// -U lists the samples in the order measured and -H sorted without the
// two largest, as perftest does, after the percentiles; with --json both
// give samples_us in order.
func TestSampleLists(t *testing.T) {
	res := fakeLat()
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.SendLat, Unsorted: true, Sorted: true}
	if err := o.finish(f, "client", res, nil); err != nil {
		t.Fatal(err)
	}
	var lists [][]float64
	for _, line := range strings.Split(out.String(), "\n") {
		if line == "#, usec" {
			lists = append(lists, nil)
			continue
		}
		var i int
		var v float64
		if n, _ := fmt.Sscanf(line, "%d, %g", &i, &v); n == 2 && len(lists) > 0 {
			l := &lists[len(lists)-1]
			if i != len(*l)+1 {
				t.Fatalf("line %q out of order", line)
			}
			*l = append(*l, v*1e3)
		}
	}
	samples := res.Sizes[0].Samples
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if len(lists) != 2 || !slices.EqualFunc(lists[0], samples, near) || !slices.EqualFunc(lists[1], slices.Sorted(slices.Values(samples))[:len(samples)-2], near) {
		t.Fatalf("-U -H: %d lists; want the %d samples in order, then sorted without the two largest:\n%s", len(lists), len(samples), out)
	}
	if slices.IsSorted(samples) {
		t.Fatal("the fake samples are sorted: the test cannot tell the lists apart")
	}
	f, out, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.SendLat, Sorted: true, JSON: true}
	if err := o.finish(f, "client", res, nil); err != nil {
		t.Fatal(err)
	}
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Results) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	got := r.Results[0].SamplesUs
	for i := range got {
		got[i] *= 1e3
	}
	if !slices.EqualFunc(got, samples, near) {
		t.Errorf("samples_us: %d samples, want the %d in order", len(got), len(samples))
	}
}

func TestJSONOutput(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, JSON: true}
	if err := o.finish(f, "client", fakeBW(), nil); err != nil {
		t.Fatal(err)
	}
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.SchemaVersion != 1 || r.Test != "write_bw" || r.Device != "rxe1" || len(r.Results) != 2 ||
		r.Results[1].Bytes != 65536 || r.Results[1].BWAvgMBps <= 0 || r.Error != nil {
		t.Errorf("JSON result %+v", r)
	}
	// Where the side ran is in the document once it has opened its
	// device, and left out before.
	if strings.Contains(out.String(), `"env"`) {
		t.Errorf("a header without an env gave one:\n%s", out)
	}
	withEnv := fakeBW()
	withEnv.Header.Env = report.Env{Host: "h1", Kernel: "6.1.0-57-amd64", FWVer: "28.39.1002", VendorID: 0x2c9,
		VendorPartID: 4129, SpeedGbps: 100, ActiveMTU: 4096, Netdev: "ens1f0np0"}
	withEnv.Header.PeerDevice, withEnv.Header.PeerEnv = "mlx5_1", report.Env{Host: "h2", ActiveMTU: 1024}
	b, err := json.Marshal(jsonResult("client", withEnv, nil))
	const env = `"env":{"host":"h1","kernel":"6.1.0-57-amd64","fw_ver":"28.39.1002","vendor_id":713,"vendor_part_id":4129,` +
		`"speed_gbps":100,"active_mtu":4096,"netdev":"ens1f0np0"},"peer_device":"mlx5_1",` +
		`"peer_env":{"host":"h2","kernel":"","fw_ver":"","vendor_id":0,"vendor_part_id":0,"active_mtu":1024}`
	if err != nil || !strings.Contains(string(b), env) {
		t.Errorf("JSON %s (%v): want %s", b, err, env)
	}
	// What the spec asked for that shapes the figures is in the document.
	res := fakeBW()
	res.Spec.Duration, res.Spec.Margin, res.Spec.WarmUp, res.Spec.MRPerQP = 8, 2, true, true
	if r := jsonResult("client", res, nil); r.MarginS != 2 || !r.WarmUp || !r.MRPerQP {
		t.Errorf("margin_s %d, warm_up %v, mr_per_qp %v", r.MarginS, r.WarmUp, r.MRPerQP)
	}
	// A bidirectional test's JSON has each direction.
	f, out, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.SendBW, JSON: true}
	if err := o.finish(f, "client", fakeBidi(), nil); err != nil {
		t.Fatal(err)
	}
	r = report.Result{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s := r.Results[0]; s.Local == nil || s.Remote == nil || s.Local.Iterations != 5000 || s.Remote.Iterations != 4000 ||
		s.Iterations != 5000 || s.BWPeakMBps != s.Local.BWPeakMBps+s.Remote.BWPeakMBps {
		t.Errorf("bidirectional JSON %+v, local %+v, remote %+v", s, s.Local, s.Remote)
	}
	// A failure before any result is still one valid JSON document.
	f, out, _ = newTestFactory(nil, nil)
	o.fail(f, usageErrorf("-s: bad"))
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Error == nil || r.Error.Code != "usage" {
		t.Errorf("error JSON %+v, %v\n%s", r.Error, err, out)
	}
}

// TestJSONSettings: --json's document has the settings that decide the
// figures, so that a run of -D 10 -l 8 and one of -n 5000 differ in it:
// duration_s, post_list, the queues' depths, CQ moderation, the path MTU,
// max_inline (a write or send test's) or outstanding_reads (a read or
// atomic test's), sl, traffic_class and atomic_type, from the spec and
// from this side's header as the text shows it.
func TestJSONSettings(t *testing.T) {
	doc := func(res *bench.Result) map[string]any {
		t.Helper()
		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: res.Spec.Test, JSON: true}
		if err := o.finish(f, "client", res, nil); err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return d
	}
	check := func(name string, d map[string]any, want map[string]any, absent ...string) {
		t.Helper()
		for k, v := range want {
			if d[k] != v {
				t.Errorf("%s: %s = %v, want %v", name, k, d[k], v)
			}
		}
		for _, k := range absent {
			if v, ok := d[k]; ok {
				t.Errorf("%s: has %s %v", name, k, v)
			}
		}
	}
	timed := fakeBW() // -D 10 -l 8 --sl 3 --tclass 96
	timed.Spec.Duration, timed.Spec.Margin, timed.Spec.PostList, timed.Spec.SL, timed.Spec.TrafficClass = 10, 2, 8, 3, 96
	timed.Header.PostList, timed.Header.MaxInline = 8, 64
	check("-D 10 -l 8", doc(timed), map[string]any{"duration_s": 10.0, "margin_s": 2.0, "post_list": 8.0, "tx_depth": 128.0,
		"cq_moderation": 100.0, "mtu": 1024.0, "max_inline": 64.0, "sl": 3.0, "traffic_class": 96.0},
		"run_infinitely", "outstanding_reads", "atomic_type", "rx_depth")
	counted := fakeBW() // -n 5000: no duration; no list (-l 1); inline 0
	counted.Spec.Iterations, counted.Spec.PostList, counted.Header.PostList = 5000, 1, 1
	check("-n 5000", doc(counted), map[string]any{"tx_depth": 128.0, "cq_moderation": 100.0, "mtu": 1024.0, "max_inline": 0.0},
		"duration_s", "margin_s", "post_list", "sl", "traffic_class")
	infinite := fakeBW()
	infinite.Spec.RunInfinitely, infinite.Spec.Duration = true, 5
	check("--run_infinitely -D 5", doc(infinite), map[string]any{"run_infinitely": true, "duration_s": 5.0})
	read := fakeBW() // a read test's header has Outstand reads, no inline size
	read.Spec.Test, read.Header.OutstandingReads = exchange.ReadBW, 16
	check("read_bw", doc(read), map[string]any{"outstanding_reads": 16.0}, "max_inline", "atomic_type")
	atomic := fakeBW()
	atomic.Spec.Test, atomic.Spec.Atomic, atomic.Header.OutstandingReads = exchange.AtomicBW, exchange.CmpSwap, 16
	check("atomic_bw -A CMP_AND_SWAP", doc(atomic), map[string]any{"outstanding_reads": 16.0, "atomic_type": "CMP_AND_SWAP"}, "max_inline")
	recv := fakeLat() // a send_lat server's header: RX depth, no TX depth
	recv.Header.TXDepth, recv.Header.RXDepth, recv.Header.MaxInline = 0, 512, 236
	check("send_lat", doc(recv), map[string]any{"rx_depth": 512.0, "max_inline": 236.0}, "tx_depth", "cq_moderation", "post_list")
}

// --out_json writes perftest's file, with --json's document in it, beside
// perftest's text or --csv on stdout; a failure's document too; a file
// that cannot be created fails the command before it runs anything.
func TestOutJSONFile(t *testing.T) {
	dir := t.TempDir()
	read := func(name string) report.Result {
		t.Helper()
		return readPerftestFile(t, name).Gorperf
	}
	for _, csv := range []bool{false, true} {
		name := filepath.Join(dir, fmt.Sprintf("csv-%v.json", csv))
		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: exchange.WriteBW, CSV: csv, OutJSON: true, OutJSONFile: name}
		if err := o.openJSONFile(); err != nil {
			t.Fatal(err)
		}
		if err := o.finish(f, "client", fakeBW(), nil); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: "BW average", true: "bytes,"}[csv]; !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
		if r := read(name); r.Test != "write_bw" || len(r.Results) != 2 || r.Results[0].Bytes != 4096 || r.Error != nil {
			t.Errorf("csv %v: the file's document %+v", csv, r)
		}
	}
	// A client that fails: the document names the error, and the exit
	// status is not 0.
	name := filepath.Join(dir, "fail.json")
	f, _, errOut := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"write-bw", "-d", "nosuchdev0", "--out_json_file", name, "127.0.0.1"}); code == 0 {
		t.Errorf("a failed run: exit 0: %s", errOut)
	}
	// (Where there is no device at all, the error says so instead.)
	if r := read(name); r.Error == nil || r.Error.Message == "" || !strings.Contains(errOut.String(), r.Error.Message) || len(r.Results) != 0 {
		t.Errorf("the failed run's document %+v, stderr %s", r, errOut)
	}
	// A run that fails before it would create the file (a flag's value)
	// still writes the document.
	for _, args := range [][]string{{"write-bw", "--out_json", "-s", "0"}, {"send-bw", "--out_json", "-q", "0", "--json"}} {
		name := filepath.Join(dir, args[0]+"-early.json")
		f, out, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, append(args, "--out_json_file", name, "host"))
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
		if r := read(name); r.Error == nil || r.Error.Code != "usage" || !strings.Contains(errOut.String(), r.Error.Message) || r.Test != strings.ReplaceAll(args[0], "-", "_") {
			t.Errorf("%q: the file's document %+v, stderr %s", args, r, errOut)
		}
		if slices.Contains(args, "--json") != (out.Len() > 0) {
			t.Errorf("%q: stdout %q", args, out)
		}
	}
	// A file that cannot be created.
	f, _, errOut = newTestFactory(nil, nil)
	start := time.Now()
	bad := filepath.Join(dir, "no", "such", "dir.json")
	if code := run(context.Background(), f, []string{"send-lat", "--out_json", "--out_json_file", bad, "127.0.0.1"}); code == 0 ||
		!strings.Contains(errOut.String(), "--out_json_file: open "+bad+": no such file or directory") || time.Since(start) > time.Second {
		t.Errorf("an uncreatable file: exit %d after %v: %s", code, time.Since(start), errOut)
	}
}

// With --json, even a command line that fails to parse gives one valid
// JSON document, with the usage error in it and exit status 2.
func TestJSONOnFlagError(t *testing.T) {
	for _, args := range [][]string{
		{"write-bw", "-s", "abc", "--json", "host"},
		{"send-lat", "--json", "--no-such-flag"},
		{"read-bw", "--json", "-c", "UD", "host"},
		{"write-bw", "--json=1", "-s", "abc", "host"},
		{"atomic-lat", "--json=T", "--no-such-flag"},
	} {
		f, out, _ := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		var r report.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Error == nil || r.Error.Code != "usage" || r.SchemaVersion != 1 {
			t.Errorf("%v: %+v, %v\n%s", args, r.Error, err, out)
		}
		if want := strings.ReplaceAll(args[0], "-", "_"); r.Test != want {
			t.Errorf("%v: test %q, want %q", args, r.Test, want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := progressLine(&b)
	p(4096, 250, 1000)
	p(65536, 77, 0)
	if got, want := b.String(), "\r 4096 bytes: 250 of 1000 messages (25%)\033[K\r 65536 bytes: 77 messages\033[K"; got != want {
		t.Errorf("progress %q, want %q", got, want)
	}
	if isTerminal(&b) {
		t.Error("a strings.Builder is not a terminal")
	}
}

// TestReportSizesCounters: a counter's flags reach the report: one that
// went backwards (reset) and one stuck at its maximum (saturated).
func TestReportSizesCounters(t *testing.T) {
	res := &bench.Result{Sizes: []bench.SizeResult{{Size: 64, Counters: []counters.Change{
		{Name: "a", Delta: 5}, {Name: "b", Reset: true}, {Name: "counters/port_xmit_data", Delta: 7, Saturated: true},
	}}}}
	got := reportSizes(res)[0].Counters
	want := []report.Counter{{Name: "a", Delta: 5}, {Name: "b", Reset: true}, {Name: "counters/port_xmit_data", Delta: 7, Saturated: true}}
	if !slices.Equal(got, want) {
		t.Errorf("counters %+v, want %+v", got, want)
	}
}

// TestQueuedNotice: a queued client says how many tests come before its
// own each time that falls, and nothing once none do; a thread that
// reads the server's word late, after another printed it, repeats
// nothing.
func TestQueuedNotice(t *testing.T) {
	var b strings.Builder
	q := queuedNotice(&b)
	for _, n := range []int{3, 3, 2, 3, 2, 1, 2, 1, 0} {
		q(n)
	}
	want := "gorperf: the server is busy with other clients' tests: 3 come before this one\n" +
		"gorperf: the server is busy with other clients' tests: 2 come before this one\n" +
		"gorperf: the server is busy with another client's test: this one comes next\n"
	if b.String() != want {
		t.Errorf("notices:\n%s\nwant:\n%s", b.String(), want)
	}
}
