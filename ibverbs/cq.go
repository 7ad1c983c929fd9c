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
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// CQ is a completion queue (struct ibv_cq).
//
// A CQ that fills up overruns: the device has nowhere to put the next
// completion, and the verbs leave it undefined what happens to it and to
// the QPs that complete there. The sign of it is an asynchronous event,
// EventCQErr (CQ_ERR) naming the CQ (AsyncEvent.CQ, and the CQ's Handle
// in AsyncEvent.String), on Context.Events, not an error from Poll: on
// soft-RoCE Poll goes on returning the completions the CQ holds with a
// nil error, and each completion it dropped raises one CQ_ERR. Make a CQ
// as large as the completions all its QPs can have outstanding (their
// MaxSendWR and MaxRecvWR, summed), and watch Events where it may not be.
type CQ struct {
	c      *C.struct_ibv_cq
	ctx    *Context
	ch     *CompChannel
	cqe    int
	handle uint32
	kids   refs
	// single: made with CQInit.SingleThreaded.
	single bool
	// ex is the CQ as ibv_create_cq_ex made it, nil for one that
	// ibv_create_cq made; fields are the timestamps it was asked for.
	ex     *C.struct_ibv_cq_ex
	fields C.uint64_t
	// solicited: the last ReqNotify asked for solicited completions
	// only, as Block's re-arm and the arm of Wait and WaitEx do again.
	solicited atomic.Bool
	// use guards c against Close; waiting counts the Waits and WaitExes
	// asleep on the channel, which Close wakes.
	use     inUse
	waiting atomic.Int32
}

// SingleThreaded reports whether the CQ was made with the promise that
// one thread at a time uses it (CQInit.SingleThreaded).
func (cq *CQ) SingleThreaded() bool { return cq.single }

// CreateCQ creates a completion queue for at least cqe entries
// (ibv_create_cq) on completion vector 0. ch may be nil for a CQ that is
// only polled. cqe must be from 1 to math.MaxInt32, the verb's int: others
// fail with an error matching syscall.EINVAL, as in CreateCQVector,
// CreateCQEx and Resize.
func (c *Context) CreateCQ(cqe int, ch *CompChannel) (*CQ, error) {
	return c.CreateCQVector(cqe, ch, 0)
}

// NumCompVectors returns how many completion vectors the device has
// (struct ibv_context's num_comp_vectors): each is an interrupt, and so
// the CPUs that handle it, that a CQ's events may come on.
func (c *Context) NumCompVectors() int {
	if c.use.Closed() {
		return 0
	}
	return c.vectors
}

// CreateCQVector is CreateCQ on completion vector vector, from 0 to
// NumCompVectors()-1 (ibv_create_cq's comp_vector): the interrupt its
// completion events come on, so that a loop sleeping on ch can be woken on
// the CPU it runs on. A vector out of range is an error matching
// syscall.EINVAL.
func (c *Context) CreateCQVector(cqe int, ch *CompChannel, vector int) (*CQ, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	if ch != nil {
		if !ch.use.Enter() {
			return nil, ErrClosed
		}
		defer ch.use.Leave()
	}
	cch, err := c.cqArgs("ibv_create_cq", ch, vector)
	if err != nil {
		return nil, err
	}
	if err := checkCQE("ibv_create_cq", c.name, cqe); err != nil {
		return nil, err
	}
	q, err := C.ibv_create_cq(c.c, C.int(cqe), nil, cch, C.int(vector))
	if q == nil {
		return nil, c.cqeError(cqe, errnoOf("ibv_create_cq", err))
	}
	return c.newCQ(q, ch), nil
}

// CQInit says what CreateCQEx makes.
type CQInit struct {
	// Entries is the least number of completions the CQ holds, from 1 to
	// math.MaxInt32.
	Entries int
	// Channel, if set, is where the CQ's completion events come; Vector
	// is the completion vector they come on, as CreateCQVector's.
	Channel *CompChannel
	Vector  int
	// SingleThreaded promises that no two threads use the CQ at once
	// (IBV_CREATE_CQ_ATTR_SINGLE_THREADED): a provider that honours it,
	// such as mlx5, then polls it without taking a lock. Others may
	// accept it and lock anyway, or refuse it: see CreateCQEx.
	SingleThreaded bool
	// Timestamps asks for the time the device made each completion, in
	// its clock's ticks (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP; the clock
	// ticks DeviceAttr.HCACoreClockKHz thousand times a second and wraps
	// at DeviceAttr.CompletionTimestampMask), and Wallclock for that time
	// as the host's real-time clock's nanoseconds
	// (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK). PollEx reads them.
	// A device without them fails CreateCQEx with an error matching
	// errors.ErrUnsupported; soft-RoCE has neither.
	Timestamps, Wallclock bool
}

