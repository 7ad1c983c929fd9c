//go:build linux && cgo

package cli

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/affinity"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// testOptions are the flags of the eight perftest-style commands, with
// perftest's letters.
type testOptions struct {
	Test     exchange.Test
	Host     string // "" runs the server
	Loopback bool   // server and client in this process
	PeerDev  string // loopback: the server side's device

	intervals []report.Interval // --run_infinitely --json: collected for the one document

	// inlineDefault: -I was not given, so Inline is perftest's default,
	// which bench lowers on a device that inlines less.
	inlineDefault bool

	Device       string
	IBPort       int
	GIDIndex     int
	GIDFamily    int
	IPv6         bool // --ipv6: GIDFamily 6
	GIDSubnet    string
	SourceIP     string // --source_ip: the GID of this address
	BindIP       string // --bind_source_ip: --source_ip, and the control connection's address
	IPv6Addr     bool   // --ipv6-addr: the control connection over IPv6
	Version      bool   // -V: print gorperf's version and stop
	GIDNetdev    string
	Size         uint32
	All          bool
	Iters        uint64
	Duration     uint32
	durationSet  bool   // -D given: 0 is then refused, as perftest's
	Margin       uint32 // -f; with -D, default the duration's quarter
	udSize       bool   // -s not given for UD: the MTU this side offers (fitMTU)
	QPs          uint16
	Bidir        bool
	Connection   string
	Inline       uint32
	TXDepth      uint32
	RXDepth      uint32
	deepRX       bool // RXDepth raised for UD or UC, as perftest's: spec fits it to serve's default limits, and a server to its own
	CQMod        uint32
	cqModGiven   uint32 // -Q as given, before defaults lowers it to -t; 0: not given
	cqModSet     bool   // -Q given
	PostList     uint32
	RecvPostList uint32 // --recv_post_list
	OutReads     uint8
	MTU          int
	Port         int
	RdmaCM       bool
	CPUFreq      bool
	NoPeak       bool // -N, accepted
	RateLimit    float64
	RateUnits    string
	RateType     string
	BurstSize    int
	Gbits        bool
	TClass       uint8
	SL           uint8
	FlowLabels   []string // --flow_label, as given
	PKeyIndex    uint16
	Infinite     bool
	JSON         bool
	CSV          bool
	OutJSON      bool              // --out_json: perftest's JSON file too
	OutJSONFile  string            // --out_json_file
	jsonFile     *os.File          // where --out_json writes, once opened
	jsonTarget   string            // the file jsonFile replaces once written; "": jsonFile is the file
	jsonUnnamed  bool              // jsonFile has no name yet (O_TMPFILE)
	jsonOpened   bool              // openJSONFile tried to create jsonFile
	jsonLines    bool              // --json's documents compact, one a line (serve's)
	Output       string            // --output, as given
	QPTimeout    int               // -u; -1: not given
	RetryCount   int               // --retry_count; -1: not given
	value        report.Value      // --output, parsed
	typed        map[string]string // each flag given, by name, its value before defaults rewrote any
	limits       report.Limits
	Atomic       string
	Validate     bool
	OldPostSend  bool
	NoRelaxed    bool
	Histogram    bool
	Unsorted     bool // -U: every sample, in order
	Sorted       bool // -H: every sample, sorted
	Cycles       bool // -C: refused
	Events       bool
	HugePages    bool
	SRQ          bool
	Reversed     bool
	ReportBoth   bool   // --report-both
	WarmUp       bool   // --perform_warm_up
	MRPerQP      bool   // --mr_per_qp
	LatencyGap   uint32 // --latency_gap, µs
	CompVector   int    // -X
	Immediate    bool   // --write_with_imm, --send_with_imm
	MaxMemory    uint64
	Idle         int
	Counters     []string // -W
	CPUUtil      bool
	Mcg          bool   // -g
	MGID         string // -M
	MapFile      string // --mmap
	MapOffset    int64  // --mmap-offset
	PayloadFile  string // --payload_file_path
	PinCores     string // --pin_cores, as given
	NUMANode     int    // --numa_node; -1: not given
	DisableNUMA  bool   // --disable_numa
	cpus         []int  // --pin_cores, parsed
	placed       affinity.Choice
	rows         *rowStream // the text table's or the CSV's rows printed as the sizes end
	Threads      uint16     // --threads
	// stopped is how this side was stopped, in the words its peer was
	// told ("interrupted (Ctrl-C)", "stopped (SIGTERM)"): finish names
	// it for a result that this side's stop cut short; "" says
	// "interrupted".
	stopped string
	// ended is when finish or fail learnt the run's outcome: the JSON's
	// end_time.
	ended time.Time
}

// defaultJSONFile is where --out_json writes by default, perftest's name
// for its own JSON report.
const defaultJSONFile = "perftest_out.json"

// cqModSizeLimit is the largest message size that perftest moderates
// completions for by default (its MSG_SIZE_CQ_MOD_LIMIT).
const cqModSizeLimit = 8192

// minCQMod and maxCQMod bound -Q, as perftest's MIN_CQ_MOD and
// MAX_CQ_MOD do.
const (
	minCQMod = 1
	maxCQMod = 1024
)

// defRXDepth is the default RX depth, perftest's DEF_RX_SEND.
const defRXDepth = 512

// ucMaxRX is the deepest default RX depth over UD and UC, perftest's
// UC_MAX_RX.
const ucMaxRX = 16000

// sizeValue is -s: a number of bytes as perftest's -s reads it, decimal,
// 0x hexadecimal or 0 octal (strtol's base 0), or that number of KiB or
// MiB with a K or an M after it (upper case: perftest's strtol stops at a
// lower-case k and takes the number alone, 64 for 64k, which gorperf
// refuses rather than send 64 bytes).
type sizeValue uint32

func (v *sizeValue) Set(s string) error {
	num, unit := s, uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		num, unit = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "M"):
		num, unit = s[:len(s)-1], 1<<20
	}
	n, err := strconv.ParseUint(num, 0, 32)
	if err != nil || n*unit > math.MaxUint32 {
		if errors.Is(err, strconv.ErrRange) || err == nil {
			return fmt.Errorf("%s is more than %d bytes", s, uint32(math.MaxUint32))
		}
		return fmt.Errorf("want a number of bytes, or of KiB or MiB with K or M after it (upper case, as perftest's: 64K, 1M)")
	}
	*v = sizeValue(n * unit)
	return nil
}

func (v *sizeValue) String() string { return strconv.FormatUint(uint64(*v), 10) }

func (v *sizeValue) Type() string { return "bytes" }

