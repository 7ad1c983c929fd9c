//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A header as perftest 4.5 prints it for ib_write_bw at 64 KiB on rxe.
const header = `---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : rxe1
 Number of qps   : 1		Transport type : IB
 Connection type : RC		Using SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : OFF
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 1
 Max inline data : 0[B]
 rdma_cm QPs	 : OFF
`

func TestPerftestParams(t *testing.T) {
	got := perftestParams(header)
	want := []string{"--use_old_post_send", "-t", "128", "-Q", "1", "-m", "1024", "-I", "0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	read := " PCIe relax order: OFF\t\tLock-free      : OFF\n ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n TX depth        : 128\n CQ Moderation   : 1\n Mtu             : 1024[B]\n Outstand reads  : 128\n"
	if got, want := perftestParams(read), []string{"--disable_pcie_relaxed", "-t", "128", "-Q", "1", "-m", "1024", "-o", "128"}; !reflect.DeepEqual(got, want) {
		t.Errorf("read_bw: got %q, want %q", got, want)
	}
	if got := perftestParams("no header here\n"); got != nil {
		t.Errorf("from nothing: %q", got)
	}
}

func TestSummarize(t *testing.T) {
	runs := []measure{
		{MsgRateMpps: 3, BWAvgMBps: 30, Retries: 5},
		{Err: "perftest printed no result"},
		{MsgRateMpps: 1, BWAvgMBps: 10, Retries: 1},
		{MsgRateMpps: 2, BWAvgMBps: 20, Retries: 9},
	}
	st := summarize(runs, true)
	if st.Err != "" || st.MsgRateMpps != 2 || st.BWAvgMBps != 20 || st.Retries != 5 || len(st.Runs) != 4 {
		t.Errorf("medians of three good runs: %+v", st.measure)
	}
	if math.Abs(st.Spread-1) > 1e-9 { // (3 - 1) / 2
		t.Errorf("spread %v, want 1", st.Spread)
	}
	if st.Best != 3 {
		t.Errorf("best message rate %v, want 3 (the highest)", st.Best)
	}
	if st := summarize([]measure{{TTypicalUs: 5}, {TTypicalUs: 2}, {TTypicalUs: 9}}, false); st.Best != 2 {
		t.Errorf("best t_typical %v, want 2 (the lowest)", st.Best)
	}
	// An even count takes the better of the middle two (TestEvenMedian).
	if st := summarize([]measure{{TTypicalUs: 1}, {TTypicalUs: 4}}, false); st.TTypicalUs != 1 {
		t.Errorf("median of 1 and 4: %v", st.TTypicalUs)
	}
	if st := summarize([]measure{{Err: "a"}, {Err: "b"}}, true); st.Err != "a" {
		t.Errorf("all failed: error %q, want the first", st.Err)
	}
	// A case where a tool failed every run has no ratio, and counts as
	// failed for the exit status.
	failed, good := summarize([]measure{{Err: "a"}}, true), summarize(runs, true)
	rows := []row{{Gorperf: good, Perftest: good}, {Gorperf: good, Perftest: failed}, {Gorperf: failed, Perftest: good}}
	if n := failedRows(rows); n != 2 {
		t.Errorf("failedRows = %d, want 2", n)
	}
}

func TestCounterDelta(t *testing.T) {
	d := counterDelta(map[string]uint64{"rxe1/completer_retry_err": 3, "rxe1/sent_pkts": 10},
		map[string]uint64{"rxe1/completer_retry_err": 7, "rxe1/sent_pkts": 10, "rxe0/rcvd_pkts": 4})
	want := map[string]uint64{"rxe1/completer_retry_err": 4, "rxe0/rcvd_pkts": 4}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %v, want %v", d, want)
	}
}

