//go:build linux && cgo

package cli

import (
	"context"
	"strings"
	"testing"
)

// TestPerftestNames: perftest's names of the tests run gorperf's, given
// as the command or as the name gorperf was started under (invokedAs).
// (A build without the bindings takes them too: TestNoBindings.)
func TestPerftestNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"write_bw", "--help"}, "RDMA_Write BW Test, as perftest's ib_write_bw"},
		{[]string{"ib_atomic_lat", "--help"}, "Atomic Latency Test, as perftest's ib_atomic_lat"},
		{invokedAs("/opt/ib_read_lat", []string{"--help"}), "RDMA_Read Latency Test, as perftest's ib_read_lat"},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, tc.args); code != 0 || !strings.Contains(out.String(), tc.want) || errOut.Len() > 0 {
			t.Errorf("%q: exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.want, out, errOut)
		}
	}
}