// defaults are perftest's, per kind of test, including the ones that
// depend on other flags: -Q follows the size and the post list, and the
// queue depths never exceed the iterations.
func (o *testOptions) defaults(cmd *cobra.Command) {
	lat := o.Test.IsLatency()
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	// What each flag given says before the defaults below rewrite some
	// (-Q, -t, -r, -f), as a server's word on those its client's test
	// sets has them (unusedFlags).
	o.typed = map[string]string{}
	cmd.Flags().Visit(func(fl *pflag.Flag) { o.typed[fl.Name] = fl.Value.String() })
	if o.Mcg && !set("connection") {
		o.Connection = "UD" // as perftest's -g
	}
	if o.Threads > 1 && !set("qp") {
		o.QPs = o.Threads // a QP a thread
	}
	if !set("size") {
		switch {
		case o.Test.IsAtomic():
			o.Size = 8
		case lat:
			o.Size = 2
		case strings.EqualFold(o.Connection, "UD"):
			// A datagram is at most the MTU: -m, or the largest, which
			// testRun lowers to the port's, as perftest does.
			o.Size, o.udSize = 4096, true
			if o.MTU != 0 {
				o.Size = uint32(o.MTU)
			}
		default:
			o.Size = 65536
		}
	}
	if !set("iters") {
		o.Iters = 5000
		if lat {
			o.Iters = 1000
		}
	}
	if !set("tx-depth") {
		o.TXDepth = 128
		if lat {
			o.TXDepth = 1
		}
	}
	o.durationSet = set("duration")
	iterations := o.Duration == 0 && !o.Infinite
	if iterations && o.Iters > 0 && uint64(o.TXDepth) > o.Iters {
		o.TXDepth = uint32(o.Iters) // as perftest: never deeper than the run
	}
	o.cqModSet, o.cqModGiven = set("cq-mod"), o.CQMod
	if !o.cqModSet {
		switch {
		case lat:
			o.CQMod = 1
		case o.PostList > 1:
			o.CQMod = o.PostList // one completion per list
		case o.Size > cqModSizeLimit && !o.All && !o.Events:
			// Large messages (never UD: at most the MTU): a completion for
			// each, as perftest does, so a slot is reused as soon as it is
			// free; not with -e, as perftest's, where each would be an
			// event to sleep for.
			o.CQMod = 1
		default:
			o.CQMod = 100
		}
	}
	// Given or not, the moderation is at most the TX depth, given or
	// shrunk to -n: perftest lowers it there, and says nothing.
	o.CQMod = min(o.CQMod, o.TXDepth)
	if !set("rx-depth") {
		o.RXDepth = defRXDepth // latency tests too: send_lat keeps spare receives
	}
	if iterations && o.Iters > 0 && uint64(o.RXDepth) > o.Iters {
		o.RXDepth = uint32(o.Iters) // as perftest, given or not
	}
	o.deepRX = false
	if !set("rx-depth") && iterations && o.Iters > defRXDepth && (exchange.TestSpec{Test: o.Test, Immediate: o.Immediate}).Receives() &&
		(strings.EqualFold(o.Connection, "UD") || strings.EqualFold(o.Connection, "UC")) {
		// perftest's force_dependecies: over UD and UC, where a message
		// that finds no receive posted is lost, the default RX depth of
		// a run of -n iterations is -n, at most 16000 (UC_MAX_RX). spec
		// lowers it to what serve's default limits and soft-RoCE take.
		o.RXDepth, o.deepRX = uint32(min(o.Iters, ucMaxRX)), true
	}
	switch {
	case !set("margin") && o.Duration > 0 && !o.Infinite:
		o.Margin = o.Duration / 4 // perftest's default
	case o.Duration == 0 || o.Infinite:
		// perftest takes -f without -D, and --run_infinitely's, and
		// leaves nothing out: a margin is of a run of fixed length.
		o.Margin = 0
	}
	if set("out_json_file") {
		o.OutJSON = true // a file named is a file wanted
	}
	if !set("inline_size") {
		o.inlineDefault = true
		// perftest's defaults (ctx_set_max_inline): latency tests
		// inline, bandwidth tests, reads and atomics do not. On the
		// devices perftest's ib_dev_name does not recognise, rxe and
		// siw among them, it inlines nothing, which each side decides
		// once its device is open (bench's Local.PerftestInline).
		switch {
		case o.Test == exchange.WriteLat:
			o.Inline = 220 // DEF_INLINE_WRITE
		case o.Test == exchange.SendLat && strings.EqualFold(o.Connection, "UD"):
			o.Inline = 188 // DEF_INLINE_SEND_UD
		case o.Test == exchange.SendLat:
			o.Inline = 236 // DEF_INLINE_SEND_RC_UC_XRC
		}
	}
}

