//go:build linux

// Command compare runs gorperf and perftest side by side, with the same
// parameters on the same devices, and prints how gorperf compares: the
// ratio gorperf ÷ perftest for bandwidth and message rate, and the
// difference and ratio of t_typical and the 99th percentile for latency.
// It also writes the figures as JSON, before the first case (no rows yet)
// and after every case: a run stopped by Ctrl-C or a TERM prints the table
// of the cases done and keeps their JSON, whose "complete" is then false,
// and never leaves an earlier run's file in its place.
//
// It exits 0 only where every run of every case succeeded; 1 where any
// failed: a case with no ratio because one tool failed every run (an ERROR
// row), or a row that is the median of fewer runs than -reps, which the
// table marks "[2/3]" (two of three runs) beside the tool's figure, and
// whose failed runs' errors it lists under the table; the JSON has each
// tool's failed_runs and each run's error, and stderr says how many rows
// are short. A failed baseline run (the short run whose CPU time is
// subtracted) costs only the row's CPU columns ("err") and not the exit
// status. Stopped by a signal, it exits 130; a flag it refuses, 2.
//
// Each case runs both tools -reps times, alternating which goes first, and
// compares medians. With an odd -reps (3, the default) the median is the
// middle run's figure; with an even one, which it warns about, it is the
// better of the two middle figures, never their mean: the higher bandwidth
// and message rate, the lower t_typical, 99th percentile, CPU time and
// retries. (The mean let one bad run of two decide a row: t_typical runs of
// 3986.89 and 28.34 µs gave 2007.62.) gorperf is given the TX depth, CQ
// moderation, inline size, MTU, outstanding reads, post method
// (ibv_post_send or the ibv_wr_* API) and PCIe relaxed ordering that
// perftest's header says it used, since perftest picks some of them by
// device. For each run it records the client's user and system CPU time
// and the port counters that changed, among them the retransmissions,
// which explain most of the noise on soft-RoCE.
//
// `make compare` runs it inside the soft-RoCE VM (server on rxe0, client on
// rxe1, across a veth pair) where the host has no RDMA device, and on the
// host's devices where it has them. There, without -server-dev, it asks
// `gorperf devices --json` and takes the first two devices whose port 1 is
// active with a RoCE v2 GID over IPv4 (one such device serves both sides,
// looping back through its port); or name them:
//
//	go run ./bench/compare -server-dev mlx5_0 -client-dev mlx5_1 -addr 198.18.0.1 -server-gid 3 -client-gid 3
//
// -server-dev alone runs the client on the same device with the same GID
// index; -client-dev, -addr, -server-gid or -client-gid without a server
// device is refused (exit 2) rather than overridden by the devices
// picked. So are a list flag with an entry that is not a whole number from
// 1 (4k and 1M are 4096 and 1048576), -n or -lat-n below perftest's least
// (5), -reps below 1, -thread-sizes where it would add no row (no -qps
// count above 1, -events, or no write_bw in -tests), and a perftest tool
// the cases need that is not on PATH.
//
// In a row of -thread-sizes gorperf's threads (--threads) are pinned in
// turn to the CPUs its side may use: with more threads than CPUs some
// share one. It warns where this host has fewer CPUs than a row's threads
// (or, with -pin, where the client has one CPU), and the table lists the
// rows where the client's threads shared a CPU, as gorperf reported them.
//
// Where perftest posts with ibv_post_send (its header says "ibv_wr* API :
// OFF", as on rxe), gorperf is given --use_old_post_send for the row's
// figures, and with -wr-api (the default) it also runs -reps times on its
// own default post path, the ibv_wr_* API, alternating with the other
// runs: the JSON's gorperf_wr_api and its wr_api_* ratios to perftest, and
// the table's "wr* ratio" column. -wr-api=false leaves those runs out:
// 3 of such a row's 11.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

type config struct {
	gorperf              string
	serverDev, clientDev string
	addr                 string
	serverGID, clientGID int
	iters, latIters      int
	sizes                []int
	qps                  []int
	tests                []string
	port                 int
	out                  string
	env                  []string
	reps                 int
	postList             int
	postListSizes        []int
	recvPostList         int   // --recv_post_list of the send_bw rows with a post list
	threadSizes          []int // sizes of the write_bw rows where gorperf runs its QPs as threads
	pin                  bool
	events               bool
	// wrAPI also runs gorperf on the ibv_wr_* API in the rows where
	// perftest posts with ibv_post_send (-wr-api).
	wrAPI bool
	// gorperfOnly are flags gorperf alone gets, so that both tools place
	// themselves alike (numaParity), and numa says why.
	gorperfOnly []string
	numa        string
	// clientEnv and serverEnv are where the two sides ran, from the
	// first gorperf run's JSON (its env and peer_env).
	clientEnv, serverEnv json.RawMessage
	// listenWait is how long a server has to listen (0: 10 s).
	listenWait time.Duration
}

// measure is one tool's result for one case.
type measure struct {
	BWAvgMBps   float64 `json:"bw_avg_mbps,omitempty"`
	MsgRateMpps float64 `json:"msg_rate_mpps,omitempty"`
	// BWPreciseMBps is, for perftest, its bandwidth as the more precise
	// of its two figures: BW average, in MiB/s to two decimals, or
	// MsgRate × bytes ÷ 2^20, MsgRate in Mpps to six decimals; the
	// latter below 10,486 bytes. At 2 bytes on rxe BW average reads 0.05
	// where the message rate gives 0.0527, and a bandwidth ratio of the
	// printed figure is perftest's rounding, not a difference. The
	// bandwidth ratio and the table use it; gorperf's BWAvgMBps is
	// precise as it is.
	BWPreciseMBps float64 `json:"bw_precise_mbps,omitempty"`
	TTypicalUs    float64 `json:"t_typical_us,omitempty"`
	P99Us         float64 `json:"p99_us,omitempty"`
	// UserCPUNsPerMsg and SysCPUNsPerMsg are the client's CPU time per
	// message net of start-up and tear-down: less what a run of a few
	// messages (the baseline) took.
	UserCPUNsPerMsg float64 `json:"user_cpu_ns_per_msg"`
	SysCPUNsPerMsg  float64 `json:"sys_cpu_ns_per_msg"`
	// CPUKnown is false where the loop's CPU time was too small against
	// the baseline's to tell apart from its noise (short runs).
	CPUKnown  bool  `json:"cpu_known"`
	UserCPUNs int64 `json:"user_cpu_ns"` // the whole client process
	SysCPUNs  int64 `json:"sys_cpu_ns"`
	Msgs      int   `json:"msgs"`
	// Retries counts the client device's retransmissions during the run
	// (see retryCounters); Counters has every port counter of the two
	// devices that changed, as "device/counter".
	Retries  uint64            `json:"retries"`
	Counters map[string]uint64 `json:"counters,omitempty"`
	Err      string            `json:"error,omitempty"`
	// CPU is gorperf's own --cpu_util of its client over the run, start-up
	// left out (perftest has no such figure).
	CPU *struct {
		UserUsPerMsg float64 `json:"user_us_per_msg"`
		SysUsPerMsg  float64 `json:"sys_us_per_msg"`
		UtilPct      float64 `json:"util_pct"`
	} `json:"cpu,omitempty"`
	// ThreadCPUs is, in a gorperf run of several threads (--threads), the
	// CPU its client pinned each thread to, as it reported them
	// (thread_results): more threads than CPUs take them in turn.
	ThreadCPUs []int `json:"thread_cpus,omitempty"`
	// env and peerEnv are a gorperf run's env and peer_env.
	env, peerEnv json.RawMessage
}

// stat is one tool's figures for one case over the repetitions: the
// medians of the runs that succeeded, each run, and how many failed.
type stat struct {
	measure
	Runs []measure `json:"runs"`
	// FailedRuns is how many of Runs failed (their errors are theirs):
	// the medians are of the others. Where it is above 0 and below
	// len(Runs), the row is a median of fewer runs than asked for.
	FailedRuns int     `json:"failed_runs"`
	Spread     float64 `json:"spread,omitempty"` // (max - min) / median of the main figure
	// Best is the main figure of the best run: the highest message rate,
	// or the lowest t_typical. On a set-up whose runs fall into a fast
	// and a slow group (soft-RoCE under emulation), the best runs of the
	// two tools are likelier to come from the same group than the medians.
	Best float64 `json:"best,omitempty"`
}

