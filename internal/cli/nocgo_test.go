//go:build !(linux && cgo)

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Without the bindings every RDMA command exits 1 and says why, and the
// test commands are still listed.
func TestNoBindings(t *testing.T) {
	for _, args := range [][]string{{"write-bw", "-s", "64", "host"}, {"loopback", "send-lat"}, {"serve"}, {"devices"}} {
		f, _, errOut := newTestFactory(nil, nil)
		f.Devices = gatherDevices
		if code := run(context.Background(), f, args); code != 1 || !strings.Contains(errOut.String(), "has no RDMA bindings") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if !errors.Is(errNoBindings, errors.ErrUnsupported) {
		t.Error("errNoBindings is not ErrUnsupported")
	}
	// --json gets its document, with the error's code.
	for _, args := range [][]string{{"write-bw", "--json", "host"}, {"ib_send_lat", "--json"}, {"serve", "--json"}, {"loopback", "read-bw", "--json"}} {
		f, out, _ := newTestFactory(nil, nil)
		code := run(context.Background(), f, args)
		var doc struct {
			Error struct{ Code string }
		}
		if err := json.Unmarshal(out.Bytes(), &doc); code != 1 || err != nil || doc.Error.Code != "unsupported" {
			t.Errorf("%v: exit %d, %v, code %q: %s", args, code, err, doc.Error.Code, out)
		}
	}
	// doctor says what to do about it.
	f, out, _ := newTestFactory(nil, nil)
	f.Devices = gatherDevices
	run(context.Background(), f, []string{"doctor"})
	if !strings.Contains(out.String(), "build gorperf on Linux with cgo") {
		t.Errorf("doctor without the bindings:\n%s", out)
	}
	f, out, _ = newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"--help"}); code != 0 || !strings.Contains(out.String(), "write-bw") {
		t.Errorf("--help: exit %d: %s", code, out)
	}
	// A command's own help, as the root's says ("gorperf [command]
	// --help"), where it said only that the command cannot run; after
	// --, -h is an argument.
	for _, args := range [][]string{{"write-bw", "--help"}, {"ib_read_lat", "-s", "64", "-h"}, {"loopback", "-h"}, {"serve", "--help"}} {
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != 0 || !strings.Contains(out.String(), "needs a Linux build with cgo") || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%v: exit %d: %s%s", args, code, out, errOut)
		}
	}
	f, _, errOut := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"write-bw", "--", "-h"}); code != 1 || !strings.Contains(errOut.String(), "has no RDMA bindings") {
		t.Errorf("write-bw -- -h: exit %d: %s", code, errOut)
	}
}