func TestNetCPU(t *testing.T) {
	runs := []measure{
		{UserCPUNs: 1_100_000, SysCPUNs: 2_200_000, Msgs: 1002},
		{Err: "failed"},
		{UserCPUNs: 110_000, SysCPUNs: 210_000, Msgs: 1002}, // loop CPU lost in the noise
	}
	netCPU(runs, measure{UserCPUNs: 100_000, SysCPUNs: 200_000, Msgs: 2})
	if !runs[0].CPUKnown || runs[0].UserCPUNsPerMsg != 1000 || runs[0].SysCPUNsPerMsg != 2000 {
		t.Errorf("net of the baseline: %+v, want 1000 and 2000 ns/msg", runs[0])
	}
	if runs[1].CPUKnown || runs[2].CPUKnown {
		t.Error("a failed run, or one with little loop CPU, got a CPU figure")
	}
	// Without a baseline, no figure.
	runs = []measure{{UserCPUNs: 1000, SysCPUNs: 3000, Msgs: 10}}
	netCPU(runs, measure{Err: "baseline failed"})
	if runs[0].CPUKnown {
		t.Error("a CPU figure without a baseline")
	}
	// summarize takes CPU medians over the runs that have them.
	st := summarize([]measure{{MsgRateMpps: 1, CPUKnown: true, UserCPUNsPerMsg: 5}, {MsgRateMpps: 1}}, true)
	if !st.CPUKnown || st.UserCPUNsPerMsg != 5 {
		t.Errorf("CPU median over known runs: %+v", st.measure)
	}
}

// TestLocalCopy checks that the copy of a binary has its bytes and can be
// run, and that cleaning up removes it.
func TestLocalCopy(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho copied\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, cleanup, err := localCopy(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin).Output()
	if err != nil || string(out) != "copied\n" {
		t.Errorf("running the copy: %q, %v", out, err)
	}
	cleanup()
	if _, err := os.Stat(filepath.Dir(bin)); !os.IsNotExist(err) {
		t.Errorf("after cleanup, %s: %v, want it gone", filepath.Dir(bin), err)
	}
	if _, _, err := localCopy(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("copying a missing file succeeded")
	}
}

// TestPrintTable checks that each row puts its figures under the right
// headings, the best-run ratio among them.
func TestPrintTable(t *testing.T) {
	bw := row{Test: "write_bw", Bytes: 64, QPs: 1, BWRatio: some(0.9), MsgRateRatio: some(0.91), BestRatio: some(0.97),
		Gorperf: stat{measure: measure{BWAvgMBps: 9}}, Perftest: stat{measure: measure{BWAvgMBps: 10}}}
	lat := row{Test: "write_lat", Bytes: 2, QPs: 1, TypicalRatio: some(1.1), BestRatio: some(1.05), TypicalDiffUs: some(2),
		Gorperf: stat{measure: measure{TTypicalUs: 22}}, Perftest: stat{measure: measure{TTypicalUs: 20}}}
	noBase := bw
	noBase.Baselines[0].Err = "the server did not listen"
	var b strings.Builder
	printTable(&b, []row{bw, lat, noBase})
	lines := strings.Split(b.String(), "\n")
	col := func(line, heading string) string {
		// tabwriter right-aligns: a heading ends where its column ends,
		// counted in characters ("µs" is two bytes).
		end := len([]rune(lines[0][:strings.Index(lines[0], heading)])) + len([]rune(heading))
		f := strings.Fields(string([]rune(line)[:end]))
		return f[len(f)-1]
	}
	for _, c := range []struct{ line, heading, want string }{
		{lines[1], "msg rate ratio", "0.910"}, {lines[1], "best ratio", "0.970"},
		{lines[2], "ratio", "1.100"}, {lines[2], "best ratio", "1.050"}, {lines[2], "Δ typical µs", "+2.00"},
		{lines[1], "user CPU/msg", "-"}, {lines[3], "user CPU/msg", "err"},
	} {
		if got := col(c.line, c.heading); got != c.want {
			t.Errorf("%q under %q: %q, want %q\n%s", strings.Fields(c.line)[0], c.heading, got, c.want, b.String())
		}
	}
	if want := "write_bw 64 B, 1 QPs, gorperf: the server did not listen"; !strings.Contains(b.String(), want) {
		t.Errorf("the table does not say which baseline failed (%q):\n%s", want, b.String())
	}
	// The figures are perftest's MB/sec, 2^20 bytes a second, as the
	// footnote says: MiB/s (the cells said MB/s).
	if g := col(lines[1], "gorperf"); !strings.Contains(lines[1], "9.000 MiB/s") || strings.Contains(b.String(), " MB/s") || g != "MiB/s" {
		t.Errorf("bandwidth cells not in MiB/s (under gorperf: %q):\n%s", g, b.String())
	}
	b.Reset()
	printTable(&b, []row{bw, lat})
	if strings.Contains(b.String(), "baseline run failed") {
		t.Errorf("a table without a failed baseline speaks of one:\n%s", b.String())
	}
}

