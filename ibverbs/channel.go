//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/internal/fdwait"
)

// CompChannel is a completion event channel (struct ibv_comp_channel). CQs
// created on it report completions as events after ReqNotify; Wait blocks
// on them through the Go netpoller, so a waiting goroutine holds no thread,
// and Block with the calling thread asleep in the kernel.
type CompChannel struct {
	c   *C.struct_ibv_comp_channel
	ctx *Context
	// w waits on a dup of the channel's fd, registered with the
	// netpoller by the first Wait: a channel that only Blocks stays out
	// of the netpoller, whose thread would otherwise wake at every event
	// too. try, made with it, reads an event into cq and errno.
	wOnce sync.Once
	wErr  error
	w     atomic.Pointer[fdwait.Waiter]
	try   func(uintptr) bool
	cq    *C.struct_ibv_cq
	errno C.int
	// kick is an eventfd, made by the first Block, that Interrupt
	// writes to wake a Block's poll(2), plus one: 0 before.
	kick atomic.Int32
	// intr is Interrupt's word to the Wait or Block under way, or to
	// the next one to begin: the one of them that takes it ends. The
	// waiter's interrupt and the kick only wake them to look at it, and
	// may be left over, spent, from an interrupt the other took.
	intr atomic.Bool
	kids refs
	// busy is set while a Wait or Block is under way: a second one at
	// the same time fails with EBUSY rather than share try's results
	// or take the event the first one sleeps for.
	busy atomic.Bool
	// fd is c's, kept for Fd; use guards c against Close, which wakes
	// a Wait or Block asleep on it.
	fd  int
	use inUse
}

// claim claims the channel for one Wait or Block, which each take its
// event (ibv_get_cq_event); release releases it.
func (ch *CompChannel) claim() error {
	if !ch.busy.CompareAndSwap(false, true) {
		const verb = "ibv_get_cq_event"
		return fmt.Errorf("%s: another goroutine is waiting on the completion channel: %w",
			verb, os.NewSyscallError(verb, syscall.EBUSY))
	}
	return nil
}

func (ch *CompChannel) release() { ch.busy.Store(false) }

// CreateCompChannel creates a completion channel (ibv_create_comp_channel),
// whose fd it makes non-blocking; if that fails, it destroys the channel
// again (ibv_destroy_comp_channel).
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	ch, err := C.ibv_create_comp_channel(c.c)
	if ch == nil {
		return nil, errnoOf("ibv_create_comp_channel", err)
	}
	// Non-blocking from the start: Wait and Block both read an event
	// only once the fd is readable, and take EAGAIN for "none yet".
	if err := syscall.SetNonblock(int(ch.fd), true); err != nil {
		C.ibv_destroy_comp_channel(ch)
		return nil, os.NewSyscallError("fcntl", err)
	}
	c.kids.add()
	cc := &CompChannel{c: ch, ctx: c, fd: int(ch.fd)}
	cc.use.Open()
	return cc, nil
}

// waitError maps a wait's end to this package's errors: ErrClosed for a
// closed Waiter, ctx's error as it is.
func waitError(err error) error {
	if errors.Is(err, fdwait.ErrClosed) {
		return ErrClosed
	}
	return err
}

// Fd returns the channel's file descriptor, for callers who poll it
// themselves. It is non-blocking.
func (ch *CompChannel) Fd() int {
	if ch.use.Closed() {
		return -1
	}
	return ch.fd
}

