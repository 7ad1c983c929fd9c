//go:build linux && cgo

package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/affinity"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// newCmdTests returns the eight perftest-style commands: write-bw,
// write-lat, read-bw, read-lat, send-bw, send-lat, atomic-bw, atomic-lat.
func newCmdTests(f *Factory) []*cobra.Command {
	var cmds []*cobra.Command
	for t := exchange.WriteBW; t <= exchange.AtomicLat; t++ {
		cmds = append(cmds, newCmdTest(f, t, false, nil))
	}
	return cmds
}

// newCmdLoopback is `gorperf loopback <test>`: server and client in one
// process, on one device or two.
func newCmdLoopback(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loopback <test> [flags]",
		Short: "Run a test with server and client in this process, for a quick check of a device",
		Long: `Run a test with its server and client in this process: on one device, or from
--peer-dev to -d, over a control connection on 127.0.0.1 (::1 with --ipv6-addr).`,
		Example: "  gorperf loopback write-bw -d mlx5_0 -s 4096\n  gorperf loopback send-lat -d rxe1 --peer-dev rxe0",
		// Without these, cobra prints the help for a test it does not
		// know, and exits 0. With no test, the help, as gorperf's own.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for t := exchange.WriteBW; t <= exchange.AtomicLat; t++ {
		cmd.AddCommand(newCmdTest(f, t, true, nil))
	}
	return cmd
}

func testCmdName(t exchange.Test) string { return strings.ReplaceAll(t.String(), "_", "-") }

// newCmdTest wires one test's command; runF, if not nil, replaces the
// work (testRun) so that tests can check how flags are read.
func newCmdTest(f *Factory, t exchange.Test, loopback bool, runF func(*testOptions) error) *cobra.Command {
	return newTestCmd(f, t, loopback, runF, perftestNames)
}

// newTestCmd is newCmdTest with norm, if not nil, its flags' normalize
// function: testFlagNames lists the flags of tests built without one,
// which perftestNames, which consults it, would recurse into.
func newTestCmd(f *Factory, t exchange.Test, loopback bool, runF func(*testOptions) error, norm func(*pflag.FlagSet, string) pflag.NormalizedName) *cobra.Command {
	o := &testOptions{Test: t, Loopback: loopback}
	name := testCmdName(t)
	cmd := &cobra.Command{
		Use: name + " [flags] [server]",
		// perftest's names, so that a command line carried over from it
		// runs: write_bw and ib_write_bw for write-bw.
		Aliases: []string{t.String(), "ib_" + t.String()},
		Short:   fmt.Sprintf("%s (perftest's ib_%s)", bench.Title(t), t),
		Long: fmt.Sprintf(`%s, as perftest's ib_%s measures it.

Without a server address gorperf waits for a client (-p, default 18515) and runs
the test the client asks for; with one it is the client. The test and its
parameters (-s, -n, -D, -q, -c, -b, -e, ...) come from the client, and a server
given any says which the client's test has otherwise. The server's own flags
still set its side: its device, port and GID (-d, -i, -x, --gid-*, --source_ip),
where it listens (-p, --bind_source_ip, --ipv6-addr), its QPs
(-u, --retry_count, -X, --pkey_index), buffer (--mmap, --payload_file_path) and
CPUs (--pin_cores, --numa_node), --rate_limit where it sends, --peer-timeout,
and what it reports (--json, --csv, --output, --report_gbits, -W, --cpu_util,
and the limits, judged on its own figures). Its --output and limits are for its
command's kind of test: a client's test of the other kind (latency or
bandwidth) fails them. A server for one test takes any test its client's
command takes; gorperf serve has limits. Each side checks its device, port and
GID before it listens or connects (a client its message sizes against its
device too), and a client started before its server keeps trying for 3 s.`, bench.Title(t), t),
		Example: fmt.Sprintf("  gorperf %s -d mlx5_0                # server\n  gorperf %s -d mlx5_0 -s 4096 198.18.0.1   # client", name, name),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("%s takes at most one argument, the server, got %q", cmd.CommandPath(), args)
			}
			if len(args) == 1 && strings.TrimSpace(args[0]) == "" {
				// "$SERVER" unset: without this check a server, waiting
				// for a client that is never coming.
				return usageErrorf("%s: the server argument is empty (an unset variable?): give the server's address, or no argument to be the server", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Version {
				fmt.Fprintf(cmd.OutOrStdout(), "gorperf %s\n", Version)
				return nil
			}
			if len(args) == 1 {
				o.Host = args[0]
			}
			o.defaults(cmd)
			if runF != nil {
				return runF(o)
			}
			return testRun(cmd.Context(), f, o, cmd.Flags())
		},
	}
	if loopback {
		cmd.Use = name + " [flags]"
		cmd.Args = noArgs
		cmd.Long = fmt.Sprintf("%s with server and client in this process.", bench.Title(t))
		cmd.Example = fmt.Sprintf("  gorperf loopback %s -d mlx5_0", name)
	}
	addTestFlags(cmd, o, norm)
	if loopback {
		cmd.Flags().StringVar(&o.PeerDev, "peer-dev", "", "device of the server side (default: -d); on another device the server side chooses its GID automatically: -x, --source_ip, --bind_source_ip, --gid-subnet and --gid-netdev are the client side's, --gid-family and --ipv6 both sides'")
	}
	return cmd
}

func (o *testOptions) local() (bench.Local, error) {
	client := o.Host != "" || o.Loopback
	switch {
	case o.QPTimeout == 0:
		return bench.Local{}, usageErrorf("-u 0 (never time out) is not offered: a lost acknowledgement would stall the test for ever; the most is 31 (about 2.4 hours)")
	case o.QPTimeout < -1 || o.QPTimeout > 31:
		return bench.Local{}, usageErrorf("-u: %d out of range 1-31", o.QPTimeout)
	case o.RetryCount < -1 || o.RetryCount > 7:
		return bench.Local{}, usageErrorf("--retry_count %d: want 0 to 7", o.RetryCount)
	case o.CompVector < 0:
		return bench.Local{}, usageErrorf("-X: completion vector %d: want 0 or more", o.CompVector)
	case o.CompVector > 0 && client && !o.Events:
		return bench.Local{}, usageErrorf("-X picks the interrupt of completion events: add -e")
	case o.MapOffset != 0 && o.MapFile == "":
		return bench.Local{}, usageErrorf("--mmap-offset is where the buffer starts in --mmap's file: add --mmap")
	case o.MapOffset < 0 || o.MapOffset%int64(os.Getpagesize()) != 0:
		return bench.Local{}, usageErrorf("--mmap-offset %d: want 0 or more, a multiple of the page size (%d)", o.MapOffset, os.Getpagesize())
	case o.MapFile != "" && o.HugePages:
		return bench.Local{}, usageErrorf("--mmap puts the buffer in a file's pages, --use_hugepages on anonymous huge pages: choose one")
	case o.PayloadFile != "" && o.Validate:
		return bench.Local{}, usageErrorf("--validate sends gorperf's own pattern to check it: leave out --payload_file_path")
	case o.IPv6Addr && isIPv4(o.Host):
		return bench.Local{}, usageErrorf("--ipv6-addr asks for the control connection over IPv6, and the server %s is an IPv4 address", o.Host)
	case o.PinCores != "" && o.NUMANode >= 0:
		return bench.Local{}, usageErrorf("--pin_cores and --numa_node both choose the CPUs: give one")
	case o.NUMANode >= 0 && o.DisableNUMA:
		return bench.Local{}, usageErrorf("--numa_node asks for a node's CPUs and --disable_numa for none: choose one")
	case o.NUMANode < -1:
		return bench.Local{}, usageErrorf("--numa_node %d: want a node number, 0 or more", o.NUMANode)
	case o.IPv6Addr && isIPv4(o.BindIP):
		return bench.Local{}, usageErrorf("--ipv6-addr asks for the control connection over IPv6, and --bind_source_ip %s is an IPv4 address", o.BindIP)
	}
	for i, c := range o.Counters {
		o.Counters[i] = strings.TrimSpace(c) // -W "a, b"
	}
	o.cpus = nil
	if o.PinCores != "" {
		var err error
		if o.cpus, err = affinity.ParseList(o.PinCores); err != nil {
			return bench.Local{}, usageErrorf("--pin_cores: %v", err)
		}
	}
	var bind netip.Addr
	if o.BindIP != "" && !o.Loopback {
		bind, _ = netip.ParseAddr(o.BindIP) // checked by gidRule
	}
	var payload []byte
	if o.PayloadFile != "" {
		// perftest keeps -s bytes of it; a server, the largest size a
		// client may ask of -a.
		most := int(exchange.AllSizesMax)
		if client && !o.All {
			most = int(o.Size)
		}
		var err error
		if payload, err = readPayload(o.PayloadFile, max(most, 1)); err != nil {
			return bench.Local{}, err
		}
	}
	rule, err := o.gidRule()
	if err != nil {
		return bench.Local{}, err
	}
	rate, err := o.rate()
	if err != nil {
		return bench.Local{}, err
	}
	group, err := parseGroup(o.MGID)
	if err != nil {
		return bench.Local{}, err
	}
	return bench.Local{Device: o.Device, Port: o.IBPort, GIDIndex: o.GIDIndex, GIDRule: rule,
		IdleTimeout: time.Duration(o.Idle) * time.Second, CMPort: o.Port, QPTimeout: uint8(max(o.QPTimeout, 0)),
		Counters: o.Counters, CPUUtil: o.CPUUtil, Rate: rate, PKeyIndex: o.PKeyIndex,
		LatencyGap: time.Duration(o.LatencyGap) * time.Microsecond, RetryCount: retryCount(o.RetryCount),
		CompVector: o.CompVector, Group: group, MapFile: o.MapFile, MapOffset: o.MapOffset, Payload: payload,
		BindAddr: bind, Network: o.controlNetwork(), PerftestInline: true}, nil
}

