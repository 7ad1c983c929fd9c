//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos

package exchange

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

// TestReadAhead: ReadAhead reads at once the frames that have come whole
// and keeps the messages among them for the receives, which return them
// in order, before what comes after; it takes the Alives (the peer is
// then known to keep alive), leaves a frame that has not come whole, and
// waits for nothing. The receives find the kept ErrorMsg, and LastWord
// does too.
func TestReadAhead(t *testing.T) {
	a, b := tcpPair(t)
	ctx := timeout(t, 10*time.Second)
	for _, m := range []Message{Alive{}, Alive{}, Sync{Seq: 1}, Alive{}, Sync{Seq: 2}, Alive{}} {
		if err := a.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// Part of a Sync: its header and 2 of its 4 bytes.
	partial, err := AppendFrame(nil, Sync{Seq: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.NetConn().Write(partial[:HeaderLen+2]); err != nil {
		t.Fatal(err)
	}
	// Wait until the last bytes are in b's socket: the header and its 2.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var p [64]byte
		n, _ := peekAll(b, p[:])
		if n == 6*HeaderLen+2*4+HeaderLen+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes in the socket after 5 s", n)
		}
	}
	began := time.Now()
	if n := b.ReadAhead(); n != 6 {
		t.Errorf("ReadAhead read %d frames; want the 6 that came whole", n)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("ReadAhead took %v; want it not to wait for the frame that came in part", took)
	}
	if n := b.ReadAhead(); n != 0 {
		t.Errorf("ReadAhead again read %d frames; want none", n)
	}
	if _, err := a.NetConn().Write(partial[HeaderLen+2:]); err != nil {
		t.Fatal(err)
	}
	for want := uint32(1); want <= 3; want++ {
		s, err := b.RecvSync(ctx)
		if err != nil || s.Seq != want {
			t.Fatalf("receive %d after ReadAhead: %v, %v; want Sync %d", want, s, err, want)
		}
	}
	// The Alives read ahead count: the peer keeps alive, and its silence
	// is a SilenceError.
	b.SetPeerTimeout(200 * time.Millisecond)
	var se *SilenceError
	if _, err := b.Recv(ctx); !errors.As(err, &se) {
		t.Errorf("a receive once the peer's Alives were read ahead and it went silent: %v; want a SilenceError", err)
	}
	b.SetPeerTimeout(0)

	// An ErrorMsg read ahead: LastWord finds it, and the receive returns
	// it as a *PeerError.
	if err := a.Send(ctx, NewErrorMsg(errors.New("gave up"))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); b.ReadAhead() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ErrorMsg was not read ahead within 5 s")
		}
	}
	var pe *PeerError
	if err := b.LastWord(); !errors.As(err, &pe) || pe.Text != "gave up" {
		t.Errorf("LastWord with an ErrorMsg read ahead: %v", err)
	}
	if _, err := b.Recv(ctx); !errors.As(err, &pe) || pe.Text != "gave up" {
		t.Errorf("a receive with an ErrorMsg read ahead: %v", err)
	}
}

// TestReadAheadBounded: ReadAhead keeps at most maxAhead messages, and
// the rest wait in the socket for the receives; it reads nothing while a
// receive waits, and does not wait for it; a frame whose header is not
// valid is left to the receive, which fails there.
func TestReadAheadBounded(t *testing.T) {
	a, b := tcpPair(t)
	ctx := timeout(t, 10*time.Second)
	const n = maxAhead + 3
	for i := range n {
		if err := a.Send(ctx, Sync{Seq: uint32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.NetConn().Write([]byte{0xee, 0, 0, 0}); err != nil { // no such type
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var p [128]byte
		if got, _ := peekAll(b, p[:]); got == n*(HeaderLen+4)+HeaderLen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the frames did not reach the socket within 5 s")
		}
	}
	if got := b.ReadAhead(); got != maxAhead {
		t.Errorf("ReadAhead read %d frames; want %d", got, maxAhead)
	}
	for i := range n {
		s, err := b.RecvSync(ctx)
		if err != nil || s.Seq != uint32(i) {
			t.Fatalf("receive %d: %v, %v", i, s, err)
		}
	}
	if got := b.ReadAhead(); got != 0 {
		t.Errorf("ReadAhead read %d frames at a bad header; want none", got)
	}
	if _, err := b.Recv(ctx); !errors.Is(err, ErrMalformed) {
		t.Errorf("a receive at a bad header: %v; want ErrMalformed", err)
	}

	c, d := tcpPair(t)
	got := make(chan error, 1)
	go func() {
		_, err := d.RecvSync(timeout(t, 5*time.Second))
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // the receive waits
	began := time.Now()
	if r := d.ReadAhead(); r != 0 || time.Since(began) > time.Second {
		t.Errorf("ReadAhead while a receive waits: %d frames after %v; want none at once", r, time.Since(began))
	}
	if err := c.Send(ctx, Sync{Seq: 9}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("the receive: %v", err)
	}
}

// peekAll peeks at what waits in c's socket, up to len(p).
func peekAll(c *Conn, p []byte) (n int, err error) {
	rc, err := c.NetConn().(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err
	}
	rc.Control(func(fd uintptr) {
		n, _, err = syscall.Recvfrom(int(fd), p, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n, err
}
