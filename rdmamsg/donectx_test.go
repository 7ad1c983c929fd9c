//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// doneContexts are a context cancelled and one whose deadline passed,
// both done before the call, with the error each must fail it with.
func doneContexts(ctx context.Context) []struct {
	name string
	ctx  context.Context
	want error
} {
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	cancel2()
	return []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"expired", expired, context.DeadlineExceeded},
	}
}

// TestDoneContext: a call whose context is already done fails with the
// context's error before it posts anything, as one whose deadline passed
// does: WriteRemote writes nothing into the peer's region, ReadRemote
// reads nothing into the local one, Send sends nothing, and Recv takes
// nothing, the message waiting staying for the next Recv. (The old code
// posted them, a free slot, credit or turn taken before the context was
// looked at, and returned nil.)
func TestDoneContext(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	const size, half = 4096, 2048
	sr := region(t, srv, size)
	cr := region(t, cli, size)
	remote := tellRegion(t, ctx, srv, cli, sr)
	buf := make([]byte, 64)
	for _, d := range doneContexts(ctx) {
		// WriteRemote from the first half of cr into the first of sr,
		// ReadRemote from the second half of sr into the second of cr.
		clear(sr.Bytes()[:half])
		fill(sr.Bytes()[half:], 9)
		fill(cr.Bytes()[:half], 7)
		clear(cr.Bytes()[half:])
		if err := cli.WriteRemote(d.ctx, remote, 0, cr, 0, half); !errors.Is(err, d.want) {
			t.Errorf("WriteRemote with a context %s: %v, want %v", d.name, err, d.want)
		}
		if err := cli.ReadRemote(d.ctx, cr, half, remote, half, half); !errors.Is(err, d.want) {
			t.Errorf("ReadRemote with a context %s: %v, want %v", d.name, err, d.want)
		}
		if err := cli.Send(d.ctx, []byte("not sent")); !errors.Is(err, d.want) {
			t.Errorf("Send with a context %s: %v, want %v", d.name, err, d.want)
		}
		// A message after: the QP keeps its order, so whatever the calls
		// above posted has reached srv before it.
		if err := cli.Send(ctx, []byte("after")); err != nil {
			t.Fatal(err)
		}
		n, err := srv.Recv(ctx, buf)
		if err != nil {
			t.Fatal(err)
		}
		if string(buf[:n]) != "after" {
			t.Errorf("with a context %s: the peer received %q before the message sent after", d.name, buf[:n])
			if n, err = srv.Recv(ctx, buf); err != nil || string(buf[:n]) != "after" {
				t.Fatalf("the next: %q, %v", buf[:n], err)
			}
		}
		if !bytes.Equal(sr.Bytes()[:half], make([]byte, half)) {
			t.Errorf("with a context %s: WriteRemote wrote into the peer's region", d.name)
		}
		if !bytes.Equal(cr.Bytes()[half:], make([]byte, half)) {
			t.Errorf("with a context %s: ReadRemote read into the local region", d.name)
		}

		// A message waiting: Recv with a done context leaves it.
		if err := srv.Send(ctx, []byte("waiting")); err != nil {
			t.Fatal(err)
		}
		// Once it is there (an RDMA read after it completes after it).
		if err := cli.ReadRemote(ctx, cr, 0, remote, 0, 1); err != nil {
			t.Fatal(err)
		}
		if n, err := cli.Recv(d.ctx, buf); !errors.Is(err, d.want) {
			t.Fatalf("Recv with a context %s and a message waiting: %q, %v, want %v", d.name, buf[:n], err, d.want)
		}
		if n, err := cli.Recv(ctx, buf); err != nil || string(buf[:n]) != "waiting" {
			t.Errorf("the Recv after: %q, %v, want the message waiting", buf[:n], err)
		}
	}
}

// TestPacketDoneContext: ReadFrom and WriteTo with a context already done
// fail with its error: WriteTo to a known peer sends nothing, and
// ReadFrom leaves the datagram waiting for the next.
func TestPacketDoneContext(t *testing.T) {
	a, b := packetPair(t)
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, a.MaxDatagram())
	// b knows a from here on: no lookup comes before a WriteTo.
	if err := b.WriteTo(ctx, []byte("first"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "first" {
		t.Fatalf("first datagram: %q, %v", buf[:n], err)
	}
	for _, d := range doneContexts(ctx) {
		if err := b.WriteTo(d.ctx, []byte("not sent"), a.LocalAddr()); !errors.Is(err, d.want) {
			t.Errorf("WriteTo with a context %s: %v, want %v", d.name, err, d.want)
		}
		if err := b.WriteTo(ctx, []byte("after"), a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		// Let it arrive before the ReadFrom that must leave it.
		time.Sleep(100 * time.Millisecond)
		if n, _, err := a.ReadFrom(d.ctx, buf); !errors.Is(err, d.want) {
			t.Fatalf("ReadFrom with a context %s and a datagram waiting: %q, %v, want %v", d.name, buf[:n], err, d.want)
		}
		if n, _, err := a.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "after" {
			t.Errorf("with a context %s: the datagram read after: %q, %v, want \"after\"", d.name, buf[:n], err)
		}
	}
}