// place moves this side to its CPUs (--pin_cores, --numa_node, else the
// device's NUMA node unless --disable_numa) before its buffers are
// allocated, so that their pages are the node's, and keeps what it did
// for the header and the JSON. A CPU or node there is not is a usage
// error.
func (o *testOptions) place() error {
	dev, node := o.Device, -1
	if infos, err := ibverbs.Devices(); err == nil {
		// A device that is not there fails the run soon, with the list.
		for _, d := range infos {
			if dev == "" || d.Name == dev {
				dev, node = d.Name, d.NUMANode
				break
			}
		}
	}
	c, err := affinity.Apply(affinity.Plan{CPUs: o.cpus, Node: o.NUMANode, Off: o.DisableNUMA, DeviceNode: node, Device: dev})
	if err != nil {
		if len(o.cpus) > 0 || o.NUMANode >= 0 {
			return usageErrorf("%v", err)
		}
		return err
	}
	o.placed = c
	return nil
}

// threadCPUs are the CPUs a test's threads take in turn: those this side
// was placed on, or, where placement could not say, those it may run on;
// a core each before any core's second hardware thread.
func (o *testOptions) threadCPUs() []int {
	cpus := o.placed.CPUs
	if len(cpus) == 0 {
		cpus, _ = affinity.Current() // none: the threads are not pinned
	}
	return affinity.SpreadCores(cpus)
}

// placeHeader adds where this side runs to its header.
func (o *testOptions) placeHeader(h *report.Header) {
	h.CPUs, h.CPUReason = affinity.FormatList(o.placed.CPUs), o.placed.Reason
}

// retryCount turns --retry_count (-1: not given) into Local.RetryCount,
// whose 0 is the default and negative none.
func retryCount(n int) int {
	switch n {
	case -1:
		return 0
	case 0:
		return -1
	}
	return n
}

// rate returns the rate limit of the flags: what this side sends at most.
func (o *testOptions) rate() (bench.RateLimit, error) {
	var r bench.RateLimit
	if o.Test.IsLatency() {
		return r, nil
	}
	switch {
	case o.RateLimit < 0 || math.IsNaN(o.RateLimit) || math.IsInf(o.RateLimit, 0):
		return r, usageErrorf("--rate_limit: want a rate above 0, got %v", o.RateLimit)
	case o.BurstSize < 0:
		return r, usageErrorf("--burst_size: want 1 or more, got %d", o.BurstSize)
	case o.RateLimit == 0 && o.BurstSize > 0:
		return r, usageErrorf("--burst_size needs --rate_limit")
	case o.RateType != "" && !strings.EqualFold(o.RateType, "SW"):
		return r, usageErrorf("--rate_limit_type %s: gorperf limits the rate in its sending loop (SW) only", o.RateType)
	case o.RateLimit == 0: // serve, which has none of these flags, too
		return r, nil
	}
	u, err := bench.ParseRateUnit(o.RateUnits)
	if err != nil {
		return r, usageErrorf("--rate_units: %v", err)
	}
	return bench.RateLimit{Rate: o.RateLimit, Unit: u, Burst: o.BurstSize}, nil
}

// testRun runs the test of o, whose command line's flags are fs.
func testRun(ctx context.Context, f *Factory, o *testOptions, fs *pflag.FlagSet) error {
	bench.Tool = "gorperf " + Version
	spec, err := o.spec()
	if err != nil {
		return o.fail(f, err)
	}
	l, err := o.local()
	if err != nil {
		return o.fail(f, err)
	}
	if err := o.place(); err != nil {
		return o.fail(f, err)
	}
	// A server learns the threads from its client.
	l.ThreadCPUs = o.threadCPUs()
	if n := len(l.ThreadCPUs); spec.Threads > 1 && n > 0 && int(spec.Threads) > n && o.text() {
		cpus := "CPUs " + affinity.FormatList(l.ThreadCPUs)
		if n == 1 {
			cpus = "CPU " + affinity.FormatList(l.ThreadCPUs)
		}
		fmt.Fprintf(f.IO.ErrOut, "gorperf: %d threads on %s: some share a CPU, and the sum says less than it could\n", spec.Threads, cpus)
	}
	// UD's default size may be over the path MTU that the server's side
	// makes smaller: both sides then send the path MTU (bench's sizes).
	// The first thread's note of the size comes once that is known, with
	// the size sent: fitNote, FitMTU's, where the server's side takes it
	// no lower. Both callbacks run on that thread's goroutine.
	spec.SizeDefault = o.udSize
	var fitNote string
	if o.udSize && (o.Host != "" || o.Loopback) {
		l.SizeFitted = func(s exchange.TestSpec, size int) {
			if s.Thread != 0 || !o.text() {
				return
			}
			note := fitNote
			if uint32(size) < s.Size && !s.AllSizes {
				note = fmt.Sprintf("gorperf: a UD message is at most the path MTU, %d bytes, the least the two sides offer: sending %d bytes, not %d (-s to choose)\n", size, size, s.Size)
			}
			fmt.Fprint(f.IO.ErrOut, note)
		}
	}
	if (o.udSize || spec.MTU != 0) && (o.Host != "" || o.Loopback) {
		// Once the control connection is up: where no flag names the
		// GID, it picks the GID, whose netdev may carry less than the
		// rule's (a VLAN's). Each thread's spec is fitted; the first
		// says so.
		l.FitMTU = func(s *exchange.TestSpec, m bench.MTULimit) {
			w := f.IO.ErrOut
			if s.Thread != 0 {
				w = io.Discard
			}
			if note := o.fitMTU(w, s, m); s.Thread == 0 {
				fitNote = note
			}
		}
	}
	if err := o.openJSONFile(); err != nil {
		return o.fail(f, err)
	}
	defer o.closeJSONFile()
	out := f.IO.Out
	text := o.text()
	// Whether the run reports intervals: the client's --run_infinitely,
	// which a server for one test learns from the client's spec (Admit,
	// before the run), not from its own flag.
	server := o.Host == "" && !o.Loopback
	// The column line of an infinite run's intervals comes with the first
	// of them: a side that reports none (the passive side of a write or
	// read) prints the table once, at the end, and not its column line
	// twice. Interval is called from one goroutine at a time, so
	// o.intervals needs no lock: loopback's server side reports nothing
	// (serverSide keeps its Interval only with --reversed, which
	// excludes -b and --run_infinitely), and the threads of --threads
	// report one at a time (bench serialises them).
	var columns sync.Once
	if o.Infinite || server {
		// bench calls it only in an infinite run.
		l.Interval = func(elapsed time.Duration, b stats.Bandwidth) {
			if text {
				columns.Do(func() { report.WriteBWHeader(out, o.Gbits) })
				report.WriteIntervalRow(out, b, o.Gbits)
			} else if o.value != report.NoValue {
				report.WriteBWValue(out, o.value, b, o.Gbits)
			}
			if o.JSON || o.CSV || o.jsonFile != nil {
				// One JSON document at the end holds every interval.
				o.intervals = append(o.intervals, report.IntervalFromBandwidth(elapsed, b))
			}
		}
	}
	// Each size's row as the size ends, as perftest prints them, of the
	// text table or the CSV; a server learns the test from its client.
	if o.rows = o.newRowStream(out); o.rows != nil {
		if !server {
			o.rows.start(spec)
		}
		if text && isTerminal(f.IO.ErrOut) {
			l.Progress = progressLine(f.IO.ErrOut)
			o.rows.clear = f.IO.ErrOut
		}
		l.SizeDone = o.rows.size
	}
	if o.Host != "" && text {
		l.Queued = queuedNotice(f.IO.ErrOut)
	}
	onHeader := func(h report.Header) {
		if text {
			// perftest's order in an infinite run: its header block,
			// then the column line, then a row an interval (Interval);
			// nothing of the table where the run fails before its
			// header.
			o.placeHeader(&h)
			report.WriteHeader(out, h)
		}
	}
	if o.Loopback {
		return loopbackRun(ctx, f, o, spec, l, onHeader)
	}
	if o.Host == "" {
		// Before saying it waits: a wrong -d, -i or -x fails now.
		if err := bench.Check(l); err != nil {
			return o.fail(f, err)
		}
		// A client's test of the other kind, which this server's
		// --output or limits cannot judge, is refused before it runs,
		// and the client told why.
		var asked struct {
			sync.Mutex
			spec exchange.TestSpec
		}
		if text {
			// Once the test's session is open: its GID may be the
			// control connection's, not the rule's.
			l.ServerMTU = func(s exchange.TestSpec, m bench.MTULimit) {
				if s.Thread == 0 {
					mtuNote(f.IO.ErrOut, s, m)
				}
			}
		}
		l.Admit = func(s exchange.TestSpec) error {
			if o.rows != nil {
				o.rows.start(s)
			}
			if err := checkBuffers(s, physMemory()); err != nil {
				return err
			}
			asked.Lock()
			asked.spec = s
			asked.Unlock()
			return o.otherTest(s.Test)
		}
		ln, err := net.Listen(o.controlNetwork(), net.JoinHostPort(o.BindIP, strconv.Itoa(o.Port)))
		if err != nil {
			return o.fail(f, fmt.Errorf("listening for a client: %w", err))
		}
		defer ln.Close()
		if text {
			fmt.Fprintf(f.IO.ErrOut, "gorperf: waiting for a client on port %d\n", o.Port)
		}
		var res *bench.Result
		var runErr error
		// The header comes once the test's connections are all in (each
		// thread's, with --threads) and its QPs connected (-R's too):
		// this server takes no other client, so it stops listening, as
		// perftest closes its socket after its accept, and a later
		// client's connection is refused. Before the header, Serve
		// still greets connections: the threads' own, a real client
		// after one that was no test, and others, which it tells at
		// once that it runs one test.
		srvHeader := func(h report.Header) {
			ln.Close()
			// The test flags given to this server that the client's
			// test overrides: said, not silently dropped.
			asked.Lock()
			c := asked.spec
			asked.Unlock()
			if c.Threads > 1 {
				c.NumQPs = uint16(h.NumQPs) // a connection's spec has its share
			}
			for _, line := range unusedFlags(fs, o.typed, spec, c) {
				fmt.Fprintf(f.IO.ErrOut, "gorperf: %s\n", line)
			}
			onHeader(h)
		}
		err = bench.Serve(ctx, ln, l, oneTestLimits(), true, srvHeader, func(r *bench.Result, err error) {
			if r == nil && bench.KeepsWaiting(err) {
				// Not a client's test, so not this run's outcome.
				if ctx.Err() == nil {
					fmt.Fprintf(f.IO.ErrOut, "gorperf: %v; still waiting\n", err)
				}
				return
			}
			res, runErr = r, err
		})
		if err == nil {
			err = runErr
		}
		// Ctrl-C before a client asked for a test, or while a test of
		// several threads gathered its connections.
		err = stoppedEarly(ctx, res, err, "interrupted before a client asked for a test")
		o.stopped = stopWords(ctx)
		return o.finish(f, "server", res, err)
	}
	res, err := bench.Client(ctx, serverAddr(o.Host, o.Port), spec, l, onHeader)
	// Ctrl-C while the client dials (a server not up yet), waits for a
	// busy server's hello, or connects the QPs (-R).
	err = stoppedEarly(ctx, res, err, "")
	o.stopped = stopWords(ctx)
	return o.finish(f, "client", res, err)
}

