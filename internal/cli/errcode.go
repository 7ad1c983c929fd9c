package cli

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// errorCode is the JSON document's code for err. A peer that was
// interrupted (its *exchange.PeerError matches context.Canceled) is the
// peer's failure, not this side's interruption.
func errorCode(err error) string {
	var ue *usageError
	var pe *exchange.PeerError
	peer := errors.As(err, &pe)
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
// first).
func writeJSONError(w io.Writer, cmd *cobra.Command, args []string, err error) {
	r := report.Result{Version: Version, GIDIndex: -1, Error: &report.Error{Code: errorCode(err), Message: err.Error()}}
	for _, a := range args {
		if t, perr := exchange.ParseTest(strings.ReplaceAll(a, "-", "_")); perr == nil {
			r.Test = t.String()
			r.Port = 1 // -i's default, as a run's and fail's document say
			break
		}
	}
	if cmd != nil {
		if cmd.HasParent() && cmd.Parent().Name() == "loopback" {
			r.Role = "loopback"
		}
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
	}
	report.WriteJSON(w, r)
}

// writeDevicesJSONError writes the document of gorperf devices --json
// that failed: no devices, and the error as a test's document has it.
func writeDevicesJSONError(w io.Writer, err error) error {
	return encodeIndented(w, devicesDoc{SchemaVersion: devicesSchemaVersion, Devices: []deviceReport{},
		Error: &report.Error{Code: errorCode(err), Message: err.Error()}})
}
