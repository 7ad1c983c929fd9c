//go:build linux && cgo

package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

type serveOptions struct {
	test        testOptions
	maxMemory   uint64
	maxQPs      uint16
	maxSize     uint32
	maxDuration uint32

	served, failed int // tests run, and those of them that failed

	// Each test's rows are printed as its sizes end, as a server for
	// one test prints them (rowStream): admitted is the test Serve is
	// about to run (Local.Admit), and rows the running test's stream,
	// started at its header and ended by done. They are set and read on
	// the goroutines that run the test and on Serve's, under mu.
	mu       sync.Mutex
	admitted exchange.TestSpec
	// noted: Admit has seen the test (admitted holds it).
	noted bool
	rows  *rowStream
	// An infinite run's intervals are printed as they end, under a
	// column line of their own (columns: printed), as a server for one
	// test prints them; with --json, intervals keeps them for the
	// test's document. They are the running test's, which has had its
	// header and not yet its done (live), under mu.
	live      bool
	columns   bool
	intervals []report.Interval
}

// newCmdServe is `gorperf serve`: a server that runs one client's test
// after another until stopped.
func newCmdServe(f *Factory) *cobra.Command { return newServeCmd(f, &serveOptions{}) }

// newServeCmd is newCmdServe with the options the flags fill, which tests
// read.
func newServeCmd(f *Factory, o *serveOptions) *cobra.Command {
	lim := exchange.DefaultLimits()
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve tests to clients, one after another, until stopped",
		Long: `Wait for gorperf clients and run the test each one asks for, one at a time,
until stopped with Ctrl-C. A failed test is reported and the server goes on.
Clients that come while a test runs wait their turns, first come first served
(up to 64), and are told how many tests come before theirs. The limits bound
what a client can make this host allocate and register, and with
--max-duration how long its test may hold the server. A test's parameters
(-s, -n, -D, -q, -c, -b, --threads, ...) come from each client's command line:
serve takes none of them.

After a test over rdma_cm (-R), librdmacm keeps serve's device (-d) open until
serve exits, and no other device. On soft-RoCE (rxe) and siw, whose drivers
cannot take a device back from a process, "rdma link delete" of that device, or
"rmmod rdma_rxe", waits until serve exits: stop serve first. Hardware drivers
that can (mlx5, say) are not held up.`,
		Example: "  gorperf serve -d mlx5_0 --max-memory 1073741824",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveRun(cmd, f, o)
		},
	}
	fl := cmd.Flags()
	addPortFlags(fl, &o.test)
	fl.IntVarP(&o.test.Port, "port", "p", exchange.DefaultPort, "TCP port to listen on")
	addLocalQPFlags(fl, &o.test)
	addLocalMemoryFlags(fl, &o.test)
	addLocalCPUFlags(fl, &o.test)
	addRateFlags(fl, &o.test)
	addGroupFlag(fl, &o.test)
	fl.IntVar(&o.test.Idle, "peer-timeout", 10, "seconds without progress, or without a word on the control connection (a stopped client), before a client is declared gone")
	fl.BoolVar(&o.test.JSON, "json", false, "print each test's result, or its failure, as a JSON document on one line of its own (JSON Lines), its client's address in peer_addr")
	addLocalReportFlags(fl, &o.test)
	fl.Uint64Var(&o.maxMemory, "max-memory", lim.MaxMemory, "most bytes one test may register")
	fl.Uint16Var(&o.maxQPs, "max-qps", lim.MaxQPs, "most QPs one test may create")
	fl.Uint32Var(&o.maxSize, "max-size", lim.MaxMsgSize, "largest message size a test may use")
	fl.Uint32Var(&o.maxDuration, "max-duration", lim.MaxDuration, "most seconds a test may run by the clock (-D, on each size of an -a sweep together): a test of a duration over it, and any --run_infinitely, is refused, and a test of -n iterations is stopped once it has run that long, its client told why (0: no limit)")
	fl.SetNormalizeFunc(serveNames) // the tests' spellings
	refuseRepeats(fl)
	return cmd
}

