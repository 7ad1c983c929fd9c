//go:build linux && cgo

package rdmamsg

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/gorperf/gorperf/ibverbs"
)

// opSlots is how many one-sided operations (ReadRemote, WriteRemote) a
// Conn has on its send queue at once, beyond its messages and control
// requests; callers beyond them wait for one to complete. RDMA reads are
// held to the QP's initiator depth too, where that is smaller.
const opSlots = 16

// maxOp is the longest one-sided operation where the port does not say
// (max_msg_sz): an RDMA message's length is at most 2^31 bytes.
const maxOp = 1 << 31

// opHook, if set, runs once an operation is posted, before its caller
// waits (for the tests).
var opHook atomic.Pointer[func()]

// An op is the state of a one-sided operation's slot, with c.mu held.
type op struct {
	read      bool
	region    *Region // the local memory, busy until the completion
	n         int
	addr      uint64 // the remote address
	rkey      uint32
	done      bool  // its completion was taken; err is its outcome
	abandoned bool  // its caller left before (its context, Close): the completion frees the slot
	err       error // why it failed
}

// Region is memory off the Go heap registered with a Conn's protection
// domain (ibv_reg_mr), for one-sided operations: the local side of
// ReadRemote and WriteRemote, and, through Remote, memory the peer reads
// and writes with its own. Its memory stays mapped until its Close, also
// after the Conn's. Its methods may be called from any goroutine, but
// Bytes and Remote not during its Close.
type Region struct {
	c      *Conn
	buf    *ibverbs.Buffer
	mr     *ibverbs.MR // nil once deregistered (Close, the Conn's Close)
	mem    []byte
	size   int
	remote ibverbs.RemoteMR

	// Under c.mu: dead says the region takes no more operations (its
	// Close, or the Conn's), busy counts those on the send queue.
	dead bool
	busy int
}

