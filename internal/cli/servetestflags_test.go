//go:build linux && cgo

package cli

import (
	"context"
	"strings"
	"testing"
)

// TestServeRefusesTestFlags: serve given a test's flag, which a perftest
// user will try (ib_write_bw's server takes -s), says that the test's
// parameters come from each client, exit status 2; a flag of a test's
// report or limits, that serve reports otherwise and a server for one
// test takes it. It said cobra's bare "unknown shorthand flag: 's' in
// -s". A flag no test has, or one of perftest alone, reads as before.
func TestServeRefusesTestFlags(t *testing.T) {
	const testFlags = ": each client's test sets them; give them to the client"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-s", "4096"}, "unknown shorthand flag: 's' in -s: serve takes no test flags (-s)" + testFlags},
		{[]string{"-b"}, "serve takes no test flags (-b)" + testFlags},
		{[]string{"--threads", "2"}, "unknown flag: --threads: serve takes no test flags (--threads)" + testFlags},
		{[]string{"-q", "4"}, "serve takes no test flags (-q)" + testFlags},
		{[]string{"-n", "100"}, "serve takes no test flags (-n)" + testFlags},
		{[]string{"-D", "5"}, "serve takes no test flags (-D)" + testFlags},
		{[]string{"-c", "UD"}, "serve takes no test flags (-c)" + testFlags},
		{[]string{"--size", "4096"}, "serve takes no test flags (--size)" + testFlags},
		{[]string{"--run-infinitely"}, "serve takes no test flags (--run-infinitely)" + testFlags},
		{[]string{"-d", "rxe0", "-aR"}, "serve takes no test flags (-a)" + testFlags},
		{[]string{"-A", "CMP_AND_SWAP"}, "serve takes no test flags (-A)" + testFlags},
		{[]string{"--csv"}, "serve takes no --csv: it reports each test in text, or with --json as a JSON document; a server for one test"},
		{[]string{"-w", "100"}, "serve takes no -w: it judges no pass marks"},
		{[]string{"--odp"}, "unknown flag: --odp: perftest's --odp (on-demand paging"},
	} {
		f, _, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, append([]string{"serve"}, tc.args...))
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("serve %q: exit %d, %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	f, _, errOut := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"serve", "--bogus"}); code != exitUsage || !strings.HasPrefix(errOut.String(), "gorperf: unknown flag: --bogus\n") {
		t.Errorf("serve --bogus: exit %d, %q", code, errOut)
	}
	if long := newCmdServe(nil).Long; !strings.Contains(long, "come from each client's command line") {
		t.Errorf("serve's help does not say where a test's parameters come from:\n%s", long)
	}
}