func serveRun(cmd *cobra.Command, f *Factory, o *serveOptions) error {
	bench.Tool = "gorperf " + Version
	o.test.jsonLines = true // a document a test
	if err := checkPeerTimeout(o.test.Idle); err != nil {
		return err
	}
	if err := o.test.checkPorts(); err != nil {
		return err
	}
	l, err := o.test.local()
	if err != nil {
		return err
	}
	if err := o.test.place(); err != nil {
		return err
	}
	l.ThreadCPUs = o.test.threadCPUs()
	lim := o.limits()
	if err := bench.Check(l); err != nil {
		return err
	}
	ln, err := net.Listen(o.test.controlNetwork(), net.JoinHostPort(o.test.BindIP, strconv.Itoa(o.test.Port)))
	if err != nil {
		return fmt.Errorf("listening for clients: %w", err)
	}
	fmt.Fprintf(f.IO.ErrOut, "gorperf: serving tests on port %d; Ctrl-C stops\n", o.test.Port)
	onHeader := o.streamRows(f, &l)
	ctx := cmd.Context()
	var handed error // the last error Serve gave done
	err = bench.Serve(ctx, ln, l, lim, false, onHeader, func(r *bench.Result, err error) {
		handed = err
		o.done(ctx, f, r, err)
	})
	fmt.Fprintf(f.IO.ErrOut, "gorperf: served %d tests, %d failed\n", o.served, o.failed)
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, handed)) {
		// Stopped by Ctrl-C in a test's set-up (a test of several
		// threads gathering its connections, -R connecting the QPs), or
		// Serve returning the test's outcome, which done reported: a stop
		// as any other, exit status 0, and nothing said twice.
		return nil
	}
	return err
}

// limits are the limits the --max-* flags set on a client's test.
func (o *serveOptions) limits() exchange.Limits {
	lim := exchange.DefaultLimits()
	lim.MaxMemory, lim.MaxQPs, lim.MaxMsgSize, lim.MaxDuration = o.maxMemory, o.maxQPs, o.maxSize, o.maxDuration
	return lim
}

// streamRows sets l to print each test's rows as its sizes end, and an
// infinite run's intervals as they end, as a server for one test does,
// and returns the onHeader that prints the test's header (not with
// --json, whose document comes at the end) and starts a stream of its
// rows, fresh for each test: the test comes from its client, and a
// test's columns are not the one before's. A test of several threads'
// rows are their sums (bench's SizeDone); an infinite run's none
// (rowStream), but its intervals (bench's Interval, called only in an
// infinite run, on a side that counts messages). A test that fails
// before its header has no stream, and prints no rows.
func (o *serveOptions) streamRows(f *Factory, l *bench.Local) func(report.Header) {
	l.Admit = func(s exchange.TestSpec) error {
		// Called on each connection of a test of several threads:
		// the same test but for the QPs, which the rows do not show.
		o.mu.Lock()
		o.admitted, o.noted = s, true
		o.mu.Unlock()
		return nil
	}
	if !o.test.JSON {
		// Once a test, by its first thread, once its session is open:
		// its GID may be the control connection's, not the rule's.
		l.ServerMTU = func(s exchange.TestSpec, m bench.MTULimit) {
			if s.Thread == 0 {
				mtuNote(f.IO.ErrOut, s, m)
			}
		}
	}
	l.SizeDone = func(s bench.SizeResult) {
		o.mu.Lock()
		rows := o.rows
		o.mu.Unlock()
		if rows != nil {
			rows.size(s)
		}
	}
	l.Interval = func(elapsed time.Duration, b stats.Bandwidth) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.live {
			return // no test's: not printed, nor kept for the next
		}
		if o.test.JSON {
			o.intervals = append(o.intervals, report.IntervalFromBandwidth(elapsed, b))
			return
		}
		if !o.columns {
			report.WriteBWHeader(f.IO.Out, o.test.Gbits)
			o.columns = true
		}
		report.WriteIntervalRow(f.IO.Out, b, o.test.Gbits)
	}
	return func(h report.Header) {
		o.mu.Lock()
		o.live, o.columns, o.intervals = true, false, nil
		o.mu.Unlock()
		if o.test.JSON {
			return
		}
		o.test.placeHeader(&h)
		report.WriteHeader(f.IO.Out, h)
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.rows = o.test.newRowStream(f.IO.Out); o.rows != nil {
			o.rows.start(o.admitted)
		}
	}
}

