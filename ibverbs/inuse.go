//go:build linux

package ibverbs

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// inUse guards an object's C handle against the object's Close: each
// method that hands the handle to C enters before and leaves after, and
// Close, once begun, turns the methods that enter after it away (they
// return ErrClosed) and waits for those under way to leave before it
// destroys the object. Entering and leaving are an atomic add each: no
// lock, no allocation. The zero inUse is closed, as a zero object is:
// its constructor opens it. mu serializes the object's Closes.
type inUse struct {
	n  atomic.Int64 // opened while open, plus the calls under way
	mu sync.Mutex
}

// opened is inUse.n of an open object with no call under way. Below it,
// n counts the calls under way of a closing or closed one (or the calls
// turned away, for the few nanoseconds between their two adds).
const opened = 1 << 40

// open opens u, for a new object or a Close that failed after shut: the
// object is there, and its methods may use it.
func (u *inUse) open() { u.n.Add(opened) }

// enter counts a call under way, or returns false, counting nothing, if
// the object is closed or its Close has begun. A true enter must be
// paired with a leave.
func (u *inUse) enter() bool {
	// The load first: a call turned away adds nothing, so that callers
	// that go on calling after ErrClosed, preempted between two adds,
	// cannot hold off a drain that waits for the count to reach 0.
	if u.n.Load() < opened {
		return false
	}
	if u.n.Add(1) < opened {
		u.n.Add(-1)
		return false
	}
	return true
}

// leave ends a call that enter counted.
func (u *inUse) leave() { u.n.Add(-1) }

// closed reports whether the object is closed or its Close has begun
// (and not failed since).
func (u *inUse) closed() bool { return u.n.Load() < opened }

// shut begins a Close, with mu held: enter fails from now on. The caller
// wakes any call of the object that sleeps (a wait on a channel), then
// calls drain.
func (u *inUse) shut() { u.n.Add(-opened) }

// quiesce begins the Close of an object whose live children kids
// counts, with its Closes serialized. While it has any, it changes
// nothing and returns their count, for the Close to fail with EBUSY.
// Else it turns new calls away (shut), wakes those that sleep (wake,
// where set), waits for those under way (drain) and counts again, for
// children that a call made meanwhile: where there are, it opens the
// object again and returns their count. 0: the object is idle and
// closing, for the Close to destroy, or to open again where the verb
// fails.
func (u *inUse) quiesce(kids *refs, wake func()) int64 {
	if n := kids.count(); n > 0 {
		return n
	}
	u.shut()
	if wake != nil {
		wake()
	}
	u.drain()
	if n := kids.count(); n > 0 {
		u.open()
		return n
	}
	return 0
}

// drain waits, after shut, until no call is under way. The calls it waits
// for are cgo calls that return on their own (a poll, a query), so it
// yields, then sleeps a little longer each round, up to a millisecond.
func (u *inUse) drain() {
	for i := 0; u.n.Load() != 0; i++ {
		if i < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Duration(i-63)*10*time.Microsecond, time.Millisecond))
		}
	}
}
