//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/gorperf/gorperf/internal/exchange"
)

// How an infinite run ends. A run of --run_infinitely ends only when one
// side is stopped (Ctrl-C). A side whose loop would otherwise go on for
// ever (a sending side, or a receiver whose peer still sends) learns that
// the peer's run has ended from the Result the peer sends once its loop
// is over: resultWatch receives it during the loop and ends the loop
// then, and the Result is the peer's half of the result swap. Without it
// the side that was not stopped went on sending until the stopped one
// gave up waiting for its result and closed the connection, and then
// failed because the peer had closed it.

// errPeerEnded is the cause of a loop's context that resultWatch ended.
var errPeerEnded = errors.New("the peer's run has ended")

// peerEnded reports whether ctx, a loop's, ended because the peer's run
// did.
func peerEnded(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), errPeerEnded)
}

// watchesPeer reports whether this side's loop of an infinite run ends by
// the peer's Result: whether both sides run a loop that only a stop ends.
// A passive side of a write, read or atomic test runs none (it sends its
// Result at once, which must not end the peer's run); a receiver of send
// messages runs one.
func (s *session) watchesPeer(client bool) bool {
	loops := func(client bool) bool { return s.active(client) || s.spec.Receives() }
	return s.spec.RunInfinitely && loops(client) && loops(!client)
}

// resultWatch receives the peer's Result while this side's loop runs.
type resultWatch struct {
	c      *exchange.Conn
	cancel context.CancelFunc // ends the receive
	done   chan struct{}      // closed once the receive has returned
	res    exchange.Result
	err    error
}

// watchResult starts receiving the peer's Result on c; when it comes, or
// the receive fails (the peer closed the connection, went silent, gave
// up), it ends the loop through endLoop. The receive lasts until then or
// until stop: ctx's end (Ctrl-C) does not end it, since the peer's Result
// is still wanted after this side's loop has stopped.
func watchResult(ctx context.Context, c *exchange.Conn, endLoop context.CancelCauseFunc) *resultWatch {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &resultWatch{c: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.res, w.err = c.RecvResult(rctx)
		if rctx.Err() == nil {
			endLoop(errPeerEnded)
		}
	}()
	return w
}

// swap is Conn.SwapResult with the watch's receive: it sends local and
// returns the peer's Result, waiting for it as long as ctx allows.
func (w *resultWatch) swap(ctx context.Context, local exchange.Result) (exchange.Result, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- w.c.Send(sctx, local) }()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.stop()
		cancel() // a send the peer does not read
		<-sent
		return exchange.Result{}, fmt.Errorf("receiving Result: %w", ctx.Err())
	}
	if w.err != nil {
		cancel()
		<-sent
		return w.res, w.err
	}
	return w.res, <-sent
}

// stop ends the receive, if it still runs, and waits for it.
func (w *resultWatch) stop() {
	w.cancel()
	<-w.done
}

// closedByPeer reports whether err, from the control connection, says
// that the peer closed it.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, errPeerClosed)
}
