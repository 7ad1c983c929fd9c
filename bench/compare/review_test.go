//go:build linux

package main

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// compareRun is what a run of compare (this test binary as main, over the
// fakes in dir) did.
type compareRun struct {
	code           int
	stdout, stderr string
	doc            map[string]any // its JSON, nil if it wrote none
}

// runCompare runs compare over the fakes in dir with one write_bw row at
// 2 bytes, then args.
func runCompare(t *testing.T, dir string, args ...string) compareRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "compare.json")
	args = append([]string{"-gorperf", filepath.Join(dir, "gorperf"), "-server-dev", "fake0", "-addr", "127.0.0.1",
		"-json", out, "-tests", "write_bw", "-sizes", "2", "-qps", "", "-post-list", "0", "-port", strconv.Itoa(freePort(t) - 1)}, args...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "COMPARE_MAIN=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	r := compareRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if b, err := os.ReadFile(out); err == nil {
		if err := json.Unmarshal(b, &r.doc); err != nil {
			t.Fatalf("the JSON: %v", err)
		}
	}
	return r
}

// TestSomeRunsFailed: a row where some of a tool's runs failed is marked
// in the table with how many succeeded, their errors are listed under it,
// the JSON counts them, stderr says so and the exit status is 1. Such a
// row was printed as a clean one (gorperf's runs {error, 0.05 MiB/s,
// error} against three good ones of perftest's, spread 0%) and compare
// exited 0.
func TestSomeRunsFailed(t *testing.T) {
	t.Run("gorperf", func(t *testing.T) {
		dir := fakeTools(t, "gorperfflaky")
		r := runCompare(t, dir, "-reps", "3")
		if r.code != 1 {
			t.Errorf("exit status %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		row := tableRow(t, r.stdout, "write_bw")
		if !strings.Contains(row, "MiB/s [2/3]") || strings.Count(row, "[") != 1 {
			t.Errorf("the row does not mark gorperf's 2 of 3 runs (and only those):\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "write_bw 2 B, 1 QPs, gorperf run 1 of 3: exit status 1: ibv_post_send: connection reset") {
			t.Errorf("the failed run's error is not under the table:\n%s", r.stdout)
		}
		if !strings.Contains(r.stderr, "1 of 1 cases are medians of fewer runs than -reps, 1 runs having failed: marked [k/n]") ||
			!strings.Contains(r.stderr, "done (1 of 1); gorperf: 1 of 3 runs failed") {
			t.Errorf("stderr does not say so:\n%s", r.stderr)
		}
		if r.doc == nil || r.doc["failed_runs"] != 1.0 {
			t.Fatalf("JSON's failed_runs: %v", r.doc["failed_runs"])
		}
		g := r.doc["rows"].([]any)[0].(map[string]any)["gorperf"].(map[string]any)
		if g["failed_runs"] != 1.0 || g["runs"].([]any)[0].(map[string]any)["error"] == nil {
			t.Errorf("JSON's gorperf: failed_runs %v, runs %v", g["failed_runs"], g["runs"])
		}
	})
	t.Run("perftest first", func(t *testing.T) {
		// perftest's first run failed: gorperf, without its parameters,
		// was not run in that round or the next (it goes first there).
		dir := fakeTools(t, "perftestflaky")
		r := runCompare(t, dir, "-reps", "3")
		row := tableRow(t, r.stdout, "write_bw")
		if r.code != 1 || !strings.Contains(row, "MiB/s [1/3]") || !strings.Contains(row, "MiB/s [2/3]") {
			t.Errorf("exit status %d, row %q; want 1, gorperf's [1/3] and perftest's [2/3]\n%s", r.code, row, r.stdout)
		}
		for _, want := range []string{"gorperf run 1 of 3: not run", "gorperf run 2 of 3: not run", "perftest run 1 of 3: exit status 1: Unable to init the socket connection"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("no %q under the table:\n%s", want, r.stdout)
			}
		}
		if r.doc["failed_runs"] != 3.0 {
			t.Errorf("JSON's failed_runs %v, want 3", r.doc["failed_runs"])
		}
	})
	t.Run("clean", func(t *testing.T) {
		dir := fakeTools(t, "ok")
		r := runCompare(t, dir, "-reps", "3")
		if r.code != 0 || strings.Contains(r.stdout, "[k/n]") || r.doc["failed_runs"] != 0.0 {
			t.Errorf("every run succeeded: exit status %d, failed_runs %v\n%s\n%s", r.code, r.doc["failed_runs"], r.stdout, r.stderr)
		}
	})
}

// tableRow is the table's first line that starts with test.
func tableRow(t *testing.T, out, test string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == test {
			return l
		}
	}
	t.Fatalf("no %s row:\n%s", test, out)
	return ""
}

// TestOutcome: the exit status and stderr's lines of a run by its rows.
func TestOutcome(t *testing.T) {
	good := summarize([]measure{{MsgRateMpps: 1}, {MsgRateMpps: 2}, {MsgRateMpps: 3}}, true)
	short := summarize([]measure{{Err: "x"}, {MsgRateMpps: 2}, {Err: "y"}}, true)
	none := summarize([]measure{{Err: "x"}}, true)
	for _, tc := range []struct {
		rows   []row
		ncases int
		code   int
		want   string
	}{
		{[]row{{Gorperf: good, Perftest: good}}, 1, 0, ""},
		{[]row{{Gorperf: short, Perftest: good}, {Gorperf: good, Perftest: good}}, 2, 1, "1 of 2 cases are medians of fewer runs than -reps, 2 runs having failed"},
		{[]row{{Gorperf: none, Perftest: good}}, 1, 1, "1 of 1 cases have no ratio"},
		{[]row{{Gorperf: short, Perftest: good}}, 2, 130, "stopped after 1 of 2 cases"},
		// A failed baseline costs the CPU columns only.
		{[]row{{Gorperf: good, Perftest: good, Baselines: [2]measure{{Err: "x"}}}}, 1, 0, ""},
	} {
		code, notes := outcome(tc.rows, tc.ncases)
		if code != tc.code || tc.want == "" && len(notes) > 0 || tc.want != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, tc.want) }) {
			t.Errorf("outcome = %d, %q; want %d and %q", code, notes, tc.code, tc.want)
		}
	}
}