// Wait blocks until a CQ on the channel has a completion event, acknowledges
// it and returns the CQ (ibv_get_cq_event, ibv_ack_cq_events). Re-arm the CQ
// with ReqNotify before polling it empty, as the ibv_get_cq_event man page
// describes. Wait returns ctx's error when ctx ends first. One goroutine at a
// time may wait on a channel. Wait does not allocate when ctx cannot be
// cancelled or has the previous Wait's Done channel: a loop that waits
// with one context keeps one cancellation watch registered. A Wait or
// Block begun while another is under way on the channel fails at once
// with an error matching syscall.EBUSY. An event for a CQ whose Close is
// under way in another goroutine is acknowledged and passed over: Wait
// goes on waiting, and never returns a CQ other than the event's. The
// channel's Close in another goroutine ends the Wait with ErrClosed.
func (ch *CompChannel) Wait(ctx context.Context) (*CQ, error) {
	checkContext(ctx, "(*CompChannel).Wait")
	return ch.wait(ctx, nil)
}

// checkContext panics, naming fn, where ctx is nil: a mistake in the
// program, as net.Dialer.DialContext takes it, not a wait without end.
func checkContext(ctx context.Context, fn string) {
	if ctx == nil {
		panic("ibverbs." + fn + ": nil Context")
	}
}

// wait is Wait, which also ends with ErrClosed, woken by wake, once stop
// (the guard of the CQ that CQ.Wait waits for, or nil) is closed.
func (ch *CompChannel) wait(ctx context.Context, stop *inUse) (*CQ, error) {
	if !ch.use.Enter() {
		return nil, ErrClosed
	}
	defer ch.use.Leave()
	if err := ch.waiter(); err != nil {
		return nil, err
	}
	if err := ch.claim(); err != nil {
		return nil, err
	}
	defer ch.release()
	w := ch.w.Load()
	for {
		// After w is stored: a Close or Interrupt from here on wakes w.
		if ch.use.Closed() || stop != nil && stop.Closed() {
			return nil, ErrClosed
		}
		if ch.intr.Swap(false) {
			return nil, ErrInterrupted
		}
		if err := w.Wait(ctx, ch.try); errors.Is(err, fdwait.ErrInterrupted) {
			// Interrupt's or Close's wake-up: the loop's top ends
			// the wait if it is not one a Block took already.
			continue
		} else if err != nil {
			return nil, waitError(err)
		}
		if ch.errno != 0 {
			return nil, verbError("ibv_get_cq_event", int(ch.errno))
		}
		if cq, _ := ch.ctx.dev.cqEvent(ch.cq, false); cq != nil {
			return cq, nil
		}
		// The event was for a CQ being closed: wait for the next.
	}
}

// waiter registers the channel's fd with the netpoller, once.
func (ch *CompChannel) waiter() error {
	ch.wOnce.Do(func() {
		w, err := fdwait.New(int(ch.c.fd), "comp_channel")
		if err != nil {
			ch.wErr = err
			return
		}
		ch.try = func(uintptr) bool {
			ch.errno = C.gv_get_cq_event(ch.c, &ch.cq)
			return ch.errno != C.int(syscall.EAGAIN)
		}
		ch.w.Store(w)
	})
	return ch.wErr
}

// noKickSlice is how long a Block without its eventfd (kicker) sleeps
// at a time, before it looks whether the channel's Close or an Interrupt
// came: the longest either waits for such a Block.
const noKickSlice = 50 * time.Millisecond

// kicker returns the eventfd that Interrupt writes to wake a Block,
// made by the first Block that can: where none can be made (no
// descriptor left), -1, which gv_channel_wait polls as none, and the
// next Block tries again. Only a Block, which holds the channel, makes
// it.
func (ch *CompChannel) kicker() C.int {
	if k := ch.kick.Load(); k != 0 {
		return C.int(k - 1)
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return -1
	}
	ch.kick.Store(int32(fd) + 1)
	return C.int(fd)
}

// ErrInterrupted is returned by a CompChannel's Wait or Block that
// Interrupt ended.
var ErrInterrupted = fdwait.ErrInterrupted

