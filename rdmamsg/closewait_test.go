//go:build linux && cgo

package rdmamsg_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestCloseSilentPeer: Close with a message on its way to a peer that
// went silent (its QP in the error state: its device drops what comes and
// answers nothing; with AckTimeout 20, 4.3 s, the retries would take half
// a minute) returns by the write deadline, where one is set, or after
// Close's 5 s without progress without one, and its error counts the
// message that may not have arrived, and the end, and matches
// os.ErrDeadlineExceeded. (Close waited for the
// sends without a bound: with the default retry count on soft-RoCE, which
// retries for ever, it never returned.)
func TestCloseSilentPeer(t *testing.T) {
	t.Parallel() // Close waits on its timers
	for _, tc := range []struct {
		name            string
		deadline        time.Duration // SetWriteDeadline's, from now; 0 for none
		atLeast, atMost time.Duration // how long Close takes
	}{
		{"WriteDeadline", 300 * time.Millisecond, 150 * time.Millisecond, 3 * time.Second},
		{"NoDeadline", 0, 4500 * time.Millisecond, 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, cli := pair(t, &rdmamsg.Config{KeepAlive: -1},
				&rdmamsg.Config{KeepAlive: -1, CM: rdmacm.Config{AckTimeout: 20}})
			t.Cleanup(func() { srv.Close() })
			if err := rdmamsg.StopSilently(srv); err != nil {
				t.Fatal(err)
			}
			if err := cli.Send(timeout(t, 10*time.Second), message(0, 10)); err != nil {
				t.Fatal(err)
			}
			if tc.deadline > 0 {
				if err := cli.SetWriteDeadline(time.Now().Add(tc.deadline)); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- cli.Close() }()
			select {
			case err := <-closed:
				d := time.Since(start)
				t.Logf("Close returned after %v: %v", d, err)
				if d < tc.atLeast || d > tc.atMost {
					t.Errorf("Close took %v, want %v to %v", d, tc.atLeast, tc.atMost)
				}
				if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "1 message sent and the end of the stream may not have reached") {
					t.Errorf("Close: %v; want the message that may not have arrived, and os.ErrDeadlineExceeded", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Close has not returned 20 s after it began, its peer silent")
			}
		})
	}
}

// TestCloseEndNotAcknowledged: Close's wait cut by the write deadline
// while only its end message is on its way (the data was acknowledged;
// the peer then went silent) says so, matching os.ErrDeadlineExceeded:
// the peer never learned that the stream ended. (lostError counted only
// the data messages, and Close returned nil.)
func TestCloseEndNotAcknowledged(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name, want := "Close", "the end of the stream may not have reached"
		if abort {
			name, want = "Abort", "the abort may not have reached"
		}
		t.Run(name, func(t *testing.T) {
			srv, cli := pair(t, &rdmamsg.Config{KeepAlive: -1},
				&rdmamsg.Config{KeepAlive: -1, CM: rdmacm.Config{AckTimeout: 20}})
			t.Cleanup(func() { srv.Close() })
			ctx := timeout(t, 10*time.Second)
			if err := cli.Send(ctx, message(0, 10)); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 10)
			if _, err := srv.Recv(ctx, buf); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the ACK is in
			if err := rdmamsg.StopSilently(srv); err != nil {
				t.Fatal(err)
			}
			if err := cli.SetWriteDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			go func() {
				if abort {
					closed <- cli.Abort()
				} else {
					closed <- cli.Close()
				}
			}()
			select {
			case err := <-closed:
				t.Logf("%s: %v", name, err)
				if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), want) ||
					strings.Contains(err.Error(), "message sent") {
					t.Errorf("%s: %v; want %q, no message sent counted, and os.ErrDeadlineExceeded", name, err, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s has not returned 20 s after it began, its peer silent", name)
			}
		})
	}
}

// TestClosePassedDeadline: a write deadline that passed before Close (one
// set for each write, or to end a wait) does not cut Close's wait: the
// live peer reads every message and then io.EOF (after Abort, an error
// matching ECONNRESET), and Close returns nil. (Close skipped the wait
// and disconnected at once, which could flush the end, and the data
// still on its way: the peer read io.ErrUnexpectedEOF, and Close counted
// the messages as lost.) Several rounds, to catch the race; the messages,
// 16 of 64 KiB, are still on their way as Close begins.
func TestClosePassedDeadline(t *testing.T) {
	const rounds, msgs, size = 5, 16, 64 << 10
	for _, abort := range []bool{false, true} {
		name := "Close"
		if abort {
			name = "Abort"
		}
		t.Run(name, func(t *testing.T) {
			for r := range rounds {
				srv, cli := pair(t, &rdmamsg.Config{MaxMessage: size}, nil)
				ctx := timeout(t, 10*time.Second)
				for i := range msgs {
					if err := cli.Send(ctx, message(i, size)); err != nil {
						t.Fatal(err)
					}
				}
				if err := cli.SetWriteDeadline(time.Now().Add(-time.Second)); err != nil {
					t.Fatal(err)
				}
				var err error
				if abort {
					err = cli.Abort()
				} else {
					err = cli.Close()
				}
				if err != nil {
					t.Errorf("round %d: %s with a write deadline passed, its peer live: %v", r, name, err)
				}
				buf := make([]byte, size)
				for i := range msgs {
					if n, err := srv.Recv(ctx, buf); err != nil || string(buf[:n]) != string(message(i, size)) {
						t.Fatalf("round %d: Recv %d: %d bytes, %v", r, i, n, err)
					}
				}
				_, err = srv.Recv(ctx, buf)
				if abort && !errors.Is(err, syscall.ECONNRESET) || !abort && err != io.EOF {
					t.Errorf("round %d: Recv after the messages of a peer whose %s began after its write deadline: %v; want %s",
						r, name, err, map[bool]string{false: "io.EOF", true: "ECONNRESET"}[abort])
				}
				srv.Close()
			}
		})
	}
}
