//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// signalCause is a context's cause that names a signal, as the command
// line's root context's does.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string     { return c.sig.String() }
func (c signalCause) Signal() os.Signal { return c.sig }

// TestStopWords: a side whose run SIGTERM ended tells its peer "stopped
// (SIGTERM)", in a context derived from the one the signal ended too; a
// Ctrl-C, or a stop that names no signal, "interrupted (Ctrl-C)", as
// before.
func TestStopWords(t *testing.T) {
	for _, tc := range []struct {
		cause error
		want  string
	}{
		{signalCause{syscall.SIGTERM}, "stopped (SIGTERM)"},
		{signalCause{syscall.SIGINT}, "interrupted (Ctrl-C)"},
		{nil, "interrupted (Ctrl-C)"},
		{errors.New("a thread failed"), "interrupted (Ctrl-C)"},
	} {
		root, stop := context.WithCancelCause(context.Background())
		ctx, cancel := context.WithCancel(root)
		stop(tc.cause)
		if got := stopWords(ctx); got != tc.want {
			t.Errorf("cause %v: %q, want %q", tc.cause, got, tc.want)
		}
		cancel()
	}
}

// TestPeerStopWords: the peer's abort, received by the watch of its
// messages, says how it was stopped, which the Result keeps
// (PeerStop): "stopped (SIGTERM)" in its words; an older peer's,
// "interrupted (Ctrl-C)" for either, and words that are none of the
// forms a gorperf sends, read as that.
func TestPeerStopWords(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"stopped (SIGTERM)", "stopped (SIGTERM)"},
		{"interrupted (Ctrl-C)", "interrupted (Ctrl-C)"},
		{"stopped (SIGKILL)\x1b[2J", "interrupted (Ctrl-C)"},
		{"", "interrupted (Ctrl-C)"},
	} {
		a, b := net.Pipe()
		mine, peer := exchange.NewConn(a), exchange.NewConn(b)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		loop, endLoop := context.WithCancelCause(ctx)
		w := watchPeer(ctx, mine, endLoop, false)
		if err := peer.Send(ctx, exchange.ErrorMsg{Code: exchange.CodeAborted, Text: tc.text}); err != nil {
			t.Fatal(err)
		}
		<-loop.Done() // the abort ends this side's loop
		var res Result
		w.mark(&res)
		w.stop()
		if !res.PeerInterrupted || res.PeerStop != tc.want {
			t.Errorf("the peer's abort %q: peer interrupted %v, in the words %q; want %q", tc.text, res.PeerInterrupted, res.PeerStop, tc.want)
		}
		cancel()
		a.Close()
		b.Close()
	}
}
