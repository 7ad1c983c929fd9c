//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// How a side learns that the peer's run has ended.
//
// After each size's loop a side sends its first message of the size's
// end, its Result (or, with --validate, the Sync of the check's barrier),
// and the peer's comes back. While this side's loop runs, peerWatch
// receives the peer's: a peer whose loop ends first, or that runs none (a
// passive side of a write, read or atomic test), sends it meanwhile.
//
// A side stopped by Ctrl-C or SIGTERM (its context ended) says so first:
// it sends an Error with CodeAborted, whose text names the signal
// (stopWords: "interrupted (Ctrl-C)", "stopped (SIGTERM)"), before its
// first message of the size's end, or, if it was already waiting for the
// peer's (a passive side), as soon as it is stopped, and then waits at
// most interruptWait for the peer's figures. When the watch receives that
// Error, this side's loop ends at once, whatever the test: its partial
// figures are reported without an error, and the Result says that the
// peer was stopped, and how (Result.PeerInterrupted, PeerStop), which
// the command line makes a failure of a run cut short. Without it a
// latency test's responder waited for a message that would not come,
// and the client of a passive server that was stopped kept writing,
// until the stopped side gave up waiting and closed the connection.
//
// A run of --run_infinitely ends only when one side is stopped: there
// the peer's first message itself ends the loop of a side that runs one
// (watchesPeer), as does the control connection closing after messages
// flowed (a peer killed). A Result that reports the peer's failure ends
// any loop: nothing more will come from it.

// The causes of a loop's context that the watch ended.
var (
	errPeerEnded       = errors.New("the peer's run has ended")
	errPeerInterrupted = errors.New("the peer was stopped (Ctrl-C or SIGTERM)")
	errPeerFailed      = errors.New("the peer's run failed")
)

// The texts of the Error a stopped side sends its peer (its abort): how
// it was stopped, which the peer reports in these words. An older
// gorperf sends interruptedText for either signal.
const (
	interruptedText = "interrupted (Ctrl-C)" // SIGINT, or a stop of no known signal
	terminatedText  = "stopped (SIGTERM)"
)

// stopWords is the text of the abort of a side whose context, ctx, has
// ended: terminatedText where SIGTERM ended it, as the context's cause
// (context.Cause) says, with a method Signal() os.Signal (the command
// line's root context has one); a served test's maximum duration's words
// where that ended it (overtime); else interruptedText.
func stopWords(ctx context.Context) string {
	var sig interface{ Signal() os.Signal }
	if errors.As(context.Cause(ctx), &sig) && sig.Signal() == syscall.SIGTERM {
		return terminatedText
	}
	var o overtime
	if errors.As(context.Cause(ctx), &o) {
		return o.Error()
	}
	return interruptedText
}

// StopWords is how a side whose context, ctx, has ended was stopped, in
// the words its peer is told: "stopped (SIGTERM)" where SIGTERM ended it
// (the context's cause has a method Signal() os.Signal, as the command
// line's root context's has), the overtime's words where a served test's
// maximum duration ended it, else "interrupted (Ctrl-C)".
func StopWords(ctx context.Context) string { return stopWords(ctx) }

// peerStopWords says how the peer was stopped, from word, its abort (a
// *exchange.PeerError of CodeAborted): its text where it is one of the
// forms stopWords sends, else interruptedText (an older gorperf's, which
// said nothing of the signal, or a text of no known form).
func peerStopWords(word error) string {
	var pe *exchange.PeerError
	if errors.As(word, &pe) && (pe.Text == terminatedText || isOvertimeText(pe.Text)) {
		return pe.Text
	}
	return interruptedText
}

// peerStopped records on res that the peer stopped the run, and in what
// words: word is its abort.
func (res *Result) peerStopped(word error) {
	res.PeerInterrupted = true
	if res.PeerStop == "" {
		res.PeerStop = peerStopWords(word)
	}
}

// interruptWait bounds how long a side stopped by Ctrl-C waits for the
// peer's figures. (A variable for the tests.)
var interruptWait = 5 * time.Second

// stopOnce returns the abort of a side's run: the first call runs tell,
// which tells the peer that this side was interrupted, and each call
// returns when to give up waiting for the peer's figures, interruptWait
// after the first. The waits of one stop (--validate's barrier, then the
// result) so share one bound.
func stopOnce(tell func()) func() time.Time {
	var giveUp time.Time
	return func() time.Time {
		if giveUp.IsZero() {
			giveUp = time.Now().Add(interruptWait)
			tell()
		}
		return giveUp
	}
}

