//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

// TestAbort: after the peer's Abort, a side reads the messages sent
// before it and then an error matching ECONNRESET, not io.EOF, and its
// sends fail likewise; Abort after Close, or twice, does nothing.
func TestAbort(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	for _, m := range []string{"one", "two"} {
		if err := cli.Send(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cli.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := cli.Abort(); err != nil {
		t.Errorf("Abort again: %v", err)
	}
	buf := make([]byte, 10)
	for _, want := range []string{"one", "two"} {
		if n, err := srv.Recv(ctx, buf); err != nil || string(buf[:n]) != want {
			t.Fatalf("Recv: %q, %v; want %q", buf[:n], err, want)
		}
	}
	if n, err := srv.Read(buf); n != 0 || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Read after the messages of a peer that aborted: %d, %v; want ECONNRESET", n, err)
	}
	if _, err := srv.WriteTo(io.Discard); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("WriteTo after the peer aborted: %v; want ECONNRESET", err)
	}
	if err := srv.Send(ctx, []byte("x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Send to a peer that aborted: %v; want ECONNRESET", err)
	}
	// The side that read the abort closes without complaint: it sent
	// nothing that was lost.
	if err := srv.Close(); err != nil {
		t.Errorf("Close after the peer aborted: %v", err)
	}
	if err := srv.Abort(); err != nil {
		t.Errorf("Abort after Close: %v", err)
	}
}

// TestAbortWithoutCredit: a side that has spent every credit, the last
// on a credit update, to a peer that reads nothing, still aborts: the
// abort goes into the receive the peer keeps spare for it, with no RNR
// NAK, and the peer reads what came before and then the failure.
func TestAbortWithoutCredit(t *testing.T) {
	rnr := rnrNAKs(t)
	cfg := &rdmamsg.Config{Depth: 4}
	srv, cli := connect(t, cfg, cfg)
	ctx := timeout(t, 60*time.Second)
	spendCredits(t, ctx, srv, cli)
	// At once: the update's receive, which the server posts again once
	// it has taken its completion, is not there yet, only the spares.
	if err := abortWithin(t, srv, cli); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	recvABC(t, ctx, srv)
	if _, err := srv.Recv(ctx, make([]byte, 10)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Recv after the peer aborted: %v; want ECONNRESET", err)
	}
	if rnr >= 0 {
		if d := rnrNAKs(t) - rnr; d != 0 {
			t.Errorf("%d RNR NAKs", d)
		}
	}
}

// TestCloseWrite: after the peer's CloseWrite, a side reads what it sent
// and then io.EOF, and may still send to it, which reads that; this side
// can no longer send. The peer's Close then ends the stream for it with
// io.EOF, and its Abort with ECONNRESET.
func TestCloseWrite(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name := "then Close"
		if abort {
			name = "then Abort"
		}
		t.Run(name, func(t *testing.T) {
			srv, cli := connect(t, nil, nil)
			ctx := timeout(t, 60*time.Second)
			data := message(1, 3*cli.MaxSend()+5)
			if _, err := cli.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := cli.CloseWrite(); err != nil {
				t.Fatalf("CloseWrite: %v", err)
			}
			if err := cli.CloseWrite(); err != nil {
				t.Errorf("CloseWrite again: %v", err)
			}
			if _, err := cli.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
				t.Errorf("Write after CloseWrite: %v; want EPIPE", err)
			}
			if err := cli.Send(ctx, nil); !errors.Is(err, syscall.EPIPE) {
				t.Errorf("Send after CloseWrite: %v; want EPIPE", err)
			}
			if n, err := cli.Write(nil); n != 0 || !errors.Is(err, syscall.EPIPE) {
				t.Errorf("Write(nil) after CloseWrite: %d, %v; want EPIPE", n, err)
			}
			var got bytes.Buffer
			srv.SetReadDeadline(time.Now().Add(30 * time.Second))
			if n, err := srv.WriteTo(&got); err != nil || !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("WriteTo up to the peer's CloseWrite: %d bytes of %d, %v", n, len(data), err)
			}
			if n, err := srv.Recv(ctx, make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("Recv after the end: %d, %v; want io.EOF", n, err)
			}
			// The other way is open: more than the client's depth of
			// messages, so that its credit updates flow after its
			// CloseWrite too.
			reply := message(2, 40*srv.MaxSend())
			sent := make(chan error, 1)
			go func() { _, err := srv.Write(reply); sent <- err }()
			back := make([]byte, len(reply))
			cli.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.ReadFull(cli, back); err != nil || !bytes.Equal(back, reply) {
				t.Fatalf("the reply after CloseWrite: %v", err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			end := srv.Close
			want := io.EOF
			if abort {
				end, want = srv.Abort, syscall.ECONNRESET
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			if n, err := cli.Read(back); n != 0 || !errors.Is(err, want) {
				t.Errorf("Read after the server's end: %d, %v; want %v", n, err, want)
			}
		})
	}
}

// TestAbortAfterPeerClosed: a side that read to the end of a peer that
// closed, and then aborts, posts no abort: the peer, which takes nothing
// more after its Close, waits in it for its sends (a hook holds it there
// until the abort is over) and closes without a failure. Before, the
// abort went into the peer's spare receive and failed it with
// ECONNRESET, and its Close could then count messages the side had
// received as lost.
func TestAbortAfterPeerClosed(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo()
	restore := rdmamsg.SetShutHook(func(c *rdmamsg.Conn) {
		if c != srv {
			return
		}
		holdOnce.Do(func() {
			close(held)
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		})
	})
	defer restore()

	msgs := []string{"one", "two", "three"}
	for _, m := range msgs {
		if err := srv.Send(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not reach its wait for the sends in 20 s")
	}
	buf := make([]byte, 10)
	for _, want := range msgs {
		if n, err := cli.Recv(ctx, buf); err != nil || string(buf[:n]) != want {
			t.Fatalf("Recv: %q, %v; want %q", buf[:n], err, want)
		}
	}
	if n, err := cli.Recv(ctx, buf); n != 0 || err != io.EOF {
		t.Fatalf("Recv after the peer's Close: %d, %v; want io.EOF", n, err)
	}
	if err := cli.Abort(); err != nil {
		t.Errorf("Abort after the peer closed: %v", err)
	}
	letGo()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close of the side whose peer aborted after reading everything: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close still runs 30 s after the peer's Abort")
	}
	if err := srv.Failure(); err != nil {
		t.Errorf("the side that closed received an abort after its Close: %v", err)
	}
}
