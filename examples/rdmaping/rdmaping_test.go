//go:build linux && cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// idleEnv, in a test's environment, sets the server's idleLimit (a
// duration) in the commands that the test starts.
const idleEnv = "GORPERF_TEST_RDMAPING_IDLE"

// TestMain runs the command itself when a test re-executes its binary.
func TestMain(m *testing.M) {
	rdmatest.RunAsCommand(func() int {
		if d, err := time.ParseDuration(os.Getenv(idleEnv)); err == nil {
			idleLimit = d
		}
		main()
		return 0
	})
	os.Exit(m.Run())
}

func rdmaping(ctx context.Context, args ...string) *exec.Cmd { return rdmatest.Command(ctx, args...) }

// addr is a new address on the test device's IP (RXE_IP in the VM), for
// rdma_cm to listen at.
func addr(t *testing.T) string { return rdmatest.ListenAddr(t, 19400) }

// startServer starts a server at a and checks its first line.
func startServer(t *testing.T, ctx context.Context, a string, args ...string) rdmatest.Started {
	t.Helper()
	srv := rdmatest.Start(t, ctx, append([]string{"-l", a}, args...)...)
	if srv.Lines.Text() != "listening on "+a {
		t.Fatalf("server's first line %q; stderr: %s", srv.Lines.Text(), srv.Stderr.String())
	}
	return srv
}

// The example runs as its doc comment says: a server serves two clients in
// turn, each of which checks its echoes and reports the round trips.
func TestRdmaping(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := startServer(t, ctx, a, "-n", "2")
	for _, count := range []string{"5", "20"} {
		out, err := rdmaping(ctx, "-c", count, a).CombinedOutput()
		if err != nil {
			t.Fatalf("client -c %s: %v\n%s", count, err, out)
		}
		if !strings.HasPrefix(string(out), count+" round trips of 64 bytes to "+a) {
			t.Errorf("client -c %s printed %q", count, out)
		}
	}
	var served []string
	for srv.Lines.Scan() {
		served = append(served, srv.Lines.Text())
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}
	// Each line names the client's address (in the VM, the second
	// device's: the route to the server crosses the veth pair).
	peer := os.Getenv("RXE_IP2")
	if peer == "" {
		peer = a[:strings.LastIndex(a, ":")]
	}
	if len(served) != 2 || !strings.HasPrefix(served[0], "echoed 5 messages to "+peer+":") ||
		!strings.HasPrefix(served[1], "echoed 20 messages to "+peer+":") {
		t.Errorf("server printed %q, want two clients' counts and %s", served, peer)
	}
}

// A client with no server fails at once with the reason; a server stops
// cleanly on Ctrl-C.
func TestRdmapingFailures(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := rdmaping(ctx, a).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "rdmaping:") || !strings.Contains(string(out), "refused") {
		t.Errorf("client without a server: %v\n%s", err, out)
	}
	srv := startServer(t, ctx, a)
	if err := srv.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.Cmd.Wait(); err != nil || ctx.Err() != nil {
		t.Errorf("server after Ctrl-C: %v (%v); stderr: %s", err, ctx.Err(), srv.Stderr.String())
	}
}

// Bad counts and arguments are refused at once with the reason, before
// any device is touched, rather than taken as something else: a usage
// error, exit status 2, as the flag package's own.
func TestRdmapingBadFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "0", "127.0.0.1:1"}, "-c 0: a client makes at least one round trip"},
		{[]string{"-c", "-5", "127.0.0.1:1"}, "-c -5: a client makes at least one round trip"},
		{[]string{"-n", "-1", "-l", "127.0.0.1:1"}, "-n -1: the number of clients cannot be negative"},
		{[]string{"-l", "127.0.0.1:1", "127.0.0.1:2"}, "usage: rdmaping"},
	} {
		cmd := rdmaping(ctx, c.args...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.HasPrefix(string(out), "rdmaping: "+c.want) {
			t.Errorf("rdmaping %q: exit status %d, %q; want 2 and %q", c.args, code, out, c.want)
		}
	}
}