// Interrupt ends the Wait or Block under way on the channel with
// ErrInterrupted, or the next one to begin when none is under way,
// without an event: for a goroutine or thread that waits for completions
// and must also look at something else (its deadline moved, its
// connection is closing). One Interrupt ends one wait, whichever kind
// takes it. It may be called from any goroutine while another waits, or
// closes the channel (after Close it returns ErrClosed), and does not
// allocate.
func (ch *CompChannel) Interrupt() error {
	if !ch.use.Enter() {
		return ErrClosed
	}
	defer ch.use.Leave()
	// The word first, then the wake-ups: a Wait or Block that stores
	// its waiter or kick before it looks at the word either sees it or
	// is woken here.
	ch.intr.Store(true)
	if w := ch.w.Load(); w != nil {
		w.Interrupt()
	}
	if k := ch.kick.Load(); k != 0 {
		if errno := C.gv_kick(C.int(k - 1)); errno != 0 {
			return verbError("write", int(errno))
		}
	}
	return nil
}

// Block waits for the channel's next completion event as Wait does, but
// with the calling OS thread asleep in the kernel (poll(2) on the
// channel's fd) rather than the goroutine parked in the Go netpoller, for
// at most timeout (poll(2)'s longest, about 24.8 days, for longer); 0
// only takes an event already there. It reads the event
// (ibv_get_cq_event) in the cgo call that sleeps, then in one more re-arms
// its CQ for the next completion (ibv_req_notify_cq) and acknowledges the
// event (ibv_ack_cq_events); a CQ that ReqNotify armed for solicited
// completions only is re-armed for those. It returns that CQ, or nil when the time
// passed first, or ErrInterrupted when Interrupt ended it, which wakes the
// thread through an eventfd polled beside the channel's fd (made by the
// first Block; where the process has no descriptor left for it, that
// Block waits without it, in slices of 50 ms, and an Interrupt or Close
// ends it at the end of a slice). It does not allocate. An event for a CQ whose Close is
// under way is acknowledged and passed over, as Wait does.
//
// It is the wait of a loop that owns its thread (runtime.LockOSThread)
// and would otherwise spin, as perftest's -e does: arm each CQ once with
// ReqNotify, then poll a CQ and Block while it is empty. A completion
// that comes between the poll and the Block still raises an event, as the
// CQ is armed, so none is missed; an event whose completion an earlier
// poll already took only costs one more poll. Wait suits a goroutine
// among many: it holds no thread, but each wake-up passes through the
// netpoller's thread. One goroutine at a time may wait on a channel: a
// Block or Wait begun while another is under way fails with an error
// matching syscall.EBUSY. The channel's Close in another goroutine ends
// the Block with ErrClosed, waking it through the same eventfd.
func (ch *CompChannel) Block(timeout time.Duration) (*CQ, error) {
	if !ch.use.Enter() {
		return nil, ErrClosed
	}
	defer ch.use.Leave()
	if err := ch.claim(); err != nil {
		return nil, err
	}
	defer ch.release()
	kick := ch.kicker()
	var p *C.struct_ibv_cq
	var end C.int64_t
	var kicked C.int
	// poll(2) takes whole milliseconds in an int: about 24.8 days at most.
	timeout = min(max(timeout, 0), time.Duration(math.MaxInt32)*time.Millisecond)
	// Without the eventfd nothing wakes the poll: it sleeps in slices
	// of noKickSlice, each followed by a look at Close and Interrupt,
	// until deadline.
	var deadline time.Time
	if kick < 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		// After the kick is stored: a Close or Interrupt from here on
		// writes to it, which wakes the poll.
		if ch.use.Closed() {
			return nil, ErrClosed
		}
		if ch.intr.Swap(false) {
			return nil, ErrInterrupted
		}
		wait := timeout
		if kick < 0 {
			end, wait = 0, max(min(time.Until(deadline), noKickSlice), 0)
		}
		errno := C.gv_channel_wait(handle(ch.c), kick, C.int64_t(wait), &end, &p, &kicked)
		switch {
		case errno < 0:
			return nil, verbError("poll", int(-errno))
		case errno > 0:
			return nil, verbError("ibv_get_cq_event", int(errno))
		case kicked != 0:
			// The loop's top ends the wait, or, for a kick whose
			// interrupt a Wait took, waits on until the same end.
			continue
		case p == nil:
			if kick < 0 && time.Now().Before(deadline) {
				continue // a slice passed, not the wait
			}
			return nil, nil
		}
		cq, rc := ch.ctx.dev.cqEvent(p, true)
		if cq == nil {
			// The event was for a CQ being closed: wait for the next
			// until the same deadline.
			continue
		}
		if rc != 0 {
			return cq, verbError("ibv_req_notify_cq", int(rc))
		}
		return cq, nil
	}
}