// clientFlags are the test flags that a server for one test takes from
// its client's test, not from its own command line: each by its names
// (--tclass and --tos set one value) and its value in a test, "" for
// none (a switch off, a number not given), "on" for a switch on, which
// says whether the server's flag would have changed the test; has, if
// set, says what a client's test has instead where "-x VALUE" or "no -x"
// would not be the truth ("" where they would): a test of all sizes has
// no -s, a timed one no -n. The server knows only its client's test, not
// which of its values the client gave and which are defaults or follow
// from others (-t from -n, -Q from -l, -f from -D), so it says what the
// test has, not what the client asked for.
var clientFlags = []struct {
	names []string
	value func(exchange.TestSpec) string
	has   func(exchange.TestSpec) string
}{
	{[]string{"size"}, func(s exchange.TestSpec) string {
		if s.AllSizes {
			return ""
		}
		return num(uint64(s.Size))
	}, func(s exchange.TestSpec) string {
		if s.AllSizes {
			return "runs all sizes (-a)"
		}
		return ""
	}},
	{[]string{"all"}, func(s exchange.TestSpec) string { return on(s.AllSizes) }, nil},
	{[]string{"iters"}, func(s exchange.TestSpec) string {
		if s.Duration > 0 || s.RunInfinitely {
			return ""
		}
		return num(s.Iterations)
	}, func(s exchange.TestSpec) string {
		switch {
		case s.RunInfinitely:
			return "runs --run_infinitely"
		case s.Duration > 0:
			return fmt.Sprintf("is a timed run (-D %d)", s.Duration)
		}
		return ""
	}},
	{[]string{"duration"}, func(s exchange.TestSpec) string {
		if s.RunInfinitely { // -D is the interval, given or perftest's 5 s
			return "every " + num(uint64(s.Duration))
		}
		return num(uint64(s.Duration))
	}, func(s exchange.TestSpec) string {
		if s.RunInfinitely {
			return fmt.Sprintf("runs --run_infinitely, a report every %d s", s.Duration)
		}
		return ""
	}},
	{[]string{"margin"}, func(s exchange.TestSpec) string {
		if s.Duration == 0 || s.RunInfinitely {
			return ""
		}
		return strconv.FormatUint(uint64(s.Margin), 10)
	}, func(s exchange.TestSpec) string {
		switch {
		case s.RunInfinitely:
			return "runs --run_infinitely, which has no margin"
		case s.Duration == 0:
			return "is a run of iterations (no -D), which has no margin"
		}
		return ""
	}},
	{[]string{"qp"}, func(s exchange.TestSpec) string { return num(uint64(s.NumQPs)) }, nil},
	{[]string{"bidirectional"}, func(s exchange.TestSpec) string { return on(s.Bidirectional) }, nil},
	{[]string{"connection"}, func(s exchange.TestSpec) string { return s.ConnType.String() }, nil},
	{[]string{"inline_size"}, func(s exchange.TestSpec) string { return strconv.FormatUint(uint64(s.Inline), 10) }, nil},
	{[]string{"tx-depth"}, func(s exchange.TestSpec) string { return num(uint64(s.TXDepth)) }, nil},
	{[]string{"rx-depth"}, func(s exchange.TestSpec) string { return num(uint64(s.RXDepth)) }, nil},
	{[]string{"cq-mod"}, func(s exchange.TestSpec) string { return num(uint64(s.CQModeration)) }, nil},
	{[]string{"post_list"}, func(s exchange.TestSpec) string { return num(uint64(s.PostList)) }, nil},
	{[]string{"recv_post_list"}, func(s exchange.TestSpec) string { return num(uint64(s.RecvPostList)) }, nil},
	{[]string{"mtu"}, func(s exchange.TestSpec) string {
		if s.MTU == 0 {
			return ""
		}
		return strconv.Itoa(s.MTU.Bytes())
	}, nil},
	{[]string{"rdma_cm"}, func(s exchange.TestSpec) string { return on(s.RdmaCM) }, nil},
	{[]string{"outs"}, func(s exchange.TestSpec) string { return num(uint64(s.OutReads)) }, nil},
	{[]string{"events"}, func(s exchange.TestSpec) string { return on(s.Events) }, nil},
	{[]string{"run_infinitely"}, func(s exchange.TestSpec) string { return on(s.RunInfinitely) }, nil},
	{[]string{"atomic_type"}, func(s exchange.TestSpec) string {
		if !s.Test.IsAtomic() {
			return ""
		}
		return s.Atomic.String()
	}, nil},
	{[]string{"validate"}, func(s exchange.TestSpec) string { return on(s.ValidateData) }, nil},
	{[]string{"threads"}, func(s exchange.TestSpec) string { return num(uint64(max(s.Threads, 1))) }, nil},
	{[]string{"reversed"}, func(s exchange.TestSpec) string { return on(s.Reversed) }, nil},
	{[]string{"perform_warm_up"}, func(s exchange.TestSpec) string { return on(s.WarmUp) }, nil},
	{[]string{"mr_per_qp"}, func(s exchange.TestSpec) string { return on(s.MRPerQP) }, nil},
	{[]string{"use-srq"}, func(s exchange.TestSpec) string { return on(s.SRQ) }, nil},
	{[]string{"use_hugepages"}, func(s exchange.TestSpec) string { return on(s.HugePages) }, nil},
	{[]string{"use_old_post_send"}, func(s exchange.TestSpec) string { return on(s.OldPostSend) }, nil},
	{[]string{"disable_pcie_relaxed"}, func(s exchange.TestSpec) string { return on(s.NoRelaxedOrdering) }, nil},
	{[]string{"write_with_imm", "send_with_imm"}, func(s exchange.TestSpec) string { return on(s.Immediate) }, nil},
	{[]string{"sl"}, func(s exchange.TestSpec) string { return num(uint64(s.SL)) }, nil},
	{[]string{"tclass", "tos"}, func(s exchange.TestSpec) string { return num(uint64(s.TrafficClass)) }, nil},
}

func num(n uint64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatUint(n, 10)
}

func on(b bool) string {
	if b {
		return "on"
	}
	return ""
}

// unusedFlags returns a line for each test flag given on this server's
// command line, fs, whose value in own, the test its flags make, is not
// the one in client, its client's test, which the server runs: a
// perftest user who gave -b only on the server learns that the test was
// one-way. (A server's test is its client's, as perftest's is.) typed
// has each flag's value as given (testOptions.typed), which the line
// says: defaults rewrites some (-Q to at most -t, -f to 0 without -D).
func unusedFlags(fs *pflag.FlagSet, typed map[string]string, own, client exchange.TestSpec) []string {
	var lines []string
	for _, cf := range clientFlags {
		var given *pflag.Flag
		for _, n := range cf.names {
			if fl := fs.Lookup(n); fl != nil && fl.Changed {
				given = fl
			}
		}
		mine, theirs := cf.value(own), cf.value(client)
		if given == nil || mine == theirs {
			continue
		}
		name := "--" + given.Name
		if given.Shorthand != "" {
			name = "-" + given.Shorthand
		}
		has := "has no " + name
		switch {
		case cf.has != nil && cf.has(client) != "":
			has = cf.has(client)
		case theirs == "on":
			has = "has " + name
		case theirs != "":
			has = "has " + name + " " + theirs
		}
		v, ok := typed[given.Name]
		if !ok {
			v = given.Value.String()
		}
		used := name + " " + v
		if given.Value.Type() == "bool" {
			used = name
			if v != "true" {
				used += "=" + v
			}
		}
		lines = append(lines, fmt.Sprintf("the client's test %s; this server's %s is not used (the client's flags set the test)", has, used))
	}
	return lines
}

// oneTestLimits are the limits of a server started for one test and of
// loopback's server side: none beyond what the test commands check of
// their own flags (TestSpec.Validate), since whoever started the server
// chose to run a test on it, as a perftest server runs whatever its
// client asks within perftest's own bounds. gorperf serve,
// which runs any client's test for as long as it is up, keeps
// exchange.DefaultLimits and its --max-* flags.
func oneTestLimits() exchange.Limits {
	return exchange.Limits{
		MaxMsgSize:    math.MaxUint32,
		MaxQPs:        math.MaxUint16,
		MaxDepth:      math.MaxUint32,
		MaxMemory:     math.MaxUint64,
		MaxIterations: math.MaxUint64,
	}
}

