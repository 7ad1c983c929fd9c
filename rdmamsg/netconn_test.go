//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestHTTP serves HTTP from net/http over rdmamsg, through NetListener,
// and fetches from it with net/http's client through NetConn: a small
// reply, a large one, a posted body echoed, on kept-alive connections;
// then the server closes.
func TestHTTP(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 120*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), &rdmamsg.Config{MaxMessage: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	big := message(3, 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over %s from %s", r.Context().Value(http.LocalAddrContextKey).(net.Addr).Network(), r.RemoteAddr)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		// HTTP/1.x: the whole body first, then the reply.
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("the handler's read: %v", err)
		}
		w.Write(b)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l.NetListener()) }()

	var dials int
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials++
			c, err := rdmamsg.Dial(ctx, addr, &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
			if err != nil {
				return nil, err
			}
			return c.NetConn(), nil
		},
	}}
	defer client.CloseIdleConnections()
	get := func(path string, body []byte) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+l.Addr().String()+path, nil)
		if body != nil {
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, "http://"+l.Addr().String()+path, bytes.NewReader(body))
		}
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s, %v", path, resp.Status, err)
		}
		return b
	}
	if got, want := string(get("/", nil)), "hello over rdma from "+cliNet.IP.String()+":"; !strings.HasPrefix(got, want) {
		t.Errorf("GET /: %q, want %q...", got, want)
	}
	if got := get("/big", nil); !bytes.Equal(got, big) {
		t.Errorf("GET /big: %d bytes, not the %d served", len(got), len(big))
	}
	post := message(4, 200_000)
	if got := get("/echo", post); !bytes.Equal(got, post) {
		t.Errorf("POST /echo: %d bytes back of %d", len(got), len(post))
	}
	if dials != 1 {
		t.Errorf("%d connections for three requests, want 1 kept alive", dials)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after the server closed")
	}
}

// TestDeadlines checks that read and write deadlines end waits, under way
// or to come, with a timeout error, and that a cleared deadline lets the
// connection carry on with nothing lost.
func TestDeadlines(t *testing.T) {
	srv, cli := connect(t, nil, &rdmamsg.Config{Depth: 4})
	nc := cli.NetConn()
	if a := nc.LocalAddr(); a.Network() != "rdma" || a.String() != cli.LocalAddr().String() {
		t.Errorf("LocalAddr %v (%s)", a, a.Network())
	}
	isTimeout := func(err error) bool {
		var ne net.Error
		return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
	}
	buf := make([]byte, 10)
	nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	start := time.Now()
	if _, err := nc.Read(buf); !isTimeout(err) || time.Since(start) < 90*time.Millisecond {
		t.Errorf("Read past its deadline: %v after %v", err, time.Since(start))
	}
	// A deadline set in the past ends a Read under way.
	nc.SetReadDeadline(time.Time{})
	got := make(chan error, 1)
	go func() { _, err := nc.Read(buf); got <- err }()
	time.Sleep(100 * time.Millisecond)
	nc.SetReadDeadline(time.Now().Add(-time.Second))
	if err := <-got; !isTimeout(err) {
		t.Errorf("Read whose deadline passed while it waited: %v", err)
	}
	// Cleared, the connection carries on.
	nc.SetReadDeadline(time.Time{})
	if _, err := srv.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if n, err := nc.Read(buf); err != nil || string(buf[:n]) != "after" {
		t.Errorf("Read after the deadline was cleared: %q, %v", buf[:n], err)
	}
	// A writer whose peer reads nothing runs out of credits and its
	// deadline ends the wait, with what went counted: of the reader's
	// depth of 4, one credit is kept for updates and one is the receive
	// of "after", reposted but not yet reported.
	srvNC := srv.NetConn()
	srvNC.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	n, err := srvNC.Write(make([]byte, 10*srv.MaxSend()))
	if !isTimeout(err) || n != 2*srv.MaxSend() {
		t.Errorf("Write to a peer that reads nothing: %d bytes, %v; want %d and a timeout", n, err, 2*srv.MaxSend())
	}
	// A deadline past fails a read at once, though messages wait, and a
	// write, though credits are there, as package net's do; cleared, the
	// messages are read.
	nc.SetDeadline(time.Now().Add(-time.Second))
	if n, err := nc.Read(buf); n != 0 || !isTimeout(err) {
		t.Errorf("Read with messages there, past its deadline: %d bytes, %v", n, err)
	}
	if n, err := nc.Write([]byte("x")); n != 0 || !isTimeout(err) {
		t.Errorf("Write past its deadline: %d bytes, %v", n, err)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(buf); n == 0 || err != nil {
		t.Errorf("Read after the deadline was cleared: %d bytes, %v", n, err)
	}
	// Closed, a read or write with its deadline past says closed, as
	// package net's do: a loop that goes on after a timeout and ends on
	// net.ErrClosed would spin.
	nc.SetDeadline(time.Now().Add(-time.Second))
	closeOK(t, cli)
	if _, err := nc.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close, its deadline past: %v, want net.ErrClosed", err)
	}
	if _, err := nc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close, its deadline past: %v, want net.ErrClosed", err)
	}
}