// cqEvent finds the CQ that an event read from a channel (by
// ibv_get_cq_event) is about, and acknowledges the event
// (ibv_ack_cq_events), re-arming the CQ first where arm is set
// (ibv_req_notify_cq), all under the table's lock. CQ.Close takes its CQ
// out of the table under that lock before ibv_destroy_cq, which waits for
// the CQ's events to be acknowledged before it frees it: until the ack, p
// is the address of the event's CQ and of no other. So a CQ found in the
// table is the event's and not yet destroyed, when the arm reaches it, and
// a CQ not in the table is being closed: its event is acknowledged and
// dropped, and cqEvent returns nil. (Where ibv_destroy_cq then fails, the
// CQ goes back in the table unarmed, as if its event had been taken.)
// It returns ibv_req_notify_cq's errno, or 0.
func (d *devState) cqEvent(p *C.struct_ibv_cq, arm bool) (*CQ, C.int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cq, _ := d.objs[unsafe.Pointer(p)].(*CQ)
	a := C.int(0) // no arm; 1 for the next completion, 2 the next solicited
	if arm && cq != nil {
		a = 1
		if cq.solicited.Load() {
			a = 2
		}
	}
	return cq, C.gv_cq_event_done(handle(p), a)
}

// wake wakes the Wait asleep on the channel, and with kick the Block, to
// look again at what ends them: the channel's Close, or for a Wait its
// CQ's (CQ.Wait). A wake with neither asleep is left for the next wait,
// which takes it for nothing and goes on waiting. The caller has entered
// the channel, or is its Close.
func (ch *CompChannel) wake(kick bool) {
	if w := ch.w.Load(); w != nil {
		w.Interrupt()
	}
	if k := ch.kick.Load(); kick && k != 0 {
		C.gv_kick(C.int(k - 1))
	}
}

// Close destroys the channel (ibv_destroy_comp_channel). It fails with
// EBUSY while CQs use it. Closing twice is a no-op. It may run while
// other goroutines use the channel: it wakes a Wait or Block asleep on
// it, which returns ErrClosed, waits for the calls under way to return,
// and a call that begins once Close has begun returns ErrClosed.
func (ch *CompChannel) Close() error {
	ch.use.Lock()
	defer ch.use.Unlock()
	if ch.c == nil {
		return nil
	}
	// A CreateCQ that used the channel meanwhile may have made a CQ on it.
	if n := ch.use.Quiesce(ch.kids.count, func() { ch.wake(true) }); n > 0 {
		return busyError("ibv_destroy_comp_channel", n, "CQ on the channel", "CQs on the channel")
	}
	if w := ch.w.Load(); w != nil {
		w.Close()
	}
	if rc := C.ibv_destroy_comp_channel(ch.c); rc != 0 {
		// The channel is still there, and still its context's child; the
		// next Wait registers it with the netpoller again. The kick
		// stays.
		ch.w.Store(nil)
		ch.try, ch.wErr, ch.wOnce = nil, nil, sync.Once{}
		ch.use.Open()
		return verbError("ibv_destroy_comp_channel", int(rc))
	}
	if k := ch.kick.Swap(0); k != 0 {
		unix.Close(int(k - 1))
	}
	ch.c = nil
	ch.ctx.kids.done()
	return nil
}