// CreateCQEx creates a completion queue with ibv_create_cq_ex, which takes
// creation flags and completion fields that ibv_create_cq does not
// (ibv_cq_ex_to_cq gives the struct ibv_cq within); it is polled (with
// Poll, or PollEx for its timestamps), waited on and closed as any CQ.
// The flags (CQInit.SingleThreaded) are promises that let a device make a
// faster CQ, never needed for a correct one: a device without the verb,
// or that refuses them (EOPNOTSUPP), gets an ordinary CQ from
// ibv_create_cq, and CQ.SingleThreaded and CQ.Extended say which it was.
// Timestamps are not optional: a device without them fails.
func (c *Context) CreateCQEx(init CQInit) (*CQ, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	if ch := init.Channel; ch != nil {
		if !ch.use.Enter() {
			return nil, ErrClosed
		}
		defer ch.use.Leave()
	}
	cch, err := c.cqArgs("ibv_create_cq_ex", init.Channel, init.Vector)
	if err != nil {
		return nil, err
	}
	if err := checkCQE("ibv_create_cq_ex", c.name, init.Entries); err != nil {
		return nil, err
	}
	var flags C.uint32_t
	if init.SingleThreaded {
		flags |= C.IBV_CREATE_CQ_ATTR_SINGLE_THREADED
	}
	var fields C.uint64_t
	if init.Timestamps {
		fields |= C.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
	}
	if init.Wallclock {
		fields |= C.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK
	}
	x, err := C.gv_create_cq_ex(c.c, C.int(init.Entries), cch, C.int(init.Vector), flags, fields)
	if x == nil && fields != 0 && flags != 0 && errors.Is(errnoOf("ibv_create_cq_ex", err), errors.ErrUnsupported) {
		// The flags are promises, the timestamps are not: the flags
		// may be what the device refuses.
		init.SingleThreaded, flags = false, 0
		x, err = C.gv_create_cq_ex(c.c, C.int(init.Entries), cch, C.int(init.Vector), flags, fields)
	}
	if x != nil {
		cq := c.newCQ(C.ibv_cq_ex_to_cq(x), init.Channel)
		cq.single, cq.ex, cq.fields = init.SingleThreaded, x, fields
		return cq, nil
	}
	err = errnoOf("ibv_create_cq_ex", err)
	if fields != 0 {
		return nil, fmt.Errorf("%s: %d entries with %s: %w", c.name, init.Entries, init.timestamps(), err)
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		return nil, c.cqeError(init.Entries, err)
	}
	return c.CreateCQVector(init.Entries, init.Channel, init.Vector)
}

// timestamps names the timestamps init asks for.
func (init CQInit) timestamps() string {
	switch {
	case init.Timestamps && init.Wallclock:
		return "completion timestamps (device clock and wall clock)"
	case init.Wallclock:
		return "wall-clock completion timestamps"
	}
	return "completion timestamps"
}

// Extended reports whether the CQ was made by ibv_create_cq_ex (see
// CreateCQEx), so that PollEx reads it through the extended poll
// iterator.
func (cq *CQ) Extended() bool { return cq.ex != nil }

// cqArgs checks a CQ's context, channel and vector for verb, and returns
// the channel's C pointer. The caller has entered c and ch.
func (c *Context) cqArgs(verb string, ch *CompChannel, vector int) (*C.struct_ibv_comp_channel, error) {
	if n := c.vectors; vector < 0 || vector >= n {
		return nil, fmt.Errorf("%s: %s: completion vector %d: the device has %d (0 to %d): %w",
			verb, c.name, vector, n, n-1, syscall.EINVAL)
	}
	if ch == nil {
		return nil, nil
	}
	if ch.ctx.dev != c.dev {
		return nil, fmt.Errorf("%s: %s: the completion channel is on another context (of %s), "+
			"where the kernel would refuse its fd: %w", verb, c.name, ch.ctx.name, syscall.EINVAL)
	}
	return ch.c, nil
}

