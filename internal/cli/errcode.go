package cli

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// errorCode is the JSON document's code for err. A peer that was
// interrupted (its *exchange.PeerError matches context.Canceled) is the
// peer's failure, not this side's interruption, and so is a peer that
// closed the control connection without a word (exchange.ErrPeerClosed:
// it exited or was killed) or went silent (*exchange.SilenceError: it
// was stopped, or its host or the network to it is gone).
func errorCode(err error) string {
	var ue *usageError
	var pe *exchange.PeerError
	peer := errors.As(err, &pe) || errors.Is(err, exchange.ErrPeerClosed) || errors.As(err, new(*exchange.SilenceError))
	switch {
	case errors.As(err, &ue):
		return "usage"
	case errors.Is(err, errors.ErrUnsupported):
		return "unsupported"
	case errors.Is(err, context.Canceled) && !peer:
		return "interrupted"
	case errors.As(err, new(*report.LimitError)):
		return "limit"
	case peer:
		return "peer"
	}
	return "failed"
}

// writeJSONError writes the JSON document of a command that failed before
// it ran, naming the test when args name one. cmd, if not nil, is the
// command args select, its flags read up to the mistake: the device,
// port and GID index given before it are the document's, a port not
// given is 1, -i's default, as a run's and fail's, and a GID index not
// given is -1, none chosen, as a run's that chose none (0 would name the
// first). rest is args less the names of cmd and its parents (cobra's
// Find): its role is a run's, loopback's, serve's "server", and a test's
// "client" where rest holds a server address, else "server", as fail
// names them once the flags are parsed.
func writeJSONError(w io.Writer, cmd *cobra.Command, args, rest []string, err error) {
	r := report.Result{Version: Version, GIDIndex: -1, Error: &report.Error{Code: errorCode(err), Message: err.Error()}}
	for _, a := range args {
		if t, perr := exchange.ParseTest(strings.ReplaceAll(a, "-", "_")); perr == nil {
			r.Test = t.String()
			r.Port = 1 // -i's default, as a run's and fail's document say
			break
		}
	}
	if cmd != nil {
		r.Role = role(cmd, rest)
		fs := cmd.Flags()
		if fs.Changed("ib-dev") {
			r.Device, _ = fs.GetString("ib-dev")
		}
		if fs.Lookup("ib-port") != nil {
			r.Port, _ = fs.GetInt("ib-port") // given, or the default, as a run's
		}
		if fs.Changed("gid-index") {
			r.GIDIndex, _ = fs.GetInt("gid-index")
		}
		if cmd.Name() == "serve" {
			report.WriteJSONLine(w, r) // serve's documents are JSON Lines
			return
		}
	}
	report.WriteJSON(w, r)
}

// role is the role of cmd's run, as the JSON document names it, given
// rest, its command line less the commands' names: "loopback" for a test
// of loopback, "server" for serve, and for a test "client" where rest
// holds an argument, the server's address, and "server" where it holds
// none; "" for any other command, and where cmd parses no flags (a build
// without the bindings), which cannot tell a flag's value from an
// argument.
func role(cmd *cobra.Command, rest []string) string {
	switch {
	case cmd.HasParent() && cmd.Parent().Name() == "loopback", cmd.Name() == "loopback" && cmd.HasSubCommands():
		return "loopback" // a test of loopback, or an unknown one
	case cmd.DisableFlagParsing:
		return ""
	case cmd.Name() == "serve":
		return "server"
	}
	if _, err := exchange.ParseTest(strings.ReplaceAll(cmd.Name(), "-", "_")); err != nil {
		return ""
	}
	if hasArgument(cmd.Flags(), rest) {
		return "client"
	}
	return "server"
}

// hasArgument reports whether args hold an argument that is no flag nor
// a flag's value, as fs would parse them: where parsing stopped at a
// mistake, the arguments after it are not parsed, and a test's server
// address is often the last word. A flag that fs lacks is taken to have
// no value, so the word after it is an argument: perftest's server
// address follows its flags (write-bw --bogus 198.18.0.1 is a client's).
func hasArgument(fs *pflag.FlagSet, args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return i+1 < len(args)
		case strings.HasPrefix(a, "--"):
			name, _, inline := strings.Cut(a[2:], "=")
			if fl := fs.Lookup(name); fl != nil && !inline && fl.NoOptDefVal == "" {
				i++ // its value
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// Letters, the first that takes a value taking the rest
			// of the word, or the next word where it is the last.
			for j := 1; j < len(a); j++ {
				fl := fs.ShorthandLookup(a[j : j+1])
				if fl == nil || fl.NoOptDefVal != "" {
					continue
				}
				if j == len(a)-1 {
					i++
				}
				break
			}
		default:
			return true
		}
	}
	return false
}

// writeDevicesJSONError writes the document of gorperf devices --json
// that failed: no devices, and the error as a test's document has it.
func writeDevicesJSONError(w io.Writer, err error) error {
	return encodeIndented(w, devicesDoc{SchemaVersion: devicesSchemaVersion, Tool: report.Tool, Version: Version, Devices: []deviceReport{},
		Error: &report.Error{Code: errorCode(err), Message: err.Error()}})
}