func addTestFlags(cmd *cobra.Command, o *testOptions, norm func(*pflag.FlagSet, string) pflag.NormalizedName) {
	f := cmd.Flags()
	f.SortFlags = false
	addPortFlags(f, o)
	f.BoolVarP(&o.Version, "version", "V", false, "print gorperf's version and stop, as perftest's -V")
	f.VarP((*sizeValue)(&o.Size), "size", "s", "message size in bytes, or with K or M after it in KiB or MiB, as perftest's: 64K (default: 65536 for bandwidth, 2 for latency, 8 for atomics; UD bandwidth: the port's active MTU, or less where the GID's netdev carries less, or -m)")
	all := "run every size from 2 to 2^23 bytes"
	switch {
	case o.Test.IsAtomic():
		all = "refused: an atomic moves 8 bytes, the one size"
	case !o.Test.IsLatency():
		all += " (--run_infinitely overrides it and runs -s alone, as perftest's)"
	}
	f.BoolVarP(&o.All, "all", "a", false, all)
	f.Uint64VarP(&o.Iters, "iters", "n", 0, "iterations per size, at least 5 (default: 5000 for bandwidth, 1000 for latency)")
	f.Uint32VarP(&o.Duration, "duration", "D", 0, "run each size for this many seconds instead of -n iterations")
	ignored := "without -D"
	if !o.Test.IsLatency() {
		ignored += " or with --run_infinitely"
	}
	f.Uint32VarP(&o.Margin, "margin", "f", 0, "with -D, leave this many seconds at each end of a size's run out of the results, as perftest's -f (default: a quarter of -D, rounded down; "+ignored+", ignored, as perftest's)")
	f.Uint16VarP(&o.QPs, "qp", "q", 1, "number of queue pairs (bandwidth tests; a latency test runs on one, as perftest's)")
	f.BoolVarP(&o.Bidir, "bidirectional", "b", false, "traffic in both directions (bandwidth tests)")
	f.StringVarP(&o.Connection, "connection", "c", "RC", "connection type: RC, UC or UD (as the test allows)")
	inline := "largest message sent inline (default, as perftest's: 220 for write-lat, 236 for send-lat, 188 for send-lat over UD, else 0; 0 on rxe and siw, which perftest does not recognise; lowered to the most the device inlines)"
	if o.Test == exchange.ReadBW || o.Test == exchange.ReadLat || o.Test.IsAtomic() {
		inline = "0 only: an RDMA read or an atomic carries no data to send inline"
	}
	f.Uint32VarP(&o.Inline, "inline_size", "I", 0, inline)
	f.Uint32VarP(&o.TXDepth, "tx-depth", "t", 0, "send queue depth (default: 128 for bandwidth, 1 for latency; at most -n)")
	if o.Test.Receives() || o.Test.IsWrite() {
		// Not the reads' and atomics', which post no receives: perftest
		// refuses their -r ("On RDMA verbs rx depth can be only 1").
		f.Uint32VarP(&o.RXDepth, "rx-depth", "r", 0, "receive queue depth (send tests, and write tests with --write_with_imm; default 512, at most -n; over UD and UC, -n, as perftest's, up to 16000, lowered to what gorperf serve takes with its default limits, 8192 deep and within its default --max-memory, and to a receive CQ, depth × QPs, of 32767 entries, soft-RoCE's most; a serve of lower limits lowers its own, down to 512)")
	}
	f.Uint32VarP(&o.CQMod, "cq-mod", "Q", 0, "ask for one completion every this many sends, 1 to 1024 (default 100; 1 above 8 KiB; the list's length with -l; at most -t: a larger one is lowered to it, as perftest's)")
	f.Uint32VarP(&o.PostList, "post_list", "l", 1, "post lists of this many requests in one call, 1 or more")
	f.IntVarP(&o.MTU, "mtu", "m", 0, "path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU, or less where the GID's netdev carries less); -R's RC connections get rdma_cm's path MTU, within -m and the two sides' offers")
	f.IntVarP(&o.Port, "port", "p", exchange.DefaultPort, "TCP port of the control connection")
	f.BoolVarP(&o.RdmaCM, "rdma_cm", "R", false, "connect the QPs through rdma_cm")
	f.BoolVarP(&o.CPUFreq, "CPU-freq", "F", false, "accepted for perftest compatibility: gorperf uses the monotonic clock, not cycle counters")
	f.BoolVar(&o.Gbits, "report_gbits", false, "report bandwidth in Gbit/s")
	if o.Test == exchange.ReadBW || o.Test == exchange.ReadLat || o.Test.IsAtomic() {
		// perftest's -o is "only available on READ verb" and atomics.
		f.Uint8VarP(&o.OutReads, "outs", "o", 0, "outstanding RDMA reads and atomics per QP (default: as many as both devices allow; devices may round up to a power of two)")
	}
	f.Uint8Var(&o.TClass, "tclass", 0, "IP traffic class (DSCP and ECN bits) of the packets")
	f.Uint8VarP(&o.TClass, "tos", "T", 0, "the same as --tclass (perftest's -T sets it for rdma_cm's QPs; gorperf's applies with and without -R)")
	f.Uint8VarP(&o.SL, "sl", "S", 0, "service level")
	f.StringSliceVar(&o.FlowLabels, "flow_label", nil, "GRH flow labels, comma-separated, taken in turn by the QPs of both sides; on RoCE v2 each picks its QP's UDP source port, and so its ECMP path (not for RC or UC with -R)")
	addLocalQPFlags(f, o)
	addLocalMemoryFlags(f, o)
	addLocalCPUFlags(f, o)
	if !o.Test.IsLatency() { // as perftest's, which refuses it for its latency tests
		f.BoolVar(&o.Infinite, "run_infinitely", false, "run until stopped, reporting every -D seconds (-s alone: it overrides -a, as perftest's)")
	}
	f.BoolVar(&o.JSON, "json", false, "print the result as JSON (schema version 1): bw_*_mbps in MiB/s (2^20 bytes), bw_avg_gbps in Gbit/s (10^9 bits), latencies in µs")
	f.BoolVar(&o.CSV, "csv", false, "print the result as CSV")
	f.BoolVar(&o.OutJSON, "out_json", false, "also write the result to --out_json_file as perftest's file (test_info, and results under perftest's keys: MsgSize, n_iterations, BW_peak, BW_average, MsgRate, or t_min ... percentile_99.9; a sweep's last size), with --json's document under \"gorperf\", whatever is printed")
	f.StringVar(&o.OutJSONFile, "out_json_file", defaultJSONFile, "the file of --out_json, replaced if it exists (given alone, it implies --out_json)")
	f.StringVar(&o.Output, "output", "", "print only this figure, one line a size, as perftest's --output: bandwidth or message_rate (bandwidth tests), latency (the average, latency tests)")
	f.BoolVar(&o.Validate, "validate", false, "check that the bytes (or atomic values) that arrive are the ones sent")
	f.BoolVar(&o.OldPostSend, "use_old_post_send", false, "post with ibv_post_send, not the ibv_wr_* API the device may have")
	f.BoolVar(&o.NoRelaxed, "disable_pcie_relaxed", false, "register memory without PCIe relaxed ordering (asked for by default, as perftest does; never for write-lat, whose receiver polls the last byte)")
	f.BoolVar(&o.HugePages, "use_hugepages", false, "put both sides' buffers on 2 MiB huge pages (see /proc/sys/vm/nr_hugepages)")
	f.BoolVarP(&o.Events, "events", "e", false, "sleep on completion events while waiting for a completion, instead of polling (write-lat only with --write_with_imm)")
	f.IntVar(&o.Idle, "peer-timeout", 10, "seconds without progress, or without a word on the control connection (a stopped peer), before the peer is declared gone")
	addLocalReportFlags(f, o)
	if o.Test.IsAtomic() {
		f.StringVarP(&o.Atomic, "atomic_type", "A", "FETCH_AND_ADD", "FETCH_AND_ADD or CMP_AND_SWAP")
	}
	if o.Test.Receives() {
		f.BoolVar(&o.SRQ, "use-srq", false, "each side's QPs take their receives from one shared receive queue of -r receives")
		f.BoolVar(&o.Immediate, "send_with_imm", false, "send with immediate data (IBV_WR_SEND_WITH_IMM): each message carries its number, which --validate checks")
		f.BoolVarP(&o.Mcg, "mcg", "g", false, "multicast: each side's QP joins a group (a server's its -M, a client's the address after its own -M) and the peer sends to it; UD (the default with -g), one QP, not with -b; with -R rdma_cm joins the groups")
		addGroupFlag(f, o)
	}
	if o.Test == exchange.WriteBW || o.Test == exchange.ReadBW || o.Test == exchange.AtomicBW {
		f.BoolVar(&o.WarmUp, "perform_warm_up", false, "before each size, post a TX depth of messages on every QP and wait for them, outside the measurement, as perftest's")
	}
	if o.Test.IsWrite() {
		f.BoolVar(&o.Immediate, "write_with_imm", false, "write with immediate data (IBV_WR_RDMA_WRITE_WITH_IMM): each write consumes a receive the peer posts (-r) and completes there, carrying its number, which --validate checks")
	}
	if o.Test.IsLatency() {
		f.Float64Var(&o.limits.Typical, "limit_lat", 0, "fail (exit status 3) if any size's t_typical is above this many µs")
		f.Float64Var(&o.limits.P99, "limit_p99", 0, "fail (exit status 3) if any size's 99% percentile (the table's column, as perftest computes it) is above this many µs")
		f.BoolVarP(&o.Unsorted, "report-unsorted", "U", false, "list every latency sample kept in µs, in the order measured, as perftest's -U (before the size's row, or --output's figure; with --json, samples_us)")
		f.BoolVar(&o.Histogram, "histogram", false, "print a histogram of the latency samples, after the percentiles")
		f.BoolVarP(&o.Sorted, "report-histogram", "H", false, "list every latency sample kept in µs, sorted, but the two largest, as perftest's -H (before the size's row, or --output's figure; with --json, samples_us); --histogram draws one")
		f.Uint32Var(&o.LatencyGap, "latency_gap", 0, "the client pauses this many µs after each answer or completion before its next request, outside its samples (perftest's counts the pause in them; a write_lat or send_lat server's samples, which it cannot tell from the round trip, hold it too); at most 1000000")
		f.BoolVarP(&o.Cycles, "report-cycles", "C", false, "refused: gorperf times with the monotonic clock in µs and has no cycle counts to report")
	} else {
		f.BoolVar(&o.MRPerQP, "mr_per_qp", false, "register one memory region per QP, over its part of the buffer, instead of one for all (each QP's requests then carry its own keys), as perftest's")
		if o.Test.Receives() || o.Test.IsWrite() {
			f.Uint32Var(&o.RecvPostList, "recv_post_list", 1, "the receiving side replaces the receives it used only in lists of this many, one ibv_post_recv a list, as perftest's (send_bw, and write_bw with --write_with_imm; at most -r)")
		}
		f.BoolVar(&o.ReportBoth, "report-both", false, "with -b, also report each direction: what this side sent and what the peer sent, each with its own peak")
		f.BoolVar(&o.Reversed, "reversed", false, "the server sends, writes or reads, and the client is passive (not with -b or --run_infinitely)")
		f.BoolVarP(&o.NoPeak, "noPeak", "N", false, "accepted for perftest compatibility: gorperf measures the peak without per-message timestamps, so it always does where it can (not on a one-way send test's receiving side, which times no windows: 0.00, as perftest's)")
		f.Float64VarP(&o.limits.BW, "limit_bw", "w", 0, "fail (exit status 3) if any size's average bandwidth is below this, in MB/sec (Gbit/sec with --report_gbits)")
		f.Float64VarP(&o.limits.MsgRate, "limit_msgrate", "y", 0, "fail (exit status 3) if any size's message rate is below this many Mpps")
		addRateFlags(f, o)
		f.Uint16Var(&o.Threads, "threads", 1, "run the test as this many connections at once, each with its share of the -q QPs (default: one each), its own CQs and buffer, and its own thread on its own CPU on both sides; the total is all their messages over the longest one's time, the sum of their rates where they run as long (-D) (perftest has no such option: it takes one ib_*_bw per core)")
	}
	if norm != nil {
		f.SetNormalizeFunc(norm)
	}
	refuseRepeats(f)
}