// abortHandshake asks the server at a for a connection, as a client with
// no QP (rdma_connect alone), and goes away once the server has answered:
// the server's accept then fails with REJECTED, as it does for a client
// whose Dial timed out after the server answered.
func abortHandshake(t *testing.T, ctx context.Context, a string) {
	t.Helper()
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	id, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Close()
	next := func(want rdmacm.EventType) {
		t.Helper()
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != want {
			t.Fatalf("event %s, want %s", ev, want)
		}
	}
	if err := id.ResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort(a), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventAddrResolved)
	if err := id.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventRouteResolved)
	if err := id.Connect(&rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventConnectResponse) // the server's accept waits for ESTABLISHED
	if err := id.Close(); err != nil {
		t.Fatal(err)
	}
}

// sendOversize connects to the server at a and sends one message twice
// the size of the server's receive, which the server's receive fails on.
func sendOversize(t *testing.T, ctx context.Context, a string) {
	t.Helper()
	c, err := rdmacm.Dial(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf, err := ibverbs.NewBuffer(2*size, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := c.PD().RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	err = c.QP().PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{mr.SGE(0, 2*size)}}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := wait(wctx, c.SendCQ()); err == nil {
		t.Errorf("a send of %d bytes to a receive of %d completed", 2*size, size)
	} else {
		t.Logf("the oversize send: %v", err)
	}
}

// A client that fails, in the handshake or after it, is reported and the
// server goes on to serve the next: here one that goes away after the
// server has answered its request, and one whose message is too long for
// the server's receive, between two that ping.
func TestRdmapingServesAfterFailedClients(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The failed handshake does not count as a client served; the
	// connection whose echo failed does.
	srv := startServer(t, ctx, a, "-n", "3")
	ping := func(count string) {
		t.Helper()
		out, err := rdmaping(ctx, "-c", count, a).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), count+" round trips of 64 bytes to "+a) {
			t.Fatalf("client -c %s: %v\n%s\nserver: %s", count, err, out, srv.Stderr.String())
		}
	}
	ping("5")
	abortHandshake(t, ctx, a)
	sendOversize(t, ctx, a)
	ping("7")
	var served []string
	for srv.Lines.Scan() {
		served = append(served, srv.Lines.Text())
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}
	if len(served) != 2 || !strings.HasPrefix(served[0], "echoed 5 messages to ") ||
		!strings.HasPrefix(served[1], "echoed 7 messages to ") {
		t.Errorf("server printed %q, want the two good clients' counts", served)
	}
	// The receive's status differs by device: rxe says local QP
	// operation error where the verbs say local length error.
	stderr := srv.Stderr.String()
	if n := strings.Count(stderr, "rdmaping: client "); n != 2 || !strings.Contains(stderr, ", after 0 messages: receiving: ") {
		t.Errorf("server reported %d failed clients, want 2, the second's receive failing:\n%s", n, stderr)
	}
	t.Logf("server's report of the failed clients:\n%s", stderr)
}