type row struct {
	Test  string `json:"test"`
	Bytes int    `json:"bytes"`
	QPs   int    `json:"qps"`
	// Iters is the -n both tools ran with: -n or -lat-n, rounded up in a
	// row with a post list to a multiple of its lists (see listIters).
	Iters    int `json:"iterations"`
	PostList int `json:"post_list,omitempty"`
	// RecvPostList is the receiver's list (--recv_post_list), if any.
	RecvPostList int `json:"recv_post_list,omitempty"`
	// Threads is, in a row where gorperf ran its QPs as several threads
	// (--threads; perftest has none), their number.
	Threads int `json:"threads,omitempty"`
	// Params is CommonParams and then the parameters read from
	// perftest's header, as older files have it. Those came from
	// perftest's own choice and were given to gorperf alone; see
	// CommonParams and GorperfParams.
	Params string `json:"params"`
	// CommonParams are the case's flags that both tools ran with, beyond
	// the device, GID index, -s, -n, -p and -q (-l, --recv_post_list,
	// -e); GorperfParams are those gorperf alone was given: what
	// perftest's header says it used (-t, -Q, -I, -m, -o,
	// --use_old_post_send, --disable_pcie_relaxed), --threads, and
	// --disable_numa where perftest does not move to the device's NUMA
	// node (its client also gets --json and --cpu_util, for the figures).
	CommonParams  string `json:"common_params"`
	GorperfParams string `json:"gorperf_params"`
	Gorperf       stat   `json:"gorperf"`
	Perftest      stat   `json:"perftest"`
	// BWRatio and MsgRateRatio are gorperf ÷ perftest, BWRatio of
	// gorperf's bandwidth and perftest's BWPreciseMBps; TypicalDiffUs
	// and P99DiffUs are gorperf − perftest, TypicalRatio and P99Ratio the
	// ratios. Each is left out of the JSON where the row has no such
	// figure (a bandwidth row has no t_typical), and is null where it is
	// a ratio to zero.
	BWRatio       opt `json:"bw_ratio,omitzero"`
	MsgRateRatio  opt `json:"msg_rate_ratio,omitzero"`
	TypicalDiffUs opt `json:"t_typical_diff_us,omitzero"`
	TypicalRatio  opt `json:"t_typical_ratio,omitzero"`
	P99DiffUs     opt `json:"p99_diff_us,omitzero"`
	P99Ratio      opt `json:"p99_ratio,omitzero"`
	// BestRatio is gorperf's Best ÷ perftest's.
	BestRatio   opt `json:"best_ratio,omitzero"`
	CPURatio    opt `json:"user_cpu_ratio,omitzero"`
	SysCPURatio opt `json:"sys_cpu_ratio,omitzero"`
	// Baselines are the short runs whose CPU time was subtracted: gorperf's, perftest's.
	Baselines [2]measure `json:"baselines"`
	// GorperfWRAPI is, in a row where perftest posted with ibv_post_send
	// and gorperf was given --use_old_post_send for Gorperf, gorperf's
	// runs on its default post path, the ibv_wr_* API, with the same
	// flags otherwise (-wr-api); nil where there are none. Its CPU time
	// is net of gorperf's baseline (Baselines[0]). The wr_api_* ratios
	// are its figures ÷ perftest's, as BWRatio, MsgRateRatio,
	// TypicalRatio and P99Ratio are Gorperf's.
	GorperfWRAPI      *stat `json:"gorperf_wr_api,omitempty"`
	WRAPIBWRatio      opt   `json:"wr_api_bw_ratio,omitzero"`
	WRAPIMsgRateRatio opt   `json:"wr_api_msg_rate_ratio,omitzero"`
	WRAPITypicalRatio opt   `json:"wr_api_t_typical_ratio,omitzero"`
	WRAPIP99Ratio     opt   `json:"wr_api_p99_ratio,omitzero"`
}

func main() {
	var c config
	var sizes, qps, tests string
	flag.StringVar(&c.gorperf, "gorperf", "build/gorperf", "the gorperf binary")
	flag.StringVar(&c.serverDev, "server-dev", os.Getenv("RXE_DEV"), "server's RDMA device")
	flag.StringVar(&c.clientDev, "client-dev", firstNonEmpty(os.Getenv("RXE_DEV2"), os.Getenv("RXE_DEV")), "client's RDMA device")
	flag.StringVar(&c.addr, "addr", firstNonEmpty(os.Getenv("RXE_IP"), "127.0.0.1"), "server's address")
	flag.IntVar(&c.serverGID, "server-gid", atoi(os.Getenv("RXE_GID_INDEX"), 1), "server's GID index (perftest -x)")
	flag.IntVar(&c.clientGID, "client-gid", atoi(firstNonEmpty(os.Getenv("RXE_GID_INDEX2"), os.Getenv("RXE_GID_INDEX")), 1), "client's GID index")
	flag.IntVar(&c.iters, "n", 2000, "iterations of bandwidth tests (at least 5, as perftest)")
	flag.IntVar(&c.latIters, "lat-n", 1000, "iterations of latency tests (at least 5, as perftest)")
	flag.StringVar(&sizes, "sizes", "2,64,4096,65536", "message sizes")
	flag.StringVar(&qps, "qps", "1,2,4,8", "QP counts for the write_bw scaling runs")
	flag.StringVar(&tests, "tests", "write_bw,read_bw,send_bw,write_lat,read_lat,send_lat", "tests; the post-list rows are of write_bw and send_bw, the -qps and -thread-sizes rows of write_bw, each where it is one of these")
	flag.IntVar(&c.port, "port", 18600, "first TCP port to use")
	flag.StringVar(&c.out, "json", "build/compare.json", "where to write the JSON")
	godebug := flag.String("godebug", "", "GODEBUG for gorperf, e.g. asyncpreemptoff=1")
	flag.IntVar(&c.reps, "reps", 3, "runs of each tool per case (at least 1), alternating which goes first; medians are compared: an odd count has a middle run, an even one (warned about) takes the better of the middle two (higher rate, lower latency)")
	flag.IntVar(&c.postList, "post-list", 16, "post list length (-l) for the message-rate rows (0: none)")
	flag.IntVar(&c.recvPostList, "recv-post-list", 0, "receive post list (--recv_post_list) of the send_bw rows with a post list (0: none)")
	plSizes := flag.String("post-list-sizes", "2,64,256", "message sizes of the write_bw and send_bw rows with a post list")
	thrSizes := flag.String("thread-sizes", "", "message sizes of write_bw rows, one for each QP count of -qps above 1, where gorperf runs the QPs as that many threads (--threads), pinned in turn to its side's CPUs (perftest, which has no threads, runs as in the other rows); none by default, and refused where it adds no row (no -qps above 1, -events, no write_bw)")
	flag.BoolVar(&c.pin, "pin", false, "pin the server to CPU 0 and the client to CPU 1 (taskset)")
	flag.BoolVar(&c.events, "events", false, "both tools sleep on completion events (-e); the write tests, which perftest cannot run with -e, are left out")
	flag.BoolVar(&c.wrAPI, "wr-api", true, "in the rows where perftest posts with ibv_post_send (gorperf then gets --use_old_post_send), also run gorperf -reps times on its default post path, the ibv_wr_* API (the JSON's gorperf_wr_api, the table's \"wr* ratio\")")
	flag.Parse()
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	for _, l := range []struct {
		dst        *[]int
		name, list string
	}{{&c.sizes, "sizes", sizes}, {&c.qps, "qps", qps}, {&c.postListSizes, "post-list-sizes", *plSizes}, {&c.threadSizes, "thread-sizes", *thrSizes}} {
		if *l.dst, err = ints(l.name, l.list); err != nil {
			usageError(err)
		}
	}
	if c.tests, err = testList(tests); err != nil {
		usageError(err)
	}
	if err := c.checkCounts(); err != nil {
		usageError(err)
	}
	if err := c.checkThreadSizes(); err != nil {
		usageError(err)
	}
	if note := c.repsNote(); note != "" {
		fmt.Fprintln(os.Stderr, "compare:", note)
	}
	if note := c.threadNote(runtime.NumCPU()); note != "" {
		fmt.Fprintln(os.Stderr, "compare:", note)
	}
	if *godebug != "" {
		c.env = append(c.env, "GODEBUG="+*godebug)
	}
	cases := c.cases()
	help, err := c.checkTools(cases)
	if err != nil {
		usageError(err)
	}
	note, err := c.settleDevices(given, func() (pick, error) { return pickFromGorperf(c.gorperf) })
	if err != nil {
		usageError(err)
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "compare:", note)
	}
	c.gorperfOnly, c.numa = numaParity(help)
	fmt.Fprintln(os.Stderr, "compare:", c.numa)
	// perftest's binaries come from a page-cached file system; gorperf's
	// may not (in the VM the checkout is a 9p share without a page cache,
	// where loading the binary took 0.3–1.3 s of every start against
	// 0.1–0.45 s from tmpfs). Both run from cached files: gorperf from a
	// copy in the temporary directory.
	bin, cleanup, err := localCopy(c.gorperf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
	defer cleanup()
	c.gorperf = bin
	// Ctrl-C or a TERM (timeout(1), a CI limit) ends the run after the
	// cases done so far: their table is printed and their JSON kept.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, note := range c.iterNotes(cases) {
		fmt.Fprintln(os.Stderr, "compare:", note)
	}
	rows, err := c.runCases(ctx, cases, *godebug, c.compare)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		cleanup()
		os.Exit(1)
	}
	printTable(os.Stdout, rows)
	fmt.Printf("\nJSON: %s\n", c.out)
	code, notes := outcome(rows, len(cases))
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "compare:", n)
	}
	if code != 0 {
		cleanup()
		os.Exit(code)
	}
}