// TestEvenMedian: with an even number of runs the median is the better of
// the middle two (the higher rate, the lower latency), not their mean,
// with which one bad run of two decided the row: perftest's t_typical
// runs of 3986.89 and 28.34 µs gave 2007.62 µs and a ratio of 0.018.
// An even -reps is warned about.
func TestEvenMedian(t *testing.T) {
	g := summarize([]measure{{TTypicalUs: 29.1, P99Us: 40}, {TTypicalUs: 30.2, P99Us: 45}}, false)
	p := summarize([]measure{{TTypicalUs: 3986.89, P99Us: 5000}, {TTypicalUs: 28.34, P99Us: 39}}, false)
	if p.TTypicalUs != 28.34 || p.P99Us != 39 || g.TTypicalUs != 29.1 {
		t.Errorf("latency medians: perftest %v µs (p99 %v), gorperf %v µs; want the lower middle: 28.34 (39) and 29.1", p.TTypicalUs, p.P99Us, g.TTypicalUs)
	}
	r := row{Test: "send_lat", Gorperf: g, Perftest: p}
	r.setRatios()
	if math.Abs(r.TypicalRatio.v-29.1/28.34) > 1e-9 {
		t.Errorf("t_typical ratio %v, want %v", r.TypicalRatio.v, 29.1/28.34)
	}
	bw := summarize([]measure{{MsgRateMpps: 1, BWAvgMBps: 10, Retries: 9}, {MsgRateMpps: 4, BWAvgMBps: 40, Retries: 1},
		{MsgRateMpps: 3, BWAvgMBps: 30, Retries: 2}, {MsgRateMpps: 0.5, BWAvgMBps: 5, Retries: 20}}, true)
	if bw.MsgRateMpps != 3 || bw.BWAvgMBps != 30 || bw.Retries != 2 {
		t.Errorf("rate medians of four runs: %v Mpps, %v MiB/s, %d retries; want the upper middle rate (3, 30) and the lower middle retries (2)", bw.MsgRateMpps, bw.BWAvgMBps, bw.Retries)
	}
	if math.Abs(bw.Spread-3.5/3) > 1e-9 { // (4 - 0.5) / 3
		t.Errorf("spread %v, want %v", bw.Spread, 3.5/3)
	}
	// Odd counts keep the middle run.
	if st := summarize([]measure{{TTypicalUs: 5}, {TTypicalUs: 1}, {TTypicalUs: 9}}, false); st.TTypicalUs != 5 {
		t.Errorf("median of 5, 1, 9: %v", st.TTypicalUs)
	}

	dir := fakeTools(t, "exit")
	for _, tc := range []struct {
		reps string
		warn bool
	}{{"2", true}, {"4", true}, {"3", false}, {"1", false}} {
		r := runCompare(t, dir, "-reps", tc.reps)
		if got := strings.Contains(r.stderr, "compare: -reps "+tc.reps+" is even: each median is the better of the two middle runs' figures"); got != tc.warn {
			t.Errorf("-reps %s: warned %v, want %v\n%s", tc.reps, got, tc.warn, r.stderr)
		}
	}
}

