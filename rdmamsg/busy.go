//go:build linux && cgo

package rdmamsg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/internal/fdwait"
	"github.com/gorperf/gorperf/rdmacm"
)

// busyMark begins the private data of a Listener's reject of a request
// beyond Config.HandshakesPerAddr, before the reason: the listener is busy
// with handshakes from the dialer's address, and the same request a
// moment later may get in. Dial tries again on it.
const busyMark = "GRMB"

// oldBusy begins the reason of the same reject from an rdmamsg Listener
// from before busyMark, which Dial takes for busy too.
const oldBusy = "rdmamsg: too many handshakes from "

// rejectConsumer is the CM REJ reason of rdma_reject: consumer defined.
const rejectConsumer = 28

// listenerBusy reports whether err, a Dial's, is a Listener's reject as
// busy, and its reason.
func listenerBusy(err error) (why string, busy bool) {
	var rej *rdmacm.RejectedError
	if !errors.As(err, &rej) || rej.UD || rej.Status != rejectConsumer {
		return "", false
	}
	d := string(bytes.TrimRight(rej.PrivateData, "\x00"))
	if why, ok := strings.CutPrefix(d, busyMark); ok {
		return why, true
	}
	return d, strings.HasPrefix(d, oldBusy)
}

// Dial's pauses between requests that a busy Listener rejected: the first
// busyPauseMin, doubling up to busyPauseMax, each a random part of its
// second half.
const (
	busyPauseMin = 10 * time.Millisecond
	busyPauseMax = 500 * time.Millisecond
)

// busyPause is the pause before Dial's request after its tries'th busy
// reject (1 for the first): busyPauseMin × 2^(tries-1), at most
// busyPauseMax, less up to half of it at random, so that the Dials of a
// burst, rejected together, do not all come back together.
func busyPause(tries int) time.Duration {
	d := busyPauseMax
	if tries < 8 {
		d = min(busyPauseMin<<(tries-1), busyPauseMax)
	}
	return d - rand.N(d/2+1)
}

// dialBusy makes Dial's connection, and sends its request again while the
// Listener rejects it as busy, pausing between (busyPause), until ctx
// ends, or c.CM.Timeout or, where neither bounds it,
// rdmacm.DefaultConnectTimeout passes: then it returns a *busyError.
func dialBusy(ctx context.Context, addr string, c *Config) (*Conn, *rdmacm.Conn, error) {
	if c.CM.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.CM.Timeout)
		defer cancel()
	}
	var busy *busyError
	for {
		conn := newConn(c)
		cmc := conn.cmConfig(c)
		cm, err := rdmacm.Dial(ctx, addr, &cmc)
		if err == nil {
			return conn, cm, nil
		}
		why, ok := listenerBusy(err)
		switch {
		case ok && busy == nil:
			busy = &busyError{addr: addr, start: time.Now()}
			if _, ok := ctx.Deadline(); !ok {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, rdmacm.DefaultConnectTimeout)
				defer cancel()
			}
		case !ok && busy != nil && ended(ctx):
			// ctx ended during a request after a busy one.
			return nil, nil, busy.end(ctx)
		case !ok:
			return nil, nil, cmErr(err)
		}
		busy.tries++
		busy.why = why
		t := time.NewTimer(busyPause(busy.tries))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil, busy.end(ctx)
		}
	}
}

// ended reports whether ctx has ended, taking a deadline that has passed
// for its end: rdmacm's resolve timeout, ctx's time left plus 50 ms,
// fires ADDR_ERROR or ROUTE_ERROR (ETIMEDOUT) on the kernel's clock, which
// on a loaded host can come before ctx's timer has run (ctx.Err() still
// nil). It then waits for ctx to end, as package fdwait's Wait does.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	if d, ok := ctx.Deadline(); !ok || time.Now().Before(d) {
		return false
	}
	fdwait.AwaitEnd(ctx, nil)
	return true
}

// busyError is Dial's failure when its context ended while the Listener
// still rejected its requests as busy. It matches syscall.EAGAIN and the
// context's error, and is a net.Error: temporary, and a timeout where the
// context's deadline passed.
type busyError struct {
	addr  string
	why   string // the last reject's reason
	tries int    // busy rejects
	start time.Time
	cause error // the context's
}

// end returns e for a Dial whose context ctx ended, or whose deadline
// passed (ended).
func (e *busyError) end(ctx context.Context) error {
	if e.cause = context.Cause(ctx); e.cause == nil {
		e.cause = context.DeadlineExceeded
	}
	return e
}

func (e *busyError) Error() string {
	return fmt.Sprintf("rdmamsg: dial %s: the listener stayed busy: %d requests in %v rejected (%s): %v",
		e.addr, e.tries, time.Since(e.start).Round(time.Millisecond), e.why, e.cause)
}

func (e *busyError) Unwrap() []error { return []error{syscall.EAGAIN, e.cause} }
func (e *busyError) Timeout() bool   { return errors.Is(e.cause, context.DeadlineExceeded) }
func (e *busyError) Temporary() bool { return true }