// peerEnded reports whether ctx, a loop's, ended because the peer's run
// did: the peer was interrupted, failed, or ended an infinite run.
func peerEnded(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	c := context.Cause(ctx)
	return errors.Is(c, errPeerEnded) || errors.Is(c, errPeerInterrupted) || errors.Is(c, errPeerFailed)
}

// peerAborted reports whether err is the peer's Error saying that it was
// interrupted.
func peerAborted(err error) bool {
	var pe *exchange.PeerError
	return errors.As(err, &pe) && pe.Code == exchange.CodeAborted
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

// peerWatch receives the peer's first message of a size's end, and any
// Error saying that the peer was interrupted, while this side's loop
// runs.
type peerWatch struct {
	c          *exchange.Conn
	endLoop    context.CancelCauseFunc
	endOnFirst bool               // the peer's first message, or its closing, ends the loop
	cancel     context.CancelFunc // ends the receive
	done       chan struct{}      // closed once the receive has returned
	// faulted, closed once this side's device has a fatal async event
	// (a PORT_ERR of its port: its netdev went down), ends await with
	// faultErr: the peer's message may never come, since the control
	// connection may run over that netdev. (nil: no such watch)
	faulted  <-chan struct{}
	faultErr func() error

	mu        sync.Mutex
	finishing bool             // finish was called: return once first has come
	first     exchange.Message // the peer's first message, nil until it comes
	aborted   error            // the peer's abort, once it said it was stopped
	err       error            // the receive's failure before first came
	said      error            // an Error the peer sent after first: why it gave up
}

// watchPeer starts receiving the peer's messages on c; endLoop ends this
// side's loop. The receive lasts until the peer's first message has come
// and finish is called, or the receive fails: ctx's end (Ctrl-C) does not
// end it, since the peer's figures are still wanted after this side's
// loop has stopped.
func watchPeer(ctx context.Context, c *exchange.Conn, endLoop context.CancelCauseFunc, endOnFirst bool) *peerWatch {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &peerWatch{c: c, endLoop: endLoop, endOnFirst: endOnFirst, cancel: cancel, done: make(chan struct{})}
	go w.receive(rctx)
	return w
}

// watchPeer is watchPeer on this session's control connection c, whose
// await also ends on a fatal async event of the session's device (its
// port going down): a passive side, which polls no completions, learns
// of its own port's failure so, not only by the peer's silence.
func (s *session) watchPeer(ctx context.Context, c *exchange.Conn, endLoop context.CancelCauseFunc, endOnFirst bool) *peerWatch {
	w := watchPeer(ctx, c, endLoop, endOnFirst)
	w.faulted = s.faulted
	w.faultErr = func() error {
		if f := s.fault.Load(); f != nil {
			return *f
		}
		return nil
	}
	return w
}

func (w *peerWatch) receive(ctx context.Context) {
	defer close(w.done)
	for {
		m, err := w.c.Recv(ctx)
		w.mu.Lock()
		again := false
		switch {
		case peerAborted(err):
			w.aborted = err
			w.endLoop(errPeerInterrupted)
			again = w.first == nil || !w.finishing
		case err != nil:
			// After the first message, a receive that fails (finish
			// ended it, or the peer closed) brings no news, but for
			// the peer's word of why it gave up (peerError).
			if pe := (*exchange.PeerError)(nil); w.first != nil && errors.As(err, &pe) {
				w.said = err
			}
			if w.first == nil && ctx.Err() == nil {
				w.err = err
				if w.endOnFirst {
					w.endLoop(errPeerEnded)
				}
			}
		case w.first == nil:
			w.first = m
			if r, ok := m.(exchange.Result); ok && r.Error != "" {
				w.endLoop(errPeerFailed)
			} else if w.endOnFirst {
				w.endLoop(errPeerEnded)
			}
			// Until this side answers, the peer sends nothing more but an
			// Error if it is interrupted: read on for that.
			again = !w.finishing
		default:
			w.err = fmt.Errorf("%w: %v after the peer's %v", exchange.ErrUnexpected, m.Type(), w.first.Type())
		}
		w.mu.Unlock()
		if !again {
			return
		}
	}
}

// finish is called once this side's loop is over, before it sends what
// the peer answers: the watch stops once the peer's first message has
// come, and stops at once if it already has, so that it reads nothing
// that belongs to the next step.
func (w *peerWatch) finish() {
	w.mu.Lock()
	w.finishing = true
	stop := w.first != nil
	w.mu.Unlock()
	if stop {
		w.stop()
	}
}

// stop ends the receive, if it still runs, and waits for it.
func (w *peerWatch) stop() {
	w.cancel()
	<-w.done
}

// fault is await's answer to this side's device fault: nil where the
// peer's message, or the receive's failure, came already (await goes on
// with that), else the fault, once the receive is stopped.
func (w *peerWatch) fault() error {
	select {
	case <-w.done:
		return nil
	default:
	}
	w.stop()
	w.mu.Lock()
	came := w.first != nil
	w.mu.Unlock()
	if came {
		return nil // it came as the receive was stopped
	}
	return w.faultErr()
}

// wasAborted reports whether the peer said it was stopped.
func (w *peerWatch) wasAborted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.aborted != nil
}

