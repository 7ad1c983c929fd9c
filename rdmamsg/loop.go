//go:build linux && cgo

package rdmamsg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/gorperf/gorperf/ibverbs"
)

// A sleeper is how the callers of a Conn or a PacketConn wait for their
// CQ, which serves both the send and the receive queue: they take its
// completions themselves (poll) when what they need is not there, and
// the first that must wait sleeps on the CQ's completion channel in the
// netpoller, which wakes it when a completion comes, with no goroutine
// between. While it sleeps there, another caller sleeps on its own kick
// until the first wakes it, and takes the channel when the first leaves.
// Close, deadlines and the end of a connection interrupt the sleeper on
// the channel (CompChannel.Interrupt).
type sleeper struct {
	mu   *sync.Mutex // the Conn's or PacketConn's: it guards poll and the fields below
	cq   *ibverbs.CQ
	poll func() int  // takes the completions there are, with mu held
	fail func(error) // records the first failure, with mu held
	// closed is closed when Close begins; kicks are the callers' (one for
	// each kind: sending, receiving, closing).
	closed chan struct{}
	kicks  []chan struct{}
	// more, if set, kicks the callers beyond kicks, but self: a Conn's
	// one-sided operations waiting for their completions, of which
	// there may be many at once (Conn.wakeOps). It runs with or
	// without mu.
	more func(self chan struct{})

	asleep bool // a caller sleeps on the channel
	freed  bool // the CQ and its channel are gone
	// courier says the one asleep on the channel stands in for the
	// callers (stand), and wanted that a caller has asked it to leave.
	courier, wanted bool
}

// wait sleeps until kick wakes it (nil), ctx ends (its error), the
// deadline dl, if any, passes (os.ErrDeadlineExceeded) or closed is
// closed (ErrClosed): how a caller sleeps while another sleeps on the CQ.
func wait(ctx context.Context, kick <-chan struct{}, dl *deadline, closed <-chan struct{}) error {
	select {
	case <-kick:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-dl.done():
		return os.ErrDeadlineExceeded
	case <-closed:
		return ErrClosed
	}
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wake kicks every caller but self: the one that took completions or
// left the channel, which would otherwise find its own kick waiting the
// next time it sleeps. Nil kicks them all.
func (s *sleeper) wake(self chan struct{}) {
	for _, k := range s.kicks {
		if k != self {
			kick(k)
		}
	}
	if s.more != nil {
		s.more(self)
	}
}

// reap polls with s.mu held and, when it took completions, wakes the
// callers but self; it returns how many it took.
func (s *sleeper) reap(self chan struct{}) int {
	if s.freed {
		return 0
	}
	n := s.poll()
	if n > 0 {
		s.wake(self)
	}
	return n
}

// interrupt ends the sleep of the caller asleep on the channel, or the
// next one's, so that it looks again.
func (s *sleeper) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.freed {
		s.cq.Channel().Interrupt()
	}
}

// sleep waits until what a caller waits for may have come: completions
// on the CQ, a kick from whoever took some, or an interruption; or until
// ctx ends, the deadline dl (if any) passes or done is closed. The caller
// looks again after each. A caller other than Close (whose done is not
// s.closed) sleeps on its kick once Close has begun, so that Close can
// free the channel once the caller asleep there has left it.
func (s *sleeper) sleep(ctx context.Context, kick chan struct{}, dl *deadline, done <-chan struct{}) error {
	s.mu.Lock()
	if s.freed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.asleep || done == s.closed && isClosed(s.closed) {
		if s.asleep && s.courier && !s.wanted {
			s.wanted = true
			s.cq.Channel().Interrupt()
		}
		s.mu.Unlock()
		return wait(ctx, kick, dl, done)
	}
	s.asleep = true
	s.mu.Unlock()
	err := s.sleepOnCQ(ctx, kick, dl, done)
	s.mu.Lock()
	s.asleep = false
	if err != nil {
		// Leaving without a look (its context ended, its deadline
		// passed, Close): take what came meanwhile, which is also how a
		// Conn's idle timer learns that it must look again.
		s.reap(kick)
	}
	s.mu.Unlock()
	s.wake(kick) // one waiting for its kick may take the channel now
	return err
}

// stand sleeps on the channel in the callers' stead, and takes what
// comes, while stay (called with s.mu held after each wake-up) says so,
// no caller sleeps there and none has asked for the channel: a caller
// that would sleep there asks (sleep), which interrupts the sleep. kick
// is its own. It returns with s.mu held.
func (s *sleeper) stand(kick chan struct{}, stay func() bool) {
	for {
		s.mu.Lock()
		s.reap(kick)
		if !stay() || s.asleep || s.freed {
			return
		}
		s.asleep, s.courier = true, true
		s.mu.Unlock()
		s.sleepOnCQ(context.Background(), kick, nil, s.closed)
		s.mu.Lock()
		s.asleep, s.courier = false, false
		wanted := s.wanted
		s.wanted = false
		s.mu.Unlock()
		s.wake(kick) // one that waits for its kick may take the channel
		if wanted {
			s.mu.Lock()
			return
		}
	}
}

// sleepOnCQ arms the CQ, takes what came before, and sleeps on the
// channel: any completion from the arming on raises an event, whoever
// takes it.
func (s *sleeper) sleepOnCQ(ctx context.Context, kick chan struct{}, dl *deadline, done <-chan struct{}) error {
	if err := s.cq.ReqNotify(false); err != nil {
		s.failed(err, kick)
		return nil // the caller finds the failure
	}
	s.mu.Lock()
	n := s.reap(kick)
	s.mu.Unlock()
	if n > 0 {
		return nil
	}
	select {
	case <-kick:
		return nil
	case <-dl.done():
		return os.ErrDeadlineExceeded
	case <-done:
		return ErrClosed
	default:
	}
	_, err := s.cq.Channel().Wait(ctx)
	switch {
	case err == nil, errors.Is(err, ibverbs.ErrInterrupted):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		// ctx's deadline, passed before its own timer marked it done
		return err
	}
	s.failed(err, kick)
	return nil
}

// failed records a failure of the CQ's verbs and wakes the other callers.
func (s *sleeper) failed(err error, self chan struct{}) {
	s.mu.Lock()
	s.fail(fmt.Errorf("rdmamsg: %w", err))
	s.mu.Unlock()
	s.wake(self)
}

// awake waits until no caller sleeps on the channel, for Close, after
// closed is closed and the channel interrupted; the one asleep leaves at
// once, and its leaving kicks self.
func (s *sleeper) awake(self chan struct{}) {
	for {
		s.mu.Lock()
		asleep := s.asleep
		s.mu.Unlock()
		if !asleep {
			return
		}
		<-self
	}
}