// done reports what Serve finished: a test's result, counted as failed
// if it failed or finish finds it did (a --validate mismatch); a test
// that failed before it had one (refused by --max-*, a set-up that
// failed on this side, a --threads test whose connections did not all
// come), counted as failed too; or a connection that was no test (not a
// gorperf client, or one that gave up before asking), not counted. Once
// ctx has ended (Ctrl-C, which stops
// serve), an error without a result is the stop cutting a test's set-up
// or a greeting short, not a failure: it says nothing; but for a client
// that gave up before it asked for its test (a *bench.GaveUpError), whose
// reason came whole before the stop and is reported as any other time
// (Serve's loop hands done what its lobby heard before the stop, after
// it too).
func (o *serveOptions) done(ctx context.Context, f *Factory, r *bench.Result, err error) {
	// The test's rows printed so far, which finish does not print
	// again; the next test starts its own.
	o.mu.Lock()
	admitted, known := o.admitted, o.noted // the test of a failure without a result, where Admit saw it
	o.test.rows, o.rows, o.admitted, o.noted = o.rows, nil, exchange.TestSpec{}, false
	o.test.intervals, o.intervals, o.live = o.intervals, nil, false
	o.mu.Unlock()
	defer func() { o.test.rows, o.test.intervals = nil, nil }()
	if r == nil && err != nil && ctx.Err() != nil && !errors.As(err, new(*bench.GaveUpError)) {
		return
	}
	if r != nil {
		o.served++
		o.test.Test = r.Spec.Test
		o.test.stopped = stopWords(ctx)
		err = o.test.finish(f, "server", r, err)
		if errors.As(err, new(*silentError)) {
			return // said already: a test stopped by Ctrl-C, which ends the server too
		}
		if err != nil && !errors.As(err, new(*peerStoppedError)) {
			// A test that its client's stop cut short is said, but
			// served: the client's run failed, not this server.
			o.failed++
		}
	} else if err != nil && !bench.KeepsWaiting(err) {
		o.served++
		o.failed++
		if o.test.JSON {
			// A document for each test, also one that failed before its
			// result, as a server for one test writes (fail).
			// A test refused (by --max-* or Admit) names the test it
			// asked for, which the server never took, with its own code.
			r := report.Result{Version: Version, Role: "server", EndTime: report.FormatTime(f.Now()), Device: o.test.Device, Port: o.test.IBPort,
				GIDIndex: o.test.GIDIndex, PeerAddr: clientAddr(err),
				Error: &report.Error{Code: errorCode(err), Message: err.Error()}}
			var refused *bench.RefusedError
			switch {
			case errors.As(err, &refused):
				r.Test, r.Error.Code = refused.Spec.Test.String(), "refused"
			case known:
				r.Test = admitted.Test.String()
			}
			o.test.writeJSON(f.IO.Out, r)
		}
	}
	if r != nil && r.Peer != "" {
		// What finish found (bytes that did not validate, the client
		// stopped) names the client, as Serve's own errors do.
		err = bench.NameClient(r.Peer, err)
	}
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "gorperf: %v\n", err)
	}
}

// clientAddr is the address of the client that err, a served test's
// failure, names, or "" where it names none: a client that gave up
// before it asked for its test (a *bench.GaveUpError) by the address
// it holds, whose text says "client ADDR gave up ..."; any other by
// Serve's "client ADDR: " (bench.NameClient), where ADDR is an IP
// address and a numeric port (an IPv6 one in brackets, its colons
// without a space).
func clientAddr(err error) string {
	if gave := (*bench.GaveUpError)(nil); errors.As(err, &gave) {
		return gave.Addr
	}
	rest, ok := strings.CutPrefix(err.Error(), "client ")
	if !ok {
		return ""
	}
	addr, _, ok := strings.Cut(rest, ": ")
	if !ok {
		return ""
	}
	if _, perr := netip.ParseAddrPort(addr); perr != nil {
		return ""
	}
	return addr
}
