// Package inuse guards an object's C handle against the object's Close,
// for ibverbs' and rdmacm's objects: Close may run while other
// goroutines call the object's methods.
package inuse

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Guard guards an object's C handle against the object's Close: each
// method that hands the handle to C enters before and leaves after, and
// Close, once begun, turns the methods that enter after it away (they
// return ErrClosed) and waits for those under way to leave before it
// destroys the object. Entering and leaving are an atomic add each: no
// lock, no allocation. The zero Guard is closed, as a zero object is:
// its constructor opens it. Lock and Unlock serialize the object's
// Closes.
type Guard struct {
	n  atomic.Int64 // opened while open, plus the calls under way
	mu sync.Mutex
}

// opened is Guard.n of an open object with no call under way. Below it,
// n counts the calls under way of a closing or closed one (or the calls
// turned away, for the few nanoseconds between their two adds).
const opened = 1 << 40

// Open opens g, for a new object or a Close that failed after Shut: the
// object is there, and its methods may use it.
func (g *Guard) Open() { g.n.Add(opened) }

// Enter counts a call under way, or returns false, counting nothing, if
// the object is closed or its Close has begun. A true Enter must be
// paired with a Leave. A call may Enter again while it holds the guard
// (a method that calls another): the inner Enter fails only where a
// Close has begun since, which waits for the outer call to Leave.
func (g *Guard) Enter() bool {
	// The load first: a call turned away adds nothing, so that callers
	// that go on calling after ErrClosed, preempted between two adds,
	// cannot hold off a drain that waits for the count to reach 0.
	if g.n.Load() < opened {
		return false
	}
	if g.n.Add(1) < opened {
		g.n.Add(-1)
		return false
	}
	return true
}

// Leave ends a call that Enter counted.
func (g *Guard) Leave() { g.n.Add(-1) }

// Closed reports whether the object is closed or its Close has begun
// (and not failed since).
func (g *Guard) Closed() bool { return g.n.Load() < opened }

// Lock serializes the object's Closes: a Close holds it throughout.
func (g *Guard) Lock() { g.mu.Lock() }

// Unlock ends Lock.
func (g *Guard) Unlock() { g.mu.Unlock() }

// Shut begins a Close, with Lock held: Enter fails from now on. The
// caller wakes any call of the object that sleeps (a wait on a channel),
// then calls Drain.
func (g *Guard) Shut() { g.n.Add(-opened) }

// Quiesce begins the Close of an object whose live children kids
// counts, with its Closes serialized (Lock). While it has any, it
// changes nothing and returns their count, for the Close to fail with
// EBUSY. Else it turns new calls away (Shut), wakes those that sleep
// (wake, where set), waits for those under way (Drain) and counts again,
// for children that a call made meanwhile: where there are, it opens the
// object again and returns their count. 0: the object is idle and
// closing, for the Close to destroy, or to Open again where the verb
// fails.
func (g *Guard) Quiesce(kids func() int64, wake func()) int64 {
	if n := kids(); n > 0 {
		return n
	}
	g.Shut()
	if wake != nil {
		wake()
	}
	g.Drain()
	if n := kids(); n > 0 {
		g.Open()
		return n
	}
	return 0
}

// Drain waits, after Shut, until no call is under way. The calls it
// waits for are C calls that return on their own (a poll, a query), so
// it yields, then sleeps a little longer each round, up to a
// millisecond.
func (g *Guard) Drain() {
	for i := 0; g.n.Load() != 0; i++ {
		if i < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(min(time.Duration(i-63)*10*time.Microsecond, time.Millisecond))
		}
	}
}