// checkCQE refuses a CQ size that is not positive or that the verbs' int
// cannot hold, which would wrap (1<<32 + 16 to 16).
func checkCQE(verb, dev string, cqe int) error {
	if cqe < 1 || cqe > math.MaxInt32 {
		return fmt.Errorf("%s: %s: %d entries: want 1 to %d: %w", verb, dev, cqe, math.MaxInt32, syscall.EINVAL)
	}
	return nil
}

// cqeError is err, the failure of a verb that made or resized a CQ of cqe
// entries, said with the device's name, and with its limit on a CQ's
// entries (DeviceAttr.MaxCQE, which ibv_query_device_ex reads on this
// error path only) where cqe is past it.
func (c *Context) cqeError(cqe int, err error) error {
	if errors.Is(err, syscall.EINVAL) {
		if da, qerr := c.QueryDevice(); qerr == nil && cqe > da.MaxCQE {
			return fmt.Errorf("%s: %d entries, more than the device's limit of %d (DeviceAttr.MaxCQE): %w",
				c.name, cqe, da.MaxCQE, err)
		}
	}
	return fmt.Errorf("%s: %s: %w", c.name, entries(cqe), err)
}

// entries says "1 entry" or "n entries".
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// newCQ wraps q, a CQ just made on c, and counts it as c's and ch's child.
func (c *Context) newCQ(q *C.struct_ibv_cq, ch *CompChannel) *CQ {
	cq := &CQ{c: q, ctx: c, ch: ch, cqe: int(q.cqe), handle: uint32(q.handle)}
	cq.use.Open()
	c.kids.add()
	if ch != nil {
		ch.kids.add()
	}
	c.register(unsafe.Pointer(q), cq)
	return cq
}

// Handle returns the number the kernel knows the CQ by on its context
// (struct ibv_cq's handle): unique among the CQs open on the Context's
// device, and how AsyncEvent.String names the CQ of a CQ event. It goes
// on answering after Close, when the kernel may give it to a later CQ.
func (cq *CQ) Handle() uint32 { return cq.handle }

// Len returns the number of entries the CQ was granted, at creation or
// by its last Resize.
func (cq *CQ) Len() int { return cq.cqe }

// Resize makes the CQ hold at least cqe entries (ibv_resize_cq), keeping
// the completions it holds; Len then says how many it got. Shrinking below
// the completions queued fails with an error matching syscall.EINVAL that
// says so. A provider without the verb fails with an
// error that matches errors.ErrUnsupported. No other goroutine may poll
// the CQ or post to its QPs meanwhile.
func (cq *CQ) Resize(cqe int) error {
	if !cq.use.Enter() {
		return ErrClosed
	}
	defer cq.use.Leave()
	if err := checkCQE("ibv_resize_cq", cq.ctx.name, cqe); err != nil {
		return err
	}
	if rc := C.ibv_resize_cq(cq.c, C.int(cqe)); rc != 0 {
		err := verbError("ibv_resize_cq", int(rc))
		if errors.Is(err, syscall.EINVAL) && cqe < cq.cqe {
			if da, qerr := cq.ctx.QueryDevice(); qerr == nil && cqe <= da.MaxCQE {
				return fmt.Errorf("%s: %s, fewer than the CQ's %d: it cannot shrink below the completions it holds (poll them first): %w",
					cq.ctx.name, entries(cqe), cq.cqe, err)
			}
		}
		return cq.ctx.cqeError(cqe, err)
	}
	cq.cqe = int(cq.c.cqe)
	return nil
}