// stoppedEarly turns the outcome of a side that Ctrl-C (or SIGTERM)
// stopped before it had a result, an error that is the context's
// cancellation or none, into an *interruptedError: exit status 130 and
// the JSON code "interrupted", as a run stopped after its results. msg
// says what was cut short; "" says it with err. Any other outcome is err.
func stoppedEarly(ctx context.Context, res *bench.Result, err error, msg string) error {
	if res != nil || ctx.Err() == nil || (err != nil && !errors.Is(err, context.Canceled)) {
		return err
	}
	if msg == "" {
		msg = "interrupted before the test started"
		if err != nil {
			msg += ": " + err.Error()
		}
	}
	return &interruptedError{msg}
}

// text reports whether the output is perftest's header and tables, with a
// progress line on a terminal: not with --json, --csv or --output.
func (o *testOptions) text() bool { return !o.JSON && !o.CSV && o.value == report.NoValue }

// finish prints a result (or what was measured before an error) and
// turns the outcome into the command's error.
func (o *testOptions) finish(f *Factory, role string, res *bench.Result, err error) error {
	o.ended = f.Now()
	if o.text() && isTerminal(f.IO.ErrOut) {
		fmt.Fprint(f.IO.ErrOut, "\r\033[K") // clear the progress line
	}
	if res != nil {
		res = measured(res)
		rs := reportSizes(res)
		if err != nil && (len(res.Sizes) > 0 || o.rows.printed() > 0) && !errors.As(err, new(*silentError)) {
			// An error that ended the run after it measured something
			// (the peer killed, a work completion that failed): the
			// figures reported are partial, as a stopped run's, and a
			// row must not pass for a whole size's.
			err = &partialError{err: err, where: o.resultsWhere()}
		}
		// Checked before the output is written, so that --json's
		// document carries a mismatch or a missed limit as its error.
		if err == nil && res.Mismatches > 0 {
			err = fmt.Errorf("data validation failed: %d QPs received bytes that were not sent", res.Mismatches)
		}
		if err == nil && res.Overtime > 0 {
			// Only a server's: serve --max-duration stopped its
			// client's test of iterations, and serves on.
			err = o.overtime(res)
		}
		if err == nil && !cutShort(res) {
			err = o.limits.Check(rs) // not on a run either side cut short
		}
		if err == nil && !res.Interrupted && res.PeerInterrupted && !res.Spec.RunInfinitely {
			// The peer's stop cut the run short: its figures are
			// partial, sizes may be missing, and the pass marks were
			// not judged, so it is no success of this side's (a CI
			// gate must not pass it). An infinite run ends only so.
			err = o.peerStopped(role, res)
		}
		// --out_json's file first, so that --json's document below
		// carries its failure (a full disk).
		if ferr := o.writeJSONFile(o.document(role, res, inDocument(err))); err == nil {
			err = ferr
		}
		var werr error // the output's, which a run that failed keeps to its own error
		if o.value != report.NoValue {
			if !res.Spec.RunInfinitely { // the intervals were the figures
				werr = writeValues(f.IO.Out, res, o)
			}
		} else if o.JSON {
			werr = o.writeJSON(f.IO.Out, o.document(role, res, err))
		} else if o.CSV {
			werr = o.rows.writeCSV(f.IO.Out, o.document(role, res, err))
		} else {
			writeTables(f.IO.Out, res, o, o.rows.printed())
			report.WriteThreads(f.IO.Out, reportThreads(res), o.Gbits)
			h := res.Header
			report.WriteCPU(f.IO.Out, rs)
			report.WriteCounters(f.IO.Out, h.Device, h.Port, rs, slices.Equal(o.Counters, []string{counters.All}))
		}
		if werr != nil && err == nil {
			err = fmt.Errorf("writing the result: %w", werr)
		}
		if o.ReportBoth && !res.Spec.Bidirectional {
			// Only a server gets here: a client's and loopback's
			// --report-both need their own -b, and a server's test is
			// its client's, whatever its own -b says.
			fmt.Fprintf(f.IO.ErrOut, "gorperf: --report-both: the %s's test was one-way (no -b), so it has no directions to report\n", peerRole(role))
		}
		if err == nil && res.Interrupted {
			fmt.Fprintf(f.IO.ErrOut, "gorperf: %s; the results above are what was measured\n", cmp.Or(o.stopped, "interrupted"))
			return &silentError{code: exitInterrupted}
		}
		if err == nil && res.PeerInterrupted {
			// The peer's stop ends an infinite run, as this side's
			// would: its figures, and exit status 0.
			fmt.Fprintf(f.IO.ErrOut, "gorperf: the %s was %s; the results above are what was measured until then\n", peerRole(role), peerStop(res))
		}
	} else if err != nil && (o.JSON || o.CSV || o.jsonFile != nil) {
		return o.fail(f, err)
	}
	return err
}

// peerStoppedError is a run that the peer's stop (Ctrl-C, SIGTERM) cut
// short, other than an infinite one: exit status 1, after the results
// measured until then, and, as the peer's word, the JSON code "peer".
type peerStoppedError struct {
	msg  string
	word *exchange.PeerError // the peer's abort, which errorCode reads
}

func (e *peerStoppedError) Error() string { return e.msg }
func (e *peerStoppedError) Unwrap() error { return e.word }

// partialError is an error that ended a run after some of its figures
// were measured: the figures reported are what was measured until then.
type partialError struct {
	err   error
	where string // "the results above are", or with --json "the results are"
}

func (e *partialError) Error() string {
	return fmt.Sprintf("%v; %s what was measured until then", e.err, e.where)
}
func (e *partialError) Unwrap() error { return e.err }

// resultsWhere says where this side's results are, for a message that
// says they are partial: above the message, or with --json in its
// document.
func (o *testOptions) resultsWhere() string {
	if o.JSON {
		return "the results are"
	}
	return resultsAbove
}

// resultsAbove is where a text report's results are, for a message that
// says they are partial: a JSON document says "the results are"
// (inDocument).
const resultsAbove = "the results above are"

// inDocument is err as a JSON document says it: --out_json's file of a
// run reported in text holds its results, which are not above its
// message. It unwraps to err.
func inDocument(err error) error {
	if err == nil || !strings.Contains(err.Error(), resultsAbove) {
		return err
	}
	return &documentError{msg: strings.Replace(err.Error(), resultsAbove, "the results are", 1), err: err}
}

// documentError is an error with the words of a JSON document's message.
type documentError struct {
	msg string
	err error
}

func (e *documentError) Error() string { return e.msg }
func (e *documentError) Unwrap() error { return e.err }

// peerStopped is the error of res, a run of role's side that the peer's
// stop cut short: it says how the peer was stopped, that the results are
// what was measured until then, and which pass marks it did not judge.
func (o *testOptions) peerStopped(role string, res *bench.Result) error {
	where := o.resultsWhere()
	msg := fmt.Sprintf("the %s was %s before the run ended: %s what was measured until then", peerRole(role), peerStop(res), where)
	if flags := o.limitFlags(); len(flags) > 0 {
		msg += fmt.Sprintf(", and %s %s not judged", strings.Join(flags, " and "), map[bool]string{true: "was", false: "were"}[len(flags) == 1])
	}
	return &peerStoppedError{msg: msg, word: &exchange.PeerError{Code: exchange.CodeAborted, Text: res.PeerStop}}
}

// overtime is the error of res, a served test of iterations that the
// server stopped at its maximum duration (serve --max-duration): the
// results are what was measured until then.
func (o *testOptions) overtime(res *bench.Result) error {
	return fmt.Errorf("a test of iterations (-n) stopped at this server's --max-duration of %d s: %s what was measured until then", res.Overtime, o.resultsWhere())
}

// peerStop says how the peer of res was stopped, in its words
// ("interrupted (Ctrl-C)", "stopped (SIGTERM)"); an older peer's, which
// said nothing of the signal, are Ctrl-C's.
func peerStop(res *bench.Result) string {
	if res.PeerStop != "" {
		return res.PeerStop
	}
	return "interrupted (Ctrl-C)"
}

// limitFlags names the pass marks o was given.
func (o *testOptions) limitFlags() []string {
	var flags []string
	for _, l := range []struct {
		set  bool
		flag string
	}{
		{o.limits.BW > 0, "-w"}, {o.limits.MsgRate > 0, "-y"},
		{o.limits.Typical > 0, "--limit_lat"}, {o.limits.P99 > 0, "--limit_p99"},
	} {
		if l.set {
			flags = append(flags, l.flag)
		}
	}
	return flags
}

// unmeasured reports whether s measured nothing: no message either way,
// no sample. A run cut short at a size's start has such a size as its
// last (bench adds the size it was at), which is no result, not one of 0
// MB/sec; but so does a complete size whose messages were all lost (a
// UC or UD send receiver's, which received none), a real result.
func unmeasured(s bench.SizeResult) bool {
	if s.IsLatency {
		return s.Iterations == 0 && s.Lat.N == 0
	}
	return s.BW.Iterations == 0 && (s.Remote == nil || s.Remote.Iterations == 0)
}

// cutShort reports whether res is of a run that either side's stop, or a
// server's maximum duration, cut short, whose last size may be the one
// the stop caught at its start.
func cutShort(res *bench.Result) bool {
	return res.Interrupted || res.PeerInterrupted || res.Overtime > 0
}

// measured returns res without the size that a stop caught at its start,
// its last if it is unmeasured in a run cut short, and its threads
// without theirs, for the report: the same res if it has none. An
// unmeasured size of a complete run, or one before the last, ended as
// the run went on, and stays.
func measured(res *bench.Result) *bench.Result {
	n := len(res.Sizes)
	if n == 0 || !cutShort(res) || !unmeasured(res.Sizes[n-1]) {
		return res
	}
	m := *res
	m.Sizes = res.Sizes[: n-1 : n-1]
	m.Threads = slices.Clone(res.Threads)
	for i, t := range res.Threads {
		m.Threads[i].Sizes = t.Sizes[:min(len(t.Sizes), n-1):min(len(t.Sizes), n-1)]
	}
	return &m
}

