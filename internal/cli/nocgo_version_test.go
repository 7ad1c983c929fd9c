//go:build !(linux && cgo)

package cli

import (
	"context"
	"testing"
)

// TestNoBindingsVersion: without the bindings, whose commands parse no
// flags, -V still prints the version, exit 0, rather than the missing
// bindings' error.
func TestNoBindingsVersion(t *testing.T) {
	for _, args := range [][]string{{"write-bw", "-s", "64", "-V"}, {"-V", "loopback", "send-lat"}, {"serve", "--version"}, {"devices", "-V"}} {
		f, out, errOut := newTestFactory(nil, nil)
		f.Devices = gatherDevices
		if code := run(context.Background(), f, args); code != 0 || out.String() != "gorperf "+Version+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
