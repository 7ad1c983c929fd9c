//go:build linux && cgo

package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestCheckBuffersTotal: a server for one test that refuses a test of
// several threads for its buffers gives their total in GiB, the least
// test's ("at least") where the connection cannot know the whole test,
// as it does a test of one thread's; it gave a region's bytes and a
// count of QPs, and no total.
func TestCheckBuffersTotal(t *testing.T) {
	const gib = 1 << 30
	base, _, err := parseTest(t, exchange.WriteBW, "-s", "1073741824", "-n", "5", "-q", "4", "--threads", "4", "host")
	if err != nil {
		t.Fatal(err)
	}
	conn := func(thread, qps uint16) exchange.TestSpec {
		s := base
		s.Thread, s.NumQPs, s.Group = thread, qps, 7
		return s
	}
	for _, tc := range []struct {
		spec exchange.TestSpec
		mem  uint64
		want string
	}{
		// 4 threads of 1 QP, 2 regions of 1 GiB + 64 bytes each: 8.0 GiB.
		{conn(0, 1), 8 * gib, "a test of 4 threads of 4 QPs (thread 0 has 1) has buffers of 8.0 GiB, 2 regions of 1073741888 bytes a QP, more than half of this host's memory (8.0 GiB), which holds those of 1 QPs"},
		// Thread 1 of 2 QPs: a test of at least 6 QPs (2, 2, 1, 1).
		{conn(1, 2), 16 * gib, "a test of 4 threads of at least 6 QPs (thread 1 has 2) has buffers of at least 12.0 GiB"},
		{func() exchange.TestSpec { s := base; s.Threads, s.NumQPs = 1, 3; return s }(), 8 * gib,
			"the test's buffers, 6.0 GiB, are more than half of this host's memory (8.0 GiB)"},
	} {
		err := checkBuffers(tc.spec, tc.mem)
		if !errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("thread %d of %d QPs, %d GiB: %v; want %q", tc.spec.Thread, tc.spec.NumQPs, tc.mem/gib, err, tc.want)
		}
	}
	if err := checkBuffers(conn(0, 1), 17*gib); err != nil {
		t.Errorf("8 GiB of buffers in 17 GiB: %v", err)
	}
}
