//go:build linux && cgo

package cli

import (
	"context"
	"strings"
	"testing"
)

// TestVersionAnywhere: -V (and --version) before or after any command's
// name prints gorperf's version and stops, exit 0, as perftest's -V and
// gorperf -V do, without looking at a device. gorperf -V devices, gorperf
// devices -V, gorperf -V loopback write-bw and the like failed with
// "unknown shorthand flag: 'V' in -V", exit 2: cobra parses the flags of
// the command named last, and only the root and the tests had -V. The
// subcommands' -V stays out of their help, as the root's does. (A build
// without the bindings: TestNoBindingsVersion.)
func TestVersionAnywhere(t *testing.T) {
	want := "gorperf " + Version + "\n"
	for _, args := range [][]string{
		{"-V", "devices"},
		{"devices", "-V"},
		{"devices", "--version"},
		{"devices", "-d", "nosuch", "--json", "-V"},
		{"-V", "doctor"},
		{"doctor", "-V"},
		{"serve", "-V"},
		{"-V", "serve", "-p", "1"},
		{"loopback", "-V"},
		{"-V", "loopback"},
		{"-V", "loopback", "write-bw"},
		{"loopback", "-V", "send-lat"},
		{"-V", "write-bw"},
		{"--version", "devices"},
	} {
		f, out, errOut := newTestFactory(nil, nil)
		f.Devices = func(string) ([]deviceReport, error) {
			t.Errorf("%v: looked for devices", args)
			return nil, nil
		}
		if code := run(context.Background(), f, args); code != 0 || out.String() != want || errOut.Len() > 0 {
			t.Errorf("gorperf %s: exit %d, stdout %q, stderr %q; want 0, %q, nothing", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	for _, args := range [][]string{{"devices", "--help"}, {"loopback", "--help"}, {"serve", "--help"}, {"doctor", "--help"}} {
		f, out, _ := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != 0 || strings.Contains(out.String(), "-V") || strings.Contains(out.String(), "--version") {
			t.Errorf("gorperf %s: exit %d; want -V, --version hidden:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// TestVersionStillUsageErrors: -V does not hide a command line that names
// no command: an unknown command or test is still exit 2.
func TestVersionStillUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-V", "bogus"}, {"loopback", "-V", "bogus"}} {
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != exitUsage || out.Len() > 0 || !strings.Contains(errOut.String(), `"bogus"`) {
			t.Errorf("gorperf %s: exit %d, stdout %q, stderr %q; want 2 naming bogus", strings.Join(args, " "), code, out, errOut)
		}
	}
}
