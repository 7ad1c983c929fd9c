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
	for _, test := range []exchange.Test{exchange.WriteBW, exchange.ReadBW, exchange.SendBW} {
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

// TestHelpOfRefusedFlags: the help of a flag that a test takes only to
// refuse (-a of the atomic tests, -I but 0 of the read and atomic tests)
// says so; it offered -a's sweep and -I's inline sends, which the tests
// refuse (exit 2).
func TestHelpOfRefusedFlags(t *testing.T) {
	for _, tc := range []struct {
		test       exchange.Test
		flag, want string
		args       []string
	}{
		{exchange.AtomicBW, "all", "refused", []string{"-a"}},
		{exchange.AtomicLat, "all", "refused", []string{"-a"}},
		{exchange.ReadBW, "inline_size", "0 only", []string{"-I", "64"}},
		{exchange.ReadLat, "inline_size", "0 only", []string{"-I", "64"}},
		{exchange.AtomicBW, "inline_size", "0 only", []string{"-I", "64"}},
		{exchange.AtomicLat, "inline_size", "0 only", []string{"-I", "64"}},
	} {
		for _, loopback := range []bool{false, true} {
			usage := newCmdTest(nil, tc.test, loopback, nil).Flags().Lookup(tc.flag).Usage
			if !strings.HasPrefix(usage, tc.want) {
				t.Errorf("%v (loopback %v): --%s's help %q, want it to begin %q", tc.test, loopback, tc.flag, usage, tc.want)
			}
		}
		if _, _, err := parseTest(t, tc.test, append(tc.args, "h")...); err == nil {
			t.Errorf("%v %v: accepted, where the help says refused", tc.test, tc.args)
		}
	}
	for _, test := range []exchange.Test{exchange.WriteBW, exchange.SendLat} {
		if usage := newCmdTest(nil, test, false, nil).Flags().Lookup("inline_size").Usage; strings.HasPrefix(usage, "0 only") {
			t.Errorf("%v: -I's help %q", test, usage)
		}
	}
}
