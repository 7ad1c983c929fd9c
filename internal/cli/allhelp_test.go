//go:build linux && cgo

package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestAllHelpRunInfinitely: -a's help says what the command does with
// --run_infinitely, which overrides it and runs -s alone, as perftest's
// does and getting-started says; it said "not with --run_infinitely",
// which the command accepts.
func TestAllHelpRunInfinitely(t *testing.T) {
	for _, test := range []exchange.Test{exchange.WriteBW, exchange.ReadBW, exchange.SendBW, exchange.AtomicBW} {
		for _, loopback := range []bool{false, true} {
			usage := newCmdTest(nil, test, loopback, nil).Flags().Lookup("all").Usage
			if strings.Contains(usage, "not with --run_infinitely") || !strings.Contains(usage, "--run_infinitely overrides it and runs -s alone") {
				t.Errorf("%v (loopback %v): -a's help %q", test, loopback, usage)
			}
		}
	}
	s, _, err := parseTest(t, exchange.WriteBW, "-a", "--run_infinitely", "-s", "4096", "h")
	if err != nil || !slices.Equal(s.Sizes(), []uint32{4096}) {
		t.Errorf("-a --run_infinitely -s 4096: %v, sizes %v; want -s alone", err, s.Sizes())
	}
}