// checkBuffers is the one bound of a server for one test on what its
// client may ask (its Admit; oneTestLimits has none): the buffers the
// test maps and registers on this side, BufferLen of each connection, at
// most half of mem, this host's memory (0: not known, no bound).
// Registration pins the pages, so more would take memory the host needs,
// or fail part way; a server for one test listens on every address, and
// any client could ask for terabytes.
//
// s is one connection's spec, which with --threads holds only its
// thread's share of the test's QPs, and shares differ (-q 63 --threads 5
// gives 13, 13, 13, 12 and 12). The buffers are two regions (RegionLen)
// a QP, so a bound on their bytes is one on the test's QPs, and that is
// judged as exchange.CheckLimits judges a connection's: by the least test
// it can be part of (TestSpec.LeastTestQPs). The connection whose thread
// is the last with the larger share has the whole test as its least, so
// a test is refused exactly where all its QPs' buffers are over the
// bound. Its share times the threads counted 65 QPs of the 63 where
// thread 0 came, and refused a test that fitted.
func checkBuffers(s exchange.TestSpec, mem uint64) error {
	if mem == 0 {
		return nil
	}
	perQP := 2 * s.RegionLen()
	fit := mem / 2 / perQP // the QPs whose buffers fit
	qps, exact := s.LeastTestQPs()
	if qps <= fit {
		return nil
	}
	gib := func(n float64) float64 { return n / (1 << 30) }
	total := gib(float64(qps) * float64(perQP)) // no overflow: 2^16 QPs of 2^33 bytes pass 2^64
	if s.Threads <= 1 {
		return fmt.Errorf("%w: the test's buffers, %.1f GiB, are more than half of this host's memory (%.1f GiB)",
			exchange.ErrOverLimit, total, gib(float64(mem)))
	}
	least := "at least "
	if exact {
		least = ""
	}
	return fmt.Errorf("%w: a test of %d threads of %s%d QPs (thread %d has %d) has buffers of %s%.1f GiB, 2 regions of %d bytes a QP, more than half of this host's memory (%.1f GiB), which holds those of %d QPs",
		exchange.ErrOverLimit, s.Threads, least, qps, s.Thread, s.NumQPs, least, total, s.RegionLen(), gib(float64(mem)), fit)
}

// physMemory returns this host's memory in bytes, or 0 if sysinfo fails.
func physMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// otherTest is the refusal (its Admit) of a server for one test whose
// client asks for test, of the other kind (latency or bandwidth) than the
// server's command, where the server was given --output or a limit: both
// are of its command's kind (flags of its tests, checked against them),
// and cannot judge or print the client's test. A server whose flags do
// not depend on the kind runs any test its client asks for.
func (o *testOptions) otherTest(test exchange.Test) error {
	if test.IsLatency() == o.Test.IsLatency() {
		return nil
	}
	var flags []string
	if o.value != report.NoValue {
		flags = append(flags, "--output "+o.Output)
	}
	flags = append(flags, o.limitFlags()...)
	if len(flags) == 0 {
		return nil
	}
	return fmt.Errorf("the client ran %s, and this server's %s %s for %s's figures: not applied (run the server as gorperf %s)",
		test, strings.Join(flags, " and "), map[bool]string{true: "is", false: "are"}[len(flags) == 1], testCmdName(o.Test), testCmdName(test))
}

// peerRole names the other side of a run whose side is role.
func peerRole(role string) string {
	switch role {
	case "client":
		return "server"
	case "server":
		return "client"
	}
	return "peer"
}

// document is the JSON document of a run, with --run_infinitely's
// intervals and the samples -U and -H list.
func (o *testOptions) document(role string, res *bench.Result, err error) report.Result {
	r := jsonResult(role, res, err)
	r.EndTime = report.FormatTime(o.ended)
	r.Intervals = o.intervals
	if r.Intervals == nil && res.Spec.RunInfinitely {
		// --csv's interval columns, also where no interval ended; the
		// JSON leaves an empty list out.
		r.Intervals = []report.Interval{}
	}
	// The CPUs every thread may run on now, at the end: those made
	// during the run inherited the placement.
	r.CPUs, r.CPUReason = affinity.FormatList(o.placed.CPUs), o.placed.Reason
	if now, err := affinity.Current(); err == nil && o.placed.Reason != "" {
		r.CPUs = affinity.FormatList(now)
	}
	if o.Unsorted || o.Sorted {
		for i, s := range res.Sizes {
			if len(s.Samples) > 0 {
				r.Results[i].SamplesUs = report.SamplesUs(s.Samples)
			}
		}
	}
	return r
}

// fail reports an error; with --json it is also a valid JSON document,
// and with --out_json one in the file, which it creates if the run
// failed before it could (a flag's value, say).
func (o *testOptions) fail(f *Factory, err error) error {
	// What the command line says of this side: the GID index asked for
	// (-x), or -1, none chosen, where 0 would name one.
	r := report.Result{Version: Version, Test: o.Test.String(), Role: o.role(), EndTime: report.FormatTime(f.Now()),
		Device: o.Device, Port: o.IBPort, GIDIndex: o.GIDIndex,
		Error: &report.Error{Code: errorCode(err), Message: err.Error()}}
	if o.JSON {
		o.writeJSON(f.IO.Out, r)
	}
	if !o.jsonOpened {
		o.openJSONFile() // a file that cannot be made is said by err or not at all
	}
	o.writeJSONFile(r) // the run's error is the one to report
	return err
}

// writeJSON writes r, --json's document, to w: indented, or for serve,
// which writes one a test, compact on one line (JSON Lines).
func (o *testOptions) writeJSON(w io.Writer, r report.Result) error {
	if o.jsonLines {
		return report.WriteJSONLine(w, r)
	}
	return report.WriteJSON(w, r)
}

// role is this side's, as the JSON document names it.
func (o *testOptions) role() string {
	switch {
	case o.Loopback:
		return "loopback"
	case o.Host != "":
		return "client"
	}
	return "server"
}

// openJSONFile makes ready --out_json's file before the test runs, so
// that a path that cannot be written fails at once, not after the run,
// and one that can keeps what it held until the run's document replaces
// it whole (writeJSONFile): the document is written to a file of its
// own, which has no name in the directory until it is written
// (O_TMPFILE) and then replaces the file, so that a run killed before its
// end leaves the last run's file, not an empty one, and nothing beside
// it (where the file system has no O_TMPFILE, the file of its own is
// named beside it from the start). An
// existing file must be writable; a symbolic link's target is replaced;
// a path that is no regular file (a device, a pipe) is written in place.
// It tries once.
func (o *testOptions) openJSONFile() error {
	if !o.OutJSON || o.jsonOpened {
		return nil
	}
	o.jsonOpened = true
	name := o.OutJSONFile
	if name == "" {
		return usageErrorf("--out_json_file: an empty file name")
	}
	perm, keep := os.FileMode(0o666), false // less the umask, as os.Create's; or the replaced file's
	if fi, err := os.Stat(name); err == nil {
		if !fi.Mode().IsRegular() {
			fh, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return fmt.Errorf("--out_json_file: %w", err)
			}
			o.jsonFile = fh
			return nil
		}
		// Writable, and left as it is until the run's end.
		fh, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("--out_json_file: %w", err)
		}
		fh.Close()
		if target, err := filepath.EvalSymlinks(name); err == nil {
			name = target
		}
		perm, keep = fi.Mode().Perm(), true
	}
	// The document's file has no name until it is written (O_TMPFILE), so
	// that a run killed on the way leaves nothing beside the file; where
	// the file system cannot (EOPNOTSUPP), it is named at once.
	fh, err := os.OpenFile(filepath.Dir(name), unnamedFlag|os.O_WRONLY, perm)
	unnamed := err == nil
	if unnamed {
		// It is named at the end through its /proc link (writeJSONFile):
		// without /proc (a chroot, a sandbox), it is named at once.
		if _, serr := os.Stat(procFD(fh)); serr != nil {
			fh.Close()
			unnamed = false
		}
	}
	if !unnamed {
		fh, err = createBeside(name, func(tmp string) (*os.File, error) {
			return os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		})
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = &fs.PathError{Op: "open", Path: o.OutJSONFile, Err: pe.Err} // the file asked for, not ours beside it
		}
		return fmt.Errorf("--out_json_file: %w", err)
	}
	if keep {
		fh.Chmod(perm) // the replaced file's, which the umask may have cut
	}
	o.jsonFile, o.jsonTarget, o.jsonUnnamed = fh, name, unnamed
	return nil
}

// unnamedFlag is O_TMPFILE, or for the tests of a file system without it
// 0 (opening the directory to write then fails, EISDIR).
var unnamedFlag = unix.O_TMPFILE

// procDir is where a descriptor's link lies, /proc/self/fd; another for
// the tests of a system without /proc.
var procDir = "/proc/self/fd"

// procFD is f's link in procDir, by which linkat names an unnamed file.
func procFD(f *os.File) string { return fmt.Sprintf("%s/%d", procDir, f.Fd()) }

