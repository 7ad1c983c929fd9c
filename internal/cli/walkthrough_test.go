package cli

import (
	"context"
	"strings"
	"testing"
)

// TestRootPerftestVersion: gorperf -V prints the version as -v and
// --version do, as perftest's -V and the tests' own -V; it failed with
// "unknown shorthand flag: 'V' in -V", exit 2. The help lists -V,
// --version, as every other command takes it, and hides -v, which the
// others refuse (it listed -v, and gorperf devices -v failed).
func TestRootPerftestVersion(t *testing.T) {
	want := "gorperf " + Version + "\n"
	for _, args := range [][]string{{"-V"}, {"-v"}, {"--version"}} {
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != 0 || out.String() != want || errOut.Len() > 0 {
			t.Errorf("gorperf %s: exit %d, stdout %q, stderr %q; want 0, %q, nothing", args[0], code, out, errOut, want)
		}
	}
	f, out, _ := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"--help"}); code != 0 || !strings.Contains(out.String(), "-V, --version") ||
		strings.Contains(out.String(), " -v,") {
		t.Errorf("gorperf --help: exit %d; want -V, --version listed and -v hidden:\n%s", code, out)
	}
}
