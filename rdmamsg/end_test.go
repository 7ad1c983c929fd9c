//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// spendCredits has cli, of a connection whose sides have a depth of 4,
// send a, b and c, which the server does not read, and spend its last
// credit on the credit update it owes once it has read two of the
// server's messages: it has none left.
func spendCredits(t *testing.T, ctx context.Context, srv, cli *rdmamsg.Conn) {
	t.Helper()
	// Of the server's 4 credits, the client spends 3 on data, keeping
	// the last for updates ...
	for _, m := range []string{"a", "b", "c"} {
		if err := cli.Send(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// ... and that one on the update it owes once it has read 2 of the
	// server's messages (half its depth).
	buf := make([]byte, 10)
	for _, m := range []string{"x", "y"} {
		if err := srv.Send(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// recvABC has srv read the a, b and c of spendCredits.
func recvABC(t *testing.T, ctx context.Context, srv *rdmamsg.Conn) {
	t.Helper()
	buf := make([]byte, 10)
	for _, want := range []string{"a", "b", "c"} {
		if n, err := srv.Recv(ctx, buf); err != nil || string(buf[:n]) != want {
			t.Fatalf("Recv: %q, %v; want %q", buf[:n], err, want)
		}
	}
}

// recvAfterEnd has srv read on after the peer's end (io.EOF) until it
// reads something else, or ctx ends: it fails the test on data, and
// returns the error (ctx's where it ended: Recv at the end returns
// io.EOF whatever ctx says).
func recvAfterEnd(t *testing.T, ctx context.Context, srv *rdmamsg.Conn) error {
	t.Helper()
	buf := make([]byte, 10)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := srv.Recv(ctx, buf)
		if err == nil {
			t.Fatalf("Recv after the peer's end message: %q", buf[:n])
		}
		if err != io.EOF {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseWriteWithoutCredit: CloseWrite needs no credit, as a TCP
// shutdown waits for no window: with every credit spent, to a peer that
// reads nothing, it returns at once, where it waited for a credit (for
// ever, the write deadline aside). The end message goes into a receive
// the peer keeps spare, with no RNR NAK; the abort after it, into the
// other.
func TestCloseWriteWithoutCredit(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name := "CloseWrite"
		if abort {
			name = "CloseWrite then Abort"
		}
		t.Run(name, func(t *testing.T) {
			rnr := rnrNAKs(t)
			cfg := &rdmamsg.Config{Depth: 4}
			srv, cli := connect(t, cfg, cfg)
			ctx := timeout(t, 60*time.Second)
			spendCredits(t, ctx, srv, cli)
			// A CloseWrite that waits for a credit returns at the write
			// deadline, 30 s on; 10 s is far from both that and a slow
			// host's "at once" (CI's VM runs under TCG).
			cli.SetWriteDeadline(time.Now().Add(30 * time.Second))
			start := time.Now()
			if err := cli.CloseWrite(); err != nil || time.Since(start) > 10*time.Second {
				t.Fatalf("CloseWrite with no credit: %v after %v; want nil at once", err, time.Since(start))
			}
			if abort {
				if err := abortWithin(t, srv, cli); err != nil {
					t.Fatalf("Abort after CloseWrite, with no credit: %v", err)
				}
			}
			recvABC(t, ctx, srv)
			if abort {
				if err := recvAfterEnd(t, ctx, srv); !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("Recv after the peer's end and abort: %v; want ECONNRESET", err)
				}
			} else if n, err := srv.Recv(ctx, make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("Recv after the peer's CloseWrite: %d, %v; want io.EOF", n, err)
			}
			if rnr >= 0 {
				if d := rnrNAKs(t) - rnr; d != 0 {
					t.Errorf("%d RNR NAKs", d)
				}
			}
		})
	}
}

// abortWithin returns cli's Abort, which waits for its abort to reach
// srv; where it has not within 10 s (no receive for it: the device
// retries for ever), it fails the test and closes srv, which ends the
// wait.
func abortWithin(t *testing.T, srv, cli *rdmamsg.Conn) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cli.Abort() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Errorf("Abort still waits after 10 s for its abort to reach the peer")
		srv.Close()
		return <-done
	}
}

// TestPeerVanished: a peer that disconnects without its end message (as
// a killed process's kernel does) is not taken for one that ended its
// stream: after what it sent, Recv, Read and WriteTo fail with an error
// matching io.ErrUnexpectedEOF and rdmacm.ErrDisconnected, where they
// returned io.EOF, as they still do after its Close, and for a peer older
// than end messages. Send fails with syscall.EPIPE either way, but says
// which, and matches rdmacm.ErrDisconnected where the peer vanished: it
// said "the peer closed the connection" of a peer that was killed.
func TestPeerVanished(t *testing.T) {
	const closed, vanished = "the peer closed the connection", "the peer disconnected without ending its stream"
	for _, tc := range []struct {
		name string
		old  bool // the peer is older than end messages
		end  func(*rdmamsg.Conn) error
		want error
		send string // what Send says after the end
	}{
		{"vanished", false, (*rdmamsg.Conn).CloseWithoutEnd, io.ErrUnexpectedEOF, vanished},
		{"closed", false, (*rdmamsg.Conn).Close, io.EOF, closed},
		{"older peer, vanished", true, (*rdmamsg.Conn).CloseWithoutEnd, io.EOF, closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := connect(t, nil, nil)
			ctx := timeout(t, 60*time.Second)
			if tc.old {
				srv.SetPeerEnds(false)
				cli.SetPeerEnds(false)
			}
			if err := cli.Send(ctx, []byte("last")); err != nil {
				t.Fatal(err)
			}
			if err := tc.end(cli); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 10)
			if n, err := srv.Recv(ctx, buf); err != nil || string(buf[:n]) != "last" {
				t.Fatalf("Recv: %q, %v; want %q", buf[:n], err, "last")
			}
			n, err := srv.Recv(ctx, buf)
			if n != 0 || !errors.Is(err, tc.want) || tc.want == io.ErrUnexpectedEOF && !errors.Is(err, rdmacm.ErrDisconnected) {
				t.Errorf("Recv at the end: %d, %v; want %v", n, err, tc.want)
			}
			if _, err := srv.Read(buf); !errors.Is(err, tc.want) {
				t.Errorf("Read at the end: %v; want %v", err, tc.want)
			}
			_, err = srv.WriteTo(io.Discard)
			if tc.want == io.EOF && err != nil || tc.want != io.EOF && !errors.Is(err, tc.want) {
				t.Errorf("WriteTo at the end: %v; want %v", err, tc.want)
			}
			err = srv.Send(ctx, []byte("x"))
			if !errors.Is(err, syscall.EPIPE) || !strings.Contains(err.Error(), tc.send) ||
				errors.Is(err, rdmacm.ErrDisconnected) != (tc.send == vanished) {
				t.Errorf("Send at the end: %v; want EPIPE, %q, and rdmacm.ErrDisconnected only where it vanished", err, tc.send)
			}
		})
	}
}

// TestAfterEnd: a peer that sends data after its end message, or a
// second end, fails the connection (EPROTO), where its data was read
// after io.EOF.
func TestAfterEnd(t *testing.T) {
	for _, data := range []bool{true, false} {
		name := "data"
		if !data {
			name = "a second end"
		}
		t.Run(name, func(t *testing.T) {
			srv, cli := connect(t, nil, nil)
			ctx := timeout(t, 60*time.Second)
			if err := cli.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			cli.ForgetCloseWrite()
			var err error
			if data {
				err = cli.Send(ctx, []byte("late"))
			} else {
				err = cli.CloseWrite()
			}
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := recvAfterEnd(t, wctx, srv); !errors.Is(err, syscall.EPROTO) {
				t.Errorf("Recv after the peer's end and %s: %v; want EPROTO", name, err)
			}
		})
	}
}

// TestOlderPeerEnds: to a peer older than end and abort messages, Abort
// with no credit to spend cannot tell it, and says so (an error matching
// errors.ErrUnsupported), where it returned nil; the peer takes the end
// for the end of the stream. CloseWrite after Close is ErrClosed, as
// to any peer, not ErrUnsupported.
func TestOlderPeerEnds(t *testing.T) {
	cfg := &rdmamsg.Config{Depth: 4}
	srv, cli := pair(t, cfg, cfg)
	defer closeOK(t, srv)
	defer cli.Close()
	ctx := timeout(t, 60*time.Second)
	srv.SetPeerEnds(false)
	cli.SetPeerEnds(false)
	if err := cli.CloseWrite(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CloseWrite to an older peer: %v; want ErrUnsupported", err)
	}
	spendCredits(t, ctx, srv, cli)
	if err := cli.Abort(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Abort to an older peer with no credit: %v; want ErrUnsupported", err)
	}
	if err := cli.CloseWrite(); !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("CloseWrite after Abort: %v; want ErrClosed", err)
	}
	recvABC(t, ctx, srv)
	if n, err := srv.Recv(ctx, make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("Recv after an older peer's Abort: %d, %v; want io.EOF", n, err)
	}
}
