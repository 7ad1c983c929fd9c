//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/report"
)

// TestJSONFailureKeepsFlags: the JSON document of a test that failed
// before it had a result (here -x 99, an empty entry of rxe1's GID table,
// or no device at all) names the role, device, port and GID index its
// command line gave; it had "role": "", "device": "", "port": 0 and
// "gid_index": 0, an index that was not asked for.
func TestJSONFailureKeepsFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args         []string
		role, device string
		port, gid    int
	}{
		{[]string{"write-bw", "-d", "rxe1", "-x", "99", "-p", freePort(t), "--json", "127.0.0.1"}, "client", "rxe1", 1, 99},
		{[]string{"loopback", "read-lat", "-d", "nonesuch0", "-i", "2", "--json"}, "loopback", "nonesuch0", 2, -1},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		code := run(ctx, f, tc.args)
		var r report.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != exitError || r.Error == nil {
			t.Errorf("%q: exit %d, %v:\n%s%s", tc.args, code, err, out, errOut)
			continue
		}
		if r.Role != tc.role || r.Device != tc.device || r.Port != tc.port || r.GIDIndex != tc.gid {
			t.Errorf("%q: role %q, device %q, port %d, gid_index %d; want %q, %q, %d, %d", tc.args,
				r.Role, r.Device, r.Port, r.GIDIndex, tc.role, tc.device, tc.port, tc.gid)
		}
	}
}