// RegisterMemory maps size bytes off the Go heap and registers them with
// the connection's protection domain (ibv_reg_mr), for one-sided
// operations: access is the remote access the peer gets through the
// region's Remote (ibverbs.AccessRemoteRead, AccessRemoteWrite, or
// both; zero for none, for memory that only this side's ReadRemote and
// WriteRemote use). Local write access is always added, which
// ReadRemote and a remote write need. Registering takes a system call
// and pins the memory: do it up front, not for each operation. The
// region is the caller's to Close, once the peer is done with it: the
// Conn's Close deregisters it but leaves its memory mapped until then.
// A size below 1 is refused with an error matching syscall.EINVAL; a
// failure of the mapping or of ibv_reg_mr (ENOMEM past the locked-memory
// limit, ulimit -l) is wrapped. It may be called from any goroutine;
// after the Conn's Close it returns ErrClosed.
func (c *Conn) RegisterMemory(size int, access ibverbs.Access) (*Region, error) {
	if size < 1 {
		return nil, fmt.Errorf("rdmamsg: register memory of %d bytes: want 1 or more: %w", size, syscall.EINVAL)
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if c.regsGone || isClosed(c.closed) {
		return nil, ErrClosed
	}
	buf, mr, err := register(c.link.PD(), size, access|ibverbs.AccessLocalWrite)
	if err != nil {
		return nil, fmt.Errorf("rdmamsg: register memory of %d bytes: %w", size, err)
	}
	r := &Region{c: c, buf: buf, mr: mr, mem: buf.Bytes()[:size], size: size, remote: mr.Remote()}
	if c.regions == nil {
		c.regions = make(map[*Region]struct{})
	}
	c.regions[r] = struct{}{}
	return r, nil
}

// Bytes returns the region's memory, nil after Close. The device reads
// and writes it while an operation on it is under way, and the peer
// whenever its access allows: what a caller reads there while a write
// from the peer lands may be partly old and partly new.
func (r *Region) Bytes() []byte { return r.mem }

// Len returns the region's size in bytes.
func (r *Region) Len() int { return r.size }

// Remote returns what the peer needs to read and write the region with
// its own ReadRemote and WriteRemote: its address, length and rkey
// (MR.Remote). Send it to the peer as it suits (RemoteMR.AppendBinary
// in a message, say); the peer needs no code of its own to serve the
// operations, which its device answers. It is the zero RemoteMR after
// Close.
func (r *Region) Remote() ibverbs.RemoteMR {
	if r.mem == nil {
		return ibverbs.RemoteMR{}
	}
	return r.remote
}

// Close deregisters the region (ibv_dereg_mr), after which the peer's
// operations on it fail, and fail the connection (an RC QP goes to the
// error state): close it only once the peer is done with it. It then
// unmaps the memory. It fails with an error matching syscall.EBUSY, and
// frees nothing, while an operation of this side's on it is on the send
// queue (one whose caller left when its context ended). After the Conn's
// Close, which deregisters every region, it only unmaps. Closing twice
// is a no-op.
func (r *Region) Close() error {
	c := r.c
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if r.buf == nil {
		return nil
	}
	c.mu.Lock()
	if r.busy > 0 {
		// Their completions may be there, untaken: a caller that
		// left, or one that the connection's failure sent away while
		// the device flushed the rest.
		c.s.reap(nil)
	}
	if r.busy > 0 && !c.s.freed {
		n := r.busy
		c.mu.Unlock()
		return fmt.Errorf("rdmamsg: close region: %d operations on it are on the send queue: %w", n, syscall.EBUSY)
	}
	r.dead = true
	c.mu.Unlock()
	if r.mr != nil {
		if err := r.mr.Close(); err != nil {
			return fmt.Errorf("rdmamsg: close region: %w", err)
		}
		r.mr = nil
	}
	delete(c.regions, r)
	err := r.buf.Close()
	r.buf, r.mem = nil, nil
	return err
}

// deregister deregisters every region, for Close, with c.regMu and c.mu
// held, after the disconnect and before the PD goes; their memory stays
// mapped until their own Close.
func (c *Conn) deregister() error {
	c.regsGone = true
	var errs []error
	for r := range c.regions {
		r.dead = true
		if r.mr != nil {
			errs = append(errs, r.mr.Close())
			r.mr = nil
		}
	}
	return errors.Join(errs...)
}

// ReadRemote reads n bytes of the peer's memory, at offset srcOff of the
// region src names (the peer's Region.Remote, or any ibverbs.RemoteMR of
// memory the peer registered with remote read access on the connection's
// device), into dst at offset dstOff, with one RDMA read (ibv_post_send,
// IBV_WR_RDMA_READ) on the connection's QP, and waits for its
// completion as Recv waits for a message: polling the CQ, asleep in the
// netpoller, until ctx ends, the read deadline passes or the Conn
// closes. The peer's program takes no part.
//
// A range outside dst or outside src (as src's length says), or a dst
// that is not one of this Conn's regions, is refused with an error
// matching syscall.EINVAL, a read longer than the port's largest message
// (max_msg_sz, ibv_query_port: 8 MiB on soft-RoCE) with one matching
// syscall.EMSGSIZE that names it, and a closed dst with one matching
// ErrClosed; nothing is posted then, and reading nothing posts nothing.
// Any number of goroutines may read and write at once, beside Send and
// Recv: up to 16 operations are on the send queue at a time, and reads
// no more than the QP's initiator depth (Config.CM.InitiatorDepth; a
// depth of none, which a negative one asks for, refuses them with
// errors.ErrUnsupported). An operation whose caller leaves (its context
// ends) is not recalled: the device may still write dst until it
// completes, and dst's Close refuses until then.
//
// A wait that ends early returns ctx's error, os.ErrDeadlineExceeded
// (SetReadDeadline) or, after Close, ErrClosed; a context already done,
// or a read deadline already passed, fails the read with that error
// before it posts anything, as package net's calls fail once their
// deadline has passed. Where the device fails
// the read (an rkey the peer's device does not know, a range beyond its
// region, or a region without remote read access:
// ibverbs.WCRemAccessErr), the error names the read, its length and the
// remote address, and wraps the *ibverbs.WCError; the QP then goes to
// the error state, so the whole connection has failed: every call after
// returns that error, as after a lost connection. Once the connection
// has failed or ended, a read returns at once, one waiting for its turn
// on the send queue too, and one on it once the device flushes it or the
// failure is known: the connection's failure, or, where the peer closed
// or disconnected, an error matching syscall.EPIPE that names the read
// (and matches rdmacm.ErrDisconnected too where the peer disconnected
// without ending its stream, its process killed, say), as Send's does.
func (c *Conn) ReadRemote(ctx context.Context, dst *Region, dstOff int, src ibverbs.RemoteMR, srcOff uint64, n int) error {
	checkContext(ctx, "(*Conn).ReadRemote")
	return c.oneSided(ctx, true, dst, dstOff, src, srcOff, n)
}

// WriteRemote writes n bytes of src, from offset srcOff, into the peer's
// memory at offset dstOff of the region dst names (the peer's
// Region.Remote, with remote write access), with one RDMA write
// (ibv_post_send, IBV_WR_RDMA_WRITE) on the connection's QP, and waits
// for its completion, which says the peer's device has the bytes, as
// ReadRemote waits: until ctx ends, the write deadline passes or the
// Conn closes. The peer's program takes no part, and learns of the
// write only from a message this side sends after it (a Send after
// WriteRemote returned arrives after the bytes, since the QP keeps its
// order). Its bounds, its concurrency and its failures are ReadRemote's,
// with the write deadline (SetWriteDeadline) for the read deadline and a
// region without remote write access for one without remote read; src
// must stay unchanged until it returns, or, where its caller left early,
// until the write completes.
func (c *Conn) WriteRemote(ctx context.Context, dst ibverbs.RemoteMR, dstOff uint64, src *Region, srcOff int, n int) error {
	checkContext(ctx, "(*Conn).WriteRemote")
	return c.oneSided(ctx, false, src, srcOff, dst, dstOff, n)
}

// opName is an operation's name in errors.
func opName(read bool) string {
	if read {
		return "RDMA read"
	}
	return "RDMA write"
}

// checkOp refuses an operation whose ranges lie outside local or remote,
// or longer than the port's largest message.
func (c *Conn) checkOp(read bool, local *Region, loff int, remote ibverbs.RemoteMR, roff uint64, n int) error {
	name := opName(read)
	switch {
	case local == nil || local.c != c:
		return fmt.Errorf("rdmamsg: %s: the local region is not one of this Conn's (RegisterMemory): %w", name, syscall.EINVAL)
	case n < 0:
		return fmt.Errorf("rdmamsg: %s of %d bytes: %w", name, n, syscall.EINVAL)
	case n > c.maxOp:
		return fmt.Errorf("rdmamsg: %s of %d bytes: the port's largest message (max_msg_sz) is %d bytes: %w", name, n, c.maxOp, syscall.EMSGSIZE)
	case loff < 0 || loff > local.size || n > local.size-loff:
		return fmt.Errorf("rdmamsg: %s of %d bytes at offset %d of a local region of %d: %w", name, n, loff, local.size, syscall.EINVAL)
	case remote.Len == 0:
		return fmt.Errorf("rdmamsg: %s: the remote region names no memory: %w", name, syscall.EINVAL)
	case roff > remote.Len || uint64(n) > remote.Len-roff:
		return fmt.Errorf("rdmamsg: %s of %d bytes at offset %d of a remote region of %d: %w", name, n, roff, remote.Len, syscall.EINVAL)
	}
	return nil
}

// oneSided is ReadRemote (read) and WriteRemote: n bytes between local
// at loff and remote at roff.
func (c *Conn) oneSided(ctx context.Context, read bool, local *Region, loff int, remote ibverbs.RemoteMR, roff uint64, n int) error {
	if isClosed(c.closed) {
		return ErrClosed
	}
	if err := c.checkOp(read, local, loff, remote, roff, n); err != nil {
		return err
	}
	dl := &c.wdl
	if read {
		dl = &c.rdl
		if c.readFree == nil {
			return fmt.Errorf("rdmamsg: RDMA read from %s: the connection's initiator depth is 0 (Config.CM.InitiatorDepth): %w",
				c.link.RemoteAddr(), errors.ErrUnsupported)
		}
	}
	if dl.passed() {
		return os.ErrDeadlineExceeded
	}
	if err := ctx.Err(); err != nil {
		// A done context fails the operation before it posts, as a
		// deadline passed does.
		return err
	}
	want := op{read: read, region: local, n: n, addr: remote.Addr + roff, rkey: remote.RKey}
	if n == 0 || isClosed(c.over) {
		// Nothing to post, or nothing can be: say why, without a slot,
		// which the connection's failure may have kept for good.
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.opErr(&want)
	}
	k, err := c.takeSlot(ctx, dl, read)
	if err == errOver {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.opErr(&want)
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		// It ended as the slot came (waitToken takes a free one first).
		c.freeSlot(k, read)
		return err
	}
	o := &c.ops[k]
	c.mu.Lock()
	if err := c.post(k, &want, loff); err != nil {
		c.mu.Unlock()
		c.freeSlot(k, read)
		return err
	}
	c.opWait.Or(1 << k)
	c.mu.Unlock()
	if h := opHook.Load(); h != nil {
		(*h)()
	}
	kick := c.opKick[k]
	for spun := false; ; {
		c.mu.Lock()
		if !o.done && !c.closing && c.err == nil && c.s.reap(kick) > 0 {
			c.mu.Unlock()
			continue
		}
		if o.done || c.closing || c.err != nil {
			return c.opOutcome(k, read, nil)
		}
		c.mu.Unlock()
		if c.spin > 0 && !spun {
			c.spinFor(c.opReady(k), kick)
			spun = true
			continue
		}
		if err := c.s.sleep(ctx, kick, dl, c.closed); err != nil {
			c.mu.Lock()
			return c.opOutcome(k, read, err)
		}
	}
}

// opErr says why operation o cannot be posted, with c.mu held, nil where
// it can: postErr's reasons, in the operation's words, and ErrClosed, in
// its words, where its region is closed.
func (c *Conn) opErr(o *op) error {
	if err := c.postErr(o); err != nil {
		return err
	}
	if o.region.dead {
		return fmt.Errorf("rdmamsg: %s: the local region is closed: %w", opName(o.read), ErrClosed)
	}
	return nil
}

// flushedErr is the error of operation o, flushed (wc), with c.mu held:
// the cause of the QP's error state, as every call says it (opErr). The
// completion may be taken before watch has marked the connection's end
// (ended); the link records why it ended before it moves the QP to the
// error state, and that is the cause then. A flush with no cause known
// here has failed the connection before (poll: reset), and opErr tells
// that; what is left is told as the flush, in the operation's words.
func (c *Conn) flushedErr(o *op, wc *ibverbs.WC) error {
	if err := c.opErr(o); err != nil {
		return err
	}
	if lerr := c.link.Err(); lerr != nil {
		if err := c.endFailure(lerr); err != nil {
			return err
		}
		return c.peerGone(c.opString(o), c.endCut())
	}
	return fmt.Errorf("rdmamsg: %s: %w", c.opString(o), wc.Err())
}

// opOutcome ends the wait of slot k's caller, with c.mu held, which it
// unlocks: the operation's outcome where its completion came, else why
// the caller leaves (left, or the Conn's close or failure), and the
// completion, when it comes, frees the slot.
func (c *Conn) opOutcome(k int, read bool, left error) error {
	// Before the slot is free again: its next caller sets it.
	c.opWait.And(^uint64(1 << k))
	o := &c.ops[k]
	if o.done {
		err := o.err
		*o = op{}
		c.mu.Unlock()
		c.freeSlot(k, read)
		return err
	}
	switch {
	case left != nil:
	case c.closing:
		left = ErrClosed
	default:
		left = c.err
	}
	o.abandoned = true
	c.mu.Unlock()
	return left
}

// opReady says, for spinFor, whether slot k's operation has completed:
// made once, in newConn, so that a spin allocates nothing.
func (c *Conn) opReady(k int) func() bool { return c.opReadyFn[k] }

// post posts operation o in slot k, with c.mu held: o.n bytes between
// its region at loff and its remote address.
func (c *Conn) post(k int, o *op, loff int) error {
	if err := c.opErr(o); err != nil {
		return err
	}
	i := c.opWR(k)
	wr := ibverbs.SendWR{ID: sendTag | uint64(i), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: c.opSGL[k][:], RemoteAddr: o.addr, RKey: o.rkey}
	if o.read {
		wr.Opcode = ibverbs.OpRDMARead
	}
	c.opSGL[k][0] = o.region.mr.SGE(loff, o.n)
	if err := c.sb.Set(i, wr); err != nil {
		return fmt.Errorf("rdmamsg: %s: %w", opName(o.read), err)
	}
	if err := c.sb.Post(i, 1, 0); err != nil {
		c.fail(fmt.Errorf("rdmamsg: %w", err))
		return c.err
	}
	c.ops[k] = *o
	o.region.busy++
	c.rdOut++
	c.opBytes += o.n
	c.posts++
	return nil
}

// opDone takes the completion of slot k's operation, with c.mu held. A
// failure of its own (not a flush) fails the connection, whose QP the
// device has moved to the error state.
func (c *Conn) opDone(k int, wc *ibverbs.WC) {
	o := &c.ops[k]
	c.rdOut--
	c.opBytes -= o.n
	if o.region != nil {
		o.region.busy--
	}
	var err error
	switch wc.Status {
	case ibverbs.WCSuccess:
	case ibverbs.WCWRFlushErr:
		// The QP went to the error state for another reason, which is
		// reported for itself (sent, reset), and is this one's.
		err = c.flushedErr(o, wc)
	default:
		err = fmt.Errorf("rdmamsg: connection to %s failed: %s: %w", c.link.RemoteAddr(), c.opString(o), wc.Err())
		c.fail(err)
	}
	if o.abandoned {
		read := o.read
		*o = op{}
		c.freeSlot(k, read)
		return
	}
	o.region = nil
	o.done, o.err = true, err
}

// opString describes an operation for its errors: what, how many bytes,
// where.
func (c *Conn) opString(o *op) string {
	dir := "to"
	if o.read {
		dir = "from"
	}
	return fmt.Sprintf("%s of %d bytes %s %#x (rkey %#x) at %s", opName(o.read), o.n, dir, o.addr, o.rkey, c.link.RemoteAddr())
}

// errOver is takeSlot's error where nothing more can be posted (c.over):
// the caller says why (opErr).
var errOver = errors.New("rdmamsg: the connection is over")

// takeSlot waits for a free operation slot, and for a read a token of
// the initiator depth, until ctx ends, the deadline dl passes, the Conn
// closes or nothing more can be posted (errOver), where the slots may
// never come back: those of operations the device neither completes nor
// fails.
func (c *Conn) takeSlot(ctx context.Context, dl *deadline, read bool) (int, error) {
	if read {
		if _, err := waitToken(c, ctx, dl, c.readFree); err != nil {
			return -1, err
		}
	}
	k, err := waitToken(c, ctx, dl, c.opFree)
	if err != nil {
		if read {
			c.readFree <- struct{}{}
		}
		return -1, err
	}
	return k, nil
}

// waitToken takes a token from ch, at once where one is there, else
// waiting until ctx ends, the deadline dl passes, c closes, or nothing
// more can be posted (errOver).
func waitToken[T any](c *Conn, ctx context.Context, dl *deadline, ch chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	default:
	}
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-dl.done():
		return zero, deadlineErr(c.closed)
	case <-c.closed:
		return zero, ErrClosed
	case <-c.over:
		return zero, errOver
	}
}