// perftestNames is the tests' normalize function, and serveNames's: it
// takes perftest's long spellings of their flags too, and, as perftest's
// getopt_long, a unique prefix of a flag's name or spelling (--bidir,
// --iter=200, --run_inf): a name fs has exactly wins, and a prefix of
// spellings of more than one flag stays as given, which flagError then
// calls ambiguous. A name that is exactly a flag, or a spelling, of
// another test, or one of perftest's options, stays as given too, for
// flagError to say where it belongs (serve --qp is no --qp-timeout). A
// hidden flag is taken by its exact name alone (serve's --version).
// pflag parses the command line, so a flag's value, an argument after
// --, and the letters of single-dash flags never come here.
func perftestNames(fs *pflag.FlagSet, name string) pflag.NormalizedName {
	n := perftestSpelling(name)
	if fs == nil || hasFlag(fs, n) {
		return pflag.NormalizedName(n)
	}
	if c := prefixFlags(fs, name); len(c) == 1 && !knownFlagName(name) {
		return pflag.NormalizedName(c[0])
	}
	return pflag.NormalizedName(n)
}

// serveNames is serve's normalize function: perftestNames, but a prefix
// of a flag serve has that also begins a flag that only the tests have
// stays as given, which flagError then calls ambiguous: serve --bi is
// not --bind_source_ip, as a test's --bidirectional begins so too.
func serveNames(fs *pflag.FlagSet, name string) pflag.NormalizedName {
	n := perftestNames(fs, name)
	if sp := perftestSpelling(name); string(n) != sp && len(testOnlyPrefixFlags(fs, name)) > 0 {
		return pflag.NormalizedName(sp)
	}
	return n
}

// testFlagNames holds the names of every test's flags, loopback's
// included, each true where a test that is no loopback's has it (not
// --peer-dev). Their flag sets are built without perftestNames, which
// consults this and so would call it again while it is computed.
var testFlagNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, loopback := range []bool{false, true} {
		for t := exchange.WriteBW; t <= exchange.AtomicLat; t++ {
			newTestCmd(nil, t, loopback, nil, nil).Flags().VisitAll(func(fl *pflag.Flag) { names[fl.Name] = names[fl.Name] || !loopback })
		}
	}
	return names
})

// knownFlagName reports whether name is exactly the name of a test's
// flag, or a spelling of one (perftestSpellings), or one of perftest's
// options that gorperf does not offer (perftestOnly).
func knownFlagName(name string) bool {
	_, only := perftestOnly[strings.ReplaceAll(name, "-", "_")]
	_, test := testFlagNames()[perftestSpelling(name)]
	return only || test
}

// testOnlyPrefixFlags returns the names of the flags of the tests (not
// loopback's) that fs lacks whose name, or a spelling of it, begins with
// prefix, each once, sorted.
func testOnlyPrefixFlags(fs *pflag.FlagSet, prefix string) []string {
	has := map[string]bool{}
	fs.VisitAll(func(fl *pflag.Flag) { has[fl.Name] = true })
	only := map[string]bool{}
	for n, client := range testFlagNames() {
		only[n] = client && !has[n]
	}
	return prefixOf(prefix, only)
}

// hasFlag reports whether fs has a flag of exactly the (normalized) name.
// fs.Lookup would call perftestNames again.
func hasFlag(fs *pflag.FlagSet, name string) bool {
	found := false
	fs.VisitAll(func(fl *pflag.Flag) { found = found || fl.Name == name })
	return found
}

// perftestSpellings are the long spellings perftestNames takes for a
// flag beyond its name, perftest's among them: those of perftestSpelling,
// which each test's flags have where they have the flag.
var perftestSpellings = []string{
	"report-gbits", "run-infinitely", "rdma-cm", "inline-size", "post-list", "recv-post-list",
	"atomic-type", "disable-pcie-relaxed", "use-hugepages", "limit-bw", "limit-msgrate",
	"limit-lat", "limit-p99", "cpu-util", "rate-limit", "rate-units", "burst-size",
	"rate-limit-type", "report_counters", "report_unsorted", "report_histogram",
	"report_cycles", "report_both", "report-histogrm", "report_histogrm", "data_validation",
	"data-validation", "pin-cores", "numa-node", "disable-numa", "flow-label", "pkey-index",
	"payload-file-path", "bind-source-ip", "source-ip", "write-with-imm", "send-with-imm",
	"out-json", "out-json-file", "perform-warm-up", "mr-per-qp", "latency-gap", "retry-count",
	"use_srq", "ipv6_addr",
}