func TestCases(t *testing.T) {
	c := config{tests: []string{"write_bw", "read_lat"}, sizes: []int{2, 64}, postList: 16,
		postListSizes: []int{2}, qps: []int{1, 4}}
	var got []string
	for _, k := range c.cases() {
		got = append(got, fmt.Sprintf("%s/%d/%d/%s", k.test, k.size, k.qps, strings.Join(k.extra, " ")))
	}
	want := []string{"write_bw/2/1/", "write_bw/64/1/", "read_lat/2/1/", "read_lat/64/1/",
		"write_bw/2/1/-l 16", "write_bw/65536/1/", "write_bw/65536/4/"}
	if !slices.Equal(got, want) {
		t.Errorf("cases:\n got %q\nwant %q", got, want)
	}
	// -recv-post-list: the send_bw rows with a post list replace their
	// receives in lists too.
	c.recvPostList = 32
	c.tests = []string{"write_bw", "read_lat", "send_bw"}
	if k := c.cases()[7]; k.test != "send_bw" || strings.Join(k.extra, " ") != "-l 16 --recv_post_list 32" || len(c.cases()[6].extra) != 2 {
		t.Errorf("with -recv-post-list: %+v and %+v", c.cases()[6], k)
	}
	c.tests = []string{"write_bw", "read_lat"}
	c.postList, c.recvPostList = 0, 0
	if n := len(c.cases()); n != 6 {
		t.Errorf("%d cases without a post list, want 6", n)
	}
	// -thread-sizes: write_bw rows for each QP count above 1, where
	// gorperf alone gets --threads.
	c.threadSizes = []int{64}
	if cs := c.cases(); len(cs) != 7 || cs[6].test != "write_bw" || cs[6].size != 64 || cs[6].qps != 4 || cs[6].threads != 4 ||
		len(cs[6].extra) != 0 || !slices.Equal(cs[6].gorperfOnly(), []string{"--threads", "4"}) || cs[5].gorperfOnly() != nil {
		t.Errorf("with -thread-sizes 64: %+v", cs)
	}
	var b strings.Builder
	printTable(&b, []row{{Test: "write_bw", Bytes: 64, QPs: 4, Threads: 4}})
	if !strings.Contains(b.String(), " 4/4t ") || !strings.Contains(b.String(), "ran the N QPs as M threads") {
		t.Errorf("a row of threads:\n%s", b.String())
	}
	c.threadSizes = nil
	// -events: -e everywhere, and no write tests, which perftest cannot
	// run with events.
	c.events, c.postList, c.tests = true, 16, []string{"write_lat", "read_lat", "send_bw"}
	got = nil
	for _, k := range c.cases() {
		got = append(got, fmt.Sprintf("%s/%d/%d/%s", k.test, k.size, k.qps, strings.Join(k.extra, " ")))
	}
	want = []string{"read_lat/2/1/-e", "read_lat/64/1/-e", "send_bw/2/1/-e", "send_bw/64/1/-e", "send_bw/2/1/-l 16 -e"}
	if !slices.Equal(got, want) {
		t.Errorf("cases with -events:\n got %q\nwant %q", got, want)
	}
}