// TestThreadSizesRefused: -thread-sizes where it adds no row is refused
// with exit status 2 and why; it did nothing, silently.
func TestThreadSizesRefused(t *testing.T) {
	dir := fakeTools(t, "exit")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-thread-sizes", "64"}, `compare: -thread-sizes: no row has threads without a -qps count above 1 (one thread a QP; -qps is "")`},
		{[]string{"-thread-sizes", "64", "-qps", "1"}, `-qps is "1")`},
		{[]string{"-thread-sizes", "64", "-qps", "2", "-events", "-tests", "send_bw"}, "compare: -thread-sizes: its rows are write_bw's, which -events leaves out"},
		{[]string{"-thread-sizes", "64", "-qps", "2", "-tests", "read_bw"}, "compare: -thread-sizes: its rows are write_bw's, and -tests has no write_bw"},
	} {
		r := runCompare(t, dir, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.doc != nil {
			t.Errorf("compare %q: exit status %d, stderr %q, JSON written %v; want 2 and %q", tc.args, r.code, r.stderr, r.doc != nil, tc.want)
		}
	}
	c := config{tests: []string{"write_bw"}, qps: []int{1, 2}, threadSizes: []int{64}}
	if err := c.checkThreadSizes(); err != nil {
		t.Errorf("-qps 1,2 -thread-sizes 64: %v", err)
	}
}

// TestThreadCPUs: the footnote of the rows of threads says gorperf pins
// them in turn to its side's CPUs (it said "each on its own CPU", false
// for 4 threads on 2 CPUs: 0,1,0,1), the table lists the rows whose
// client threads shared a CPU, as gorperf reported them, and compare
// warns before a run whose threads outnumber the host's CPUs.
func TestThreadCPUs(t *testing.T) {
	m, err := parse(true, false, []byte(`{"results": [{"msg_rate_mpps": 1}], "thread_results": [{"thread": 0, "cpu": 0}, {"thread": 1, "cpu": 1}, {"thread": 2, "cpu": 0}, {"thread": 3, "cpu": 1}]}`))
	if err != nil || !slices.Equal(m.ThreadCPUs, []int{0, 1, 0, 1}) {
		t.Fatalf("thread CPUs %v, %v; want 0,1,0,1", m.ThreadCPUs, err)
	}
	runs := []measure{m, m, m}
	r := row{Test: "write_bw", Bytes: 64, QPs: 4, Threads: 4, Gorperf: summarize(runs, true), Perftest: summarize(runs, true)}
	r.setRatios()
	two := r
	two.QPs, two.Threads = 2, 2
	two.Gorperf.Runs = []measure{{MsgRateMpps: 1, ThreadCPUs: []int{0, 1}}}
	var b strings.Builder
	printTable(&b, []row{r, two})
	out := b.String()
	if strings.Contains(out, "each on its own CPU") || !strings.Contains(out, "pinned in turn to its side's CPUs") {
		t.Errorf("the footnote:\n%s", out)
	}
	if !strings.Contains(out, "  write_bw 64 B, 4 QPs, 4 threads: the client's threads were on CPUs 0,1,0,1\n") || strings.Contains(out, "2 threads: the client's") {
		t.Errorf("the rows whose threads shared a CPU (4 threads, not 2):\n%s", out)
	}

	c := config{tests: []string{"write_bw"}, qps: []int{1, 2, 4}, threadSizes: []int{64}}
	if n := c.threadNote(2); !strings.Contains(n, "up to 4 threads a side on this host's 2 CPUs") {
		t.Errorf("4 threads, 2 CPUs: %q", n)
	}
	if n := c.threadNote(4); n != "" {
		t.Errorf("4 threads, 4 CPUs: %q", n)
	}
	c.pin = true
	if n := c.threadNote(16); !strings.Contains(n, "-pin puts each side on one CPU") {
		t.Errorf("-pin: %q", n)
	}
	c = config{tests: []string{"write_bw"}, qps: []int{1, 4}}
	if n := c.threadNote(1); n != "" {
		t.Errorf("no rows of threads: %q", n)
	}
}

