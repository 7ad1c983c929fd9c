package rdmamsg

import (
	"sync"
	"sync/atomic"
	"time"
)

// A deadline is a channel that is closed when a time passes, for the
// waits of a net.Conn's SetReadDeadline and SetWriteDeadline: a wait
// selects on done() and fails with os.ErrDeadlineExceeded when it is
// closed. The zero value has no deadline.
type deadline struct {
	mu    sync.Mutex
	ch    chan struct{} // closed once the deadline has passed
	at    time.Time     // the deadline set; the zero time for none
	timer *time.Timer
	// gen counts the deadlines set, so that a timer that fired as a new
	// deadline was set, and waits for mu, does not close ch for it.
	gen uint64
	// over says that ch is closed, for passed without mu.
	over atomic.Bool
	// stopped says that the connection closed (stop): no deadline is
	// set any more.
	stopped bool
	// onChange, if set, is called, without mu, after each set and when
	// the deadline passes: for a wait that cannot select on done (a
	// Conn's caller asleep on its CQ).
	onChange func()
}

// done returns the channel of the deadline set now, or nil (a channel
// that never fires) for no deadline at all (d nil).
func (d *deadline) done() <-chan struct{} {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

// set sets the deadline to t: the zero time for none, a time past for
// at once. Waits that began before see the new deadline. It reports
// false, and sets nothing, after stop.
func (d *deadline) set(t time.Time) bool {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return false
	}
	d.resetLocked(t)
	d.mu.Unlock()
	if d.onChange != nil {
		d.onChange()
	}
	return true
}

// stop stops the timer for good, at the connection's Close, which ends
// the waits itself: set does nothing from then on.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// when returns the deadline set, the zero time for none.
func (d *deadline) when() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at
}

func (d *deadline) resetLocked(t time.Time) {
	d.gen++
	d.at = t
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	// A channel already closed, by the timer or a time past, is
	// replaced; an open one is kept, so that its waiters see the new
	// time. A timer stopped after it fired has closed its channel,
	// and a new one replaces it below.
	if d.ch == nil || isClosed(d.ch) {
		d.ch = make(chan struct{})
		d.over.Store(false)
	}
	if t.IsZero() {
		return
	}
	ch, gen := d.ch, d.gen
	if dur := time.Until(t); dur > 0 {
		d.timer = time.AfterFunc(dur, func() {
			d.mu.Lock()
			fired := d.gen == gen && !isClosed(ch)
			if fired {
				close(ch)
				d.over.Store(true)
			}
			d.mu.Unlock()
			if fired && d.onChange != nil {
				d.onChange()
			}
		})
		return
	}
	close(ch)
	d.over.Store(true)
}

// passed says whether the deadline has passed: an operation that starts
// then fails at once with os.ErrDeadlineExceeded, as package net's do,
// even where it would not have to wait; but one on a closed connection
// fails with ErrClosed, which package net's tell first.
func (d *deadline) passed() bool { return d.over.Load() }

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