// A client's time limit is on each round trip, not on the whole run: a run
// that takes longer than the limit succeeds. The limit is many times the
// mean round trip, and at least 500 ms; the mean is measured on a
// connection of the test's own, without the dial, which on a fast host
// (rxe under KVM, a NIC) takes as long as many round trips and made the
// run too short to show anything. The run aims at three limits; one that
// took no longer than a limit even so (the round trips got faster) is
// repeated with more round trips.
func TestRdmapingLimitPerRoundTrip(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := startServer(t, ctx, a) // until Ctrl-C
	served := func(count int) {
		t.Helper()
		want := fmt.Sprintf("echoed %d messages to ", count)
		if !srv.Lines.Scan() || !strings.HasPrefix(srv.Lines.Text(), want) {
			t.Fatalf("server printed %q (%v), want %q...; stderr: %s", srv.Lines.Text(), srv.Lines.Err(), want, srv.Stderr.String())
		}
	}
	const warm = 200
	rtt, slowest := meanRoundTrip(t, ctx, a, warm)
	served(warm)
	defer func(d time.Duration) { rttTimeout = d }(rttTimeout)
	rttTimeout = max(50*rtt, 500*time.Millisecond)
	t.Logf("%d round trips: %v each, the slowest %v; the limit %v", warm, rtt, slowest, rttTimeout)
	count := int(3 * rttTimeout / rtt)
	for try := 1; ; try++ {
		start := time.Now()
		if err := ping(ctx, a, count); err != nil {
			t.Fatalf("%d round trips, each within %v: %v", count, rttTimeout, err)
		}
		took := time.Since(start)
		served(count)
		if took > rttTimeout {
			t.Logf("%d round trips in %v, each within %v", count, took, rttTimeout)
			break
		}
		if try == 4 {
			t.Fatalf("%d round trips took %v, within the limit of %v, %d times: the test shows nothing", count, took, rttTimeout, try)
		}
		t.Logf("%d round trips took %v, within the limit of %v: again with more", count, took, rttTimeout)
		count = int(float64(count) * min(10, max(2, 3*float64(rttTimeout)/float64(took))))
	}
	if err := srv.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}
}

// meanRoundTrip dials the server at a and makes n round trips as ping
// does, and returns the mean time of each (the loop's whole time, its
// posts and checks included, over n: the dial's time left out) and the
// slowest round trip's.
func meanRoundTrip(t *testing.T, ctx context.Context, a string, n int) (mean, slowest time.Duration) {
	t.Helper()
	c, err := rdmacm.Dial(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := newBuffers(c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	start := time.Now()
	for i := range n {
		rtt, err := roundTrip(ctx, c, b, i)
		if err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, rtt)
	}
	return time.Since(start) / time.Duration(n), slowest
}

// rnrNAKsSent returns how many RNR NAKs the test device's port has sent,
// from its hardware counter (send_rnr_err: rxe counts them). Where there
// is none it skips the test, or with GORPERF_REQUIRE_DEVICE=1 fails it
// unless GORPERF_ALLOW_UNSUPPORTED lists send_rnr_err.
func rnrNAKsSent(t *testing.T, info rdmatest.Info) int64 {
	t.Helper()
	path := filepath.Join("/sys/class/infiniband", info.Name, "ports", strconv.Itoa(info.Port), "hw_counters/send_rnr_err")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		rdmatest.Lacking(t, "send_rnr_err", "%s port %d does not count the RNR NAKs it sends (no %s)", info.Name, info.Port, path)
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// The server has a receive posted for every message a client sends, the
// first included: it never answers one with an RNR NAK, which would hold
// the client up for the RNR timer.
func TestRdmapingNoRNR(t *testing.T) {
	a := addr(t)
	info := rdmatest.Device(t) // the device of a's address (rdmatest.Addr)
	before := rnrNAKsSent(t, info)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := startServer(t, ctx, a, "-n", "1")
	out, err := rdmaping(ctx, "-c", "500", a).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}
	if n := rnrNAKsSent(t, info) - before; n != 0 {
		t.Errorf("the server's device sent %d RNR NAKs over 500 round trips: messages came before their receives were posted\n%s", n, out)
	}
	t.Logf("%s", out)
}

// A client that connects and then sends nothing, nor goes away, holds the
// server for idleLimit only: the server reports it and serves the next
// client.
func TestRdmapingSilentClient(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const idle = time.Second
	t.Setenv(idleEnv, idle.String())
	srv := startServer(t, ctx, a, "-n", "2")
	silent, err := rdmacm.Dial(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The next client once the server has dropped the silent one (one
	// that came before would be turned away as busy: TestRdmapingBusy),
	// within a limit well past the idle one; the old server never took
	// its request.
	waitStderr(t, srv, "no message for "+idle.String(), 15*time.Second)
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	start := time.Now()
	out, err := rdmaping(cctx, "-c", "1", a).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "1 round trips of 64 bytes to "+a) {
		t.Fatalf("client after a silent one: %v after %v\n%s\nserver: %s", err, time.Since(start), out, srv.Stderr.String())
	}
	t.Logf("the client after a silent one: %v", time.Since(start))
	var served []string
	for srv.Lines.Scan() {
		served = append(served, srv.Lines.Text())
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}
	if len(served) != 1 || !strings.HasPrefix(served[0], "echoed 1 messages to ") {
		t.Errorf("server printed %q, want the second client's count", served)
	}
	stderr := srv.Stderr.String()
	if want := ", after 0 messages: no message for " + idle.String() + "\n"; strings.Count(stderr, "rdmaping: client ") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("server's standard error %q, want the silent client reported: %q", stderr, want)
	}
	// The server closed the silent client's connection.
	select {
	case <-silent.Done():
	case <-time.After(5 * time.Second):
		t.Errorf("the silent client's connection is still up")
	}
}

// waitStderr waits, for at most d, until srv has written want to its
// standard error, and fails the test where it has not.
func waitStderr(t *testing.T, srv rdmatest.Started, want string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); !strings.Contains(srv.Stderr.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("server's standard error %q after %v: want %q", srv.Stderr.String(), d, want)
		}
	}
}

