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
// It stops tests of -n iterations (bandwidth, latency, of two threads)
// once they have run 2 s, and serves on. It counts the refused and the
// stopped as failed, each named by its client.
func TestServeMaxDurationOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 120*time.Second)
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
	// Tests of more iterations than 2 s hold (rxe runs far fewer than
	// 10^9 a second), stopped at 2 s: their clients report what was
	// measured until then and fail, told why.
	const told = "the server was stopped at its --max-duration of 2 s before the run ended: the results above are what was measured until then"
	for _, args := range [][]string{
		{"write-bw", "-n", "1000000000"},
		{"send-lat", "-n", "10000000"},
		{"write-bw", "-n", "1000000000", "--threads", "2"},
	} {
		args := append(append(args, "-d", cliDev, "-p", port), addr)
		began := time.Now()
		out, err := gorperf(ctx, args...).CombinedOutput()
		if took := time.Since(began); procExit(err) != exitError || !strings.Contains(string(out), told) ||
			!strings.Contains(string(out), "#bytes") || took > 20*time.Second {
			t.Errorf("%v: exit %d after %v, want %d, the partial results and why:\n%s", args, procExit(err), took.Round(time.Millisecond), exitError, out)
		}
	}
	if out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-D", "1", addr).CombinedOutput(); err != nil {
		t.Errorf("-D 1 within --max-duration 2: %v\n%s", err, out)
	}
	srv.Process.Signal(syscall.SIGINT)
	srv.Wait()
	e := srv.Stderr.(*bytes.Buffer).String()
	refused := regexp.MustCompile(`(?m)^gorperf: client [0-9.]+:\d+: refused: test exceeds the server's limits: .*maximum duration of 2 s$`)
	stopped := regexp.MustCompile(`(?m)^gorperf: client [0-9.]+:\d+: a test of iterations \(-n\) stopped at this server's --max-duration of 2 s: the results above are what was measured until then$`)
	if n, m := len(refused.FindAllString(e, -1)), len(stopped.FindAllString(e, -1)); n != 3 || m != 3 || !strings.Contains(e, "served 7 tests, 6 failed") {
		t.Errorf("serve said (%d refusals, %d stops named):\n%s", n, m, e)
	}
}