// prefixFlags returns the names of the flags of fs, but hidden ones,
// whose name, or a spelling of it (perftestSpellings), begins with
// prefix, each once, sorted.
func prefixFlags(fs *pflag.FlagSet, prefix string) []string {
	visible := map[string]bool{}
	fs.VisitAll(func(fl *pflag.Flag) { visible[fl.Name] = !fl.Hidden })
	return prefixOf(prefix, visible)
}

// prefixOf returns the names that names holds true whose name, or a
// spelling of it (perftestSpellings), begins with prefix, each once,
// sorted; none for an empty prefix.
func prefixOf(prefix string, names map[string]bool) []string {
	if prefix == "" {
		return nil
	}
	var found []string
	add := func(spelling, flag string) {
		if names[flag] && strings.HasPrefix(spelling, prefix) && !slices.Contains(found, flag) {
			found = append(found, flag)
		}
	}
	for n := range names {
		add(n, n)
	}
	for _, sp := range perftestSpellings {
		add(sp, perftestSpelling(sp))
	}
	slices.Sort(found)
	return found
}

// perftestSpelling is the name of gorperf's flag that name, one of
// perftest's long spellings, is, or name.
func perftestSpelling(name string) string {
	switch name {
	case "report-gbits":
		name = "report_gbits"
	case "run-infinitely":
		name = "run_infinitely"
	case "rdma-cm":
		name = "rdma_cm"
	case "inline-size":
		name = "inline_size"
	case "post-list":
		name = "post_list"
	case "recv-post-list":
		name = "recv_post_list"
	case "atomic-type":
		name = "atomic_type"
	case "disable-pcie-relaxed":
		name = "disable_pcie_relaxed"
	case "use-hugepages":
		name = "use_hugepages"
	case "limit-bw", "limit-msgrate", "limit-lat", "limit-p99", "cpu-util",
		"rate-limit", "rate-units", "burst-size", "rate-limit-type":
		name = strings.ReplaceAll(name, "-", "_")
	case "report_counters":
		name = "report-counters"
	case "report_unsorted", "report_histogram", "report_cycles", "report_both":
		name = strings.ReplaceAll(name, "_", "-")
	case "report-histogrm", "report_histogrm": // perftest's spelling too
		name = "report-histogram"
	case "data_validation", "data-validation": // perftest 26.04's name for it
		name = "validate"
	case "pin-cores", "numa-node", "disable-numa", "flow-label", "pkey-index", "payload-file-path", "bind-source-ip", "source-ip", "write-with-imm", "send-with-imm", "out-json", "out-json-file", "perform-warm-up", "mr-per-qp", "latency-gap", "retry-count":
		name = strings.ReplaceAll(name, "-", "_")
	case "use_srq":
		name = "use-srq"
	case "ipv6_addr":
		name = "ipv6-addr"
	}
	return name
}

// addPortFlags adds the device, port and GID this side uses and where its
// control connection is made from or listens, which the tests and serve
// have: -d, -i, -x, the automatic GID's --gid-*, --ipv6 and --source_ip,
// --bind_source_ip and --ipv6-addr.
func addPortFlags(f *pflag.FlagSet, o *testOptions) {
	f.StringVarP(&o.Device, "ib-dev", "d", "", "RDMA device (default: the first one)")
	f.IntVarP(&o.IBPort, "ib-port", "i", 1, "port of the device")
	f.IntVarP(&o.GIDIndex, "gid-index", "x", -1, "GID index (default: chosen automatically, RoCE v2, with the reason printed)")
	f.IntVar(&o.GIDFamily, "gid-family", 0, "automatic GID: 4 or 6 for IPv4 or IPv6 (default: IPv4 preferred)")
	f.BoolVar(&o.IPv6, "ipv6", false, "automatic GID: IPv6, as perftest's --ipv6 (--gid-family 6; beside -x, ignored, as perftest's)")
	f.StringVar(&o.GIDSubnet, "gid-subnet", "", "automatic GID: only addresses in this prefix, e.g. 198.18.0.0/15")
	f.StringVar(&o.GIDNetdev, "gid-netdev", "", "automatic GID: only GIDs of this network device")
	f.StringVar(&o.SourceIP, "source_ip", "", "use the GID of this local address for the QPs, and with -R make the client's rdma_cm connections from it (not with -x or --gid-subnet); gorperf's own flag: perftest's --source_ip is -j, a flag of its raw Ethernet tests; perftest 4.5's help also lists a --source_ip for the connections' source address, which its option parsing never reaches (it takes -j's), and 23.07 renamed --bind_source_ip, which gorperf has too")
	f.StringVar(&o.BindIP, "bind_source_ip", "", "this host's address for the control connection (the client's source, the server's to listen on), as perftest's; unless -x or --gid-subnet picks the GID, the GID of this address, as --source_ip")
	addControlFlags(f, o)
}

// checkPorts checks -p, -i and -x, which the tests and serve share.
func (o *testOptions) checkPorts() error {
	if o.Port < 1 || o.Port > 65535 {
		return usageErrorf("-p: port %d out of range 1-65535", o.Port)
	}
	if o.IBPort < 1 || o.IBPort > 255 {
		return usageErrorf("-i: port %d out of range 1-255", o.IBPort)
	}
	if o.GIDIndex < -1 || o.GIDIndex > 255 {
		return usageErrorf("-x: GID index %d out of range 0-255", o.GIDIndex)
	}
	return nil
}

// addControlFlags adds how the control connection is made, which the tests
// and serve have: --ipv6-addr.
func addControlFlags(f *pflag.FlagSet, o *testOptions) {
	f.BoolVar(&o.IPv6Addr, "ipv6-addr", false, "the control connection over IPv6, as perftest's: a server listens on IPv6 alone, a client connects to an IPv6 address of the server's name (an IPv6 address connects over IPv6 without the flag)")
}

// controlNetwork is the network of the control connection: "tcp6" with
// --ipv6-addr, else "tcp", IPv4 or IPv6 as the address has it.
func (o *testOptions) controlNetwork() string {
	if o.IPv6Addr {
		return "tcp6"
	}
	return "tcp"
}

