//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

// TestHandshakeTimeout: a Handshake whose context has no deadline gives a
// peer that connected and says nothing Config.HandshakeTimeout, and then
// fails with an error that names the limit and matches
// os.ErrDeadlineExceeded, closing the connection, as a Listener drops a
// peer that stalls; one whose context has a deadline waits for that
// instead, past HandshakeTimeout. Handshake waited forever for the silent
// peer, with nothing but ctx to end the wait.
func TestHandshakeTimeout(t *testing.T) {
	srvNet, cliNet := ends(t)
	const limit = 300 * time.Millisecond
	cfg := &rdmamsg.Config{HandshakeTimeout: limit}
	// handshake runs Handshake with ctx over a connection whose other end
	// says nothing, and returns how long it took and its error; it fails
	// the test where Handshake is still waiting after 15 s.
	handshake := func(t *testing.T, ctx context.Context) (time.Duration, error) {
		t.Helper()
		srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
		defer srvNC.Close()
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			c, err := rdmamsg.Handshake(ctx, cliNC, cfg)
			if c != nil {
				c.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			d := time.Since(start)
			checkClosed(t, cliNC)
			return d, err
		case <-time.After(15 * time.Second):
			cliNC.Close() // ends the Handshake
			t.Fatalf("Handshake with a silent peer still waits after 15 s; HandshakeTimeout %v", limit)
			return 0, nil
		}
	}

	t.Run("no deadline", func(t *testing.T) {
		d, err := handshake(t, context.Background())
		if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "within 300ms (Config.HandshakeTimeout)") {
			t.Fatalf("Handshake = %v, want os.ErrDeadlineExceeded and the limit named", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Handshake = %v: matches context.DeadlineExceeded, which ctx did not pass", err)
		}
		if d < limit || d > limit+5*time.Second {
			t.Errorf("Handshake failed after %v, HandshakeTimeout %v", d, limit)
		}
		t.Log(err)
	})
	t.Run("cancellable, no deadline", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := handshake(t, ctx); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Handshake = %v, want os.ErrDeadlineExceeded", err)
		}
	})
	t.Run("ctx's deadline", func(t *testing.T) {
		const wait = 1500 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		d, err := handshake(t, ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Handshake = %v, want context.DeadlineExceeded", err)
		}
		if d < wait-100*time.Millisecond {
			t.Errorf("Handshake failed after %v, before ctx's deadline (%v): HandshakeTimeout %v cut it short", d, wait, limit)
		}
	})
}
