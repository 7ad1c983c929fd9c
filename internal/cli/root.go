// Package cli is gorperf's command line: cobra wiring, one file a
// subcommand. Each subcommand has an options struct, a newCmdX(f, runF)
// constructor for the wiring and an xRun(opts) function for the work, which
// writes only to the Factory's streams so that tests can capture it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// Version is gorperf's version, set at link time with
// -ldflags "-X github.com/gorperf/gorperf/internal/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed
	exitUsage = 2 // bad flags or arguments
	exitLimit = 3 // a test ran and missed a limit (-w, -y, --limit_lat, --limit_p99)
	// exitInterrupted is a run stopped by Ctrl-C (SIGINT), as a shell
	// reports a process that SIGINT ended; one that SIGTERM stopped
	// exits 143, 128 and the signal's number, as perftest's does, which
	// SIGTERM kills (stoppedStatus).
	exitInterrupted = 130
)

// IOStreams are the streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory holds what commands need from the outside world, so tests can
// swap it.
type Factory struct {
	IO *IOStreams
	// Devices gathers the RDMA devices to report on: the one named, or
	// all when name is "".
	Devices func(name string) ([]deviceReport, error)
	// Root is the directory that /dev, /sys and /proc are found under: "/"
	// except in tests.
	Root string
	// Now is the time of day that the JSON's end_time gives: time.Now
	// except in tests.
	Now func() time.Time

	profile *os.File // the open --cpuprofile file, if any
}

func newFactory() *Factory {
	return &Factory{
		IO:      &IOStreams{In: os.Stdin, Out: stdout(), ErrOut: os.Stderr},
		Devices: gatherDevices,
		Root:    "/",
		Now:     time.Now,
	}
}

// errStdoutClosed is the error of every write to a standard output that
// was closed when gorperf started (gorperf ... >&-): EBADF, as a C
// program's writes get.
var errStdoutClosed = fmt.Errorf("standard output was closed at start (>&-): %w", syscall.EBADF)

// closedOutput is a standard output that was closed when gorperf started.
type closedOutput struct{}

func (closedOutput) Write([]byte) (int, error) { return 0, errStdoutClosed }

// stdout is where the commands' output goes: os.Stdout, or, where gorperf
// started with it closed, closedOutput, so that the output fails as it
// would to /dev/full. Go's runtime puts /dev/null on a closed stdout, and
// the report went there, exit status 0.
func stdout() io.Writer {
	if stdoutClosedAtStart() {
		return closedOutput{}
	}
	return os.Stdout
}

// Main runs gorperf with os.Args and returns its exit status.
func Main() int {
	runtime.GOMAXPROCS(minProcs(os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0)))
	ctx, stop := notifyContext(context.Background()) // its cause names the signal
	defer stop()
	// The first Ctrl-C (or TERM) stops the run, which then may wait a
	// while: up to 5 s for the peer's figures, or for a peer to answer.
	// Catching no more signals from then on lets a second one kill
	// gorperf at once, by the signal's default action, as it does
	// perftest; caught, it would be lost.
	context.AfterFunc(ctx, stop)
	return run(ctx, newFactory(), invokedAs(os.Args[0], os.Args[1:]))
}

// invokedAs is the command line that gorperf runs when started as
// argv0 with args: gorperf's own, or, under a perftest name such as
// ib_write_bw (a symbolic link to gorperf), that test's, so that a
// script that runs perftest's tools runs gorperf's.
func invokedAs(argv0 string, args []string) []string {
	base := filepath.Base(argv0)
	if _, err := exchange.ParseTest(base); err == nil && strings.HasPrefix(base, "ib_") {
		return append([]string{base}, args...)
	}
	return args
}

// minProcs is the GOMAXPROCS gorperf runs with, given the GOMAXPROCS
// environment variable and the runtime's choice: at least 2, unless the
// user set it. Pinned to one CPU (taskset), Go picks 1; then no P is idle
// while the measuring loop is in a cgo call, so the runtime's monitor
// takes the loop's P away from any call past its 20 µs tick and then
// wakes every 20 µs, which cost 2-byte send_lat 28 µs against 23 µs, and
// with -e more than doubled it (docs/performance.md, item 20). A second P
// stays idle and lets each call keep its own.
func minProcs(env string, cur int) int {
	if env != "" || cur >= 2 {
		return cur
	}
	return 2
}

