//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/report"
)

// TestJSONUsageErrorKeepsFlags: the JSON document of a test whose
// command line is wrong carries the device, port and GID index given
// before the mistake, its role (TestJSONErrorRole), a port not given as 1,
// -i's default, as a run's document and one that failed later have it
// (TestJSONFailureKeepsFlags), and a GID index not given as -1, none
// chosen; it had "device": "", "port": 0 and "gid_index": 0, an index
// that was not asked for.
func TestJSONUsageErrorKeepsFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		role   string
		device string
		port   int
		gid    int
	}{
		{[]string{"write-bw", "-d", "rxe1", "-i", "2", "-x", "abc", "--json", "198.18.0.1"}, "client", "rxe1", 2, -1},
		{[]string{"loopback", "send-lat", "-x", "7", "-s", "x", "--json"}, "loopback", "", 1, 7},
		{[]string{"read-bw", "-x", "0", "-d", "mlx5_0", "--json", "a", "b"}, "client", "mlx5_0", 1, 0},
		{[]string{"write-bw", "-s", "x", "-i", "2", "--json"}, "server", "", 1, -1}, // -i after the mistake: not read
	} {
		r, errOut, ok := usageDocument(t, tc.args)
		if !ok {
			continue
		}
		if r.Role != tc.role || r.Device != tc.device || r.Port != tc.port || r.GIDIndex != tc.gid {
			t.Errorf("%q: role %q, device %q, port %d, gid_index %d; want %q, %q, %d, %d", tc.args,
				r.Role, r.Device, r.Port, r.GIDIndex, tc.role, tc.device, tc.port, tc.gid)
		}
		if !strings.Contains(errOut, r.Error.Message) {
			t.Errorf("%q: the document's error %q is not the one said:\n%s", tc.args, r.Error.Message, errOut)
		}
	}
}

// usageDocument runs gorperf with args, which --json and a usage error,
// and returns its JSON document and what it said on stderr; it fails the
// test, and returns false, where the exit status is not 2 or stdout not
// one document of the code "usage".
func usageDocument(t *testing.T, args []string) (report.Result, string, bool) {
	t.Helper()
	f, out, errOut := newTestFactory(nil, nil)
	code := run(context.Background(), f, args)
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != exitUsage || r.Error == nil || r.Error.Code != "usage" {
		t.Errorf("%q: exit %d, %v:\n%s%s", args, code, err, out, errOut)
		return r, errOut.String(), false
	}
	return r, errOut.String(), true
}