// Moderate sets the CQ's event moderation (ibv_modify_cq with
// IBV_CQ_ATTR_MODERATE, struct ibv_moderate_cq): an armed CQ raises its
// completion event once count completions have come, or period has
// passed since the first of them, whichever is sooner, rather than at
// the first, so that a loop woken by events (CQ.Wait, CompChannel.Block)
// wakes less often, each time for more completions, at the cost of
// latency. Polling is not affected. count is 0 to 65535 and period, rounded up to
// whole microseconds, 0 to 65535 µs; others fail with an error matching
// syscall.EINVAL. Moderate(0, 0) asks for an event at each armed
// completion again. A device without moderation, soft-RoCE among them,
// fails with an error matching errors.ErrUnsupported.
func (cq *CQ) Moderate(count int, period time.Duration) error {
	if !cq.use.Enter() {
		return ErrClosed
	}
	defer cq.use.Leave()
	us := (period + time.Microsecond - 1) / time.Microsecond
	if count < 0 || count > math.MaxUint16 || period < 0 || us > math.MaxUint16 {
		return fmt.Errorf("ibv_modify_cq: %s: moderation of %d completions or %v: want 0 to %d and 0 to %d µs: %w",
			cq.ctx.name, count, period, math.MaxUint16, math.MaxUint16, syscall.EINVAL)
	}
	if rc := C.gv_modify_cq(cq.c, C.uint16_t(count), C.uint16_t(us)); rc != 0 {
		return fmt.Errorf("%s: CQ moderation of %d completions or %d µs: %w", cq.ctx.name, count, us,
			verbError("ibv_modify_cq", int(rc)))
	}
	return nil
}

// Channel returns the completion channel the CQ was created with, or nil:
// the one whose Wait reports the CQ's events, for a caller that polls the
// CQ itself between waits rather than through CQ.Wait.
func (cq *CQ) Channel() *CompChannel { return cq.ch }

// Raw returns the struct ibv_cq pointer, valid until Close.
func (cq *CQ) Raw() unsafe.Pointer { return unsafe.Pointer(cq.c) }

// Poll takes up to len(wcs) completions into wcs (math.MaxInt32 at most,
// the verb's int) and returns how many it took (ibv_poll_cq). It never
// blocks and never allocates; a batch is one cgo call. Completions with a
// failed status are returned too: check each with WC.Err. Such a
// completion has WRID, Status, VendorErr and QPN alone, its other fields
// 0, as the verbs leave them undefined. A CQ that overran does not make
// Poll fail: the async event EventCQErr tells it (see CQ).
func (cq *CQ) Poll(wcs []WC) (int, error) {
	if !cq.use.Enter() {
		return 0, ErrClosed
	}
	if len(wcs) == 0 {
		cq.use.Leave()
		return 0, nil
	}
	n := C.gv_poll_cq(handle(cq.c), C.int(min(len(wcs), math.MaxInt32)), (*C.struct_gv_wc)(unsafe.Pointer(&wcs[0])))
	cq.use.Leave()
	if n < 0 {
		return 0, pollError(int(n), false)
	}
	return int(n), nil
}

// PollEx takes up to len(wcs) completions into wcs and returns how many it
// took, as Poll does, with their timestamps where the CQ was made with
// CQInit.Timestamps or Wallclock. A CQ made by ibv_create_cq_ex is read
// through its poll iterator, a completion from each ibv_start_poll and
// ibv_end_poll, and the ibv_wc_read_* calls, one for each field; any other
// CQ with ibv_poll_cq, its timestamps 0. (ibv_next_poll, which takes more
// than one completion a batch, is not used: soft-RoCE before rdma-core 55
// loses its place in the CQ when it finds the CQ empty.) A failed
// completion has WRID, Status, VendorErr and QPN alone, as Poll's.
// WC.PKeyIndex, which an extended CQ cannot be asked for, is 0. A
// provider that fails to read a completion (mlx5's start_poll can, for one
// it cannot parse) makes it return an error matching syscall.EIO, or the
// provider's errno. Completions taken before a failure in the same call
// are returned without it, as Poll does: the next call reports the
// failure only if it meets it again. It never blocks and never
// allocates; a batch is one cgo call.
func (cq *CQ) PollEx(wcs []WCEx) (int, error) {
	if !cq.use.Enter() {
		return 0, ErrClosed
	}
	if len(wcs) == 0 {
		cq.use.Leave()
		return 0, nil
	}
	n := C.gv_poll_cq_ex(handle(cq.c), handle(cq.ex), cq.fields, C.int(min(len(wcs), math.MaxInt32)),
		(*C.struct_gv_wc_ex)(unsafe.Pointer(&wcs[0])))
	cq.use.Leave()
	if n < 0 {
		return 0, pollError(int(n), cq.ex != nil)
	}
	return int(n), nil
}

