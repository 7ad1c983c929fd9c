//go:build linux && cgo

package cli

import (
	"encoding/json"
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

// TestServePrefixOfTestFlag: serve takes no prefix that is exactly a
// test's flag (--qp, which begins serve's --qp-timeout), nor one that
// also begins a flag only the tests have (--bi: --bidirectional and
// serve's --bind_source_ip): it refuses them, exit 2, and says that
// serve takes no test flags. Before, serve --qp 4 set --qp-timeout and
// served. (The last flag, unknown, stops the old code before it
// serves.)
func TestServePrefixOfTestFlag(t *testing.T) {
	const testFlags = "serve takes no test flags (%s): each client's test sets them; give them to the client"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--qp", "4"}, "unknown flag: --qp: " + fmt.Sprintf(testFlags, "--qp")},
		{[]string{"--qp=4"}, "unknown flag: --qp: " + fmt.Sprintf(testFlags, "--qp")},
		{[]string{"--bi", "127.0.0.1"}, "option '--bi' is ambiguous; possibilities: --bidirectional --bind_source_ip; " + fmt.Sprintf(testFlags, "--bidirectional")},
		{[]string{"--disable"}, "option '--disable' is ambiguous; possibilities: --disable_numa --disable_pcie_relaxed; " + fmt.Sprintf(testFlags, "--disable_pcie_relaxed")},
		{[]string{"--pe", "3"}, "option '--pe' is ambiguous; possibilities: --peer-timeout --perform_warm_up; " + fmt.Sprintf(testFlags, "--perform_warm_up")},
		{[]string{"--po", "1"}, "option '--po' is ambiguous; possibilities: --port --post_list; " + fmt.Sprintf(testFlags, "--post_list")},
	} {
		f, _, errOut := newTestFactory(nil, nil)
		args := append(append([]string{"serve"}, tc.args...), "--no-such-flag")
		if code := run(t.Context(), f, args); code != exitUsage || !strings.Contains(errOut.String(), "gorperf: "+tc.want+"\n") {
			t.Errorf("%q: exit %d, %s\nwant exit 2, %q", args, code, errOut, tc.want)
		}
	}
	// A prefix of serve's flags alone is still taken.
	if o, err := parseServe(t, "--qp-t", "5", "--max-q", "7"); err != nil || o.test.QPTimeout != 5 || o.maxQPs != 7 {
		t.Errorf("serve --qp-t 5 --max-q 7: %v, %+v", err, o)
	}
	// A test takes another test's exact flag for no prefix of its own:
	// send-bw's --perform_warm_up is explained, not ambiguous.
	if _, _, err := parseTest(t, exchange.SendBW, "--perform_warm_up"); !strings.Contains(fmt.Sprint(err), "unknown flag: --perform_warm_up: only") {
		t.Errorf("send-bw --perform_warm_up: %v", err)
	}
}

// TestPrefixSkipsHidden: a hidden flag (serve's --version) is taken by
// its exact name alone and listed among no prefix's flags: serve --ve is
// --vector, where it was ambiguous with "--vector --version".
func TestPrefixSkipsHidden(t *testing.T) {
	f, _, errOut := newTestFactory(nil, nil)
	if code := run(t.Context(), f, []string{"serve", "--ve"}); code != exitUsage || !strings.Contains(errOut.String(), "gorperf: flag needs an argument: --ve\n") {
		t.Errorf("serve --ve: exit %d, %s\nwant exit 2, --vector's missing argument", code, errOut)
	}
	f, out, errOut := newTestFactory(nil, nil)
	if code := run(t.Context(), f, []string{"serve", "--version"}); code != 0 || !strings.HasPrefix(out.String(), "gorperf ") {
		t.Errorf("serve --version: exit %d, %s %s", code, out, errOut)
	}
}

// TestJSONPrefixErrorDocument: a prefix of --json (--js) promises the
// JSON error document as --json does, for a test and for serve; before,
// only the usage error on stderr, exit 2.
func TestJSONPrefixErrorDocument(t *testing.T) {
	for _, args := range [][]string{
		{"write-bw", "--js", "--bogus"},
		{"write-bw", "--js=true", "--bogus"},
		{"loopback", "write-bw", "--js", "--bogus"},
		{"serve", "--js", "--bogus"},
	} {
		f, out, _ := newTestFactory(nil, nil)
		var doc struct {
			Error *struct{ Code, Message string } `json:"error"`
		}
		code := run(t.Context(), f, args)
		if err := json.Unmarshal(out.Bytes(), &doc); code != exitUsage || err != nil || doc.Error == nil || !strings.Contains(doc.Error.Message, "--bogus") {
			t.Errorf("%q: exit %d, %v, want exit 2 and the error's JSON document:\n%s", args, code, err, out)
		}
	}
	f, out, _ := newTestFactory(nil, nil)
	if code := run(t.Context(), f, []string{"write-bw", "--js=false", "--bogus"}); code != exitUsage || out.Len() != 0 {
		t.Errorf("--js=false: exit %d, %s, want exit 2 and no document", code, out)
	}
}