// outcome is the exit status of a run that did the rows of ncases cases,
// and what to say on stderr: 130 where it stopped before the last case;
// else 1 where a tool failed every run of a case (no ratio: a table that
// says ERROR is not a comparison) or some runs of one (the row is a median
// of fewer runs than asked for, so a bad run can no longer be outvoted);
// else 0. Baseline runs do not count: they cost only the CPU columns.
func outcome(rows []row, ncases int) (int, []string) {
	var notes []string
	code := 0
	if len(rows) < ncases {
		notes = append(notes, fmt.Sprintf("stopped after %d of %d cases", len(rows), ncases))
		code = 130
	}
	if n := failedRows(rows); n > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d cases have no ratio: a tool failed every run (see the table and the JSON's errors)", n, len(rows)))
		code = cmp.Or(code, 1)
	}
	if n, runs := shortRows(rows); n > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d cases are medians of fewer runs than -reps, %d runs having failed: marked [k/n] in the table (k of n runs succeeded), their errors under it and in the JSON's runs", n, len(rows), runs))
		code = cmp.Or(code, 1)
	}
	return code, notes
}

// usageError ends the run before it starts: a flag, a device or a program
// it needs is wrong or missing.
func usageError(err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(2)
}

// minIters is the fewest iterations perftest takes (-n): it refuses fewer
// (MIN_ITER in its perftest_parameters.h).
const minIters = 5

// checkCounts checks -n, -lat-n and -reps: a count perftest refuses, or no
// runs at all, would fail every case.
func (c *config) checkCounts() error {
	switch {
	case c.iters < minIters:
		return fmt.Errorf("-n %d: perftest runs at least %d iterations", c.iters, minIters)
	case c.latIters < minIters:
		return fmt.Errorf("-lat-n %d: perftest runs at least %d iterations", c.latIters, minIters)
	case c.reps < 1:
		return fmt.Errorf("-reps %d: each tool runs at least once a case", c.reps)
	}
	return nil
}

// checkThreadSizes refuses -thread-sizes where it would add no row, which
// it did silently: with no -qps count above 1 (a thread a QP), with
// -events (perftest cannot run writes with -e, and the rows are
// write_bw's), or without write_bw in -tests.
func (c *config) checkThreadSizes() error {
	if len(c.threadSizes) == 0 {
		return nil
	}
	switch {
	case !slices.ContainsFunc(c.qps, func(q int) bool { return q > 1 }):
		return fmt.Errorf("-thread-sizes: no row has threads without a -qps count above 1 (one thread a QP; -qps is %q)", intList(c.qps))
	case c.events:
		return errors.New("-thread-sizes: its rows are write_bw's, which -events leaves out (perftest cannot run writes with -e)")
	case !slices.Contains(c.tests, "write_bw"):
		return errors.New("-thread-sizes: its rows are write_bw's, and -tests has no write_bw")
	}
	return nil
}

// intList prints a list flag's numbers, comma-separated.
func intList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// repsNote warns of an even -reps: there is no middle run, and the
// medians are the better of the two middle figures.
func (c *config) repsNote() string {
	if c.reps%2 == 1 {
		return ""
	}
	return fmt.Sprintf("-reps %d is even: each median is the better of the two middle runs' figures (the higher rate, the lower latency), not their mean; an odd -reps (3, 5) has a middle run and outvotes one bad run", c.reps)
}

// threadNote warns where gorperf's threads will share CPUs: ncpu, this
// host's CPUs (those this process may use), are fewer than a thread row's
// threads, or -pin puts the client on one CPU. gorperf pins its threads
// in turn to the CPUs its side may use.
func (c *config) threadNote(ncpu int) string {
	most := 0
	for _, k := range c.cases() {
		most = max(most, k.threads)
	}
	switch {
	case most < 2:
		return ""
	case c.pin:
		return fmt.Sprintf("-pin puts each side on one CPU: gorperf's threads (up to %d) in the rows of -thread-sizes all share it", most)
	case most > ncpu:
		return fmt.Sprintf("the rows of -thread-sizes run up to %d threads a side on this host's %d CPUs: gorperf pins them in turn, so some share a CPU", most, ncpu)
	}
	return ""
}

// testList reads -tests: perftest's test names without "ib_", each a
// bandwidth or latency test.
func testList(s string) ([]string, error) {
	tests := strings.Split(s, ",")
	for i, t := range tests {
		tests[i] = strings.TrimSpace(t)
		if !strings.HasSuffix(tests[i], "_bw") && !strings.HasSuffix(tests[i], "_lat") || strings.ContainsAny(tests[i], "/ ") {
			return nil, fmt.Errorf("-tests %q: %q is not a test such as write_bw or send_lat", s, tests[i])
		}
	}
	return tests, nil
}

