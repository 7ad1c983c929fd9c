//go:build linux && cgo

package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestFlagPrefixes: a test takes a unique prefix of a long flag's name,
// or of perftest's spelling of it, as perftest's getopt_long does
// (ib_write_bw --bidir, --report_gb, --run_inf, --iter=200, --dur=2); a
// name the test has exactly wins over the longer ones it begins; a
// flag's value, an argument after --, and letters are left as they are.
// Before, each prefix was "unknown flag".
func TestFlagPrefixes(t *testing.T) {
	for _, tc := range []struct {
		test exchange.Test
		args []string
		ok   func(exchange.TestSpec, *testOptions) bool
	}{
		{exchange.WriteBW, []string{"--bidir"}, func(s exchange.TestSpec, _ *testOptions) bool { return s.Bidirectional }},
		{exchange.WriteBW, []string{"--report_gb"}, func(_ exchange.TestSpec, o *testOptions) bool { return o.Gbits }},
		{exchange.WriteBW, []string{"--report-gb"}, func(_ exchange.TestSpec, o *testOptions) bool { return o.Gbits }},
		{exchange.WriteBW, []string{"--run_inf"}, func(s exchange.TestSpec, _ *testOptions) bool { return s.RunInfinitely }},
		{exchange.WriteBW, []string{"--iter=200"}, func(s exchange.TestSpec, _ *testOptions) bool { return s.Iterations == 200 }},
		{exchange.WriteBW, []string{"--iter", "300"}, func(s exchange.TestSpec, _ *testOptions) bool { return s.Iterations == 300 }},
		{exchange.WriteBW, []string{"--dur=2"}, func(s exchange.TestSpec, _ *testOptions) bool { return s.Duration == 2 }},
		{exchange.SendBW, []string{"--data_val"}, func(_ exchange.TestSpec, o *testOptions) bool { return o.Validate }},
		{exchange.WriteLat, []string{"--report-hist"}, func(_ exchange.TestSpec, o *testOptions) bool { return o.Sorted }},
		// --ipv6 is a flag, and a prefix of --ipv6-addr.
		{exchange.WriteBW, []string{"--ipv6"}, func(_ exchange.TestSpec, o *testOptions) bool { return o.IPv6 && !o.IPv6Addr }},
		// A flag's value and what follows -- are no flags.
		{exchange.WriteBW, []string{"--ib-dev", "--bidir"}, func(s exchange.TestSpec, o *testOptions) bool { return o.Device == "--bidir" && !s.Bidirectional }},
		{exchange.WriteBW, []string{"--", "--bidir"}, func(s exchange.TestSpec, o *testOptions) bool { return !s.Bidirectional }},
	} {
		s, o, err := parseTest(t, tc.test, tc.args...)
		if err != nil || !tc.ok(s, o) {
			t.Errorf("%v %q: %v, %+v", tc.test, tc.args, err, s)
		}
	}
	// A prefix of several flags is refused, with them, as getopt_long's.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ipv"}, "option '--ipv' is ambiguous; possibilities: --ipv6 --ipv6-addr"},
		{[]string{"--limit=5"}, "option '--limit' is ambiguous; possibilities: --limit_bw --limit_msgrate"},
		{[]string{"-s", "64", "--re"}, "option '--re' is ambiguous; possibilities: --recv_post_list --report-both --report-counters --report_gbits --retry_count --reversed"},
	} {
		_, _, err := parseTest(t, exchange.WriteBW, tc.args...)
		if fmt.Sprint(err) != tc.want || exitCode(err) != exitUsage {
			t.Errorf("%q: %v (exit %d), want %q, exit 2", tc.args, err, exitCode(err), tc.want)
		}
	}
	// The payload file's path is the word after the flag, whatever it
	// looks like.
	if s, o, err := parseTest(t, exchange.WriteBW, "--payload_file_path", "--bidir"); err != nil || o.PayloadFile != "--bidir" || s.Bidirectional {
		t.Errorf("--payload_file_path --bidir: %v, want the file --bidir", err)
	}
}

// TestFlagPrefixesKeepNames: each of perftestNames's extra spellings is
// one (perftestSpellings lists what perftestSpelling maps), and the
// flags cobra and gorperf add to a test after perftestNames is set
// (help, version, the root's cpuprofile) begin no flag of a test, which
// perftestNames would take them for.
func TestFlagPrefixesKeepNames(t *testing.T) {
	for _, sp := range perftestSpellings {
		if perftestSpelling(sp) == sp {
			t.Errorf("perftestSpellings: %q is no spelling of perftestSpelling's", sp)
		}
	}
	for test := exchange.WriteBW; test <= exchange.AtomicLat; test++ {
		fs := newCmdTest(nil, test, false, nil).Flags()
		for _, name := range []string{"help", "version", "cpuprofile"} {
			if c := prefixFlags(fs, name); len(c) > 1 || (len(c) == 1 && c[0] != name) {
				t.Errorf("%v: --%s begins %q", test, name, c)
			}
		}
	}
	f, out, errOut := newTestFactory(nil, nil)
	if code := run(t.Context(), f, []string{"write-bw", "--help"}); code != 0 || !strings.Contains(out.String(), "--cpuprofile") || !strings.Contains(out.String(), "-V, --version") {
		t.Errorf("write-bw --help: exit %d\n%s\n%s", code, out, errOut)
	}
}