// pollError is the error of a poll that returned n, -errno (gv_poll_end's),
// from an extended CQ's iterator (ibv_start_poll) where ex is set, else
// from ibv_poll_cq.
func pollError(n int, ex bool) error {
	if ex {
		return fmt.Errorf("ibverbs: the provider failed to read the CQ's next completion: %w",
			verbError("ibv_start_poll", -n))
	}
	return verbError("ibv_poll_cq", -n)
}

// pollEnd is shim.h's gv_poll_end, which Poll and PollEx inline: what a
// poll returns, a count or -errno, when the provider answered rc after
// got completions. For the tests, which check it with a provider's values.
func pollEnd(got, rc int) int { return int(C.gv_poll_end(C.int(got), C.int(rc))) }

// fillWC converts w, the bytes of a struct ibv_wc, to a WC with shim.h's
// gv_fill_wc, as Poll does each completion ibv_poll_cq takes. For the
// tests, which give it crafted completions.
func fillWC(w []byte) WC {
	var wc WC
	if len(w) != int(C.sizeof_struct_ibv_wc) {
		panic("ibverbs: fillWC: not a struct ibv_wc")
	}
	C.gv_fill_wc((*C.struct_gv_wc)(unsafe.Pointer(&wc)), (*C.struct_ibv_wc)(unsafe.Pointer(&w[0])))
	return wc
}

// ReqNotify arms the CQ to raise an event on its channel at the next
// completion, or the next solicited one (ibv_req_notify_cq). The CQ keeps
// the choice: Block re-arms it the same way after each of its events, and
// Wait and WaitEx arm it so each time they sleep, so that after
// ReqNotify(true) only a solicited completion wakes them, until a
// ReqNotify(false) asks for any again. Wait and WaitEx arm a CQ that ReqNotify
// never armed for any completion. (An arm that no event has used yet is not
// narrowed: a CQ armed for any completion stays so until its event,
// whatever ReqNotify(true) asks meanwhile, as the InfiniBand
// specification has it (C11-31) and soft-RoCE does; the choice holds
// from the next arm.)
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if !cq.use.Enter() {
		return ErrClosed
	}
	defer cq.use.Leave()
	s := C.int(0)
	if solicitedOnly {
		s = 1
	}
	if rc := C.gv_req_notify_cq(cq.c, s); rc != 0 {
		return verbError("ibv_req_notify_cq", int(rc))
	}
	cq.solicited.Store(solicitedOnly)
	return nil
}

// Wait blocks until at least one completion is ready or ctx ends, then
// polls into wcs (ibv_poll_cq). It arms the CQ (ibv_req_notify_cq), polls
// once to close the race with a completion that came before arming, and
// then waits on the CQ's channel (ibv_get_cq_event, acknowledged with
// ibv_ack_cq_events), as CompChannel.Wait does. It arms the CQ as the
// last ReqNotify did, as Block re-arms it: for its next completion, or,
// after ReqNotify(true), its next solicited one, so that unsolicited
// completions then do not wake it (they are polled with the solicited
// one that does, or by a Wait that finds them already there); a CQ that
// ReqNotify never armed, for any completion.
// The CQ must have been created with a channel, else Wait fails with an
// error matching syscall.EINVAL, as it does for an empty wcs, which has
// no room for the completion it would wait for. No other goroutine may
// wait on that channel meanwhile: a Wait on another of its CQs then fails
// with an error matching syscall.EBUSY. Other CQs may share it: an event for one of them is
// taken and dropped, and the wait goes on. That loses no completion where
// every CQ on the channel is waited on with Wait or WaitEx, which poll
// before they sleep; a loop that takes the channel's events with
// CompChannel.Wait would miss the one dropped here, so use one way or the
// other on a channel. The CQ's Close in another goroutine ends a Wait
// asleep on the channel with ErrClosed.
func (cq *CQ) Wait(ctx context.Context, wcs []WC) (int, error) {
	checkContext(ctx, "(*CQ).Wait")
	return waitCQ(ctx, cq, "CQ.Wait", "ibv_poll_cq", wcs, (*CQ).Poll)
}