// mark records on res that the peer stopped the run, if it said so.
func (w *peerWatch) mark(res *Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.aborted != nil {
		res.peerStopped(w.aborted)
	}
}

// await returns the peer's first message, waiting for it as long as the
// peer takes while ctx lasts. Once ctx has ended (this side was stopped
// by Ctrl-C), it calls abort (stopOnce), which tells the peer and says
// when to give up. Call finish first.
func (w *peerWatch) await(ctx context.Context, abort func() time.Time) (exchange.Message, error) {
	select {
	case <-w.done:
	case <-w.faulted:
		if err := w.fault(); err != nil {
			return nil, err
		}
	case <-ctx.Done():
		t := time.NewTimer(time.Until(abort()))
		defer t.Stop()
		select {
		case <-w.done:
		case <-w.faulted:
			if err := w.fault(); err != nil {
				return nil, err
			}
		case <-t.C:
			w.stop()
			return nil, fmt.Errorf("receiving: gave up %v after the stop: %w", interruptWait, ctx.Err())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first == nil && w.err == nil {
		return nil, errors.New("receiving: the watch ended before the peer's message")
	}
	return w.first, w.err
}

// peerError returns the Error the peer sent, where the watch's receive
// ended with one (as a *exchange.PeerError), before the peer's first
// message or after it, or nil.
func (w *peerWatch) peerError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var pe *exchange.PeerError
	if errors.As(w.err, &pe) {
		return w.err
	}
	return w.said
}

// recvResult returns the peer's Result from m, a message await returned.
func recvResult(m exchange.Message) (exchange.Result, error) {
	r, ok := m.(exchange.Result)
	if !ok {
		return exchange.Result{}, fmt.Errorf("receiving: %w: expected Result, got %v", exchange.ErrUnexpected, m.Type())
	}
	return r, nil
}

// recvSync checks that m, a message await returned, is the peer's Sync
// of barrier seq. A Result that reports the peer's failure instead is
// that failure.
func recvSync(m exchange.Message, seq uint32) error {
	switch v := m.(type) {
	case exchange.Sync:
		if v.Seq != seq {
			return fmt.Errorf("barrier out of step: this side is at %d, the peer at %d", seq, v.Seq)
		}
		return nil
	case exchange.Result:
		if err := v.Err(); err != nil {
			return fmt.Errorf("the peer's run failed (%w: expected Sync, got its Result): %w", exchange.ErrUnexpected, err)
		}
	}
	return fmt.Errorf("barrier %d: %w: expected Sync, got %v", seq, exchange.ErrUnexpected, m.Type())
}

// peerStoppedMeanwhile returns the abort the peer sent on c, saying it
// was stopped, waiting for it at most abortPeek, or nil. An active side
// whose warm-up failed asks it: a passive peer sends its barrier's Sync
// as it comes to the barrier, and, stopped while it waits there, its
// abort, and then it closes its QPs, which fails the warm-up. A live
// peer's Sync is consumed here (the caller fails anyway).
func peerStoppedMeanwhile(c *exchange.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), abortPeek)
	defer cancel()
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			if peerAborted(err) {
				return err
			}
			return nil
		}
		if _, ok := m.(exchange.Sync); !ok {
			return nil
		}
	}
}

// abortPeek bounds peerStoppedMeanwhile's wait. The abort comes before
// the peer closes its QPs, long before a warm-up fails for their
// closing: a second is a generous bound that a real failure pays once.
const abortPeek = time.Second

// closedByPeer reports whether err, from the control connection, says
// that the peer closed it.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, errPeerClosed)
}