// A client that comes while the server serves another is turned away at
// once, and says the server is busy: the server rejects its request, and
// reports it, after a second's wait for the other to end. A client that
// comes as the one before it leaves is served. The old server took no
// request while it served a client: the request waited, and the client
// with it, until the connection manager gave up (2 min) and the client
// said only that nothing answered, or, here, until the client being
// served was dropped as idle, when it was served.
func TestRdmapingBusy(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Setenv(idleEnv, "15s")
	srv := startServer(t, ctx, a, "-n", "2")
	held, err := rdmacm.Dial(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	start := time.Now()
	cli := rdmaping(ctx, "-c", "1", a)
	out, err := cli.CombinedOutput()
	d := time.Since(start)
	if code := cli.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), a+": server busy, serving another client") || d > 10*time.Second {
		t.Errorf("client while another is served: exit status %d (%v) after %v: %q; want 1 at once, the server busy", code, err, d, out)
	}
	t.Logf("client while another is served, after %v: %s", d, out)
	waitStderr(t, srv, "turned away, busy serving another client", 5*time.Second)
	// The next client as soon as the held one has gone: served.
	held.Close()
	out, err = rdmaping(ctx, "-c", "3", a).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "3 round trips of 64 bytes to "+a) {
		t.Fatalf("client after the held one left: %v\n%s\nserver: %s", err, out, srv.Stderr.String())
	}
	var served []string
	for srv.Lines.Scan() {
		served = append(served, srv.Lines.Text())
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}
	if len(served) != 2 || !strings.HasPrefix(served[0], "echoed 0 messages to ") || !strings.HasPrefix(served[1], "echoed 3 messages to ") {
		t.Errorf("server printed %q, want the held client's count and the last one's", served)
	}
	if stderr := srv.Stderr.String(); strings.Count(stderr, "rdmaping: client ") != 1 {
		t.Errorf("server's standard error %q: want the one client turned away, alone", stderr)
	}
}

// Ctrl-C ends a server that waits for a client's message at once, not
// after a wait for the connection's end, which Ctrl-C does not bring.
func TestRdmapingInterruptWithClient(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	done := make(chan error, 1)
	go func() { done <- serve(sctx, a, 0) }()
	var c *rdmacm.Conn
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if c, err = rdmacm.Dial(ctx, a, nil); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server at %s: %v", a, err)
		}
	}
	defer c.Close()
	time.Sleep(500 * time.Millisecond) // the server's accept returns, and it waits in echo
	interrupt()
	start := time.Now()
	select {
	case err := <-done:
		took := time.Since(start)
		if err != nil {
			t.Errorf("server after Ctrl-C: %v", err)
		}
		// The old server waited 1 s for the connection's end.
		if took > 700*time.Millisecond {
			t.Errorf("server took %v to stop on Ctrl-C", took)
		}
		t.Logf("server stopped %v after Ctrl-C", took)
	case <-time.After(10 * time.Second):
		t.Fatal("server still runs 10 s after Ctrl-C")
	}
}

