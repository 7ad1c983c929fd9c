//go:build linux && cgo

package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestServeCountsFailures: serve counts a test as failed when it failed
// or when finish finds it did (bytes that did not validate), and says
// why; a connection that was no test is said but not counted.
func TestServeCountsFailures(t *testing.T) {
	f, _, errOut := newTestFactory(nil, nil)
	o := &serveOptions{}
	o.done(f, fakeBW(), nil)
	bad := fakeBW()
	bad.Mismatches = 2
	o.done(f, bad, nil)
	o.done(f, fakeBW(), errors.New("peer gone"))
	o.done(f, nil, errors.New("connection from 198.18.0.2:4242: not gorperf"))
	if o.served != 3 || o.failed != 2 {
		t.Errorf("served %d, failed %d; want 3 and 2", o.served, o.failed)
	}
	for _, want := range []string{"gorperf: data validation failed: 2 QPs", "gorperf: peer gone", "gorperf: connection from 198.18.0.2:4242: not gorperf"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// A test that Ctrl-C stopped shows what it measured: not a failure.
	f, _, errOut = newTestFactory(nil, nil)
	o = &serveOptions{}
	stopped := fakeBW()
	stopped.Interrupted = true
	o.done(f, stopped, nil)
	if o.served != 1 || o.failed != 0 || strings.Contains(errOut.String(), "exit status") {
		t.Errorf("an interrupted test: served %d, failed %d, stderr:\n%s", o.served, o.failed, errOut)
	}
}
