//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestClientAddrGaveUp: the address of a client that gave up before it
// asked for its test is the one its *bench.GaveUpError holds, which
// serve --json writes as peer_addr, where it was what followed "client "
// in its text up to the first ": ", "198.18.0.2:45040 gave up before it
// asked for a test", which SplitHostPort took (its port not checked). A
// failure's text that names no client by an IP address and a numeric
// port names none.
func TestClientAddrGaveUp(t *testing.T) {
	said := &exchange.PeerError{Code: exchange.CodeFailed, Text: "message size 100000000 over the device's maximum: 8388608"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&bench.GaveUpError{Addr: "198.18.0.2:45040", Err: said}, "198.18.0.2:45040"},
		{&bench.GaveUpError{Addr: "[2001:2::2]:7", Err: said}, "[2001:2::2]:7"},
		{bench.NameClient("198.18.0.2:40002", &bench.RefusedError{Err: errors.New("too big: x")}), "198.18.0.2:40002"},
		{bench.NameClient("[fe80::1%veth0]:40004", errors.New("creating the QPs: no memory")), "[fe80::1%veth0]:40004"},
		// Texts alone: what follows "client " is no address.
		{errors.New("client 198.18.0.2:45040 gave up before it asked for a test: x: y"), ""},
		{errors.New("client 198.18.0.2:port: x"), ""},
		{errors.New("client host:40000: x"), ""},
		{errors.New("client 198.18.0.2:99999: x"), ""},
		{errors.New("client gone: z"), ""},
		{errors.New("refused: 4 QPs"), ""},
	} {
		if got := clientAddr(tc.err); got != tc.want {
			t.Errorf("clientAddr(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestServeJSONGaveUpPeerAddr: serve --json's document of a client that
// gave up before it asked for its test has the client's address as its
// peer_addr, as getting-started promises.
func TestServeJSONGaveUpPeerAddr(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := &serveOptions{}
	o.test.JSON, o.test.jsonLines, o.test.Device, o.test.IBPort, o.test.GIDIndex = true, true, "rxe0", 1, -1
	o.done(context.Background(), f, nil, &bench.GaveUpError{Addr: "198.18.0.2:45040",
		Err: &exchange.PeerError{Code: exchange.CodeFailed, Text: "GID index 200: past the table: 16"}})
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.PeerAddr != "198.18.0.2:45040" || r.Error == nil {
		t.Errorf("peer_addr %q, error %+v; want the client's address and its error:\n%s", r.PeerAddr, r.Error, out)
	}
}

// TestServeJSONGaveUpEndToEnd: serve --json's document of a real client
// that gave up before it asked for its test (its GID index past its
// device's table, -x 200) has the client's address as its peer_addr,
// an IP address of this host and a port; it was "ADDR gave up before
// it asked for a test".
func TestServeJSONGaveUpEndToEnd(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 60*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "serve", "--json")
	if out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "-x", "200", addr).CombinedOutput(); err == nil {
		t.Fatalf("a client with -x 200 ran its test:\n%s", out)
	}
	// Its document comes once the server has read why it gave up.
	for end := time.Now().Add(5 * time.Second); !strings.Contains(srvOut.String(), "\n") && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	srv.Process.Signal(syscall.SIGINT)
	if err := srv.Wait(); err != nil {
		t.Errorf("serve after SIGINT: %v", err)
	}
	var r report.Result
	if err := json.Unmarshal([]byte(strings.SplitN(srvOut.String(), "\n", 2)[0]), &r); err != nil {
		t.Fatalf("%v:\n%s", err, srvOut)
	}
	host, p, err := net.SplitHostPort(r.PeerAddr)
	if err != nil || !localIP(t, host) || strings.ContainsFunc(p, func(c rune) bool { return c < '0' || c > '9' }) || r.Error == nil {
		t.Errorf("peer_addr %q (%v), error %+v; want the client's address and why it gave up:\n%s", r.PeerAddr, err, r.Error, srvOut)
	}
}

// TestServeGaveUpAfterStop: a client that gave up before it asked for
// its test is reported (its document, its line on stderr, counted) also
// where serve's Ctrl-C or SIGTERM came before done had it: Serve hands
// done what its lobby heard before the stop after it too, and the
// client's reason came whole. It said nothing then, as of a greeting the
// stop cut short, which still says nothing.
func TestServeGaveUpAfterStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, out, errOut := newTestFactory(nil, nil)
	o := &serveOptions{}
	o.test.JSON, o.test.jsonLines, o.test.Device = true, true, "rxe0"
	o.done(ctx, f, nil, &bench.GaveUpError{Addr: "198.18.0.2:45040",
		Err: &exchange.PeerError{Code: exchange.CodeFailed, Text: "message size 100000000 over the device's maximum"}})
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.PeerAddr != "198.18.0.2:45040" || r.Error == nil ||
		!strings.Contains(errOut.String(), "gave up before it asked") || o.served != 1 || o.failed != 1 {
		t.Errorf("after the stop: %v, served %d, failed %d; want its document, its line and it counted:\n%s%s", err, o.served, o.failed, out, errOut)
	}
	out.Reset()
	errOut.Reset()
	o.done(ctx, f, nil, fmt.Errorf("client 198.18.0.2:45042: connecting the QPs: %w", context.Canceled))
	if out.Len() != 0 || errOut.Len() != 0 {
		t.Errorf("a set-up the stop cut short said:\n%s%s", out, errOut)
	}
}