// WaitEx is Wait with PollEx: it waits for a completion (ibv_req_notify_cq,
// ibv_get_cq_event; armed as Wait arms it, for a solicited one after
// ReqNotify(true)) and takes it with its timestamps (ibv_start_poll ...
// ibv_end_poll, or ibv_poll_cq on a CQ that ibv_create_cq made).
func (cq *CQ) WaitEx(ctx context.Context, wcs []WCEx) (int, error) {
	checkContext(ctx, "(*CQ).WaitEx")
	verb := "ibv_poll_cq"
	if cq.ex != nil {
		verb = "ibv_start_poll"
	}
	return waitCQ(ctx, cq, "CQ.WaitEx", verb, wcs, (*CQ).PollEx)
}

// waitCQ is Wait and WaitEx, named name, polling with poll, which wraps
// verb.
func waitCQ[W any](ctx context.Context, cq *CQ, name, verb string, wcs []W, poll func(*CQ, []W) (int, error)) (int, error) {
	if cq.use.Closed() {
		return 0, ErrClosed
	}
	if cq.ch == nil {
		return 0, fmt.Errorf("ibverbs: %s needs a CQ created with a completion channel: %w", name, syscall.EINVAL)
	}
	if len(wcs) == 0 {
		// Poll would take nothing, and the wait would go on past the
		// completions it was for until ctx ends.
		return 0, fmt.Errorf("%s: no room for a completion (an empty slice): %w", name,
			os.NewSyscallError(verb, syscall.EINVAL))
	}
	for {
		if n, err := poll(cq, wcs); n > 0 || err != nil {
			return n, err
		}
		// Armed as the last ReqNotify asked, solicited-only included,
		// which Block's re-arm reads too.
		if err := cq.ReqNotify(cq.solicited.Load()); err != nil {
			return 0, err
		}
		if n, err := poll(cq, wcs); n > 0 || err != nil {
			return n, err
		}
		// An event for another CQ on the channel (one left armed by its
		// own Wait, whose second poll found a completion) is dropped:
		// the loop polls and re-arms this CQ before it sleeps again,
		// and the other's Wait polls before it sleeps. The CQ's Close
		// wakes the wait, which then ends with ErrClosed, as the next
		// poll would.
		cq.waiting.Add(1)
		_, err := cq.ch.wait(ctx, &cq.use)
		cq.waiting.Add(-1)
		if err != nil {
			return 0, err
		}
	}
}

// Close destroys the CQ (ibv_destroy_cq). It fails with EBUSY while QPs
// use it. Closing twice is a no-op. It may run while other goroutines use
// the CQ: a Poll, PollEx, ReqNotify or Resize under way, or a
// SendBatch.PostPoll's poll of it, finishes before the CQ is destroyed,
// and one that begins once Close has begun returns ErrClosed, as does a
// Wait or WaitEx, which Close wakes where it sleeps on the channel. (A
// call that begins while a Close that then fails is under way returns
// ErrClosed too, as does a Wait that such a Close woke.) A CompChannel's Wait or Block may be under way on the
// CQ's channel in another goroutine: an event for the CQ that it reads
// while Close runs is passed over, never returned as another CQ's.
func (cq *CQ) Close() error {
	cq.use.Lock()
	defer cq.use.Unlock()
	if cq.c == nil {
		return nil
	}
	wake := func() {
		if cq.waiting.Load() > 0 {
			cq.ch.wake(false)
		}
	}
	// A CreateQP that used the CQ meanwhile may have made a QP on it.
	if n := cq.use.Quiesce(cq.kids.count, wake); n > 0 {
		return busyError("ibv_destroy_cq", n, "QP using the CQ", "QPs using the CQ")
	}
	p := unsafe.Pointer(cq.c)
	cq.ctx.unregister(p) // before its address can be another's
	if rc := C.ibv_destroy_cq(cq.c); rc != 0 {
		cq.ctx.register(p, cq)
		cq.use.Open()
		return verbError("ibv_destroy_cq", int(rc))
	}
	cq.c = nil
	cq.ctx.kids.done()
	if cq.ch != nil {
		cq.ch.kids.done()
	}
	return nil
}