// A server told port 0 prints the port it was given, which a client
// then reaches.
func TestRdmapingPortZero(t *testing.T) {
	ip := rdmatest.Addr(t).IP
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := rdmatest.Start(t, ctx, "-l", netip.AddrPortFrom(ip, 0).String(), "-n", "1")
	got, ok := strings.CutPrefix(srv.Lines.Text(), "listening on ")
	ap, err := netip.ParseAddrPort(got)
	if !ok || err != nil || ap.Addr() != ip || ap.Port() == 0 {
		t.Fatalf("server's first line %q; want listening on %s:PORT, PORT not 0; stderr: %s",
			srv.Lines.Text(), ip, srv.Stderr.String())
	}
	if out, err := rdmaping(ctx, "-c", "3", got).CombinedOutput(); err != nil {
		t.Fatalf("client to %s: %v\n%s", got, err, out)
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Errorf("server: %v; stderr: %s", err, srv.Stderr.String())
	}
}

// interrupt starts a client with args, sends it SIGINT (Ctrl-C) once wait
// returns, and returns its exit status, standard output and standard
// error. wait is given the client's process ID.
func interrupt(t *testing.T, ctx context.Context, wait func(pid int), args ...string) (int, string, string) {
	t.Helper()
	cli := rdmaping(ctx, args...)
	var stdout, stderr strings.Builder
	cli.Stdout, cli.Stderr = &stdout, &stderr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	wait(cli.Process.Pid)
	if err := cli.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	cli.Wait()
	return cli.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// summary matches the client's one line of output, whose count it
// returns.
var summary = regexp.MustCompile(`^(\d+) round trips of 64 bytes to (\S+) on \S+: min \S+, median \S+, mean \S+\n$`)

// checkSummary checks that a client stopped by Ctrl-C after round trips
// printed their summary to a, as at the end of a run, more than none and
// fewer than count, on standard output alone, and exited 0, as ping(8)
// does.
func checkSummary(t *testing.T, a string, count string, code int, stdout, stderr string) {
	t.Helper()
	m := summary.FindStringSubmatch(stdout)
	if code != 0 || m == nil || m[2] != a || stderr != "" {
		t.Fatalf("client -c %s after Ctrl-C: exit status %d, stdout %q, stderr %q; want 0 and the summary to %s alone", count, code, stdout, stderr, a)
	}
	n, err := strconv.Atoi(m[1])
	if max, _ := strconv.Atoi(count); err != nil || n < 1 || n >= max {
		t.Errorf("client -c %s after Ctrl-C: %s round trips; want more than none and fewer than asked", count, m[1])
	}
	t.Logf("client -c %s after Ctrl-C: %s", count, stdout)
}

// A client stopped by Ctrl-C part way through its round trips prints the
// summary of those made, as at the end of a run, and exits 0, as ping(8)
// prints its statistics on SIGINT: it printed only the error,
// "... context canceled (interrupt signal received)", exit status 1.
func TestRdmapingClientInterrupt(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	startServer(t, ctx, a)
	const count = "100000000"
	code, stdout, stderr := interrupt(t, ctx, connectedFor(t, 2*time.Second), "-c", count, a)
	checkSummary(t, a, count, code, stdout, stderr)
}

// connectedFor returns a wait for interrupt that waits until the client
// has a QP in RTS, its connection up (within 15 s: starting the client
// and its handshake take a while on a slow VM, where a fixed 2 s from its
// start left the round trips little of it), then d more, for round trips
// to be made.
func connectedFor(t *testing.T, d time.Duration) func(pid int) {
	return func(pid int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !qpUp(t, pid); {
			if time.Now().After(deadline) {
				t.Fatalf("the client (pid %d) has no QP in RTS 15 s after it started", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(d)
	}
}

// qpUp reports whether process pid, one of its threads, made a QP that
// is in RTS, as `rdma resource show qp` lists them.
func qpUp(t *testing.T, pid int) bool {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false // it has exited, or not yet begun
	}
	its := map[int]bool{}
	for _, e := range tasks {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			its[id] = true
		}
	}
	out, err := exec.Command("rdma", "-j", "resource", "show", "qp").Output()
	if err != nil {
		t.Fatalf("rdma -j resource show qp: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var qps []struct {
			PID   *int   `json:"pid"`
			State string `json:"state"`
		}
		if err := dec.Decode(&qps); err != nil {
			if err != io.EOF {
				t.Fatalf("rdma -j resource show qp: %v\n%s", err, out)
			}
			return false
		}
		for _, q := range qps {
			if q.PID != nil && its[*q.PID] && q.State == "RTS" {
				return true
			}
		}
	}
}

// A client stopped by Ctrl-C before its first echo came has no summary:
// it says that the interrupt stopped it, and what it waited for, and
// exits 1, as ping(8) with no reply. The server here accepts and never
// answers.
func TestRdmapingClientInterruptNoReply(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := rdmacm.Listen(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var c *rdmacm.Conn
	code, stdout, stderr := interrupt(t, ctx, func(int) {
		var err error
		if c, err = l.Accept(ctx); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(500 * time.Millisecond) // the client's message 0 goes out
	}, "-c", "5", a)
	if c != nil {
		c.Close()
	}
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "rdmaping: ") || !strings.Contains(stderr, "message 0: ") ||
		!strings.HasSuffix(stderr, "interrupt signal received)\n") {
		t.Errorf("client after Ctrl-C, no echo: exit status %d, stdout %q, stderr %q; want exit status 1, no summary, message 0 and the signal named", code, stdout, stderr)
	}
}

// A count too large to finish runs until Ctrl-C, as a small one does:
// the client's memory does not grow with the count asked for (it took
// 8 bytes a round trip at the start: -c 100000000000 ran out of memory,
// -c 9223372036854775807 panicked). The summary that the Ctrl-C brings
// shows that round trips were made.
func TestRdmapingHugeCount(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	startServer(t, ctx, a)
	for _, count := range []string{"100000000000", strconv.Itoa(math.MaxInt)} {
		code, stdout, stderr := interrupt(t, ctx, connectedFor(t, 2*time.Second), "-c", count, a)
		checkSummary(t, a, count, code, stdout, stderr)
	}
}

// rttStats keeps the least, the mean and the median of the round trips
// in memory bounded by maxSamples: exact up to maxSamples round trips, and
// past them a median from the sample that is near the true one.
func TestRTTStats(t *testing.T) {
	var s rttStats
	if s.median() != 0 || s.mean() != 0 {
		t.Errorf("empty: median %v, mean %v; want 0", s.median(), s.mean())
	}
	for _, d := range []time.Duration{7, 3, 9, 5} {
		s.add(d)
	}
	if s.min != 3 || s.median() != 7 || s.mean() != 6 {
		t.Errorf("7 3 9 5: min %v, median %v, mean %v; want 3, 7 (the upper middle), 6", s.min, s.median(), s.mean())
	}
	// 4 × maxSamples round trips: 1 µs to 4 × maxSamples µs, in an order
	// that is neither rising nor falling.
	s = rttStats{}
	const n = 4 * maxSamples
	for i := range n {
		s.add(time.Duration((i*7919)%n+1) * time.Microsecond)
	}
	if len(s.sample) > maxSamples || cap(s.sample) > 2*maxSamples {
		t.Errorf("%d round trips kept %d (capacity %d); want at most %d", n, len(s.sample), cap(s.sample), maxSamples)
	}
	want := time.Duration(n/2) * time.Microsecond
	if s.min != time.Microsecond || s.mean() != (n+1)*time.Microsecond/2 {
		t.Errorf("min %v, mean %v; want 1µs, %v", s.min, s.mean(), (n+1)*time.Microsecond/2)
	}
	if m := s.median(); m < want*98/100 || m > want*102/100 {
		t.Errorf("median %v; want within 2%% of %v", m, want)
	}
}