// createBeside calls create with the names of a file beside name in
// turn, .NAME.PID-I.tmp, until one is not there (fs.ErrExist), and
// returns what it made of that one.
func createBeside[T any](name string, create func(tmp string) (T, error)) (T, error) {
	var v T
	var err error
	for i := range 100 {
		tmp := filepath.Join(filepath.Dir(name), fmt.Sprintf(".%s.%d-%d.tmp", filepath.Base(name), os.Getpid(), i))
		if v, err = create(tmp); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return v, err
}

// writeJSONFile writes r to --out_json's file, if there is one, once: a
// second call does nothing. The file is perftest's: its test_info and
// results, as this side's flags give the figures (--report_gbits,
// --output), and r, --json's document, under "gorperf". Written whole,
// the file replaces the one it was made beside (openJSONFile); one that
// could not be written is removed, and the one there is left as it was.
func (o *testOptions) writeJSONFile(r report.Result) error {
	if o.jsonFile == nil {
		return nil
	}
	fh, target, unnamed := o.jsonFile, o.jsonTarget, o.jsonUnnamed
	o.jsonFile, o.jsonTarget, o.jsonUnnamed = nil, "", false
	err := report.WritePerftestJSON(fh, r, report.PerftestJSON{Gbits: o.Gbits, Value: o.value,
		RelaxedOrdering: !o.NoRelaxed, MsgSize: int(o.Size)})
	tmp, named := fh.Name(), !unnamed && target != "" // named: tmp is a file of ours beside target
	if unnamed && err == nil {
		// Named beside the file now that it is written, to be renamed
		// over it: linkat of the descriptor's /proc link, which needs
		// no privilege (AT_EMPTY_PATH does).
		proc := procFD(fh)
		tmp, err = createBeside(target, func(tmp string) (string, error) {
			err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW)
			if err != nil {
				err = &fs.PathError{Op: "linkat", Path: tmp, Err: err}
			}
			return tmp, err
		})
		named = err == nil
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if target == "" {
		target = tmp // written in place
	} else if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		if named {
			os.Remove(tmp)
		}
		return fmt.Errorf("writing the JSON result to %s: %w", target, err)
	}
	return nil
}

// closeJSONFile closes --out_json's file if nothing was written to it,
// and removes it where it was to replace another (openJSONFile).
func (o *testOptions) closeJSONFile() {
	if o.jsonFile != nil {
		o.jsonFile.Close()
		if o.jsonTarget != "" && !o.jsonUnnamed {
			os.Remove(o.jsonFile.Name())
		}
		o.jsonFile, o.jsonTarget, o.jsonUnnamed = nil, "", false
	}
}

// queuedNotice returns a client's bench.Local.Queued: it says on errOut
// how many tests the server runs before this one, each time that falls,
// so that a client of a busy gorperf serve is not silent. Its threads
// call it each, and one that reads the server's word late (its set-up
// took longer) replays counts already printed: a place in the line only
// falls, so a count not below the last one printed says nothing new.
func queuedNotice(errOut io.Writer) func(ahead int) {
	var mu sync.Mutex
	last := 0 // none printed
	return func(ahead int) {
		mu.Lock()
		defer mu.Unlock()
		if ahead <= 0 || (last != 0 && ahead >= last) {
			return
		}
		last = ahead
		switch {
		case ahead == 1:
			fmt.Fprintf(errOut, "gorperf: the server is busy with another client's test: this one comes next\n")
		case ahead > 1:
			fmt.Fprintf(errOut, "gorperf: the server is busy with other clients' tests: %d come before this one\n", ahead)
		}
	}
}

// fitMTU takes a UD test's default size down to the MTU this side
// offers, m (the port's active MTU, or less where its GID's netdev
// carries less), and returns the note that says so, which SizeFitted
// prints where the path MTU takes the size no lower; it says on errOut
// when -m asks for more than m, which the path MTU then is at most (as
// perftest's set_mtu lowers it, with "Requested mtu is higher than
// active mtu").
func (o *testOptions) fitMTU(errOut io.Writer, spec *exchange.TestSpec, m bench.MTULimit) (sizeNote string) {
	if o.udSize && uint32(m.MTU.Bytes()) < spec.Size {
		spec.Size = uint32(m.MTU.Bytes())
		if o.text() {
			what := "the port's MTU"
			if m.Netdev != "" && m.MTU < m.Active {
				what = mtuSource(m)
			}
			sizeNote = fmt.Sprintf("gorperf: a UD message is at most %s: sending %d bytes (-s to choose)\n", what, spec.Size)
		}
	}
	if spec.MTU > m.MTU && o.text() {
		fmt.Fprintf(errOut, "gorperf: -m %d is over %s: the path MTU is at most %d\n", spec.MTU.Bytes(), mtuSource(m), m.MTU.Bytes())
	}
	return sizeNote
}

// mtuSource names where m comes from, in fitMTU's and mtuNote's words:
// "the port's active MTU", or "what the GID's netdev rxeveth0.10 (MTU
// 700) carries, under the port's active 1024".
func mtuSource(m bench.MTULimit) string {
	if m.Netdev == "" || m.MTU >= m.Active {
		return "the port's active MTU"
	}
	return fmt.Sprintf("what the GID's netdev %s (MTU %d) carries, under the port's active %d", m.Netdev, m.NetdevMTU, m.Active.Bytes())
}

