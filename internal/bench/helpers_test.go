//go:build linux && cgo

package bench_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestHelpersCloseListeners: the tests' helpers that start a one-test
// server (loopback, tryLoopback, stopPair, serverOnDevice) leave no
// listening socket behind, though a one-test Serve hands its listener
// back open: each left one, for the rest of the package's run. And a
// client that fails before it asks for its test ends tryLoopback at
// once, where its server waited out its context's minute for a client.
func TestHelpersCloseListeners(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
		NumQPs: 1, TXDepth: 8, CQModeration: 1}
	loopback(t, spec) // whatever a first run opens for good
	before := listening(t)
	for range 3 {
		loopback(t, spec)
	}
	stopSpec := spec
	stopSpec.Iterations, stopSpec.Duration = 0, 5
	c, s, _ := stopPair(t, stopSpec, true, 500*time.Millisecond, nil)
	if c.err != nil || s.err != nil {
		t.Errorf("stopPair: client %v; server %v", c, s)
	}
	t.Run("serverOnDevice", func(t *testing.T) { serverOnDevice(t, time.Second) })
	start := time.Now()
	_, _, cerr, serr := tryLoopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.Port = 99 // no such port: Check fails the client before it connects
		}
	})
	took := time.Since(start)
	t.Logf("a client on port 99, after %v: %v; its server: %v", took, cerr, serr)
	if cerr == nil {
		t.Error("a client on port 99: no error")
	}
	if took > 10*time.Second {
		t.Errorf("a client that failed before it asked for its test: tryLoopback took %v", took)
	}
	if after := listening(t); after != before {
		t.Errorf("this process listens on %d TCP sockets, %d before the helpers' runs", after, before)
	}
}

// listening counts this process's listening TCP sockets: its open files
// that are sockets whose inodes /proc/net/tcp and tcp6 list as LISTEN.
func listening(t *testing.T) int {
	t.Helper()
	listen := map[string]bool{} // by inode
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			if fs := strings.Fields(sc.Text()); len(fs) > 9 && fs[3] == "0A" {
				listen[fs[9]] = true
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok && listen[strings.TrimSuffix(inode, "]")] {
			n++
		}
	}
	return n
}

// dialServer connects to the gorperf server at addr as a client of the
// protocol alone and says hello as tool: the caller goes on from the
// test's spec, and closes the connection.
func dialServer(t *testing.T, ctx context.Context, addr, tool string) *exchange.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := exchange.NewConn(nc)
	if _, err := exchange.Handshake(ctx, c, tool); err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return c
}