// run executes the command line args and maps its error to an exit status.
func run(ctx context.Context, f *Factory, args []string) int {
	out := &countingWriter{w: f.IO.Out}
	f.IO.Out = out
	cmd := newCmdRoot(f)
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if perr := f.stopProfile(); err == nil {
		err = perr
	}
	if err == nil && out.err != nil {
		// What the command printed did not all arrive (a full disk,
		// /dev/full): not a success. A pipe whose reader is gone (| head)
		// comes to no error here: writing to it on stdout, gorperf gets
		// SIGPIPE, which Go's runtime lets kill it, exit status 141, as
		// it does a C tool.
		err = fmt.Errorf("writing the output: %w", out.err)
	}
	code := exitCode(err)
	if code == exitInterrupted {
		code = stoppedStatus(ctx)
	}
	c, rest, ferr := cmd.Find(args)
	var cfs *pflag.FlagSet // the flags of the command found, which name --json's prefixes
	if ferr == nil {
		cfs = c.Flags()
	}
	if err != nil && out.n == 0 && wantsJSON(cfs, args) {
		// --json promises one valid document on every path, also when the
		// command line itself was wrong and no command ran: gorperf
		// devices's own, or a test's, also where the command or
		// loopback's test was unknown.
		switch {
		case ferr == nil && c.Parent() == cmd && c.Name() == "devices":
			writeDevicesJSONError(out, err)
		case ferr == nil && c.Parent() == cmd && c.Name() == "doctor":
			writeDoctorJSONError(out, err)
		case ferr == nil && c.Flags().Lookup("json") == nil && c != cmd && !(c.Parent() == cmd && c.Name() == "loopback"):
			// A command without --json (completion, help): its
			// error is only the usage error on stderr. (gorperf or
			// loopback found is a command or test that is unknown:
			// the usage error's document.)
		default:
			if ferr != nil {
				c = nil
			}
			writeJSONError(out, c, args, rest, err)
		}
	}
	if err != nil && !errors.As(err, new(*silentError)) {
		fmt.Fprintf(f.IO.ErrOut, "gorperf: %v\n", err)
		if code == exitUsage {
			fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", commandPath(cmd, args))
		}
	}
	if err != nil && out.err != nil && !errors.Is(err, out.err) {
		// A run that failed otherwise, or that Ctrl-C stopped after
		// its results (exit status 130, "the results above are what
		// was measured"), keeps its exit status, and says that its
		// output was lost too.
		fmt.Fprintf(f.IO.ErrOut, "gorperf: writing the output: %v\n", out.err)
	}
	return code
}

// commandPath names the (sub)command that args select, for the usage hint.
func commandPath(root *cobra.Command, args []string) string {
	if c, _, err := root.Find(args); err == nil && c != nil {
		return c.CommandPath()
	}
	return root.Name()
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// silentError carries an exit status for a failure the command has
// already reported on its output, such as a doctor check that failed.
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// interruptedError is a run that Ctrl-C or SIGTERM stopped before it
// had a result to show: exit status 130 (143 for SIGTERM, stoppedStatus),
// as a run interrupted after its results, and the JSON code
// "interrupted" (it is a context.Canceled).
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return context.Canceled }

// stoppedStatus is the exit status of a run that a signal stopped: 128
// and the number of the signal that ended ctx (its cause a *stopSignal),
// as a shell reports a process that the signal killed, 143 for SIGTERM;
// 130, Ctrl-C's, where no signal did (a test's own context).
func stoppedStatus(ctx context.Context) int {
	var s *stopSignal
	if errors.As(context.Cause(ctx), &s) {
		if n, ok := s.sig.(syscall.Signal); ok && n > 0 {
			return 128 + int(n)
		}
	}
	return exitInterrupted
}

// exitCode maps an error from a command to gorperf's exit status.
func exitCode(err error) int {
	var ue *usageError
	var se *silentError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &se):
		return se.code
	case errors.As(err, new(*interruptedError)):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, new(*report.LimitError)):
		return exitLimit
	}
	return exitError
}