// checkTools checks that the programs the cases run are on PATH:
// perftest's ib_<test> of each (and taskset with -pin); it returns the
// --help of the first, from which numaParity tells perftest's version.
// Without it every run would fail, one case at a time.
func (c *config) checkTools(cases []testCase) (help string, err error) {
	var tools, missing []string
	for _, k := range cases {
		if t := "ib_" + k.test; !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	if c.pin {
		tools = append(tools, "taskset")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%s not found on PATH (perftest's tools: install perftest, or put its directory on PATH)", strings.Join(missing, ", "))
	}
	if len(cases) == 0 {
		return "", nil
	}
	// perftest's --help exits with a status that is not 0 in some
	// versions: only a failure to run it at all counts.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, tools[0], "--help").CombinedOutput()
	var exit *exec.ExitError
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s --help did not end within 10 s", tools[0])
	}
	if err != nil && !errors.As(err, &exit) {
		return "", fmt.Errorf("%s --help: %w", tools[0], err)
	}
	return string(out), nil
}

// settleDevices settles the two sides' devices, GID indexes and the
// server's address. given are the flags named on the command line. With
// no server device (no -server-dev and no RXE_DEV) they are picked from
// gorperf's report, and a -client-dev, -addr, -server-gid or -client-gid
// given with them is refused, not overridden. With a server device and no
// client device the client shares the server's, and its GID index, unless
// -client-gid names one. It returns what it chose, for the output.
func (c *config) settleDevices(given map[string]bool, pickFn func() (pick, error)) (string, error) {
	if c.serverDev == "" {
		var named []string
		for _, f := range []string{"client-dev", "addr", "server-gid", "client-gid"} {
			if given[f] {
				named = append(named, "-"+f)
			}
		}
		if len(named) > 0 {
			return "", fmt.Errorf("%s without -server-dev: name the server's device too, or none of these to use the devices gorperf finds", strings.Join(named, ", "))
		}
		p, err := pickFn()
		if err != nil {
			return "", fmt.Errorf("%w; name the devices with -server-dev (and -client-dev, -addr, -server-gid, -client-gid), or run in the rxe VM", err)
		}
		c.serverDev, c.clientDev, c.serverGID, c.clientGID, c.addr = p.serverDev, p.clientDev, p.serverGID, p.clientGID, p.addr
		return fmt.Sprintf("%s; server address %s, GID indexes %d and %d", p.why, p.addr, p.serverGID, p.clientGID), nil
	}
	if c.clientDev == "" {
		c.clientDev = c.serverDev
		if !given["client-gid"] {
			c.clientGID = c.serverGID
		}
		return fmt.Sprintf("no -client-dev: the client shares the server's device %s (GID index %d), looping back through its port", c.serverDev, c.clientGID), nil
	}
	return "", nil
}

// runCases runs the cases in order with do and returns their rows, those
// done before ctx ended: a case cut short is not a result. It writes the
// JSON before the first case, with no rows and complete false, so that a
// run stopped during it does not leave an earlier run's file (complete,
// perhaps) where it says its JSON is; and after every case, so that a run
// that is stopped keeps what it measured.
func (c *config) runCases(ctx context.Context, cases []testCase, godebug string, do func(context.Context, testCase) row) ([]row, error) {
	rows := []row{}
	if err := c.writeJSON(rows, len(cases) == 0, godebug); err != nil {
		return rows, err
	}
	for _, k := range cases {
		r := do(ctx, k)
		if ctx.Err() != nil {
			break
		}
		rows = append(rows, r)
		var failed string
		for _, t := range []struct {
			tool string
			st   stat
		}{{"gorperf", r.Gorperf}, {"perftest", r.Perftest}, {"gorperf on the ibv_wr_* API", deref(r.GorperfWRAPI)}} {
			if t.st.FailedRuns > 0 {
				failed += fmt.Sprintf("; %s: %d of %d runs failed", t.tool, t.st.FailedRuns, len(t.st.Runs))
			}
		}
		fmt.Fprintf(os.Stderr, "compare: %s %d B, %d QPs %s done (%d of %d)%s\n", k.test, k.size, k.qps,
			strings.Join(append(slices.Clone(k.extra), k.gorperfOnly()...), " "), len(rows), len(cases), failed)
		if err := c.writeJSON(rows, len(rows) == len(cases), godebug); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// deref is *st, or no runs where st is nil.
func deref(st *stat) stat {
	if st == nil {
		return stat{}
	}
	return *st
}

// failedRows counts the rows where gorperf or perftest failed every run.
func failedRows(rows []row) int {
	n := 0
	for _, r := range rows {
		if r.Gorperf.Err != "" || r.Perftest.Err != "" || r.GorperfWRAPI != nil && r.GorperfWRAPI.Err != "" {
			n++
		}
	}
	return n
}

// shortRows counts the rows with figures where some runs failed, and
// those runs.
func shortRows(rows []row) (n, runs int) {
	for _, r := range rows {
		if r.failure() != "" {
			continue
		}
		f := r.Gorperf.FailedRuns + r.Perftest.FailedRuns
		if w := r.GorperfWRAPI; w != nil && w.Err == "" {
			f += w.FailedRuns
		}
		if f > 0 {
			n++
			runs += f
		}
	}
	return n, runs
}

// A testCase is one row of the table: a test, a message size, a QP count
// and any further flags for both tools.
type testCase struct {
	test      string
	size, qps int
	extra     []string
	threads   int // gorperf's --threads, if above 1
	iters     int // -n of both tools
	// postList and recvPostList are the case's -l and --recv_post_list
	// (0: none).
	postList, recvPostList int
}

// gorperfOnly are the case's flags for gorperf alone.
func (k testCase) gorperfOnly() []string {
	if k.threads > 1 {
		return []string{"--threads", strconv.Itoa(k.threads)}
	}
	return nil
}

// cases lists the rows to run, each once: each test at each size, the
// message-rate rows with a post list (write_bw and send_bw), and write_bw
// at 64 KiB with each QP count (and at each of -thread-sizes with
// threads); the last three only for the tests of -tests, as all of them
// are by default. With -events every row has -e, and the write tests are
// left out: perftest refuses -e with RDMA writes.
func (c *config) cases() []testCase {
	var cs []testCase
	seen := map[string]bool{}
	add := func(k testCase) {
		if c.events {
			if strings.HasPrefix(k.test, "write_") {
				return
			}
			k.extra = append(k.extra, "-e")
		}
		// Once each: write_bw at 64 KiB with 1 QP is both a size row and
		// a QP row with the default flags.
		key := fmt.Sprintf("%s %d %d %d %q", k.test, k.size, k.qps, k.threads, k.extra)
		if seen[key] {
			return
		}
		seen[key] = true
		k.iters = c.latIters
		if strings.HasSuffix(k.test, "_bw") {
			k.iters = listIters(c.iters, k.postList, k.recvPostList)
		}
		cs = append(cs, k)
	}
	for _, t := range c.tests {
		for _, s := range c.sizes {
			add(testCase{test: t, size: s, qps: 1})
		}
	}
	if c.postList > 1 {
		for _, t := range []string{"write_bw", "send_bw"} {
			if !slices.Contains(c.tests, t) {
				continue
			}
			for _, s := range c.postListSizes {
				k := testCase{test: t, size: s, qps: 1, postList: c.postList,
					extra: []string{"-l", strconv.Itoa(c.postList)}}
				if t == "send_bw" && c.recvPostList > 1 {
					k.recvPostList = c.recvPostList
					k.extra = append(k.extra, "--recv_post_list", strconv.Itoa(c.recvPostList))
				}
				add(k)
			}
		}
	}
	if !slices.Contains(c.tests, "write_bw") {
		return cs
	}
	for _, q := range c.qps {
		add(testCase{test: "write_bw", size: 65536, qps: q})
	}
	for _, s := range c.threadSizes {
		for _, q := range c.qps {
			if q > 1 && !c.events {
				add(testCase{test: "write_bw", size: s, qps: q, threads: q})
			}
		}
	}
	return cs
}

// listIters is n rounded up to a multiple of the post list and the receive
// post list (those above 1): perftest refuses any other -n ("Number of
// iterations must be a multiple of post list size").
func listIters(n, postList, recvPostList int) int {
	step := lcm(max(postList, 1), max(recvPostList, 1))
	if step == 1 || n < 1 {
		return n
	}
	return (n + step - 1) / step * step
}

// iterNotes says which cases run other than the -n asked for, and why.
func (c *config) iterNotes(cases []testCase) []string {
	var notes []string
	seen := map[[2]int]bool{}
	for _, k := range cases {
		if !strings.HasSuffix(k.test, "_bw") || k.iters == c.iters || seen[[2]int{k.postList, k.recvPostList}] {
			continue
		}
		seen[[2]int{k.postList, k.recvPostList}] = true
		lists := fmt.Sprintf("post list %d", k.postList)
		if k.recvPostList > 1 {
			lists += fmt.Sprintf(" and receive post list %d", k.recvPostList)
		}
		notes = append(notes, fmt.Sprintf("-n %d is not a multiple of the %s, as perftest requires: those rows run %d iterations", c.iters, lists, k.iters))
	}
	return notes
}

// writeJSON replaces the JSON file with the rows so far; complete says
// whether they are all the cases asked for.
func (c *config) writeJSON(rows []row, complete bool, godebug string) error {
	doc := map[string]any{"schema_version": 1, "date": time.Now().UTC().Format(time.RFC3339),
		"server_device": c.serverDev, "client_device": c.clientDev, "godebug": godebug, "reps": c.reps,
		"pinned": c.pin, "events": c.events, "numa": c.numa, "complete": complete, "rows": rows,
		"client_env": c.clientEnv, "server_env": c.serverEnv, "failed_runs": failedRuns(rows)}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.out + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.out)
}

// failedRuns counts the measured runs of the rows that failed, both
// tools', baselines left out: 0 where each row is a median of -reps runs.
func failedRuns(rows []row) int {
	n := 0
	for _, r := range rows {
		n += r.Gorperf.FailedRuns + r.Perftest.FailedRuns
		if r.GorperfWRAPI != nil {
			n += r.GorperfWRAPI.FailedRuns
		}
	}
	return n
}

// localCopy copies the executable at path into a new temporary directory
// and returns the copy's path and a function that removes it.
func localCopy(path string) (string, func(), error) {
	src, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer src.Close()
	dir, err := os.MkdirTemp("", "compare-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, filepath.Base(path))
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err == nil {
		_, err = io.Copy(dst, src)
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("copying %s: %w", path, err)
	}
	return bin, cleanup, nil
}

// newRow is the row of case k, its figures still to come.
func newRow(k testCase) row {
	return row{Test: k.test, Bytes: k.size, QPs: k.qps, Threads: k.threads, Iters: k.iters,
		PostList: k.postList, RecvPostList: k.recvPostList}
}

func (c *config) compare(ctx context.Context, k testCase) row {
	test, size, qps, extra := k.test, k.size, k.qps, k.extra
	r := newRow(k)
	// perftest picks some defaults by device (inline data only on NICs it
	// knows, for one): gorperf gets what perftest's header says it used.
	var params []string
	var known bool // params come from a perftest run that succeeded
	var pruns, gruns, wruns []measure
	for i := range c.reps {
		// Alternate which tool goes first, so that a drift in the
		// machine's state does not always favour the same one. The first
		// round runs perftest first, to learn its parameters.
		for _, gorperf := range []bool{i%2 == 1, i%2 == 0} {
			if !gorperf {
				m, header := c.run(ctx, false, test, size, qps, extra, k.iters, false)
				if !known && m.Err == "" {
					params, known = perftestParams(header), true
				}
				pruns = append(pruns, m)
				continue
			}
			if !known {
				// Without perftest's parameters gorperf would run with
				// its own defaults: not the same test.
				gruns = append(gruns, measure{Err: errNotRun})
				continue
			}
			gargs := append(append(slices.Clone(extra), params...), k.gorperfOnly()...)
			wargs, wr := wrAPIArgs(gargs)
			if !c.wrAPI || !wr {
				m, _ := c.run(ctx, true, test, size, qps, gargs, k.iters, false)
				gruns = append(gruns, m)
				continue
			}
			// Both of gorperf's post paths, in turn: the one perftest
			// took first in the rounds where perftest went first.
			for _, w := range []bool{i%2 == 1, i%2 == 0} {
				if w {
					m, _ := c.run(ctx, true, test, size, qps, wargs, k.iters, false)
					wruns = append(wruns, m)
				} else {
					m, _ := c.run(ctx, true, test, size, qps, gargs, k.iters, false)
					gruns = append(gruns, m)
				}
			}
		}
	}
	// Start-up costs the same whatever the run's length (and far more
	// than the messages of a short run under emulation): a baseline run of
	// a few messages per tool is subtracted from each run's CPU time. A
	// baseline that fails leaves the runs without a CPU figure, and the
	// JSON says why.
	baseN := baselineIters(r.PostList, r.RecvPostList)
	pb, _ := c.run(ctx, false, test, size, qps, extra, baseN, true)
	gb, _ := c.run(ctx, true, test, size, qps, append(append(slices.Clone(extra), params...), k.gorperfOnly()...), baseN, true)
	netCPU(pruns, pb)
	netCPU(gruns, gb)
	netCPU(wruns, gb)
	r.Baselines = [2]measure{gb, pb}
	r.Params = strings.Join(append(append([]string{}, extra...), params...), " ")
	r.CommonParams = strings.Join(extra, " ")
	r.GorperfParams = strings.Join(append(append(slices.Clone(params), k.gorperfOnly()...), c.gorperfOnly...), " ")
	bw := strings.HasSuffix(test, "_bw")
	r.Perftest, r.Gorperf = summarize(pruns, bw), summarize(gruns, bw)
	if len(wruns) > 0 {
		st := summarize(wruns, bw)
		r.GorperfWRAPI = &st
	}
	if r.Perftest.Err != "" {
		return r
	}
	r.setWRAPIRatios()
	if r.Gorperf.Err != "" {
		return r
	}
	r.setRatios()
	return r
}

// wrAPIArgs is gorperf's flags args on its default post path, the
// ibv_wr_* API: without --use_old_post_send, which perftest's header
// gave where perftest posted with ibv_post_send; ok is false where args
// have no such flag (gorperf already runs on the ibv_wr_* API).
func wrAPIArgs(args []string) (_ []string, ok bool) {
	if !slices.Contains(args, "--use_old_post_send") {
		return nil, false
	}
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--use_old_post_send" }), true
}

// setWRAPIRatios sets the row's wr_api_* ratios, of gorperf's runs on the
// ibv_wr_* API to perftest's figures, where both have figures.
func (r *row) setWRAPIRatios() {
	w, p := r.GorperfWRAPI, r.Perftest
	if w == nil || w.Err != "" || p.Err != "" {
		return
	}
	if strings.HasSuffix(r.Test, "_bw") {
		r.WRAPIBWRatio = ratio(w.bw(), p.bw())
		r.WRAPIMsgRateRatio = ratio(w.MsgRateMpps, p.MsgRateMpps)
	} else {
		r.WRAPITypicalRatio = ratio(w.TTypicalUs, p.TTypicalUs)
		r.WRAPIP99Ratio = ratio(w.P99Us, p.P99Us)
	}
}

// wrAPIRatio is the row's main ratio of gorperf on the ibv_wr_* API to
// perftest: bandwidth, or t_typical; absent where it has none.
func (r row) wrAPIRatio() opt {
	if strings.HasSuffix(r.Test, "_bw") {
		return r.WRAPIBWRatio
	}
	return r.WRAPITypicalRatio
}

// errNotRun is a gorperf run's error where perftest's runs so far failed:
// without perftest's parameters gorperf is not run.
const errNotRun = "not run: perftest's runs so far failed, so its parameters are not known"

// setRatios sets the row's ratios and differences from its tools' figures.
func (r *row) setRatios() {
	g, p := r.Gorperf, r.Perftest
	if strings.HasSuffix(r.Test, "_bw") {
		r.BWRatio = ratio(g.bw(), p.bw())
		r.MsgRateRatio = ratio(g.MsgRateMpps, p.MsgRateMpps)
	} else {
		r.TypicalDiffUs = some(g.TTypicalUs - p.TTypicalUs)
		r.TypicalRatio = ratio(g.TTypicalUs, p.TTypicalUs)
		r.P99DiffUs = some(g.P99Us - p.P99Us)
		r.P99Ratio = ratio(g.P99Us, p.P99Us)
	}
	r.BestRatio = ratio(g.Best, p.Best)
	if g.CPUKnown && p.CPUKnown {
		r.CPURatio = ratio(g.UserCPUNsPerMsg, p.UserCPUNsPerMsg)
		r.SysCPURatio = ratio(g.SysCPUNsPerMsg, p.SysCPUNsPerMsg)
	}
}

// bw is the bandwidth compared: perftest's BWPreciseMBps where it has
// one, else BW average.
func (m measure) bw() float64 {
	if m.BWPreciseMBps > 0 {
		return m.BWPreciseMBps
	}
	return m.BWAvgMBps
}

// preciseBW is the more precise of perftest's two bandwidth figures for
// a message of the given bytes: bwAvg (MiB/s, printed to two decimals, so
// within 0.005) or msgRate × bytes ÷ 2^20 (msgRate in Mpps, printed to
// six decimals, so within 0.5 × bytes ÷ 2^20 MiB/s).
func preciseBW(bwAvg, msgRate float64, bytes int) float64 {
	const mib = 1 << 20
	if bytes <= 0 || msgRate <= 0 || 0.5*float64(bytes)/mib >= 0.005 {
		return bwAvg
	}
	return msgRate * 1e6 * float64(bytes) / mib
}

// netCPU sets each run's CPU time per message net of the baseline's. A
// run whose loop took less CPU than half the baseline's start-up gets no
// figure: the difference would be mostly noise.
func netCPU(runs []measure, base measure) {
	if base.Err != "" || base.Msgs == 0 {
		return
	}
	for i := range runs {
		m := &runs[i]
		if m.Err != "" || m.Msgs <= base.Msgs {
			continue
		}
		u, s, n := m.UserCPUNs-base.UserCPUNs, m.SysCPUNs-base.SysCPUNs, m.Msgs-base.Msgs
		if 2*(u+s) < base.UserCPUNs+base.SysCPUNs {
			continue
		}
		m.CPUKnown = true
		m.UserCPUNsPerMsg = float64(max(u, 0)) / float64(n)
		m.SysCPUNsPerMsg = float64(max(s, 0)) / float64(n)
	}
}

// median is the median of f over ms (not empty): with an even count the
// better of the two middle values, the higher where higher is better
// (a rate), else the lower (a latency, a CPU time), never their mean, in
// which one bad run of two decided the row (t_typical runs of 3986.89 and
// 28.34 µs gave 2007.62).
func median(ms []measure, f func(measure) float64, higherBetter bool) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 || higherBetter {
		return v[len(v)/2]
	}
	return v[len(v)/2-1]
}

// perftestParams reads from perftest's header the settings it chose and
// returns them as gorperf flags.
func perftestParams(header string) []string {
	var out []string
	for _, l := range strings.Split(header, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSuffix(strings.Fields(v + " x")[0], "[B]")
		switch {
		case strings.TrimSpace(k) == "ibv_wr* API" && v == "OFF":
			// perftest posts with ibv_post_send on this device
			out = append(out, "--use_old_post_send")
			continue
		case strings.TrimSpace(k) == "PCIe relax order" && v != "ON":
			// perftest registers its memory without relaxed ordering
			// (OFF, or "Unsupported" where it was built without it)
			out = append(out, "--disable_pcie_relaxed")
			continue
		}
		if _, err := strconv.Atoi(v); err != nil {
			continue
		}
		switch strings.TrimSpace(k) {
		case "TX depth":
			out = append(out, "-t", v)
		case "CQ Moderation":
			out = append(out, "-Q", v)
		case "Max inline data":
			out = append(out, "-I", v)
		case "Mtu":
			out = append(out, "-m", v)
		case "Outstand reads":
			out = append(out, "-o", v)
		}
	}
	return out
}

// summarize gives the medians of the runs that succeeded (each figure's
// own median: the retries, the whole client's user and system CPU time and
// the messages too; see median for an even count) and how many failed, or
// the first error if none succeeded.
func summarize(runs []measure, bw bool) stat {
	st := stat{Runs: runs}
	var ok []measure
	for _, m := range runs {
		if m.Err == "" {
			ok = append(ok, m)
		}
	}
	st.FailedRuns = len(runs) - len(ok)
	if len(ok) == 0 {
		if len(runs) > 0 {
			st.Err = runs[0].Err
		}
		return st
	}
	med := func(f func(measure) float64) float64 { return median(ok, f, false) }
	rate := func(f func(measure) float64) float64 { return median(ok, f, true) }
	st.BWAvgMBps = rate(func(m measure) float64 { return m.BWAvgMBps })
	st.MsgRateMpps = rate(func(m measure) float64 { return m.MsgRateMpps })
	st.BWPreciseMBps = rate(func(m measure) float64 { return m.BWPreciseMBps })
	st.TTypicalUs = med(func(m measure) float64 { return m.TTypicalUs })
	st.P99Us = med(func(m measure) float64 { return m.P99Us })
	var known []measure
	for _, m := range ok {
		if m.CPUKnown {
			known = append(known, m)
		}
	}
	if len(known) > 0 {
		st.CPUKnown = true
		st.UserCPUNsPerMsg = median(known, func(m measure) float64 { return m.UserCPUNsPerMsg }, false)
		st.SysCPUNsPerMsg = median(known, func(m measure) float64 { return m.SysCPUNsPerMsg }, false)
	}
	st.Retries = uint64(med(func(m measure) float64 { return float64(m.Retries) }))
	st.UserCPUNs = int64(math.Round(med(func(m measure) float64 { return float64(m.UserCPUNs) })))
	st.SysCPUNs = int64(math.Round(med(func(m measure) float64 { return float64(m.SysCPUNs) })))
	st.Msgs = int(math.Round(med(func(m measure) float64 { return float64(m.Msgs) })))
	main, md := func(m measure) float64 { return m.TTypicalUs }, st.TTypicalUs
	if bw {
		main, md = func(m measure) float64 { return m.MsgRateMpps }, st.MsgRateMpps
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range ok {
		lo, hi = min(lo, main(m)), max(hi, main(m))
	}
	if md > 0 {
		st.Spread = (hi - lo) / md
	}
	st.Best = lo
	if bw {
		st.Best = hi
	}
	return st
}

// portTries is how many ports a run tries where its server finds its
// port taken (portTaken): another program may take any port between
// compare's runs.
const portTries = 5

// run runs one tool's server and client for n iterations and parses the
// client's result; it also returns the client's output. A baseline run
// (a few messages) may print a zero result. Where the server finds its
// port taken, the run is made again on the next port, up to portTries:
// the port is no fault of the tool's.
func (c *config) run(ctx context.Context, gorperf bool, test string, size, qps int, extra []string, n int, baseline bool) (measure, string) {
	for try := 1; ; try++ {
		m, out := c.runOn(ctx, gorperf, test, size, qps, extra, n, baseline)
		if try == portTries || !c.portTaken(m.Err) {
			return m, out
		}
	}
}

// portTaken reports whether a run's error, e, is its server's exit before
// it listened on a port that is in use: gorperf says so ("bind: address
// already in use"); perftest's tools say only that they could not listen,
// so the port is tried on every IPv4 address, where their servers listen
// (SO_REUSEADDR, as Go's listeners): one held on any of this machine's
// IPv4 addresses keeps them from it.
func (c *config) portTaken(e string) bool {
	if !strings.Contains(e, errServerExited.Error()) {
		return false
	}
	if strings.Contains(e, "address already in use") {
		return true
	}
	l, err := net.Listen("tcp4", net.JoinHostPort("0.0.0.0", strconv.Itoa(c.port)))
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	l.Close()
	return false
}

// runOn is run on the next port.
func (c *config) runOn(ctx context.Context, gorperf bool, test string, size, qps int, extra []string, n int, baseline bool) (measure, string) {
	c.port++
	port := strconv.Itoa(c.port)
	lat := strings.HasSuffix(test, "_lat")
	common := []string{"-s", strconv.Itoa(size), "-n", strconv.Itoa(n), "-p", port}
	if qps > 1 {
		common = append(common, "-q", strconv.Itoa(qps))
	}
	common = append(common, extra...)
	var srvArgs, cliArgs []string
	if gorperf {
		name := strings.ReplaceAll(test, "_", "-")
		common = append(common, c.gorperfOnly...)
		srvArgs = append([]string{c.gorperf, name, "-d", c.serverDev, "-x", strconv.Itoa(c.serverGID)}, common...)
		cliArgs = append(append([]string{c.gorperf, name, "-d", c.clientDev, "-x", strconv.Itoa(c.clientGID), "--json", "--cpu_util"}, common...), c.addr)
	} else {
		srvArgs = append([]string{"ib_" + test, "-d", c.serverDev, "-x", strconv.Itoa(c.serverGID), "-F"}, common...)
		cliArgs = append(append([]string{"ib_" + test, "-d", c.clientDev, "-x", strconv.Itoa(c.clientGID), "-F"}, common...), c.addr)
	}
	if c.pin {
		srvArgs = append([]string{"taskset", "-c", "0"}, srvArgs...)
		cliArgs = append([]string{"taskset", "-c", "1"}, cliArgs...)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, srvArgs[0], srvArgs[1:]...)
	cli := exec.CommandContext(ctx, cliArgs[0], cliArgs[1:]...)
	if gorperf {
		srv.Env = append(os.Environ(), c.env...)
		cli.Env = srv.Env
	}
	// Killed with this process, should it die without its deferred kill
	// (SIGKILL): a server left listening would answer the next run's
	// client, with other flags.
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cli.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var srvOut, srvErr, out, errb bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvErr
	cli.Stdout, cli.Stderr = &out, &errb
	if err := srv.Start(); err != nil {
		return measure{Err: err.Error()}, ""
	}
	// The server is waited for at once, so that the wait for it to
	// listen ends when it exits (a port in use, a bad flag), and killed
	// when this run ends. Its output is read only after it is reaped.
	exited := make(chan struct{})
	var srvState error
	go func() {
		srvState = srv.Wait()
		close(exited)
	}()
	stopServer := func() {
		srv.Process.Kill()
		<-exited
	}
	defer stopServer()
	wait := c.listenWait
	if wait == 0 {
		wait = 10 * time.Second
	}
	if err := listening(srv.Process.Pid, c.port, exited, wait); err != nil {
		stopServer()
		msg := err.Error()
		if errors.Is(err, errServerExited) {
			msg = fmt.Sprintf("%s (%v)", msg, srvState)
		}
		if l := firstNonEmpty(lastLine(srvErr.String()), lastLine(srvOut.String())); l != "" {
			msg += ": " + l
		}
		return measure{Err: msg}, ""
	}
	before := c.counters()
	if err := cli.Run(); err != nil {
		// stderr says what went wrong where there is anything in it;
		// stdout's last line is then a table's header or a separator.
		msg := firstNonEmpty(lastLine(errb.String()), lastLine(out.String()))
		var doc struct{ Error *struct{ Message string } }
		if json.Unmarshal(out.Bytes(), &doc) == nil && doc.Error != nil {
			msg = doc.Error.Message
		}
		return measure{Err: fmt.Sprintf("%v: %s", err, msg)}, out.String()
	}
	delta := counterDelta(before, c.counters())
	msgs := n * qps
	m, err := parse(gorperf, lat, out.Bytes())
	if err != nil {
		return measure{Err: err.Error()}, out.String()
	}
	if c.clientEnv == nil {
		c.clientEnv, c.serverEnv = m.env, m.peerEnv
	}
	main := m.MsgRateMpps
	if lat {
		main = m.TTypicalUs
	}
	if main == 0 && !baseline {
		return measure{Err: "printed a zero result (perftest's cycle-counter calibration fails at times under emulation)"}, out.String()
	}
	for _, v := range []float64{m.BWAvgMBps, m.MsgRateMpps, m.TTypicalUs, m.P99Us} {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return measure{Err: "printed a non-finite figure (perftest's cycle-counter calibration fails at times under emulation)"}, out.String()
		}
	}
	m.UserCPUNs = cli.ProcessState.UserTime().Nanoseconds()
	m.SysCPUNs = cli.ProcessState.SystemTime().Nanoseconds()
	m.Msgs = msgs
	m.Counters = delta
	for _, name := range retryCounters {
		m.Retries += delta[c.clientDev+"/"+name]
	}
	return m, out.String()
}

// retryCounters are the port counters, of rxe and of mlx5, that count a
// requester's retransmissions: a timeout waiting for an ACK, or a NAK for
// a sequence error. Under emulation rxe's retransmission timer fires now
// and then though nothing was lost, and each costs a timeout: this is the
// first thing to look at when two runs differ.
var retryCounters = []string{"completer_retry_err", "local_ack_timeout_err", "packet_seq_err"}

// counters reads the port counters (hw_counters) of the two devices'
// first ports, as "device/counter".
func (c *config) counters() map[string]uint64 {
	out := map[string]uint64{}
	for _, dev := range []string{c.serverDev, c.clientDev} {
		dir := "/sys/class/infiniband/" + dev + "/ports/1/hw_counters"
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, err := os.ReadFile(dir + "/" + e.Name())
			if err != nil {
				continue
			}
			if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				out[dev+"/"+e.Name()] = v
			}
		}
	}
	return out
}

