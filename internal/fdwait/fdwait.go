//go:build unix

// Package fdwait waits for a C library's file descriptor (a completion
// channel's, the async event fd, an rdma_cm event channel's) to become
// readable through the Go netpoller, bounded by a context, so that a
// waiting goroutine holds no OS thread.
//
// The descriptor is made non-blocking and a dup of it is registered with
// the netpoller: readiness follows the shared file description, so the C
// library keeps reading the original.
package fdwait

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrClosed is returned by Wait once the Waiter is closed; it matches
// os.ErrClosed.
var ErrClosed = os.ErrClosed

// ErrInterrupted is returned by a Wait that Interrupt ended.
var ErrInterrupted = errors.New("wait interrupted")

// Waiter waits on one descriptor. One goroutine at a time may Wait; Close
// may come from another and ends a Wait in progress.
type Waiter struct {
	f  *os.File
	rc syscall.RawConn

	// The context whose cancellation ends a wait is watched by an
	// AfterFunc that stays registered from one Wait to the next with the
	// same Done channel, so that a loop waiting with one context does not
	// allocate a watch every time. mu guards them against a concurrent
	// Close.
	mu     sync.Mutex
	done   <-chan struct{}
	stop   func() bool
	closed atomic.Bool
	// gone is closed by Close, for a wait that does not wait on the
	// descriptor (AwaitEnd's).
	gone chan struct{}
	// interrupted is Interrupt's word to the Wait under way or the next.
	interrupted atomic.Bool
}

// New makes fd non-blocking and returns a Waiter on a dup of it, named
// name in errors.
func New(fd int, name string) (*Waiter, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	d, err := syscall.Dup(fd)
	if err != nil {
		return nil, os.NewSyscallError("dup", err)
	}
	syscall.CloseOnExec(d)
	f := os.NewFile(uintptr(d), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Waiter{f: f, rc: rc, gone: make(chan struct{})}, nil
}

// expired is a deadline in the past, which wakes a wait at once.
var expired = time.Unix(1, 0)

// Wait calls try each time the descriptor may be readable, until try
// returns true or ctx ends (ctx's error, which ctx.Err() then returns too
// where Wait noticed the deadline before ctx's timer did, for a context
// whose Done closes at its deadline, as the standard library's do) or the
// Waiter is closed
// (ErrClosed). try gets the dup's descriptor and reads the original
// through the C library, returning false for "nothing yet" (EAGAIN).
//
// Wait does not allocate when ctx cannot be cancelled, nor when its Done
// channel is that of the last cancellable context waited with: a wait
// without one leaves that context's watch in place for the next.
func (w *Waiter) Wait(ctx context.Context, try func(fd uintptr) bool) error {
	w.setDeadline(ctx)
	w.mu.Lock()
	if done := ctx.Done(); done != nil && done != w.done {
		w.unwatch()
		if !w.closed.Load() {
			f := w.f
			w.stop = context.AfterFunc(ctx, func() { f.SetReadDeadline(expired) })
			w.done = done
		}
	}
	w.mu.Unlock()
	for {
		if w.closed.Load() {
			return ErrClosed
		}
		// After the deadline is set: an Interrupt from here on sets the
		// deadline past after its flag, which wakes the Read below.
		if w.interrupted.Swap(false) {
			return ErrInterrupted
		}
		// After the deadline is set: a cancellation from here on runs
		// the AfterFunc, which wakes the Read below.
		if err := ctx.Err(); err != nil {
			return err
		}
		err := w.rc.Read(try)
		switch {
		case err == nil:
			return nil
		case w.closed.Load():
			return ErrClosed
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded):
			if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
				return AwaitEnd(ctx, w.gone)
			}
			if w.interrupted.Swap(false) {
				return ErrInterrupted
			}
			// The AfterFunc of an earlier context, which ended as this
			// wait began: wait again, with this one's deadline.
			w.setDeadline(ctx)
		default:
			return err
		}
	}
}

// AwaitEnd waits for ctx, whose deadline has passed, to end, and returns
// its error. A wait that a descriptor's deadline (or any timer but ctx's)
// ended often ends before ctx's own timer has fired, and a caller that
// finds ctx.Err() nil then takes the failure for something else: this
// waits for ctx to agree. A Context that cannot end (no Done channel), or
// has not a second after its deadline (one of the caller's own making),
// gets DeadlineExceeded; stop's closing (nil: none) ends the wait with
// ErrClosed.
func AwaitEnd(ctx context.Context, stop <-chan struct{}) error {
	done := ctx.Done()
	if done == nil {
		return context.DeadlineExceeded
	}
	select {
	case <-done:
		return ctx.Err()
	default:
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
		return ctx.Err()
	case <-stop:
		return ErrClosed
	case <-t.C:
		return context.DeadlineExceeded
	}
}

// Interrupt ends the Wait under way with ErrInterrupted, or, if none is,
// the next one to begin: for a caller that must look again at something
// other than the descriptor (a deadline moved, its object closing). It
// may be called from any goroutine and does not allocate.
func (w *Waiter) Interrupt() {
	w.interrupted.Store(true)
	w.f.SetReadDeadline(expired)
}

func (w *Waiter) setDeadline(ctx context.Context) {
	d, _ := ctx.Deadline() // zero: none
	w.f.SetReadDeadline(d)
}

// unwatch drops the AfterFunc of the last context waited with. w.mu is
// held.
func (w *Waiter) unwatch() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
	w.done = nil
}

// Close ends a Wait in progress and closes the dup; the original
// descriptor stays open. Closing twice is a no-op.
func (w *Waiter) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	close(w.gone)
	w.mu.Lock()
	w.unwatch()
	w.mu.Unlock()
	return w.f.Close()
}