// unknownSubcommand is the usage error for name, which is none of cmd's
// subcommands: gorperf's own commands, or loopback's tests, which it
// lists.
func unknownSubcommand(cmd *cobra.Command, name string) error {
	if !cmd.HasParent() {
		// cobra's own suggestions (a typo within two letters, or a
		// prefix) are lost with the Args function that reports this.
		if s := cmd.SuggestionsFor(name); len(s) > 0 {
			return usageErrorf("unknown command %q for %q: did you mean %s?", name, cmd.CommandPath(), strings.Join(s, " or "))
		}
		return usageErrorf("unknown command %q for %q", name, cmd.CommandPath())
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usageErrorf("unknown test %q for %q: want one of %s", name, cmd.CommandPath(), strings.Join(names, ", "))
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

func newCmdRoot(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gorperf",
		Short: "RDMA bandwidth and latency tests, and a guide to the host's RDMA set-up",
		Long: `gorperf measures RDMA bandwidth and latency as perftest does, and explains
the RDMA devices of this host and what stands in the way of using them.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// cobra's default, which SuggestionsFor reads unset as 0.
		SuggestionsMinimumDistance: 2,
		// Without this, cobra reports an unknown subcommand as a plain error.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			v, _ := cmd.Flags().GetBool("version")
			if v2, _ := cmd.Flags().GetBool(cobraVersion); v || v2 {
				fmt.Fprintf(cmd.OutOrStdout(), "gorperf %s\n", Version)
				return nil
			}
			return cmd.Help()
		},
	}
	cmd.SetIn(f.IO.In)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	cmd.SetFlagErrorFunc(flagError)
	// perftest's -V, as every command's (addVersionFlag), where cobra's
	// own (the command's Version) would be -v, which no other command
	// takes, and would print the version before the arguments are
	// checked; -v stays, hidden, so that the help lists one way.
	cmd.Flags().BoolP("version", "V", false, "print gorperf's version and stop")
	cmd.Flags().BoolP(cobraVersion, "v", false, "print gorperf's version, as -V")
	cmd.Flags().MarkHidden(cobraVersion)
	cmd.PersistentFlags().String("cpuprofile", "", "write a Go CPU profile of the whole command to `file` (read it with go tool pprof)")
	cmd.PersistentPreRunE = f.startProfile
	cmd.AddCommand(newCmdDevices(f, nil), newCmdDoctor(f, nil))
	cmd.AddCommand(newCmdTests(f)...)
	cmd.AddCommand(newCmdLoopback(f), newCmdServe(f))
	addVersionFlag(cmd)
	hideNotGiven(cmd)
	return cmd
}

// addVersionFlag gives cmd and its subcommands perftest's -V, --version,
// hidden as the root's -V, where they have no flag of that name (the
// tests have their own): it prints gorperf's version and stops, whatever
// else the command line asks. cobra parses the flags of the command named
// last, so without it -V worked only where that command had it: gorperf
// -V and gorperf write-bw -V did, gorperf devices -V, gorperf -V devices
// and gorperf -V loopback write-bw failed with "unknown shorthand flag".
// A command that parses no flags (a build without the bindings) looks for
// -V or --version among its arguments.
func addVersionFlag(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		addVersionFlag(c)
	}
	if cmd.RunE == nil || cmd.Flags().Lookup("version") != nil || cmd.Flags().ShorthandLookup("V") != nil {
		return
	}
	cmd.Flags().BoolP("version", "V", false, "print gorperf's version and stop")
	cmd.Flags().MarkHidden("version")
	runE := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v, _ := cmd.Flags().GetBool("version")
		if cmd.DisableFlagParsing {
			v = v || flagGiven(args, "-V", "--version")
		}
		if v {
			fmt.Fprintf(cmd.OutOrStdout(), "gorperf %s\n", Version)
			return nil
		}
		return runE(cmd, args)
	}
}

// cobraVersion is the name of the root's hidden -v, the version flag's
// shorthand that cobra gives, which the root's help listed before.
const cobraVersion = "cobra-version"

// hideNotGiven keeps pflag from printing "(default -1)" after the usage
// of cmd's flags, and its subcommands', whose -1 stands for "not given"
// and whose usage says what that means: -x's automatic choice, -u's 14.
// The value is still -1 where the flag is not given; only the help
// changes, which pflag leaves without a default where it reads "0".
func hideNotGiven(cmd *cobra.Command) {
	hide := func(fl *pflag.Flag) {
		if fl.DefValue == "-1" && strings.Contains(fl.Usage, "(default") {
			fl.DefValue = "0"
		}
	}
	cmd.LocalFlags().VisitAll(hide)
	cmd.Flags().VisitAll(hide)
	for _, c := range cmd.Commands() {
		hideNotGiven(c)
	}
}

// countingWriter counts what a command wrote to its output, and keeps
// the first error of a write.
type countingWriter struct {
	w   io.Writer
	n   int
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// flagGiven reports whether one of flags is among args before any --,
// for a command that does not parse its flags (DisableFlagParsing).
func flagGiven(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if slices.Contains(flags, a) {
			return true
		}
	}
	return false
}

// wantsJSON reports whether args ask for --json, in any spelling of true
// that the flag takes (--json, --json=1, =t, =TRUE, …); the last one
// given counts, as the flag's. A long flag's name is taken as fs, the
// flags of the command found, if not nil, normalizes it: a test's or
// serve's --js, a prefix, is --json (perftestNames).
func wantsJSON(fs *pflag.FlagSet, args []string) bool {
	norm := func(name string) string { return name }
	if fs != nil {
		norm = func(name string) string { return string(fs.GetNormalizeFunc()(fs, name)) }
	}
	want := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok || name == "" {
			continue
		}
		name, v, hasValue := strings.Cut(name, "=")
		if norm(name) != "json" {
			continue
		}
		if !hasValue {
			want = true
		} else if b, err := strconv.ParseBool(v); err == nil {
			want = b
		}
	}
	return want
}

// startProfile starts the CPU profile that --cpuprofile asks for.
func (f *Factory) startProfile(cmd *cobra.Command, _ []string) error {
	path, _ := cmd.Flags().GetString("cpuprofile")
	if path == "" {
		return nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	f.profile = pf
	return nil
}

// stopProfile ends a CPU profile started by startProfile, on every path a
// command may leave by.
func (f *Factory) stopProfile() error {
	if f.profile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := f.profile.Close()
	f.profile = nil
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return nil
}
