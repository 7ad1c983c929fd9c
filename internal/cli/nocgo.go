//go:build !(linux && cgo)

package cli

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gorperf/gorperf/internal/exchange"
)

// Built without cgo, or not for Linux, gorperf has no RDMA bindings: its
// commands are there, so that a user sees what they are, and each says
// why it cannot run instead of the build failing.

// errNoBindings is what every RDMA command of such a build returns.
var errNoBindings = fmt.Errorf("this gorperf, built %s, has no RDMA bindings: build it on Linux with CGO_ENABLED=1 and rdma-core's libibverbs-dev and librdmacm-dev: %w",
	buildKind(), errors.ErrUnsupported)

func buildKind() string {
	if runtime.GOOS != "linux" {
		return "for " + runtime.GOOS + "/" + runtime.GOARCH + " (the bindings are Linux's)"
	}
	return "without cgo (CGO_ENABLED=0)"
}

func gatherDevices(string) ([]deviceReport, error) { return nil, errNoBindings }

// unavailable is a command that only explains errNoBindings, or, asked
// for its help (-h, --help, before any --), shows it, as the root's help
// says a command does: its flags are not parsed, so cobra does not.
func unavailable(use, short string) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if flagGiven(args, "-h", "--help") {
				return cmd.Help()
			}
			return errNoBindings
		}}
	// Parsed by no one: it is there for run, which writes the error
	// document that --json promises for a command that has the flag.
	c.Flags().Bool("json", false, "print the result as JSON")
	return c
}

func newCmdTests(*Factory) []*cobra.Command {
	var cmds []*cobra.Command
	for t := exchange.WriteBW; t <= exchange.AtomicLat; t++ {
		c := unavailable(strings.ReplaceAll(t.String(), "_", "-")+" [flags] [server]",
			fmt.Sprintf("perftest's ib_%s (needs a Linux build with cgo)", t))
		c.Aliases = []string{t.String(), "ib_" + t.String()}
		cmds = append(cmds, c)
	}
	return cmds
}

func newCmdLoopback(*Factory) *cobra.Command {
	return unavailable("loopback <test> [flags]", "Run a test with server and client in this process (needs a Linux build with cgo)")
}

func newCmdServe(*Factory) *cobra.Command {
	return unavailable("serve [flags]", "Serve one client's test after another (needs a Linux build with cgo)")
}

// flagError is a flag the command cannot parse: a usage error. (The
// RDMA commands here parse none.)
func flagError(_ *cobra.Command, err error) error { return &usageError{err} }

// stdoutClosedAtStart cannot tell, without cgo, whether gorperf started
// with its standard output closed: Go's runtime has put /dev/null there
// before any Go code runs (stdout_cgo.go looks first, from C).
func stdoutClosedAtStart() bool { return false }
