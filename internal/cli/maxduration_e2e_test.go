//go:build linux && cgo

package cli

import (
	"bytes"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeMaxDurationOnDevice: `gorperf serve --max-duration 2` refuses
// a client's -D 3, a -D 1 sweep of 23 sizes (-a), and any
// --run_infinitely, as they ask, and the clients say why; it runs a -D 1.
// It counts the refused as failed, each named by its client. It ran all
// of them, the infinite one until its client stopped.
func TestServeMaxDurationOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 60*time.Second)
	srv, _ := startServer(t, ctx, srvDev, port, "serve", "--max-duration", "2")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-D", "3"}, "-D 3 exceeds this server's maximum duration of 2 s"},
		{[]string{"-D", "1", "-a"}, "-D 1 on each of 23 sizes (-a), 23 s in all, exceeds this server's maximum duration of 2 s"},
		{[]string{"-D", "1", "--run_infinitely"}, "a run without end (--run_infinitely) exceeds this server's maximum duration of 2 s"},
	} {
		args := append(append([]string{"write-bw", "-d", cliDev, "-p", port}, tc.args...), addr)
		out, err := gorperf(ctx, args...).CombinedOutput()
		if procExit(err) != exitError || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "#bytes") {
			t.Errorf("%v: exit %d, want %d and %q, no result:\n%s", tc.args, procExit(err), exitError, tc.want, out)
		}
	}
	if out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-D", "1", addr).CombinedOutput(); err != nil {
		t.Errorf("-D 1 within --max-duration 2: %v\n%s", err, out)
	}
	srv.Process.Signal(syscall.SIGINT)
	srv.Wait()
	e := srv.Stderr.(*bytes.Buffer).String()
	refused := regexp.MustCompile(`(?m)^gorperf: client [0-9.]+:\d+: refused: test exceeds the server's limits: .*maximum duration of 2 s$`)
	if n := len(refused.FindAllString(e, -1)); n != 3 || !strings.Contains(e, "served 4 tests, 3 failed") {
		t.Errorf("serve said (%d refusals named):\n%s", n, e)
	}
}
