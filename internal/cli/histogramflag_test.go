//go:build linux && cgo

package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestHistogramLatencyOnly: --histogram, which draws a histogram of a
// latency test's samples, is the latency tests' alone, as -U and
// --limit_lat are: a bandwidth test, a client's, a server's or
// loopback's, refuses it naming the tests that have it (exit status 2).
// The bandwidth tests took it and printed nothing of it.
func TestHistogramLatencyOnly(t *testing.T) {
	const want = "unknown flag: --histogram: only write-lat, read-lat, send-lat and atomic-lat have it"
	for test := exchange.WriteBW; test <= exchange.AtomicLat; test++ {
		_, o, err := parseTest(t, test, "--histogram", "198.18.0.1")
		if test.IsLatency() {
			if err != nil || !o.Histogram {
				t.Errorf("%v --histogram: %v", test, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != exitUsage {
			t.Errorf("%v --histogram: %v; want %q, exit status 2", test, err, want)
		}
		for _, args := range [][]string{{testCmdName(test), "--histogram"}, {"loopback", testCmdName(test), "--histogram"}} {
			f, _, errOut := newTestFactory(nil, nil)
			if code := run(context.Background(), f, args); code != exitUsage || !strings.Contains(errOut.String(), want) {
				t.Errorf("%q: exit %d, %s; want exit 2 and %q", args, code, errOut, want)
			}
		}
	}
}
