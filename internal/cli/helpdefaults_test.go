//go:build linux && cgo

package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestNoDefaultMinusOne: no command's help prints "(default -1)" after a
// usage that says the default itself (-x's automatic choice, -u's 14,
// --retry_count's 7, --numa_node's device node), which it contradicted;
// not given, the flags still read -1.
func TestNoDefaultMinusOne(t *testing.T) {
	var walk func(*cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		if u := c.UsageString(); strings.Contains(u, "(default -1)") {
			t.Errorf("%s --help prints (default -1):\n%s", c.CommandPath(), u)
		}
		if strings.Contains(c.UsageString(), "--gid-index") {
			seen++
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newCmdRoot(newFactory()))
	if seen < 17 {
		t.Errorf("%d commands with -x, want the 8 tests, loopback's 8 and serve", seen)
	}
	f, _, _ := newTestFactory(nil, nil)
	var o *testOptions
	cmd := newCmdTest(f, exchange.WriteBW, false, func(got *testOptions) error { o = got; return nil })
	cmd.SetArgs([]string{"-s", "64"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if o.GIDIndex != -1 || o.QPTimeout != -1 || o.RetryCount != -1 || o.NUMANode != -1 {
		t.Errorf("not given: -x %d, -u %d, --retry_count %d, --numa_node %d; want -1 each", o.GIDIndex, o.QPTimeout, o.RetryCount, o.NUMANode)
	}
}