// addLocalQPFlags adds what each side sets of its own QPs and CQs, which
// the tests and serve have: --pkey_index, -u, --retry_count and -X.
func addLocalQPFlags(f *pflag.FlagSet, o *testOptions) {
	f.Uint16Var(&o.PKeyIndex, "pkey_index", 0, "index of this side's QPs' partition key in its port's P_Key table (not with -R)")
	f.IntVarP(&o.QPTimeout, "qp-timeout", "u", -1, "local ACK timeout of this side's QPs, 4.096 µs × 2^N, 1 to 31 (default: 14, about 67 ms, with -R too, as perftest 24.10 and later)")
	f.IntVar(&o.RetryCount, "retry_count", -1, "how often this side's RC QPs resend unanswered packets before the request fails, 0 to 7 (default 7); with -R the client's is both sides', which rdma_cm's connection request carries")
	f.IntVarP(&o.CompVector, "vector", "X", 0, "completion vector of this side's CQs, the interrupt (and so the CPUs) that -e's events come on: 0 to the device's count less one")
}

// addLocalMemoryFlags adds where this side's buffer lives and what it
// holds, which the tests and serve have: --mmap, --mmap-offset and
// --payload_file_path.
func addLocalMemoryFlags(f *pflag.FlagSet, o *testOptions) {
	f.StringVar(&o.MapFile, "mmap", "", "put this side's buffer in this file's pages, mapped shared (with loopback, the client side's): what the peer writes lands in the file, which must be big enough (not with --use_hugepages)")
	f.Int64Var(&o.MapOffset, "mmap-offset", 0, "with --mmap, where in the file the buffer starts: a multiple of the page size")
	f.StringVar(&o.PayloadFile, "payload_file_path", "", "fill this side's buffer with the payload in this text file, repeated from each message's start: 32-bit words written 0xaaaaaaaa, comma-separated, stored little-endian, as perftest's (not with --validate)")
}

// addGroupFlag adds -M, which the send tests and serve have: the
// multicast group of -g, which a server's QP joins and a client's steps
// (bench's groupOf).
func addGroupFlag(f *pflag.FlagSet, o *testOptions) {
	f.StringVarP(&o.MGID, "MGID", "M", "", "with -g, the multicast group: a server's QP joins it, a client's the address after it (the last byte one higher, wrapping), given or default, where perftest's client joins a given -M itself and steps only its default; an IP multicast address (239.255.0.1 or ff05::114 by default, by the GID's family), a GID, or perftest's 16 bytes separated by colons")
}