// counterDelta gives the counters that grew between two readings.
func counterDelta(before, after map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range after {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// errServerExited is listening's error when the server exits first.
var errServerExited = errors.New("the server exited before it listened")

// listening waits until the process pid listens on the TCP port: a
// socket in state LISTEN on the port in /proc/net/tcp or tcp6 whose inode
// is one of the process's open files. Reading /proc, not connecting: a
// connection would be a client to the server. A socket of another process
// on the port does not count (a server left over, or some other program:
// the client would reach it); the wait ends early when exited is closed.
func listening(pid, port int, exited <-chan struct{}, d time.Duration) error {
	hexPort := fmt.Sprintf(":%04X", port)
	foreign := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(d)
	for {
		select {
		case <-exited:
			return errServerExited
		default:
		}
		var inodes []string
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
				if fs := strings.Fields(l); len(fs) > 9 && strings.HasSuffix(fs[1], hexPort) && fs[3] == "0A" {
					inodes = append(inodes, fs[9])
				}
			}
		}
		if len(inodes) > 0 {
			switch owns, err := ownsSocket(pid, inodes); {
			case owns:
				return nil
			case errors.Is(err, fs.ErrNotExist):
				// exiting: exited closes soon
			case err != nil:
				// /proc hides the process's files: take the
				// port's socket as the server's.
				return nil
			default:
				foreign = true
			}
		}
		select {
		case <-exited:
			return errServerExited
		case <-timeout:
			if foreign {
				return fmt.Errorf("the server did not listen within %v: port %d is another process's", d, port)
			}
			return fmt.Errorf("the server did not listen within %v", d)
		case <-tick.C:
		}
	}
}

