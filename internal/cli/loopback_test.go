//go:build linux && cgo

package cli

import (
	"context"
	"strings"
	"testing"
)

// TestLoopbackUnknownTest: a test loopback does not have is a usage error
// that lists those it has, with flags after it too; loopback alone shows
// its help, as gorperf alone does.
func TestLoopbackUnknownTest(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"loopback", "wirte-bw"}, exitUsage, "",
			`gorperf: unknown test "wirte-bw" for "gorperf loopback": want one of atomic-bw, atomic-lat, read-bw, read-lat, send-bw, send-lat, write-bw, write-lat` + "\nRun 'gorperf loopback --help' for usage.\n"},
		{[]string{"loopback", "wirte-bw", "-d", "x"}, exitUsage, "", `gorperf: unknown test "wirte-bw" for "gorperf loopback": want one of`},
		{[]string{"wirte-bw", "-d", "x"}, exitUsage, "", `gorperf: unknown command "wirte-bw" for "gorperf"` + "\nRun 'gorperf --help' for usage.\n"},
		{[]string{"loopback", "-d", "x"}, exitUsage, "", "unknown shorthand flag: 'd' in -d"},
		{[]string{"loopback"}, exitOK, "Available Commands:", ""},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, tc.args)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) || tc.stderr == "" && errOut.Len() > 0 {
			t.Errorf("%q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s\nwant stdout with %q, stderr with %q", tc.args, code, tc.code, out, errOut, tc.stdout, tc.stderr)
		}
	}
}