// parseGroup reads -M: an IP address or GID (IPv4-mapped for IPv4), or
// perftest's form, 16 byte values separated by colons. Empty is the zero
// Addr, for the default.
func parseGroup(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	if parts := strings.Split(s, ":"); len(parts) == 16 {
		var b [16]byte
		for i, p := range parts {
			v, err := strconv.ParseUint(p, 0, 8)
			if err != nil {
				return netip.Addr{}, usageErrorf("-M %s: byte %d, %q, is not a number from 0 to 255", s, i+1, p)
			}
			b[i] = byte(v)
		}
		return netip.AddrFrom16(b).Unmap(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, usageErrorf("-M: %v", err)
	}
	if a = a.Unmap(); !a.IsMulticast() {
		return netip.Addr{}, usageErrorf("-M %s is not a multicast address", s)
	}
	return a, nil
}

// addRateFlags adds this side's rate limit of its sends (bandwidth tests,
// and serve for the tests where the server sends).
func addRateFlags(f *pflag.FlagSet, o *testOptions) {
	f.Float64Var(&o.RateLimit, "rate_limit", 0, "send at most this fast, in --rate_units, all QPs together (this side's own limit: give it to both sides of -b)")
	f.StringVar(&o.RateUnits, "rate_units", "g", "unit of --rate_limit: M (MiB/s), g (Gbit/s) or p (messages a second)")
	f.IntVar(&o.BurstSize, "burst_size", 0, "with --rate_limit, send in bursts of at most this many messages (default: the TX depth)")
	f.StringVar(&o.RateType, "rate_limit_type", "SW", "how --rate_limit is kept: SW, by the sending loop (perftest's HW and PP need a NIC's rate tables and are not offered)")
}

// addLocalCPUFlags adds which CPUs this side runs on, which the tests and
// serve have: --pin_cores, --numa_node and --disable_numa, as perftest's.
func addLocalCPUFlags(f *pflag.FlagSet, o *testOptions) {
	f.StringVar(&o.PinCores, "pin_cores", "", "run this side on these CPUs, a list such as 0-3,8,12-15 (every thread of the process; not with --numa_node)")
	f.IntVar(&o.NUMANode, "numa_node", -1, "run this side on the CPUs of this NUMA node, where its memory is then allocated too (default: the device's node, as perftest since 26.04, unless the process was started on fewer CPUs than are online)")
	f.BoolVar(&o.DisableNUMA, "disable_numa", false, "leave this side on the CPUs it was started on, not the device's NUMA node's")
}

// addLocalReportFlags adds what each side reports of itself, which both
// the tests and serve have: -W and --cpu_util.
func addLocalReportFlags(f *pflag.FlagSet, o *testOptions) {
	f.StringSliceVarP(&o.Counters, "report-counters", "W", nil, "report how these port counters of this side moved during each size: hw_counters/NAME, counters/NAME or NAME, comma-separated, or all for every one that moved")
	f.BoolVar(&o.CPUUtil, "cpu_util", false, "report CPU use during each size: perftest's CPU_Util[%], the host's user share of all its CPUs (/proc/stat), as the rows' last column and --out_json's CPU_util; and in a table after them this process's own time, user and system µs a message and % of one CPU (with -n too, where perftest's needs -D)")
}

// perftestConnTypes holds the connection types of perftest's -c that
// gorperf does not offer, by upper-case name, and why.
var perftestConnTypes = map[string]string{
	"DC":     "DC (Dynamically Connected) QPs are made with a vendor's direct verbs (mlx5dv or hnsdv), which gorperf does not offer: it keeps to libibverbs' portable verbs and QP types",
	"XRC":    "XRC (eXtended Reliable Connected) QPs are not offered: soft-RoCE, on which gorperf is tested, has no XRC, so they could not be shown to work (in the send tests --use-srq shares one receive queue among a side's QPs)",
	"SRD":    "SRD (EFA's Scalable Reliable Datagram) QPs are made with EFA's direct verbs (efadv), which gorperf does not offer: it keeps to libibverbs' portable verbs and QP types",
	"RAWETH": "RawEth is the connection type of its raw Ethernet tests (ib_raw_ethernet_*), which gorperf does not have: it measures RDMA over QPs",
}

// spec turns the flags into the test the client asks for, rejecting
// invalid values with a usage error.
// minIters is the fewest iterations -n takes: perftest's MIN_ITER.
const minIters = 5

func (o *testOptions) spec() (exchange.TestSpec, error) {
	if why, ok := perftestConnTypes[strings.ToUpper(o.Connection)]; ok {
		return exchange.TestSpec{}, usageErrorf("-c %s: perftest's %s; gorperf's are RC, UC and UD, as the test allows", o.Connection, why)
	}
	conn, err := ibverbs.ParseQPType(strings.ToUpper(o.Connection))
	if err != nil {
		return exchange.TestSpec{}, usageErrorf("-c: %v", err)
	}
	if o.Iters < minIters {
		// Fewer give a latency test's server no sample (one a round
		// trip after its first answer) and its table nothing to sort.
		return exchange.TestSpec{}, usageErrorf("-n %d: at least %d iterations, as perftest's", o.Iters, minIters)
	}
	if o.durationSet && o.Duration == 0 {
		// perftest refuses it too; 0 is what gorperf reads as no -D,
		// and it ran -n iterations, as if -D were left out.
		without := "a run of -n iterations"
		if o.Infinite {
			without = "a report every 5 s"
		}
		return exchange.TestSpec{}, usageErrorf("-D 0: want a duration of 1 second or more, as perftest's (leave out -D for %s)", without)
	}
	if o.cqModSet && (o.cqModGiven < minCQMod || o.cqModGiven > maxCQMod) {
		// perftest's range; gorperf ran 0 as 1, and said nothing.
		return exchange.TestSpec{}, usageErrorf("-Q %d: CQ moderation is %d to %d completions, as perftest's", o.cqModGiven, minCQMod, maxCQMod)
	}
	if o.PostList == 0 {
		return exchange.TestSpec{}, usageErrorf("-l 0: want a post list of 1 request or more")
	}
	s := exchange.TestSpec{
		Test: o.Test, ConnType: conn, Size: o.Size, AllSizes: o.All, Iterations: o.Iters,
		Duration: o.Duration, Margin: o.Margin, NumQPs: o.QPs, Bidirectional: o.Bidir, TXDepth: o.TXDepth,
		RXDepth: o.RXDepth, CQModeration: o.CQMod, PostList: o.PostList, RecvPostList: o.RecvPostList, Inline: o.Inline, InlineDefault: o.inlineDefault,
		RdmaCM: o.RdmaCM, TrafficClass: o.TClass, SL: o.SL, RunInfinitely: o.Infinite, OutReads: o.OutReads,
		ValidateData: o.Validate,
		// write_lat never registers with relaxed ordering (see
		// TestSpec.RelaxedOrdering); said on the wire too, so that a
		// server of the same protocol from before that rule agrees.
		OldPostSend: o.OldPostSend, NoRelaxedOrdering: o.NoRelaxed || o.Test == exchange.WriteLat, Events: o.Events,
		HugePages: o.HugePages, SRQ: o.SRQ, Reversed: o.Reversed, Immediate: o.Immediate, WarmUp: o.WarmUp, MRPerQP: o.MRPerQP,
		Multicast: o.Mcg,
	}
	if o.Threads > 1 {
		s.Threads = o.Threads
	}
	if o.Duration > 0 {
		s.Iterations = 0
	}
	if err := o.path(&s); err != nil {
		return s, err
	}
	if o.MTU != 0 {
		m, err := ibverbs.MTUFromBytes(o.MTU)
		if err != nil {
			return s, usageErrorf("-m: %v", err)
		}
		s.MTU = m
	}
	if o.Test.IsAtomic() {
		a, err := exchange.ParseAtomicOp(o.Atomic)
		if err != nil {
			return s, usageErrorf("-A: %v", err)
		}
		s.Atomic = a
	}
	if err := o.checkPorts(); err != nil {
		return s, err
	}
	if err := checkPeerTimeout(o.Idle); err != nil {
		return s, err
	}
	if o.JSON && o.CSV {
		return s, usageErrorf("--json and --csv exclude each other")
	}
	if o.Cycles {
		return s, usageErrorf("-C: gorperf times with the monotonic clock and reports µs; it has no cycle counts (perftest's -C reports its TSC's)")
	}
	if o.LatencyGap > 1e6 {
		return s, usageErrorf("--latency_gap %d: at most 1000000 µs (1 s)", o.LatencyGap)
	}
	if (o.Unsorted || o.Sorted) && o.CSV {
		return s, usageErrorf("-U and -H list the samples in text or, with --json, as samples_us; CSV has one row a size")
	}
	switch {
	case o.ReportBoth && !o.Bidir && o.role() != "server":
		// A server's test is its client's, -b or not: where it is
		// one-way, finish says the server's --report-both adds
		// nothing.
		return s, usageErrorf("--report-both reports the two directions of a bidirectional test: add -b")
	case o.ReportBoth && (o.CSV || o.Output != ""):
		return s, usageErrorf("--report-both adds tables to the text (with --json, each size's local and remote); CSV and --output have one figure a size")
	}
	if o.Output != "" {
		if o.JSON || o.CSV {
			return s, usageErrorf("--output excludes --json and --csv")
		}
		v, err := report.ParseValue(o.Output)
		if err != nil {
			return s, usageErrorf("--output: %v", err)
		}
		if v.Latency() != o.Test.IsLatency() {
			want := "bandwidth or message_rate"
			if o.Test.IsLatency() {
				want = "latency"
			}
			return s, usageErrorf("--output %s: %s reports %s", o.Output, o.Test, want)
		}
		o.value = v
	}
	o.limits.Gbits = o.Gbits
	for _, v := range []float64{o.limits.BW, o.limits.MsgRate, o.limits.Typical, o.limits.P99} {
		if !(v >= 0 && v <= math.MaxFloat64) {
			return s, usageErrorf("a limit (-w, -y, --limit_lat, --limit_p99) must be 0 (none) or more, got %g", v)
		}
	}
	if o.limits.Set() && o.Infinite {
		return s, usageErrorf("limits (-w, -y, --limit_lat, --limit_p99) need an end result; --run_infinitely has none")
	}
	if o.RdmaCM && conn == ibverbs.QPTypeUC {
		// A mistake of the command line, as -c DC is, whatever the
		// device: exit status 2.
		return s, usageErrorf("-R makes RC or UD connections; -c UC through rdma_cm is not supported: leave out -R, or give -c RC")
	}
	if o.Infinite && o.Duration == 0 {
		s.Duration = 5 // perftest reports every 5 seconds
	}
	if o.Threads > 1 && o.QPs < o.Threads {
		return s, usageErrorf("--threads %d: each thread needs a QP of its own, and -q gives %d (leave out -q for one each)", o.Threads, o.QPs)
	}
	if o.Threads == 0 && !o.Test.IsLatency() { // the latency tests have no --threads
		return s, usageErrorf("--threads 0: want 1 or more")
	}
	if o.Threads > exchange.MaxThreads {
		return s, usageErrorf("--threads %d: at most %d", o.Threads, exchange.MaxThreads)
	}
	if o.Threads > 1 && o.Mcg {
		return s, usageErrorf("--threads: multicast (-g) runs on one QP, and each thread needs its own")
	}
	if last := o.Port + int(o.Threads) - 1; o.RdmaCM && o.Threads > 1 && last > 65535 {
		return s, usageErrorf("-R --threads %d: each thread's rdma_cm connection listens on a port of its own, -p to -p+%d, and -p %d puts the last at %d, past 65535: give -p %d or less",
			o.Threads, o.Threads-1, o.Port, last, 65535-int(o.Threads)+1)
	}
	if o.deepRX {
		s.RXDepthDefault = true
		fitRXDepth(&s)
	}
	if err := s.Validate(); err != nil {
		return s, &usageError{err}
	}
	return s, nil
}

// fitRXDepth lowers the RX depth that defaults raised for UD or UC,
// perftest's -n up to 16000, to the deepest that gorperf serve accepts
// with its default limits and that gives each side a receive CQ of at
// most exchange.MaxRecvCQ entries, and no lower than perftest's 512
// (TestSpec.FitRXDepth, for the largest connection's share of the QPs):
// with perftest's depth, what ran at 512 would be refused (send_bw -c UC
// -a: 8 MiB × 5000 is over --max-memory) or fail on soft-RoCE (-c UD -q
// 8: a CQ of 40000 entries). A server of lower limits lowers its own
// further, as RXDepthDefault lets it.
func fitRXDepth(s *exchange.TestSpec) {
	conn := *s
	threads := max(s.Threads, 1)
	conn.NumQPs = (s.NumQPs + threads - 1) / threads
	conn.FitRXDepth(exchange.DefaultLimits())
	s.RXDepth = conn.RXDepth
}

// maxPeerTimeout is the longest --peer-timeout, in seconds: a day. Far
// beyond it the seconds overflow a time.Duration and the timeout would
// go negative.
const maxPeerTimeout = 24 * 60 * 60

// checkPeerTimeout checks --peer-timeout's seconds.
func checkPeerTimeout(secs int) error {
	if secs < 1 || secs > maxPeerTimeout {
		return usageErrorf("--peer-timeout: want 1 to %d seconds (a day), got %d", maxPeerTimeout, secs)
	}
	return nil
}

// path puts --flow_label into s, and refuses it and --pkey_index where
// rdma_cm sets them. A label is a number of up to 20 bits, decimal or,
// with 0x, hexadecimal, as perftest's strtol takes it.
func (o *testOptions) path(s *exchange.TestSpec) error {
	for _, f := range o.FlowLabels {
		fl, err := strconv.ParseUint(strings.TrimSpace(f), 0, 32)
		if err != nil || fl > exchange.MaxFlowLabel {
			return usageErrorf("--flow_label: %q is not a flow label, a number from 0 to %#x", f, exchange.MaxFlowLabel)
		}
		s.FlowLabels = append(s.FlowLabels, uint32(fl))
	}
	if o.RdmaCM && (o.PKeyIndex != 0 || (s.ConnType != ibverbs.QPTypeUD && len(s.FlowLabels) > 0)) {
		return usageErrorf("-R: rdma_cm resolves the path of RC connections itself and picks the P_Key of every connection: --flow_label applies without -R or with UD, --pkey_index only without -R")
	}
	return nil
}

// gidRule builds the automatic GID rule from the --gid-* flags. -x names
// the GID itself, so the flags that choose one are refused beside it, and
// so is a family that --source_ip's address (or --bind_source_ip's, which
// the GID follows) is not of, or a --gid-netdev other than its zone.
func (o *testOptions) gidRule() (ibverbs.GIDRule, error) {
	if o.GIDIndex >= 0 {
		var auto []string
		for _, f := range []struct {
			name string
			set  bool
		}{{"--gid-family", o.GIDFamily != 0}, {"--gid-subnet", o.GIDSubnet != ""}, {"--gid-netdev", o.GIDNetdev != ""}} {
			if f.set {
				auto = append(auto, f.name)
			}
		}
		if len(auto) > 0 {
			return ibverbs.GIDRule{}, usageErrorf("-x %d names the GID: leave it out, or leave out %s (for the automatic choice)", o.GIDIndex, joinAnd(auto))
		}
	}
	if o.IPv6 && o.GIDIndex < 0 {
		// Beside -x, --ipv6 changes nothing, as perftest's, whose
		// scripts may give both.
		if o.GIDFamily == 4 {
			return ibverbs.GIDRule{}, usageErrorf("--ipv6 and --gid-family 4 ask for different families")
		}
		o.GIDFamily = 6
	}
	r := ibverbs.GIDRule{Family: o.GIDFamily, Netdev: o.GIDNetdev}
	if o.GIDFamily != 0 && o.GIDFamily != 4 && o.GIDFamily != 6 {
		return r, usageErrorf("--gid-family: want 4 or 6, got %d", o.GIDFamily)
	}
	flag := "--source_ip"
	if o.BindIP != "" {
		if _, err := netip.ParseAddr(o.BindIP); err != nil {
			return r, usageErrorf("--bind_source_ip: %v", err)
		}
		switch {
		case o.SourceIP != "" && o.SourceIP != o.BindIP:
			return r, usageErrorf("--source_ip %s and --bind_source_ip %s: the GID follows --bind_source_ip unless -x or --gid-subnet picks it; give one", o.SourceIP, o.BindIP)
		case o.GIDIndex < 0 && o.GIDSubnet == "":
			o.SourceIP, flag = o.BindIP, "--bind_source_ip"
		}
	}
	if o.SourceIP != "" {
		if o.GIDSubnet != "" || o.GIDIndex >= 0 {
			return r, usageErrorf("--source_ip picks the GID of an address: leave out -x and --gid-subnet")
		}
		a, err := netip.ParseAddr(o.SourceIP)
		if err != nil {
			return r, usageErrorf("--source_ip: %v", err)
		}
		// The GID of exactly this address, a link-local one too, on the
		// netdev of its zone if it has one (fe80::1%eth0).
		r.Addr = a.Unmap()
		fam := ipFamily(r.Addr)
		famFlag := fmt.Sprintf("--gid-family %d", r.Family)
		if o.IPv6 {
			famFlag = "--ipv6"
		}
		or := "give one"
		if flag == "--bind_source_ip" {
			or = "the GID follows --bind_source_ip unless -x or --gid-subnet picks it"
		}
		switch z := r.Addr.Zone(); {
		case r.Family != 0 && r.Family != fam:
			return r, usageErrorf("%s %s is an IPv%d address, and %s asks for an IPv%d GID: %s", flag, o.SourceIP, fam, famFlag, r.Family, or)
		case z != "" && r.Netdev != "" && z != r.Netdev && !isNumber(z):
			return r, usageErrorf("%s %s is an address of %s, and --gid-netdev asks for a GID of %s: %s", flag, o.SourceIP, z, r.Netdev, or)
		}
		r.Family = fam
	}
	if o.GIDSubnet != "" {
		p, err := netip.ParsePrefix(o.GIDSubnet)
		if err != nil {
			return r, usageErrorf("--gid-subnet: %v", err)
		}
		// 198.18.0.1/15 is the subnet 198.18.0.0/15, as the header and
		// the GID's explanation say it.
		r.Prefix = p.Masked()
	}
	return r, nil
}

// ipFamily is a's IP version, 4 or 6, as --gid-family names it.
func ipFamily(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// isNumber reports whether s is a decimal number, as an interface index
// in an address's zone is (fe80::1%2).
func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// serverAddr joins the host argument and -p into a dialable address.
func serverAddr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
