//go:build linux && cgo

package cli

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestServeNamesItsSignal: a test that serve's own stop cut short says
// which signal stopped it, in the words its client was told ("stopped
// (SIGTERM)", "interrupted (Ctrl-C)"), where serve said "interrupted"
// for SIGTERM too while its client was told the server was stopped
// (SIGTERM).
func TestServeNamesItsSignal(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want string
	}{
		{syscall.SIGTERM, "gorperf: stopped (SIGTERM); the results above are what was measured"},
		{os.Interrupt, "gorperf: interrupted (Ctrl-C); the results above are what was measured"},
	} {
		f, _, errOut := newTestFactory(nil, nil)
		o := &serveOptions{}
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&stopSignal{tc.sig})
		r := fakeBW()
		r.Interrupted = true
		o.done(ctx, f, r, nil)
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: serve said:\n%s\nwant %q", tc.sig, errOut, tc.want)
		}
	}
}