// TestParamsSplit: the JSON says which flags both tools ran with
// (common_params) and which gorperf alone got (gorperf_params: perftest's
// header's, --threads, --disable_numa); params, which said "the flags
// both tools ran with" but held perftest's header's too, keeps its old
// value for older readers.
func TestParamsSplit(t *testing.T) {
	fakeTools(t, "ok")
	c := &config{serverDev: "fake0", clientDev: "fake1", addr: "127.0.0.1", port: freePort(t) - 1, gorperf: "gorperf", reps: 1,
		gorperfOnly: []string{"--disable_numa"}}
	r := c.compare(context.Background(), testCase{test: "write_bw", size: 64, qps: 2, threads: 2, iters: 2000, postList: 16, extra: []string{"-l", "16"}})
	head := "--use_old_post_send -t 128 -Q 1 -m 1024 -I 0"
	if r.CommonParams != "-l 16" || r.GorperfParams != head+" --threads 2 --disable_numa" || r.Params != "-l 16 "+head {
		t.Errorf("common %q, gorperf's %q, params %q", r.CommonParams, r.GorperfParams, r.Params)
	}
	b, _ := json.Marshal(r)
	for _, k := range []string{`"params":`, `"common_params":"-l 16"`, `"gorperf_params":`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON has no %s: %s", k, b)
		}
	}
	if !slices.Equal(r.Gorperf.Runs[0].ThreadCPUs, []int{0, 1}) {
		t.Errorf("the run's thread CPUs: %v", r.Gorperf.Runs[0].ThreadCPUs)
	}
}

// TestPortTaken: a run whose server finds its port taken, by a program
// that took it between compare's runs, is made again on the next port,
// not counted as the tool's failure: the row is clean and compare exits
// 0. It failed the run ("bind: address already in use"), marked the row
// [2/3] and exited 1; CI's host tests, which take ports of their own,
// once did so to TestSomeRunsFailed.
func TestPortTaken(t *testing.T) {
	dir := fakeTools(t, "ok")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The first run's port, the one after -port, is taken.
	first := l.Addr().(*net.TCPAddr).Port
	r := runCompare(t, dir, "-reps", "3", "-port", strconv.Itoa(first-1))
	if r.code != 0 {
		t.Errorf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if row := tableRow(t, r.stdout, "write_bw"); strings.Contains(row, "[") {
		t.Errorf("the row is marked as having failed runs:\n%s", r.stdout)
	}
	if r.doc == nil || r.doc["failed_runs"] != nil && r.doc["failed_runs"] != 0.0 {
		t.Errorf("the JSON counts failed runs: %v", r.doc["failed_runs"])
	}
}

// TestPortTakenOnAnotherAddress: a perftest tool's server listens on every
// address, and says only that it could not listen, so a port held on
// another of this machine's addresses than the one probed is taken too.
func TestPortTakenOnAnotherAddress(t *testing.T) {
	dir := fakeTools(t, "ok")
	// The first two runs' ports, gorperf's and the perftest tool's,
	// held on 127.0.0.2.
	var first int
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Skipf("no 127.0.0.2 here: %v", err)
		}
		first = l.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(first+1)))
		if err == nil {
			defer l.Close()
			defer l2.Close()
			break
		}
		l.Close()
		if try == 10 {
			t.Fatalf("no two ports in a row free on 127.0.0.2: %v", err)
		}
	}
	r := runCompare(t, dir, "-reps", "3", "-port", strconv.Itoa(first-1))
	if r.code != 0 {
		t.Errorf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if row := tableRow(t, r.stdout, "write_bw"); strings.Contains(row, "[") {
		t.Errorf("the row is marked as having failed runs:\n%s", r.stdout)
	}
}