// deadlineErr is the error of a wait whose deadline passed: ErrClosed
// where closed (a Conn's or a PacketConn's) is closed, which stops the
// deadlines too.
func deadlineErr(closed chan struct{}) error {
	if isClosed(closed) {
		return ErrClosed
	}
	return os.ErrDeadlineExceeded
}

// freeSlot frees slot k, and a read's token; neither channel is ever
// full when a slot comes back, so it never waits.
func (c *Conn) freeSlot(k int, read bool) {
	c.opFree <- k
	if read {
		c.readFree <- struct{}{}
	}
}

// wakeOps kicks the one-sided operations waiting for their completions,
// but self: the sleeper's more.
func (c *Conn) wakeOps(self chan struct{}) {
	for m := c.opWait.Load(); m != 0; m &= m - 1 {
		if ch := c.opKick[bits.TrailingZeros64(m)]; ch != self {
			kick(ch)
		}
	}
}

// startOps sets the reads' bound from the QP's initiator depth
// (max_rd_atomic, ibv_query_qp), at most opSlots; with a depth of 0,
// reads are refused. A QP that cannot say gets 1. The longest operation
// is its port's largest message (max_msg_sz, ibv_query_port), where the
// port says.
func (c *Conn) startOps(qp *ibverbs.QP) {
	d := 1
	if a, err := qp.Query(); err == nil {
		d = min(int(a.MaxRdAtomic), opSlots)
		if pa, err := qp.PD().Context().QueryPort(int(a.Port)); err == nil && pa.MaxMsgSize > 0 {
			c.maxOp = min(int(pa.MaxMsgSize), maxOp)
		}
	}
	if d > 0 {
		c.readFree = make(chan struct{}, d)
		for range d {
			c.readFree <- struct{}{}
		}
	}
}