// ownsSocket says whether one of the process's open files is a socket
// with one of the inodes.
func ownsSocket(pid int, inodes []string) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		for _, in := range inodes {
			if link == "socket:["+in+"]" {
				return true, nil
			}
		}
	}
	return false, nil
}

func parse(gorperf, lat bool, out []byte) (measure, error) {
	if gorperf {
		// perftest's 99% column is its percentile_99_us, not gorperf's
		// nearest-rank p99_us over every sample.
		var r struct {
			Results []struct {
				measure
				Percentile99Us float64 `json:"percentile_99_us"`
			} `json:"results"`
			Error         *struct{ Message string } `json:"error"`
			Env           json.RawMessage           `json:"env"`
			PeerEnv       json.RawMessage           `json:"peer_env"`
			ThreadResults []struct {
				CPU *int `json:"cpu"`
			} `json:"thread_results"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return measure{}, err
		}
		if r.Error != nil || len(r.Results) == 0 {
			return measure{}, fmt.Errorf("gorperf: no result")
		}
		m := r.Results[0].measure
		if p := r.Results[0].Percentile99Us; p > 0 {
			m.P99Us = p
		}
		m.env, m.peerEnv = r.Env, r.PeerEnv
		for _, t := range r.ThreadResults {
			if t.CPU != nil {
				m.ThreadCPUs = append(m.ThreadCPUs, *t.CPU)
			}
		}
		return m, nil
	}
	// perftest: the line after the column header.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if !strings.Contains(l, "#bytes") || i+1 >= len(lines) {
			continue
		}
		f := strings.Fields(lines[i+1])
		num := func(k int) float64 {
			if k >= len(f) {
				return 0
			}
			v, _ := strconv.ParseFloat(f[k], 64)
			return v
		}
		if lat {
			// #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
			return measure{TTypicalUs: num(4), P99Us: num(7)}, nil
		}
		// #bytes #iterations BW_peak BW_average MsgRate
		m := measure{BWAvgMBps: num(3), MsgRateMpps: num(4)}
		if p := preciseBW(m.BWAvgMBps, m.MsgRateMpps, int(num(0))); p != m.BWAvgMBps {
			m.BWPreciseMBps = p
		}
		return m, nil
	}
	return measure{}, fmt.Errorf("perftest printed no result: %s", lastLine(string(out)))
}

// numaParity says how gorperf must place itself to match the perftest
// whose --help is help: perftest 26.04 and later move to the CPUs of the
// device's NUMA node unless given --disable_numa, as gorperf does; an
// older perftest stays where it started, and gorperf then runs with
// --disable_numa too.
func numaParity(help string) (gorperfOnly []string, why string) {
	if strings.Contains(help, "--disable_numa") {
		return nil, "perftest moves to the device's NUMA node, as gorperf does by default"
	}
	return []string{"--disable_numa"}, "perftest does not move to the device's NUMA node (it is older than 26.04): gorperf runs with --disable_numa too"
}

// baselineIters is the length of a baseline run: at least 5 messages
// (perftest takes no fewer) and two post lists, and a multiple of both
// lists, as perftest requires of -n; the RX depth, at most -n, then holds
// a receive list.
func baselineIters(postList, recvPostList int) int {
	step := lcm(max(postList, 1), max(recvPostList, 1))
	n := step
	for n < max(5, 2*postList) {
		n += step
	}
	return n
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// lcm is the least common multiple of a and b (both above 0).
func lcm(a, b int) int { return a / gcd(a, b) * b }

// printTable prints the rows, and under them what the table leaves out:
// the errors of failed runs in rows that are medians of fewer runs than
// asked for (marked [k/n] beside the tool's figure), of failed
// baselines, and the rows where gorperf's threads shared a CPU.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var failed, short, shared, wrFailed []string
	// The column of gorperf on the ibv_wr_* API, where a row has its runs.
	wrCol := slices.ContainsFunc(rows, func(r row) bool { return r.GorperfWRAPI != nil })
	heading := "test\tbytes\tqps\tlist\tgorperf\tperftest\tratio\tmsg rate ratio\tbest ratio\tΔ typical µs\tΔ p99 µs\tspread g/p\tretries g/p\tuser CPU/msg\tsys CPU/msg\t"
	if wrCol {
		heading += "wr* ratio\t"
	}
	fmt.Fprintln(tw, heading)
	for _, r := range rows {
		list := "-"
		if r.PostList > 1 {
			list = strconv.Itoa(r.PostList)
		}
		if r.RecvPostList > 1 {
			list += "/" + strconv.Itoa(r.RecvPostList) // send's/receive's
		}
		qps := strconv.Itoa(r.QPs)
		if r.Threads > 1 {
			qps += "/" + strconv.Itoa(r.Threads) + "t"
		}
		name := fmt.Sprintf("%s %d B, %d QPs", r.Test, r.Bytes, r.QPs)
		if r.PostList > 1 {
			name += fmt.Sprintf(", list %d", r.PostList)
		}
		if r.Threads > 1 {
			name += fmt.Sprintf(", %d threads", r.Threads)
		}
		// The wr* ratio cell, with its tab, where the table has the
		// column: gorperf on the ibv_wr_* API has its own runs, which
		// may have succeeded where gorperf with --use_old_post_send
		// failed every run.
		wrCell, wrShort := "", []string(nil)
		if w := r.GorperfWRAPI; w != nil {
			for i, m := range w.Runs {
				if m.Err != "" && w.Err == "" {
					wrShort = append(wrShort, fmt.Sprintf("%s, gorperf on the ibv_wr_* API run %d of %d: %s", name, i+1, len(w.Runs), m.Err))
				}
			}
			if w.Err != "" {
				wrCell = "ERROR\t"
				wrFailed = append(wrFailed, fmt.Sprintf("%s: %s", name, w.Err))
			} else {
				wrCell = r.wrAPIRatio().format("%.3f") + w.runsMark() + "\t"
			}
		} else if wrCol {
			wrCell = "-\t"
		}
		if e := r.failure(); e != "" {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\tERROR: %s\t\t\t\t\t\t\t\t\t\t\t%s\n", r.Test, r.Bytes, qps, list, e, wrCell)
			short = append(short, wrShort...)
			continue
		}
		g, p := r.Gorperf, r.Perftest
		for _, t := range []struct {
			tool string
			st   stat
		}{{"gorperf", g}, {"perftest", p}} {
			for i, m := range t.st.Runs {
				if m.Err != "" {
					short = append(short, fmt.Sprintf("%s, %s run %d of %d: %s", name, t.tool, i+1, len(t.st.Runs), m.Err))
				}
			}
		}
		short = append(short, wrShort...)
		for _, m := range g.Runs {
			if cpus := m.ThreadCPUs; len(cpus) > 1 && sharesCPU(cpus) {
				shared = append(shared, fmt.Sprintf("%s: the client's threads were on CPUs %s", name, intList(cpus)))
				break
			}
		}
		cpu := "-\t-\t"
		switch {
		case r.Baselines[0].Err != "" || r.Baselines[1].Err != "":
			cpu = "err\terr\t"
			for i, tool := range []string{"gorperf", "perftest"} {
				if e := r.Baselines[i].Err; e != "" {
					failed = append(failed, fmt.Sprintf("%s, %s: %s", name, tool, e))
				}
			}
		case g.CPUKnown && p.CPUKnown:
			cpu = r.CPURatio.format("%.2f") + "\t" + r.SysCPURatio.format("%.2f") + "\t"
		}
		common := fmt.Sprintf("%.0f%%/%.0f%%\t%d/%d\t%s%s", 100*g.Spread, 100*p.Spread, g.Retries, p.Retries, cpu, wrCell)
		if strings.HasSuffix(r.Test, "_bw") {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s MiB/s%s\t%s MiB/s%s\t%s\t%s\t%s\t\t\t%s\n", r.Test, r.Bytes, qps, list,
				mbps(g.bw()), g.runsMark(), mbps(p.bw()), p.runsMark(), r.BWRatio.format("%.3f"), r.MsgRateRatio.format("%.3f"), r.BestRatio.format("%.3f"), common)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f µs%s\t%.2f µs%s\t%s\t\t%s\t%s\t%s\t%s\n", r.Test, r.Bytes, qps, list,
				g.TTypicalUs, g.runsMark(), p.TTypicalUs, p.runsMark(), r.TypicalRatio.format("%.3f"), r.BestRatio.format("%.3f"),
				r.TypicalDiffUs.format("%+.2f"), r.P99DiffUs.format("%+.2f"), common)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nMedians of the runs; ratios gorperf ÷ perftest; best ratio: of the best runs (highest message rate, lowest")
	fmt.Fprintln(w, "t_typical); spread: (max − min) ÷ median of message rate or t_typical;")
	fmt.Fprintln(w, "retries: the client device's retransmissions (median); CPU: the client's time per message net of start-up")
	fmt.Fprintln(w, "(a run of a few messages subtracted), gorperf ÷ perftest; \"-\" where the loop's CPU was too small to tell,")
	fmt.Fprintln(w, "or, in any ratio, where perftest's figure is 0. Bandwidth: four significant digits; perftest's from its message")
	fmt.Fprintln(w, "rate below 10,486 bytes, where that is more precise than its BW average (two decimals of MiB/s).")
	if slices.ContainsFunc(rows, func(r row) bool { return r.Threads > 1 }) {
		fmt.Fprintln(w, "qps N/Mt: gorperf ran the N QPs as M threads (--threads), pinned in turn to its side's CPUs (with more threads")
		fmt.Fprintln(w, "than CPUs, some share one; the client's are in the JSON's thread_cpus); perftest, which has no threads, as one.")
	}
	listNotes(w, "Threads that shared a CPU:", shared)
	listNotes(w, "[k/n]: the tool's figures are the medians of the k of its n runs that succeeded; the others failed:", short)
	if wrCol {
		fmt.Fprintln(w, "wr* ratio: gorperf on its default post path, the ibv_wr_* API, ÷ perftest (bandwidth or t_typical), in the rows")
		fmt.Fprintln(w, "where perftest posted with ibv_post_send and the gorperf column is gorperf's with --use_old_post_send.")
	}
	listNotes(w, "ERROR under wr* ratio: every run of gorperf on the ibv_wr_* API failed:", wrFailed)
	listNotes(w, "\"err\": a baseline run failed, so the runs' CPU could not be net of start-up:", failed)
}

// listNotes writes head and then lines, each indented, where there are
// any lines.
func listNotes(w io.Writer, head string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, head)
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}

// runsMark marks a tool's figure in the table where some of its runs
// failed: " [2/3]" where two of three succeeded; "" where none failed.
func (st stat) runsMark() string {
	if st.FailedRuns == 0 {
		return ""
	}
	return fmt.Sprintf(" [%d/%d]", len(st.Runs)-st.FailedRuns, len(st.Runs))
}

// sharesCPU says whether two of the CPUs are the same.
func sharesCPU(cpus []int) bool {
	s := slices.Clone(cpus)
	slices.Sort(s)
	return len(slices.Compact(s)) < len(cpus)
}

// failure says which tool failed every run of the row, and why; "" where
// both have figures. Where perftest failed it is perftest's error: gorperf,
// which runs with the parameters perftest's header gives, was then not run
// at all, and its error (errNotRun) would hide the cause.
func (r row) failure() string {
	switch {
	case r.Perftest.Err != "":
		return "perftest: " + r.Perftest.Err
	case r.Gorperf.Err != "":
		return "gorperf: " + r.Gorperf.Err
	}
	return ""
}

// An opt is one of a row's ratios or differences: absent where the row
// has no such figure (left out of the JSON), undefined where it is a
// ratio to zero (null in the JSON, "-" in the table), or a number.
type opt struct {
	set bool    // the row has the figure
	v   float64 // NaN where undefined
}

func some(v float64) opt { return opt{true, v} }

// ratio is a ÷ b, undefined where b is 0.
func ratio(a, b float64) opt {
	if b == 0 {
		return opt{true, math.NaN()}
	}
	return some(a / b)
}

// IsZero says the row has no such figure, for omitzero.
func (o opt) IsZero() bool { return !o.set }

// Defined says the figure is there and a number.
func (o opt) Defined() bool { return o.set && !math.IsNaN(o.v) }

// format prints the figure with the verb, or "-" where it is absent or
// undefined.
func (o opt) format(verb string) string {
	if !o.Defined() {
		return "-"
	}
	return fmt.Sprintf(verb, o.v)
}

func (o opt) MarshalJSON() ([]byte, error) {
	if math.IsNaN(o.v) || math.IsInf(o.v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(o.v)
}

func (o *opt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = opt{true, math.NaN()}
		return nil
	}
	o.set = true
	return json.Unmarshal(b, &o.v)
}

// mbps prints a bandwidth in MiB/s to four significant digits, and at
// least two decimals.
func mbps(v float64) string {
	d := 2
	if v > 0 {
		d = max(2, 3-int(math.Floor(math.Log10(v))))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// ints reads a comma-separated list of whole numbers, each at least 1 and
// perhaps with a k or K (× 1024) or m or M (× 2^20) after it; the flag's
// name is for the error. An empty
// string is an empty list; an entry that is not such a number is an error
// (one was dropped: -sizes 2,4k ran only 2 bytes, and -qps 0 a 0-QP row).
func ints(flag, s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		num, mul := f, 1
		switch {
		case strings.HasSuffix(f, "k"), strings.HasSuffix(f, "K"):
			num, mul = f[:len(f)-1], 1<<10
		case strings.HasSuffix(f, "m"), strings.HasSuffix(f, "M"):
			num, mul = f[:len(f)-1], 1<<20
		}
		v, err := strconv.Atoi(num)
		if err != nil || v < 1 || v > math.MaxInt32/mul {
			return nil, fmt.Errorf("-%s %q: %q is not a whole number from 1 (with k or m after it, perhaps)", flag, s, f)
		}
		out = append(out, v*mul)
	}
	return out, nil
}

func atoi(s string, def int) int {
	if v, err := strconv.Atoi(s); err == nil {
		return v
	}
	return def
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// lastLine is the last line of s that is not blank, "" if none is.
func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(l[len(l)-1])
}