// writeValues prints --output's figure for each size: for a latency
// test of a duration (-D), perftest's t_avg of that report. As
// perftest's, a latency size's figure follows the samples that -U and
// -H list, where it has them.
func writeValues(w io.Writer, res *bench.Result, o *testOptions) error {
	v, gbits := o.value, o.Gbits
	for _, s := range res.Sizes {
		var err error
		if s.IsLatency {
			writeSampleLists(w, s, o.Unsorted, o.Sorted)
		}
		switch {
		case s.IsLatency && res.Spec.Duration > 0:
			err = report.WriteLatWindowValue(w, latDur(s, res.Spec), s.Lat)
		case s.IsLatency:
			err = report.WriteLatValue(w, s.Lat)
		default:
			err = report.WriteBWValue(w, v, s.BW, gbits)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rowStream prints the results table's rows as the sizes end (bench's
// SizeDone), where each row needs only its own size's figures, as
// perftest does; writeTables prints the rest at the end. With --csv it
// prints the CSV's rows so, the header row with the first (CSVRows),
// and writeCSV the rest. In a test of several threads the rows are the
// threads' sums, which bench gives once every thread has ended the size.
// It prints none in an infinite run (the intervals are its rows, the
// result the table after them), and no CSV with port counters (-W),
// whose columns are the counters that any size of the whole run has
// (with -W all, those that moved; a counter that cannot be read at a
// size has no cell there), known only at the end: a column that came
// later would leave the rows printed a cell short and their header
// wrong. --cpu_util's columns are known before: every size of a run with
// it has its CPU figures.
type rowStream struct {
	mu       sync.Mutex
	w        io.Writer
	clear    io.Writer // where a progress line is cleared before a row: stderr on a terminal
	gbits    bool
	csv      bool // the CSV's rows (--csv), not the text table's
	cpu      bool // --cpu_util: the CSV's CPU columns, the text's CPU_Util[%]
	unsorted bool // -U: a latency row follows the samples in order
	sorted   bool // -H: a latency row follows the samples sorted
	counters bool // port counters (-W), whose CSV columns come at the end
	spec     exchange.TestSpec
	on       bool
	rows     int               // the rows printed
	lat      bool              // the kind of the first, which is the table's
	table    *report.CSVRows   // the CSV's, once started
	err      error             // the CSV's first failed write
	held     *bench.SizeResult // an unmeasured size's row, not yet printed
}

// newRowStream returns the rowStream of o's rows to w: the text table's,
// or with --csv the CSV's; nil with --json and --output, whose document
// and figures come at the end.
func (o *testOptions) newRowStream(w io.Writer) *rowStream {
	if !o.text() && !o.CSV {
		return nil
	}
	return &rowStream{w: w, gbits: o.Gbits, csv: o.CSV, cpu: o.CPUUtil, counters: len(o.Counters) > 0,
		unsorted: o.Unsorted, sorted: o.Sorted}
}

// start says which test the rows are of.
func (r *rowStream) start(spec exchange.TestSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spec = spec
	r.on = !spec.RunInfinitely
	r.held = nil
	if r.csv {
		r.on = r.on && !r.counters
		r.table = report.NewCSVRows(r.w, spec.Test.String(), spec.Test.IsLatency() && spec.Duration > 0, r.cpu)
	}
}

// size prints s's row, after the table's column line (the CSV's header
// row) if it is the first. An unmeasured size's row is held back until
// the next size ends, which shows that it was a complete size, and
// printed before that one's; a row still held at the end is finish's to
// print, which leaves it out of a run cut short (measured).
func (r *rowStream) size(s bench.SizeResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	if r.held != nil {
		r.write(*r.held)
		r.held = nil
	}
	if unmeasured(s) {
		r.held = &s
		return
	}
	r.write(s)
}

// write prints s's row, after the table's column line (the CSV's header
// row) if it is the first; r.mu is held.
func (r *rowStream) write(s bench.SizeResult) {
	if r.err != nil {
		return
	}
	if r.csv {
		r.err = r.table.Write(reportSize(s, r.spec))
		r.rows = r.table.Rows()
		return
	}
	if r.clear != nil {
		fmt.Fprint(r.clear, "\r\033[K") // the progress line, on the same terminal
	}
	if r.rows == 0 {
		r.lat = s.IsLatency
		writeColumns(r.w, r.lat, r.spec, r.gbits, r.cpu)
	}
	writeSize(r.w, r.lat, s, r.spec, r.gbits, r.cpu, r.unsorted, r.sorted)
	r.rows++
}

// printed returns how many rows r printed; 0 for none.
func (r *rowStream) printed() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows
}

// writeCSV prints the CSV of doc (report.WriteCSV) to w, less the header
// row and first rows where r printed them as the sizes ended: the rows
// of the sizes after them, in the same columns. It returns the first
// failed write, that of a row printed as its size ended too.
func (r *rowStream) writeCSV(w io.Writer, doc report.Result) error {
	if r.printed() == 0 {
		return report.WriteCSV(w, doc)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range doc.Results[min(r.rows, len(doc.Results)):] {
		if r.err != nil {
			break
		}
		r.err = r.table.Write(s)
	}
	return r.err
}

// writeColumns prints the column line of the results table, with
// --cpu_util (cpu) perftest's CPU_Util[%] at its end.
func writeColumns(w io.Writer, lat bool, spec exchange.TestSpec, gbits, cpu bool) {
	columns := func(w io.Writer) error {
		switch {
		case lat && spec.Duration > 0:
			// perftest's report of a run of -D seconds: the average and
			// the rate (print_report_lat_duration).
			return report.WriteLatDurHeader(w)
		case lat:
			return report.WriteLatHeader(w)
		default:
			return report.WriteBWHeader(w, gbits)
		}
	}
	if cpu {
		report.WriteCPUColumns(w, columns)
		return
	}
	columns(w)
}

// writeRow prints a size's row of the results table, with its
// CPU_Util[%] at the end where it has CPU figures (--cpu_util) and
// figures of its own (not a latency side that the peer measured).
func writeRow(w io.Writer, lat bool, s bench.SizeResult, spec exchange.TestSpec, gbits bool) {
	row := func(w io.Writer) error {
		switch {
		case lat && spec.Duration > 0:
			return report.WriteLatWindowRow(w, s.Size, latDur(s, spec), s.Lat)
		case lat:
			return report.WriteLatRow(w, s.Size, s.Iterations, s.Lat)
		case s.Local != nil: // bidirectional
			return report.WriteBidiRow(w, s.BW, *s.Local, gbits)
		default:
			return report.WriteBWRow(w, s.BW, gbits)
		}
	}
	if s.CPU != nil && (!lat || s.Lat.N > 0) {
		report.WriteCPURow(w, row, *s.CPU)
		return
	}
	row(w)
}

// writeSize prints a size's row of the results table, after the column
// line. A latency size with samples to list (-U, -H) has them first, in
// perftest's order (print_report_lat): the lists, then the rule and the
// column line again, then the row, so that the row is still the line
// after the last column line, where scripts look for it.
func writeSize(w io.Writer, lat bool, s bench.SizeResult, spec exchange.TestSpec, gbits, cpu, unsorted, sorted bool) {
	if lat && writeSampleLists(w, s, unsorted, sorted) {
		report.WriteRule(w)
		writeColumns(w, lat, spec, gbits, cpu)
	}
	writeRow(w, lat, s, spec, gbits)
}

// writeSampleLists prints the lists of s's latency samples that -U
// (unsorted, in the order measured) and -H (sorted, and without the two
// largest, which perftest's columns leave out too; one kept at least)
// ask for, -U's first, as perftest's print_report_lat; it reports
// whether it printed any (s has samples).
func writeSampleLists(w io.Writer, s bench.SizeResult, unsorted, sorted bool) bool {
	if len(s.Samples) == 0 || !unsorted && !sorted {
		return false
	}
	if unsorted {
		report.WriteSamples(w, s.Samples)
	}
	if sorted {
		sorted := slices.Sorted(slices.Values(s.Samples))
		report.WriteSamples(w, sorted[:max(len(sorted)-2, 1)])
	}
	return true
}

// writeTables prints the results table, less its column line and first
// printed rows where rowStream printed them as the sizes ended (a
// latency row with the samples -U and -H list before it, writeSize),
// and for latency tests the percentiles and --histogram's histogram
// after its rule.
func writeTables(w io.Writer, res *bench.Result, o *testOptions, printed int) {
	gbits := o.Gbits
	if len(res.Sizes) == 0 {
		return
	}
	lat := res.Sizes[0].IsLatency
	if printed == 0 {
		writeColumns(w, lat, res.Spec, gbits, o.CPUUtil)
	}
	for _, s := range res.Sizes[min(printed, len(res.Sizes)):] {
		writeSize(w, lat, s, res.Spec, gbits, o.CPUUtil, o.Unsorted, o.Sorted)
	}
	if lat {
		report.WriteRule(w)
		for _, s := range res.Sizes {
			if len(res.Sizes) > 1 {
				fmt.Fprintf(w, " %d bytes:", s.Size)
			}
			report.WritePercentiles(w, s.Lat)
			if len(s.Samples) > 0 && o.Histogram {
				report.WriteHistogram(w, stats.NewHistogram(s.Samples, 16), 50)
			}
		}
		return
	}
	bws := make([]stats.Bandwidth, len(res.Sizes))
	for i, s := range res.Sizes {
		bws[i] = s.BW
	}
	report.WriteRateUnknownNote(w, bws) // why a row's rates are a dash
	report.WriteRule(w)
	if !o.ReportBoth || !res.Spec.Bidirectional {
		// A server's --report-both where its client's test was one-way
		// (finish says so): no directions to report.
		return
	}
	// perftest's --report-both: the table again for each direction.
	for _, d := range []struct {
		title string
		bw    func(bench.SizeResult) *stats.Bandwidth
	}{
		{"Local results (what this side sent)", func(s bench.SizeResult) *stats.Bandwidth { return s.Local }},
		{"Remote results (what the peer sent)", func(s bench.SizeResult) *stats.Bandwidth { return s.Remote }},
	} {
		fmt.Fprintf(w, "\n %s:\n", d.title)
		report.WriteRule(w)
		report.WriteBWHeader(w, gbits)
		for _, s := range res.Sizes {
			if b := d.bw(s); b != nil {
				report.WriteBWRow(w, *b, gbits)
			}
		}
		report.WriteRule(w)
	}
}

// halvesRoundTrip reports whether test's latency samples are half a
// round trip (write_lat and send_lat, which ping-pong), not a whole
// request's time (read_lat, atomic_lat), as perftest's rtt_factor.
func halvesRoundTrip(test exchange.Test) bool {
	return test == exchange.WriteLat || test == exchange.SendLat
}

// latDur returns what perftest computes the latency table of a run of a
// duration (-D) from: s's iterations, the measured time they took, and
// perftest's rtt_factor.
func latDur(s bench.SizeResult, spec exchange.TestSpec) report.LatDur {
	return report.LatDur{Iterations: s.Iterations, Window: s.Window, Halves: halvesRoundTrip(spec.Test)}
}

// listLen is a list length as the JSON has it: 0 (left out) for none,
// where 1 means the same.
func listLen(n uint32) uint32 {
	if n > 1 {
		return n
	}
	return 0
}

func jsonResult(role string, res *bench.Result, err error) report.Result {
	h := res.Header
	r := report.Result{Version: Version, Test: res.Spec.Test.String(), Role: role, StartTime: report.FormatTime(res.Start), Device: h.Device,
		Port: h.Port, GIDIndex: h.GIDIndex, GIDReason: h.GIDReason, Connection: h.Connection,
		QPs: h.NumQPs, RdmaCM: h.RdmaCM, WRAPI: h.WRAPI, Bidirectional: res.Spec.Bidirectional, Events: res.Spec.Events,
		SRQ: h.UsingSRQ, RateLimit: h.RateLimit, Reversed: res.Spec.Reversed, Immediate: res.Spec.Immediate,
		MarginS: res.Spec.Margin, WarmUp: res.Spec.WarmUp, MRPerQP: res.Spec.MRPerQP, MulticastGroup: h.Group,
		RecvPostList: listLen(res.Spec.RecvPostList),
		FlowLabels:   res.Spec.FlowLabels, Interrupted: res.Interrupted, PeerInterrupted: res.PeerInterrupted,
		DurationS: res.Spec.Duration, RunInfinitely: res.Spec.RunInfinitely, SL: res.Spec.SL, TrafficClass: res.Spec.TrafficClass,
		// As the header gives them on this side.
		TXDepth: h.TXDepth, RXDepth: h.RXDepth, CQModeration: h.CQModeration, PostList: listLen(uint32(h.PostList)),
		MTU: h.Mtu, OutstandingReads: h.OutstandingReads}
	if t := res.Spec.Test; t.IsWrite() || t.Receives() {
		r.MaxInline = &h.MaxInline // 0 too: a read or atomic test has none
	}
	if res.Spec.Test.IsAtomic() {
		r.AtomicType = res.Spec.Atomic.String()
	}
	if h.Env != (report.Env{}) {
		env := h.Env
		r.Env = &env
	}
	if h.PeerEnv != (report.Env{}) {
		env := h.PeerEnv
		r.PeerDevice, r.PeerEnv = h.PeerDevice, &env
	}
	if role == "server" {
		r.PeerAddr = res.Peer // a served test's client
	}
	r.Results = reportSizes(res)
	r.Threads, r.ThreadResults = len(res.Threads), reportThreads(res)
	if err != nil {
		r.Error = &report.Error{Code: errorCode(err), Message: err.Error()}
	}
	return r
}

// reportThreads returns the report's form of res's threads, if it had
// several.
func reportThreads(res *bench.Result) []report.ThreadResult {
	var trs []report.ThreadResult
	for _, t := range res.Threads {
		tr := report.ThreadResult{Thread: t.Thread, QPs: t.QPs, Results: []report.SizeResult{}}
		if t.CPU >= 0 {
			tr.CPU = &t.CPU
		}
		for _, b := range t.Sizes {
			tr.Results = append(tr.Results, report.SizeFromBandwidth(b))
		}
		if t.Err != nil {
			tr.Error = t.Err.Error()
		}
		trs = append(trs, tr)
	}
	return trs
}

// reportSizes returns the report's form of res's sizes.
func reportSizes(res *bench.Result) []report.SizeResult {
	var rs []report.SizeResult
	for _, s := range res.Sizes {
		rs = append(rs, reportSize(s, res.Spec))
	}
	return rs
}

// reportSize returns the report's form of a size's result.
func reportSize(s bench.SizeResult, spec exchange.TestSpec) report.SizeResult {
	r := report.SizeFromBandwidth(s.BW)
	switch {
	case s.IsLatency && spec.Duration > 0:
		r = report.SizeFromLatencyWindow(s.Size, latDur(s, spec), s.Lat)
	case s.IsLatency:
		r = report.SizeFromLatency(s.Size, s.Iterations, s.Lat)
	}
	for _, c := range s.Counters {
		r.Counters = append(r.Counters, report.Counter{Name: c.Name, Delta: c.Delta, Reset: c.Reset, Saturated: c.Saturated})
	}
	if s.CPU != nil {
		r.CPU = report.CPUFrom(*s.CPU)
	}
	if s.Local != nil && s.Remote != nil {
		l, rem := report.SizeFromBandwidth(*s.Local), report.SizeFromBandwidth(*s.Remote)
		r.Local, r.Remote = &l, &rem
	}
	return r
}

func loopbackRun(ctx context.Context, f *Factory, o *testOptions, spec exchange.TestSpec, l bench.Local, onHeader func(report.Header)) error {
	here := "127.0.0.1:0"
	if o.IPv6Addr {
		here = "[::1]:0"
	}
	ln, err := net.Listen(o.controlNetwork(), here)
	if err != nil {
		return o.fail(f, fmt.Errorf("listening for the client side: %w", err))
	}
	defer ln.Close()
	sl := serverSide(o, spec, l)
	if spec.RdmaCM {
		// rdma_cm cannot reach 127.0.0.1 over RDMA: dial the server side's GID.
		ip, err := gidAddr(sl)
		if err != nil {
			return o.fail(f, fmt.Errorf("server side: %w", err))
		}
		l.CMHost = ip
	}
	// A server side that fails before it serves (its device, port or
	// GID: Serve checks them first) stops the client side, which would
	// otherwise wait for a greeting from a listener nobody accepts on,
	// and its error is the run's.
	cctx, stopClient := context.WithCancel(ctx)
	defer stopClient()
	var clientDone atomic.Bool // set before the client side closes ln
	type outcome struct {
		err   error
		early bool // Serve failed before a test and not for the client side's close
	}
	srv := make(chan outcome, 1)
	go func() {
		var runErr error
		served := false
		err := bench.Serve(ctx, ln, sl, oneTestLimits(), true, nil, func(_ *bench.Result, err error) { runErr, served = err, true })
		early := err != nil && !served && !clientDone.Load()
		if early {
			stopClient()
			ln.Close() // what the client side's dial put in its backlog is reset
		}
		if err == nil {
			err = runErr
		}
		srv <- outcome{err, early}
	}()
	res, err := bench.Client(cctx, ln.Addr().String(), spec, l, onHeader)
	clientDone.Store(true)
	ln.Close()
	if s := <-srv; s.err != nil && (err == nil || s.early) {
		err = fmt.Errorf("server side: %w", s.err)
	}
	o.stopped = stopWords(ctx)
	return o.finish(f, "loopback", res, stoppedEarly(ctx, res, err, ""))
}

// serverSide is the Local of loopback's server side, made from the
// client side's l: on --peer-dev if it names another device than the
// client side's (-d's, or the first), there with its GID chosen
// automatically, in the family the flags ask for, else that of the
// client side's GID (-x, --source_ip, --bind_source_ip, --gid-subnet and
// --gid-netdev name a GID of the client side's device, which another
// device does not have), and in the subnet of the client side's GID
// where a flag named it: --gid-subnet's own, or that of the address
// the others' GID has on its netdev, where the peer device has a GID
// there (so that both are on the VLAN or subnet asked for),
// without --mmap (the client side's), with its threads starting on other
// CPUs, and with the interval and progress reports only where it is the
// side that sends (--reversed). With -b only the client side reports,
// and its intervals count both directions' messages; --reversed excludes
// -b and --run_infinitely, so the server side reports progress, never
// intervals, and the run's intervals come from one goroutine.
func serverSide(o *testOptions, spec exchange.TestSpec, l bench.Local) bench.Local {
	sl := l
	if o.PeerDev != "" && o.PeerDev != defaultDevice(l.Device) {
		sl.Device = o.PeerDev
		sl.GIDIndex = -1
		sl.GIDRule = ibverbs.GIDRule{Family: l.GIDRule.Family, AllowLinkLocal: l.GIDRule.AllowLinkLocal}
		// The family of the client side's GID (-x's, --source_ip's), so
		// that the two sides' GIDs can reach each other; a link-local
		// one's peer is link-local too, which SelectGID ranks after a
		// routable one.
		if e, err := chosenGID(l); err == nil && e.Type == ibverbs.GIDTypeRoCEv2 {
			ip := e.IP()
			if sl.GIDRule.Family == 0 {
				sl.GIDRule.Family = ipFamily(ip)
			}
			switch {
			case ip.IsLinkLocalUnicast():
				sl.GIDRule.AllowLinkLocal = true
				sl.GIDRule.Prefix = netip.MustParsePrefix(map[bool]string{true: "169.254.0.0/16", false: "fe80::/10"}[ip.Is4()])
			case l.GIDIndex >= 0 || l.GIDRule.Prefix.IsValid() || l.GIDRule.Addr.IsValid() || l.GIDRule.Netdev != "":
				// A GID the flags named: the peer's is in its subnet
				// (--gid-subnet's, or its address's: its VLAN's, as a
				// rule), where one is, else the peer's family alone
				// decides (a routed network).
				p, ok := l.GIDRule.Prefix, l.GIDRule.Prefix.IsValid()
				if !ok {
					p, ok = addrSubnet(e.Netdev, ip)
				}
				if ok {
					withPrefix := sl
					withPrefix.GIDRule.Prefix = p
					if _, err := chosenGID(withPrefix); err == nil {
						sl = withPrefix
					}
				}
			}
		}
	}
	sl.MapFile, sl.MapOffset = "", 0 // --mmap is the client side's
	if k := len(l.ThreadCPUs); k > 0 {
		// The server side's threads start on the CPUs after the client
		// side's, so that the two sides of a connection share none where
		// there are enough.
		at := int(spec.Threads) % k
		sl.ThreadCPUs = append(slices.Clone(l.ThreadCPUs[at:]), l.ThreadCPUs[:at]...)
	}
	if !spec.Reversed || spec.Bidirectional {
		sl.Interval, sl.Progress = nil, nil // the client side sends and reports
	}
	sl.SizeDone = nil // the client side's result is the run's
	return sl
}

// addrSubnet returns the subnet of ip as a netdev's address (netdev's,
// or any's where it is ""): 198.18.10.0/24 for 198.18.10.1/24.
func addrSubnet(netdev string, ip netip.Addr) (netip.Prefix, bool) {
	var addrs []net.Addr
	var err error
	if ifc, ierr := net.InterfaceByName(netdev); netdev != "" && ierr == nil {
		addrs, err = ifc.Addrs()
	} else {
		addrs, err = net.InterfaceAddrs()
	}
	if err != nil {
		return netip.Prefix{}, false
	}
	for _, p := range ipPrefixes(addrs) {
		if p.Addr() == ip.WithZone("") {
			return p.Masked(), true
		}
	}
	return netip.Prefix{}, false
}

// defaultDevice returns the device -d names, or where it is omitted the
// one a test then uses, the first (ibverbs.Open's), "" if none.
func defaultDevice(dev string) string {
	if dev != "" {
		return dev
	}
	if infos, err := ibverbs.Devices(); err == nil && len(infos) > 0 {
		return infos[0].Name
	}
	return ""
}

// gidAddr returns the IP address of the GID the side with l would use.
func gidAddr(l bench.Local) (string, error) {
	e, err := chosenGID(l)
	return bench.GIDAddr(e).String(), err
}

// chosenGID returns the GID entry the side with l would use.
func chosenGID(l bench.Local) (ibverbs.GIDEntry, error) {
	ctx, err := ibverbs.Open(l.Device)
	if err != nil {
		return ibverbs.GIDEntry{}, err
	}
	defer ctx.Close()
	port := max(l.Port, 1)
	if l.GIDIndex >= 0 {
		return ctx.QueryGID(port, l.GIDIndex)
	}
	c, err := bench.SelectGID(ctx, port, l.GIDRule)
	return c.Entry, err
}

// isTerminal reports whether w is a terminal, where a progress line helps:
// a file that answers the terminal's ioctl, not any character device
// (/dev/null is one).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progressLine returns a Progress callback that redraws one line on w.
func progressLine(w io.Writer) func(size int, done, total uint64) {
	return func(size int, done, total uint64) {
		if total > 0 {
			fmt.Fprintf(w, "\r %d bytes: %d of %d messages (%d%%)\033[K", size, done, total, done*100/max(total, 1))
		} else {
			fmt.Fprintf(w, "\r %d bytes: %d messages\033[K", size, done)
		}
	}
}

// isIPv4 reports whether s is an IPv4 address (or one mapped into IPv6).
func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Unmap().Is4()
}

// readPayload reads --payload_file_path's file and parses it with
// parsePayload.
func readPayload(path string, max int) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("--payload_file_path: %v", err)
	}
	p, err := parsePayload(string(text), max)
	if err != nil {
		return nil, usageErrorf("--payload_file_path %s: %v", path, err)
	}
	return p, nil
}

// mtuNote says on w when a client's -m is over what the server offers,
// m (its port's active MTU, or less where the netdev of the test's GID
// carries less: bench's ServerMTU): the client's own check (fitMTU) saw
// its side only.
func mtuNote(w io.Writer, s exchange.TestSpec, m bench.MTULimit) {
	if s.MTU != 0 && s.MTU > m.MTU {
		fmt.Fprintf(w, "gorperf: the client's -m %d is over %s: the path MTU is at most %d\n", s.MTU.Bytes(), strings.Replace(mtuSource(m), "the port's", "this port's", 1), m.MTU.Bytes())
	}
}

// stopWords is how a run whose context, ctx, a signal ended was stopped,
// in the words its peer is told (bench.StopWords): "stopped (SIGTERM)",
// "interrupted (Ctrl-C)"; "" where ctx has not ended.
func stopWords(ctx context.Context) string {
	if ctx.Err() == nil {
		return ""
	}
	return bench.StopWords(ctx)
}
