//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

// calls counts the calls made in goroutines whose errors are not yet
// taken, so that a test can wait for the last of those that took too
// long before it ends.
type calls map[chan error]int

// start runs f in a goroutine, its error to come on ch.
func (c calls) start(ch chan error, f func() error) {
	c[ch]++
	go func() { ch <- f() }()
}

// returns waits up to d for a call's error on ch; ok is false if none
// came.
func (c calls) returns(ch chan error, d time.Duration) (err error, ok bool) {
	select {
	case err := <-ch:
		c[ch]--
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

// drain waits up to d for each call not yet returned.
func (c calls) drain(d time.Duration) {
	for ch, n := range c {
		for range n {
			c.returns(ch, d)
		}
	}
}

// TestTurnWaitEnds: a receiver waiting for its turn behind a Read that
// waits for a message stops when its context ends; a writer waiting for
// its turn behind a ReadFrom blocked in its reader stops when its write
// deadline passes, or its context ends, or the Conn closes. Where they
// waited on a mutex, each waited for the one before it.
func TestTurnWaitEnds(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	c := calls{}
	// On the old code, what waited returns once the test unblocks
	// what it waited behind.
	defer c.drain(10 * time.Second)

	// A Read with no message and no deadline holds the receivers' turn.
	read, recv := make(chan error, 1), make(chan error, 1)
	c.start(read, func() error { _, err := cli.Read(make([]byte, 10)); return err })
	time.Sleep(100 * time.Millisecond)
	c.start(recv, func() error {
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := cli.Recv(rctx, make([]byte, 10))
		return err
	})
	if err, ok := c.returns(recv, 5*time.Second); !ok {
		t.Error("a Recv with a context of 200 ms behind a waiting Read: still waiting after 5 s")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Recv with a context of 200 ms behind a waiting Read: %v", err)
	}
	// A message ends the Read (and, where the Recv still waits, the
	// next one that Recv).
	for _, m := range []string{"one", "two"} {
		if err := srv.Send(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err, ok := c.returns(read, 10*time.Second); !ok || err != nil {
		t.Fatalf("the Read, after a message: %v (returned: %v)", err, ok)
	}

	// A ReadFrom whose reader has nothing holds the senders' turn.
	pr, pw := io.Pipe()
	defer pw.Close()
	from, send, write, closed := make(chan error, 1), make(chan error, 1), make(chan error, 2), make(chan error, 1)
	c.start(from, func() error { _, err := cli.ReadFrom(pr); return err })
	time.Sleep(100 * time.Millisecond)

	c.start(send, func() error {
		sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return cli.Send(sctx, []byte("x"))
	})
	if err, ok := c.returns(send, 5*time.Second); !ok {
		t.Error("a Send with a context of 200 ms behind a ReadFrom in its reader: still waiting after 5 s")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Send with a context of 200 ms behind a ReadFrom in its reader: %v", err)
	}

	c.start(write, func() error { _, err := cli.Write([]byte("x")); return err })
	time.Sleep(100 * time.Millisecond)
	cli.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	if err, ok := c.returns(write, 5*time.Second); !ok {
		t.Error("a Write behind a ReadFrom in its reader, its deadline 100 ms on: still waiting after 5 s")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a Write behind a ReadFrom in its reader, its deadline 100 ms on: %v", err)
	}
	cli.SetWriteDeadline(time.Time{})

	c.start(write, func() error { _, err := cli.Write([]byte("y")); return err })
	time.Sleep(100 * time.Millisecond)
	c.start(closed, cli.Close)
	if err, ok := c.returns(write, 5*time.Second); !ok {
		t.Error("a Write behind a ReadFrom in its reader, then Close: still waiting after 5 s")
	} else if !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("a Write behind a ReadFrom in its reader, then Close: %v", err)
	}
	if err, ok := c.returns(closed, 30*time.Second); !ok || err != nil {
		t.Errorf("Close: %v (returned: %v)", err, ok)
	}
	// The reader returns; so does ReadFrom.
	pw.Close()
	if err, ok := c.returns(from, 10*time.Second); !ok || err != nil && !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("ReadFrom after its reader ended: %v (returned: %v)", err, ok)
	}
}

// deadlineWriter sets its Conn's read deadline in the past as it takes
// its first bytes.
type deadlineWriter struct {
	c   *rdmamsg.Conn
	got []byte
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if len(w.got) == 0 {
		w.c.SetReadDeadline(time.Now().Add(-time.Second))
	}
	w.got = append(w.got, p...)
	return len(p), nil
}

// deadlineReader gives one byte a Read, five in all; it sets its Conn's
// write deadline in the past in its second.
type deadlineReader struct {
	c     *rdmamsg.Conn
	reads int
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	r.reads++
	if r.reads == 2 {
		r.c.SetWriteDeadline(time.Now().Add(-time.Second))
	}
	if r.reads > 5 {
		return 0, io.EOF
	}
	p[0] = byte('a' + r.reads - 1)
	return 1, nil
}

// TestStreamDeadlinePassesMidway: a WriteTo with messages waiting, and a
// ReadFrom with send buffers and credits, stop once their deadline has
// passed, as a Read or Write then would, where they went on while they
// did not have to wait.
func TestStreamDeadlinePassesMidway(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	for _, m := range []string{"one", "two", "three"} {
		if err := cli.Send(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // all three arrive
	w := &deadlineWriter{c: srv}
	n, err := srv.WriteTo(w)
	if n != 3 || string(w.got) != "one" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("WriteTo whose deadline passed in its first write: %d bytes (%q), %v; want 3, a timeout", n, w.got, err)
	}
	srv.SetReadDeadline(time.Time{})
	buf := make([]byte, 10)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if n, err := srv.Recv(rctx, buf); err != nil || string(buf[:n]) != "two" {
		t.Errorf("Recv after: %q, %v; want the second message", buf[:n], err)
	}

	r := &deadlineReader{c: cli}
	m, err := cli.ReadFrom(r)
	if m != 2 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadFrom whose deadline passed in its second read: %d bytes after %d reads, %v; want 2, a timeout", m, r.reads, err)
	}
	cli.SetWriteDeadline(time.Time{})
	if err := cli.Send(ctx, []byte("end")); err != nil {
		t.Fatal(err)
	}
	// What the reader gave before the deadline arrived, and nothing of
	// what it would have given after.
	srv.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []string
	for {
		n, err := srv.Recv(ctx, buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(buf[:n]))
		if string(buf[:n]) == "end" {
			break
		}
	}
	if s := strings.Join(got, ","); s != "three,a,b,end" {
		t.Errorf("the server received %s; want three,a,b,end", s)
	}
}

// badReader returns n, err from its first Read, and io.EOF after.
type badReader struct {
	n    int
	err  error
	done bool
}

func (r *badReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	if r.n > 0 {
		return len(p) + r.n, r.err
	}
	return r.n, r.err
}

// TestReadFromBadReader: a reader that says it read more than it was
// given, or less than nothing, fails ReadFrom, and nothing of that read
// is sent, where the first went out as a message longer than the peer
// takes (which failed the connection: a remote operation error) and the
// second made ReadFrom's count negative (-1, nil).
func TestReadFromBadReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		err  error
	}{
		{"one byte over, with io.EOF", 1, io.EOF},
		{"negative", -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := connect(t, nil, nil)
			ctx := timeout(t, 30*time.Second)
			n, err := cli.ReadFrom(&badReader{n: tc.n, err: tc.err})
			if n != 0 || err == nil || !strings.Contains(err.Error(), "the reader read") {
				t.Errorf("ReadFrom: %d, %v; want 0 and the reader's fault", n, err)
			}
			if err := cli.Send(ctx, []byte("next")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, srv.MaxRecv())
			if n, err := srv.Recv(ctx, buf); err != nil || string(buf[:n]) != "next" {
				t.Errorf("the peer's first message: %d bytes %.10q, %v; want \"next\"", n, buf[:n], err)
			}
		})
	}
}

// TestDeadlineAfterClose: setting a deadline on a closed Conn fails with
// net.ErrClosed, as on a closed TCPConn, where it returned nil.
func TestDeadlineAfterClose(t *testing.T) {
	_, cli := connect(t, nil, nil)
	cli.SetDeadline(time.Now().Add(time.Hour))
	closeOK(t, cli)
	nc := cli.NetConn()
	for name, set := range map[string]func(time.Time) error{
		"SetDeadline": nc.SetDeadline, "SetReadDeadline": nc.SetReadDeadline, "SetWriteDeadline": nc.SetWriteDeadline,
	} {
		if err := set(time.Now().Add(time.Second)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after Close: %v, want net.ErrClosed", name, err)
		}
	}
}