// TestWriteJSONAfterEachCase checks that the file holds the rows so far and
// says whether they are all, so that a run stopped part way keeps them.
func TestWriteJSONAfterEachCase(t *testing.T) {
	dir := t.TempDir()
	c := config{out: filepath.Join(dir, "compare.json"), reps: 3, serverDev: "rxe0", clientDev: "rxe1"}
	read := func() (doc struct {
		Complete bool
		Rows     []row
	}) {
		b, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	rows := []row{{Test: "write_bw", Bytes: 2, QPs: 1}}
	if err := c.writeJSON(rows, false, ""); err != nil {
		t.Fatal(err)
	}
	if d := read(); d.Complete || len(d.Rows) != 1 || d.Rows[0].Test != "write_bw" {
		t.Errorf("after one of two cases: complete %v, %d rows", d.Complete, len(d.Rows))
	}
	rows = append(rows, row{Test: "read_lat", Bytes: 64, QPs: 1})
	if err := c.writeJSON(rows, true, ""); err != nil {
		t.Fatal(err)
	}
	if d := read(); !d.Complete || len(d.Rows) != 2 || d.Rows[1].Test != "read_lat" {
		t.Errorf("after both cases: complete %v, %d rows", d.Complete, len(d.Rows))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want only the JSON", len(ents))
	}
}

// TestParseGorperf reads gorperf's JSON: the figures compared, and its own
// CPU time (--cpu_util) where it has it.
func TestParseGorperf(t *testing.T) {
	doc := `{"schema_version": 1, "env": {"host": "a"}, "peer_env": {"host": "b"},
		"results": [{"bytes": 64, "iterations": 5000, "bw_avg_mbps": 1.5, "msg_rate_mpps": 0.0245,
		"cpu": {"user_us_per_msg": 0.4, "sys_us_per_msg": 40.5, "util_pct": 99.1, "user_s": 0.002, "sys_s": 0.2, "wall_s": 0.2}}]}`
	m, err := parse(true, false, []byte(doc))
	if err != nil || m.MsgRateMpps != 0.0245 || m.CPU == nil || m.CPU.UserUsPerMsg != 0.4 || m.CPU.SysUsPerMsg != 40.5 || m.CPU.UtilPct != 99.1 {
		t.Fatalf("parse = %+v, %v", m, err)
	}
	// Where the two sides ran, for the comparison's JSON.
	if string(m.env) != `{"host": "a"}` || string(m.peerEnv) != `{"host": "b"}` {
		t.Errorf("env %s, peer_env %s", m.env, m.peerEnv)
	}
	if m, err := parse(true, false, []byte(`{"results": [{"bytes": 64, "msg_rate_mpps": 1}]}`)); err != nil || m.CPU != nil {
		t.Errorf("without cpu: %+v, %v", m, err)
	}
	if _, err := parse(true, false, []byte(`{"results": [], "error": {"code": "failed", "message": "x"}}`)); err == nil {
		t.Error("an error document parsed")
	}
}

// TestBaselineIters: a baseline run is long enough for perftest (5
// messages, two post lists) and a multiple of both lists.
func TestBaselineIters(t *testing.T) {
	for _, tc := range []struct{ pl, rpl, want int }{
		{0, 0, 5}, {1, 1, 5}, {16, 0, 32}, {16, 32, 32}, {16, 24, 48}, {0, 8, 8}, {4, 3, 12}, {3, 0, 6},
	} {
		if got := baselineIters(tc.pl, tc.rpl); got != tc.want {
			t.Errorf("baselineIters(%d, %d) = %d, want %d", tc.pl, tc.rpl, got, tc.want)
		}
	}
}

// TestNUMAParity: gorperf stays where it started beside a perftest that
// does (no --disable_numa in its help), and places itself by default
// beside one that moves to the device's node.
func TestNUMAParity(t *testing.T) {
	old, _ := numaParity("  -F, --CPU-freq  Do not show a warning\n      --use-srq  Use a Shared Receive Queue.\n")
	if !slices.Equal(old, []string{"--disable_numa"}) {
		t.Errorf("beside perftest 4.5: gorperf gets %q, want --disable_numa", old)
	}
	now, why := numaParity("      --disable_numa Disable NUMA auto-detection and binding.\n")
	if now != nil || !strings.Contains(why, "as gorperf does by default") {
		t.Errorf("beside perftest 26.04: gorperf gets %q (%s), want nothing", now, why)
	}
}

// TestListIters: a row with a post list runs -n rounded up to a multiple
// of its lists, which perftest requires ("Number of iterations must be a
// multiple of post list size"), and the output says so; with -n 5000 and
// -post-list 16 every post-list row failed in both tools' runs.
func TestListIters(t *testing.T) {
	for _, tc := range []struct{ n, pl, rpl, want int }{
		{5000, 16, 0, 5008}, {2000, 16, 0, 2000}, {5000, 0, 0, 5000}, {5000, 1, 1, 5000},
		{100, 16, 24, 144}, {96, 16, 24, 96}, {48, 16, 24, 48}, {7, 0, 4, 8}, {0, 16, 0, 0},
	} {
		if got := listIters(tc.n, tc.pl, tc.rpl); got != tc.want {
			t.Errorf("listIters(%d, %d, %d) = %d, want %d", tc.n, tc.pl, tc.rpl, got, tc.want)
		}
	}
	c := config{tests: []string{"write_bw", "send_lat", "send_bw"}, sizes: []int{64}, postList: 16, recvPostList: 24,
		postListSizes: []int{2}, qps: []int{2}, iters: 5000, latIters: 999}
	cases := c.cases()
	var got []string
	for _, k := range cases {
		got = append(got, fmt.Sprintf("%s/%d/%s n=%d", k.test, k.qps, strings.Join(k.extra, " "), k.iters))
		if k.postList > 1 && k.iters%k.postList != 0 || k.recvPostList > 1 && k.iters%k.recvPostList != 0 {
			t.Errorf("%s %q runs -n %d, not a multiple of its lists", k.test, k.extra, k.iters)
		}
	}
	want := []string{"write_bw/1/ n=5000", "send_lat/1/ n=999", "send_bw/1/ n=5000", "write_bw/1/-l 16 n=5008",
		"send_bw/1/-l 16 --recv_post_list 24 n=5040", "write_bw/2/ n=5000"}
	if !slices.Equal(got, want) {
		t.Errorf("cases:\n got %q\nwant %q", got, want)
	}
	notes := c.iterNotes(cases)
	if len(notes) != 2 || !strings.Contains(notes[0], "-n 5000 is not a multiple of the post list 16") || !strings.Contains(notes[0], "run 5008 iterations") ||
		!strings.Contains(notes[1], "post list 16 and receive post list 24") || !strings.Contains(notes[1], "run 5040 iterations") {
		t.Errorf("notes: %q", notes)
	}
	if r := newRow(cases[4]); r.Iters != 5040 || r.PostList != 16 || r.RecvPostList != 24 {
		t.Errorf("the row says %d iterations, lists %d/%d", r.Iters, r.PostList, r.RecvPostList)
	}
	c.iters = 4816
	if notes := c.iterNotes(c.cases()); len(notes) != 1 || !strings.Contains(notes[0], "receive post list 24") || !strings.Contains(notes[0], "run 4848") {
		t.Errorf("-n 4816, a multiple of 16 but not of 48: notes %q", notes)
	}
}

// TestCasesOnce: with the default flags write_bw at 64 KiB with 1 QP is
// both a size row and a QP row; it runs once (it ran twice), and so does
// a size given twice.
func TestCasesOnce(t *testing.T) {
	c := config{tests: []string{"write_bw", "read_bw", "send_lat"}, sizes: []int{2, 64, 4096, 65536, 64}, qps: []int{1, 2, 4, 8, 2},
		postList: 16, postListSizes: []int{2, 64, 256}, threadSizes: []int{64}, iters: 2000, latIters: 1000}
	seen := map[string]int{}
	for _, k := range c.cases() {
		seen[fmt.Sprintf("%s %d B %d QPs %q threads %d", k.test, k.size, k.qps, k.extra, k.threads)]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s: %d times", k, n)
		}
	}
	for _, k := range []string{`write_bw 65536 B 1 QPs [] threads 0`, `write_bw 65536 B 8 QPs [] threads 0`, `read_bw 65536 B 1 QPs [] threads 0`,
		`write_bw 64 B 2 QPs [] threads 2`, `write_bw 64 B 1 QPs ["-l" "16"] threads 0`, `write_bw 64 B 1 QPs [] threads 0`} {
		if seen[k] != 1 {
			t.Errorf("%s: %d times, want once", k, seen[k])
		}
	}
	// 4 sizes of each of 3 tests, write_bw's post-list rows at 3 sizes
	// (send_bw is not one of the tests), QPs 2, 4, 8 at 64 KiB, threads at
	// 2, 4, 8.
	if len(seen) != 12+3+3+3 {
		t.Errorf("%d cases, want 21", len(seen))
	}
}

