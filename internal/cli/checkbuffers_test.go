//go:build linux && cgo

package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestCheckBuffersThreadShares: a server for one test bounds a test of
// several threads by all its QPs' buffers, where each connection holds
// its thread's share. -q 63 --threads 5 shares 13, 13, 13, 12 and 12
// QPs: on a host whose half holds the buffers of 63 QPs every connection
// passes; checkBuffers counted thread 0's 13 QPs five times, 65, and
// refused the test. With 64 QPs, or a host that holds 62, a connection
// of the test is refused, as is a test of one thread of as many QPs.
func TestCheckBuffersThreadShares(t *testing.T) {
	base, _, err := parseTest(t, exchange.WriteBW, "-s", "1048576", "-q", "63", "--threads", "5", "host")
	if err != nil {
		t.Fatal(err)
	}
	perQP := base.BufferLen() / uint64(base.NumQPs)
	holds := func(qps uint64) uint64 { return 2*qps*perQP + perQP } // half of it holds qps QPs' buffers, not one more
	// conns are the connections' specs of a test of shares, as a client
	// shares its QPs out, in a group of the client's.
	conns := func(shares ...uint16) []exchange.TestSpec {
		specs := make([]exchange.TestSpec, len(shares))
		for i, n := range shares {
			s := base
			s.Threads, s.Thread, s.NumQPs, s.Group = uint16(len(shares)), uint16(i), n, 7
			specs[i] = s
		}
		return specs
	}
	one := func(qps uint16) []exchange.TestSpec {
		s := base
		s.Threads, s.NumQPs = 1, qps
		return []exchange.TestSpec{s}
	}
	for _, tc := range []struct {
		name  string
		specs []exchange.TestSpec
		mem   uint64
		ok    bool
	}{
		{"-q 63 --threads 5, room for 63", conns(13, 13, 13, 12, 12), holds(63), true},
		{"-q 64 --threads 5, room for 63", conns(13, 13, 13, 13, 12), holds(63), false},
		{"-q 63 --threads 5, room for 62", conns(13, 13, 13, 12, 12), holds(62), false},
		{"-q 10 --threads 4, room for 10", conns(3, 3, 2, 2), holds(10), true},
		{"-q 10 --threads 4, room for 9", conns(3, 3, 2, 2), holds(9), false},
		{"-q 63, room for 63", one(63), holds(63), true},
		{"-q 64, room for 63", one(64), holds(63), false},
	} {
		var refused []string
		for _, s := range tc.specs {
			err := checkBuffers(s, tc.mem)
			if err == nil {
				continue
			}
			if !errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(err.Error(), "more than half of this host's memory") {
				t.Errorf("%s: thread %d: %v, want over a limit", tc.name, s.Thread, err)
			}
			refused = append(refused, fmt.Sprintf("thread %d of %d QPs: %v", s.Thread, s.NumQPs, err))
		}
		if tc.ok != (len(refused) == 0) {
			t.Errorf("%s: refused %q, want the test ok %v", tc.name, refused, tc.ok)
		}
	}
}
