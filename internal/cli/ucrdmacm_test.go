//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/report"
)

// TestUCRdmaCMIsUsage: -c UC with -R is a mistake of the command line,
// as -c DC is: exit status 2 and the JSON code "usage", on a client and
// a server alike, with the way out. It exited 1 with the code
// "unsupported" and a message ending ": unsupported operation", the
// code of a device that lacks a feature.
func TestUCRdmaCMIsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"write-bw", "--json", "-c", "UC", "-R", "198.18.0.1"},
		{"send-bw", "--json", "-R", "-c", "uc"},
		{"loopback", "write-bw", "--json", "-c", "UC", "-R"},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, args)
		var r report.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Error == nil {
			t.Fatalf("%q: exit %d, %v:\n%s%s", args, code, err, out, errOut)
		}
		const want = "-R makes RC or UD connections; -c UC through rdma_cm is not supported: leave out -R, or give -c RC"
		if code != exitUsage || r.Error.Code != "usage" || r.Error.Message != want {
			t.Errorf("%q: exit %d, code %q, message %q; want %d, usage, %q", args, code, r.Error.Code, r.Error.Message, exitUsage, want)
		}
		if !strings.Contains(errOut.String(), "Run 'gorperf ") {
			t.Errorf("%q: no pointer to --help after a usage error:\n%s", args, errOut)
		}
	}
}
