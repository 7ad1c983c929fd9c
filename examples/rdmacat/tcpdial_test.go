//go:build linux && cgo

package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"golang.org/x/sys/unix"
)

// A -tcp client whose server's port drops its SYNs gives up after 10 s
// (dialTimeout), saying so, where it waited for the kernel's SYN retries,
// over two minutes. The port here is a listener with a backlog of 0 that
// never accepts: once its accept queue holds one connection, Linux drops
// the SYNs that come after. It needs no RDMA device: the client fails
// before it opens one.
func TestRdmacatTCPDialTimeout(t *testing.T) {
	t.Parallel()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	a := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	full := false
	for range 8 {
		c, err := net.DialTimeout("tcp", a, 500*time.Millisecond)
		if err != nil {
			full = true
			break
		}
		defer c.Close()
	}
	if !full {
		t.Skip("the listener's accept queue took 8 connections without filling up")
	}
	tcpClientGivesUp(t, a, "no TCP connection within 10s", "a port that drops SYNs")
}

// tcpClientGivesUp runs rdmacat -tcp a, whose server (what) will not
// complete the connection, and fails the test unless the client exits 1
// within 20 s (its limits are 10 s), saying limit.
func tcpClientGivesUp(t *testing.T, a, limit, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := rdmatest.Command(ctx, "-tcp", a)
	cli.Stdin = strings.NewReader("hello")
	start := time.Now()
	out, err := cli.CombinedOutput()
	d := time.Since(start)
	if code := cli.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), limit) || d > 20*time.Second {
		t.Errorf("client to %s: exit status %d (%v) after %v: %q; want 1 after 10 s, %q said", what, code, err, d, out, limit)
	}
	t.Logf("client to %s after %v: %s", what, d, out)
}