// TestJSONBeforeTheFirstCase: the JSON is written before the first case,
// with no rows and complete false, so that a run stopped during its first
// case does not leave an earlier run's complete file where it says its
// JSON is (the old code wrote it first after the first case).
func TestJSONBeforeTheFirstCase(t *testing.T) {
	c := config{out: filepath.Join(t.TempDir(), "compare.json"), reps: 1}
	type doc struct {
		Complete *bool
		Rows     []row
	}
	read := func() (d doc) {
		t.Helper()
		b, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	cases := []testCase{{test: "write_bw", size: 2, qps: 1}, {test: "read_lat", size: 2, qps: 1}}
	// An earlier run's complete file.
	rows, err := c.runCases(context.Background(), cases, "", func(_ context.Context, k testCase) row { return newRow(k) })
	if d := read(); err != nil || len(rows) != 2 || d.Complete == nil || !*d.Complete || len(d.Rows) != 2 {
		t.Fatalf("a whole run: %d rows, %v; the file: %+v", len(rows), err, d)
	}
	// This run is stopped during its first case.
	ctx, cancel := context.WithCancel(context.Background())
	var during doc
	rows, err = c.runCases(ctx, cases, "", func(_ context.Context, k testCase) row {
		during = read()
		cancel()
		return newRow(k)
	})
	if err != nil || len(rows) != 0 {
		t.Errorf("stopped in the first case: %d rows, %v", len(rows), err)
	}
	for when, d := range map[string]doc{"during the first case": during, "after": read()} {
		if d.Complete == nil || *d.Complete || len(d.Rows) != 0 {
			t.Errorf("%s the file says complete %v with %d rows, want false and none", when, d.Complete, len(d.Rows))
		}
	}
	if b, _ := os.ReadFile(c.out); !strings.Contains(string(b), `"rows": []`) {
		t.Errorf("no rows are not an empty list:\n%s", b)
	}
}

// perftest's result formats, from its src/perftest_parameters.h (the
// linux-rdma/perftest commit 00b55b6), in Go's verbs: %lu and PRIu64 as
// %d, %lf as %f.
const (
	perftestResultLine = "---------------------------------------------------------------------------------------\n"
	perftestResultFmt  = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	perftestReportFmt  = " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f"
	perftestResultLat  = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99" + "%" + " percentile[usec]   99.9" + "%" + " percentile[usec] "
	perftestReportLat  = " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
	// With --cpu_util: RESULT_EXT_CPU_UTIL and REPORT_EXT_CPU_UTIL.
	perftestResultCPU = "    CPU_Util[%]\n"
	perftestReportCPU = "\t    %-3.2f\n"
)

// TestParseGorperf99 reads gorperf's JSON: the 99% compared with perftest's
// column is the one defined as perftest's (percentile_99_us), not the
// nearest rank over every sample (p99_us).
func TestParseGorperf99(t *testing.T) {
	out := `{"results":[{"size":2,"t_typical_us":1.5,"p99_us":9.75,"percentile_99_us":8.5}],"env":{"host":"a"}}`
	m, err := parse(true, true, []byte(out))
	if err != nil || m.TTypicalUs != 1.5 || m.P99Us != 8.5 || string(m.env) != `{"host":"a"}` {
		t.Errorf("%+v, %v; want t_typical 1.5, 99%% 8.5 and the env", m, err)
	}
}

// TestParsePerftest reads perftest's result lines as it prints them (the
// header, RESULT_FMT or RESULT_FMT_LAT, then REPORT_FMT or REPORT_FMT_LAT):
// BW average is column 3 and MsgRate 4; t_typical 4 and the 99th
// percentile 7.
func TestParsePerftest(t *testing.T) {
	bw := header + perftestResultLine + perftestResultFmt + "\n" +
		fmt.Sprintf(perftestReportFmt, 65536, 2000, 1234.56, 1100.25, 0.017604) + "\n" + perftestResultLine
	m, err := parse(false, false, []byte(bw))
	if err != nil || m.BWAvgMBps != 1100.25 || m.MsgRateMpps != 0.017604 || m.TTypicalUs != 0 || m.P99Us != 0 {
		t.Errorf("write_bw: %+v, %v; want BW average 1100.25 and message rate 0.017604\n%s", m, err, bw)
	}
	// --cpu_util adds a column at the end.
	bwCPU := perftestResultLine + perftestResultFmt + perftestResultCPU +
		fmt.Sprintf(perftestReportFmt+perftestReportCPU, 2, 5000, 9.5, 8.25, 4.325, 99.5) + perftestResultLine
	if m, err := parse(false, false, []byte(bwCPU)); err != nil || m.BWAvgMBps != 8.25 || m.MsgRateMpps != 4.325 {
		t.Errorf("with --cpu_util: %+v, %v\n%s", m, err, bwCPU)
	}
	lat := perftestResultLine + perftestResultLat + "\n" +
		fmt.Sprintf(perftestReportLat, 2, 1000, 10.11, 250.5, 15.25, 16.5, 3.75, 42.5, 180.25) + "\n" + perftestResultLine
	m, err = parse(false, true, []byte(lat))
	if err != nil || m.TTypicalUs != 15.25 || m.P99Us != 42.5 || m.BWAvgMBps != 0 || m.MsgRateMpps != 0 {
		t.Errorf("write_lat: %+v, %v; want t_typical 15.25 and 99%% 42.5\n%s", m, err, lat)
	}
	if _, err := parse(false, false, []byte(perftestResultLine+" Couldn't connect to 198.18.0.1:18601\n")); err == nil ||
		!strings.Contains(err.Error(), "Couldn't connect") {
		t.Errorf("an output without a result: %v", err)
	}
}

// TestCasesFollowTests: -tests limits the post-list rows (write_bw and
// send_bw), the QP rows and the thread rows (write_bw) to the tests it
// names; they ran whatever -tests said (-tests read_lat,write_lat ran
// write_bw at 64 KiB, -tests write_bw,send_lat send_bw with a post list).
// The default tests keep every row.
func TestCasesFollowTests(t *testing.T) {
	rows := func(c config) []string {
		var got []string
		for _, k := range c.cases() {
			got = append(got, fmt.Sprintf("%s/%d/%d/%d/%s", k.test, k.size, k.qps, k.threads, strings.Join(k.extra, " ")))
		}
		return got
	}
	for _, tc := range []struct {
		c    config
		want []string
	}{
		{config{tests: []string{"read_lat", "write_lat"}, sizes: []int{2}, qps: []int{1, 2, 4, 8}, threadSizes: []int{64}},
			[]string{"read_lat/2/1/0/", "write_lat/2/1/0/"}},
		{config{tests: []string{"write_bw", "send_lat"}, sizes: []int{2}, postList: 16, postListSizes: []int{64}, qps: []int{1}},
			[]string{"write_bw/2/1/0/", "send_lat/2/1/0/", "write_bw/64/1/0/-l 16", "write_bw/65536/1/0/"}},
		{config{tests: []string{"send_bw"}, sizes: []int{64}, qps: []int{1}},
			[]string{"send_bw/64/1/0/"}},
		{config{tests: []string{"send_bw"}, sizes: []int{64}, postList: 16, postListSizes: []int{2}, qps: []int{1, 2}, threadSizes: []int{64}},
			[]string{"send_bw/64/1/0/", "send_bw/2/1/0/-l 16"}},
		{config{tests: []string{"read_bw", "write_bw"}, sizes: []int{2}, qps: []int{2}, threadSizes: []int{64}},
			[]string{"read_bw/2/1/0/", "write_bw/2/1/0/", "write_bw/65536/2/0/", "write_bw/64/2/2/"}},
	} {
		if got := rows(tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("-tests %s:\n got %q\nwant %q", strings.Join(tc.c.tests, ","), got, tc.want)
		}
	}
	// The defaults: every test, and so every post-list, QP and thread row.
	c := config{tests: strings.Split("write_bw,read_bw,send_bw,write_lat,read_lat,send_lat", ","), sizes: []int{2, 64, 4096, 65536},
		qps: []int{1, 2, 4, 8}, postList: 16, postListSizes: []int{2, 64, 256}, threadSizes: []int{64}}
	// 6 tests at 4 sizes, 2 post-list tests at 3 sizes, QPs 2, 4, 8 (1
	// is a size row), threads at 2, 4, 8.
	if n := len(c.cases()); n != 24+6+3+3 {
		t.Errorf("the default tests: %d cases, want 36", n)
	}
}

// TestSummarizeWholeRun: a tool's summary has the medians of the runs'
// whole-client CPU times and messages, as of its other figures; they were
// 0 whatever the runs said.
func TestSummarizeWholeRun(t *testing.T) {
	runs := []measure{
		{MsgRateMpps: 1, UserCPUNs: 300, SysCPUNs: 40, Msgs: 2000},
		{MsgRateMpps: 2, UserCPUNs: 100, SysCPUNs: 60, Msgs: 2000},
		{Err: "failed", UserCPUNs: 1},
		{MsgRateMpps: 3, UserCPUNs: 200, SysCPUNs: 50, Msgs: 2000},
	}
	st := summarize(runs, true)
	if st.UserCPUNs != 200 || st.SysCPUNs != 50 || st.Msgs != 2000 {
		t.Errorf("summary: user %d ns, sys %d ns, %d messages; want 200, 50, 2000", st.UserCPUNs, st.SysCPUNs, st.Msgs)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["user_cpu_ns"] != 200.0 || doc["sys_cpu_ns"] != 50.0 || doc["msgs"] != 2000.0 {
		t.Errorf("JSON: user_cpu_ns %v, sys_cpu_ns %v, msgs %v; want 200, 50, 2000", doc["user_cpu_ns"], doc["sys_cpu_ns"], doc["msgs"])
	}
}
