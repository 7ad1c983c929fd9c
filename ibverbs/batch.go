//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// SendBatch is a set of send work requests kept in C memory as the struct
// ibv_send_wr array that ibv_post_send reads, built once and posted many
// times. PostSend converts each request it is given (Go struct, SGEs and
// all); a batch converts them when they are set, so that posting one again
// costs no conversion, and changing one costs only the fields changed
// (SetID, SetFlags, SetRemoteAddr, SetSGE). It is what a loop that posts
// the same few requests over and over (a benchmark, a stream of
// fixed-size writes) needs to spend as little user CPU per request as a C
// program that keeps its own ibv_send_wr array, as perftest does.
//
// A batch belongs to its QP, which refuses to close while it is open, and
// so does the address handle of any of its UD sends. Its
// methods, like posting itself, must not run concurrently with each other
// or with another post to the same QP. The setters panic on an index out of
// range or after Close, as indexing a slice does.
type SendBatch struct {
	qp     *QP
	s      *C.struct_gv_post_scratch
	wrs    []C.struct_ibv_send_wr
	sges   []SGE
	maxSGE int
	ahs    []*AH // each request's, held open
	// check counts the requests that each post checks (checkPost): those
	// with SendInline, whose SGEs it checks with inl, and the atomics
	// whose remote address SetRemoteAddr left misaligned. A batch with
	// none costs its posts one compare.
	check int
	inl   inlineCache
}

// NewSendBatch copies wrs into a new batch, checking each as PostSend
// does (a *PostError names the first refused). The SGEs are copied; the
// memory they name must be registered whenever a request is posted.
func (qp *QP) NewSendBatch(wrs []SendWR) (*SendBatch, error) {
	if !qp.use.Enter() {
		return nil, ErrClosed
	}
	defer qp.use.Leave()
	if len(wrs) == 0 {
		return nil, fmt.Errorf("ibverbs: a send batch of no requests: %w", syscall.EINVAL)
	}
	maxSGE := qp.cap.MaxSendSGE
	var inl inlineCache
	for i := range wrs {
		if err := qp.checkBatched(&wrs[i], maxSGE, &inl); err != nil {
			return nil, &PostError{Index: i, Err: err}
		}
	}
	s := C.gv_scratch_new(C.int(len(wrs)), C.int(maxSGE), 1)
	if s == nil {
		return nil, fmt.Errorf("ibverbs: out of memory for a send batch of %d: %w", len(wrs), syscall.ENOMEM)
	}
	b := &SendBatch{qp: qp, s: s, maxSGE: int(s.max_sge),
		wrs:  unsafe.Slice(s.swr, len(wrs)),
		sges: unsafe.Slice((*SGE)(unsafe.Pointer(s.sge)), len(wrs)*int(s.max_sge)),
		ahs:  make([]*AH, len(wrs))}
	for i := range wrs {
		b.fill(i, &wrs[i])
	}
	qp.kids.add()
	return b, nil
}

// checkBatched is checkSend for a request of a batch, which cannot be a
// bind: a window's every bind needs a new rkey, and Post posts the
// requests as they are.
func (qp *QP) checkBatched(w *SendWR, maxSGE int, inl *inlineCache) error {
	if w.Opcode == OpBindMW {
		return fmt.Errorf("ibverbs: a send batch cannot hold a BIND_MW (each needs a new rkey): post it with PostSend: %w", syscall.EINVAL)
	}
	return qp.checkSend(w, maxSGE, inl)
}

func (b *SendBatch) fill(i int, w *SendWR) {
	b.countInline(i, w.Flags)
	if b.misaligned(i) {
		b.check-- // checkSend took w, which is aligned or no atomic
	}
	fillSend(&b.wrs[i], b.sges[i*b.maxSGE:(i+1)*b.maxSGE], w)
	if w.AH != nil {
		w.AH.users.add()
	}
	if b.ahs[i] != nil {
		b.ahs[i].users.done()
	}
	b.ahs[i] = w.AH
}

// Len returns the number of requests in the batch.
func (b *SendBatch) Len() int { return len(b.wrs) }

// Set replaces request i whole, checked as PostSend checks it.
func (b *SendBatch) Set(i int, w SendWR) error {
	if b.s == nil {
		return ErrClosed
	}
	_ = b.wrs[i]
	if err := b.qp.checkBatched(&w, b.maxSGE, &b.inl); err != nil {
		return err
	}
	b.fill(i, &w)
	return nil
}

// SetID sets request i's ID, which its completion carries.
func (b *SendBatch) SetID(i int, id uint64) { b.wrs[i].wr_id = C.uint64_t(id) }

// SetFlags sets request i's flags (signalled, inline, fenced, ...). It
// does not check that an inline request's bytes fit QPCap.MaxInline, as
// Set does: a post that the device refuses for that says so. Post checks
// an inline request's SGEs (see SendInline).
func (b *SendBatch) SetFlags(i int, f SendFlags) {
	b.countInline(i, f)
	b.wrs[i].send_flags = C.uint(f)
}

// countInline keeps check's count as request i's flags become f.
func (b *SendBatch) countInline(i int, f SendFlags) {
	was := b.wrs[i].send_flags&C.IBV_SEND_INLINE != 0
	if is := f&SendInline != 0; is != was {
		if is {
			b.check++
		} else {
			b.check--
		}
	}
}

// misaligned reports whether request i is an atomic whose remote address
// is not 8-byte aligned, which only SetRemoteAddr can give it.
func (b *SendBatch) misaligned(i int) bool {
	w := &b.wrs[i]
	switch Opcode(w.opcode) {
	case OpAtomicCmpAndSwp, OpAtomicFetchAdd:
		return (*C.struct_gv_wr_atomic)(unsafe.Pointer(&w.wr)).remote_addr%8 != 0
	}
	return false
}

// checkPost says why requests from to from+n-1 must not be posted: the
// first atomic whose remote address is not 8-byte aligned, or with
// SendInline that has an SGE outside the live MRs of the QP's PD
// (inlineCache.checkSGL), as a *PostError with its index; or returns
// nil. An MR may have closed since the request was set.
func (b *SendBatch) checkPost(from, n int) error {
	pd := b.qp.pd.c
	for k := from; k < from+n; k++ {
		w := &b.wrs[k]
		if b.misaligned(k) {
			a := (*C.struct_gv_wr_atomic)(unsafe.Pointer(&w.wr))
			return &PostError{Index: k, Err: misalignedAtomic("ibv_post_send", Opcode(w.opcode), uint64(a.remote_addr), syscall.EINVAL)}
		}
		if w.send_flags&C.IBV_SEND_INLINE == 0 {
			continue
		}
		if err := notInline(Opcode(w.opcode)); err != nil {
			return &PostError{Index: k, Err: err}
		}
		if err := b.inl.checkSGL(pd, b.sges[k*b.maxSGE:k*b.maxSGE+int(w.num_sge)]); err != nil {
			return &PostError{Index: k, Err: err}
		}
	}
	return nil
}

// SetImm sets request i's immediate data (SendWR.Imm), in host order: a
// new value for each message of a *WithImm opcode, with no conversion
// left for the post. On OpSendWithInv it sets the rkey to invalidate.
func (b *SendBatch) SetImm(i int, v uint32) { setImm(&b.wrs[i], v) }

// SetRemoteAddr sets the remote address of request i, an RDMA or atomic
// request; it panics on any other opcode. An atomic's address must be
// 8-byte aligned: a post of the request while it is not is refused, as
// Set refuses it (see Post).
func (b *SendBatch) SetRemoteAddr(i int, addr uint64) {
	w := &b.wrs[i]
	switch Opcode(w.opcode) {
	case OpRDMAWrite, OpRDMAWriteWithImm, OpRDMARead:
		(*C.struct_gv_wr_rdma)(unsafe.Pointer(&w.wr)).remote_addr = C.uint64_t(addr)
	case OpAtomicCmpAndSwp, OpAtomicFetchAdd:
		a := (*C.struct_gv_wr_atomic)(unsafe.Pointer(&w.wr))
		if was, is := a.remote_addr%8 != 0, addr%8 != 0; was != is {
			if is {
				b.check++
			} else {
				b.check--
			}
		}
		a.remote_addr = C.uint64_t(addr)
	default:
		panic(fmt.Sprintf("ibverbs: SetRemoteAddr on request %d, a %v", i, Opcode(w.opcode)))
	}
}

// SetSGE sets SGE j of request i, which must have more than j SGEs; it
// panics otherwise. Like SetFlags, it leaves an inline request's length
// to the device to refuse; Post checks where an inline SGE lies (see
// SendInline).
func (b *SendBatch) SetSGE(i, j int, sge SGE) {
	if n := int(b.wrs[i].num_sge); j < 0 || j >= n {
		panic(fmt.Sprintf("ibverbs: SetSGE %d of request %d, which has %d", j, i, n))
	}
	b.sges[i*b.maxSGE+j] = sge
}

// Post posts requests from to from+n-1 of the batch in lists of listLen
// requests, one ibv_post_send (one doorbell) per list, or one
// ibv_wr_start ... ibv_wr_complete on a QPInit.WRAPI QP; listLen 0 posts
// them as one list. It makes one cgo call and does not allocate. A range
// outside the batch is an error matching syscall.EINVAL. If the device
// refuses a request, the error is a *PostError whose Index is that
// request's index in the batch: those before it were posted. A request
// with SendInline whose SGE lies in no live MR of the QP's PD under its
// LKey (see SendInline) is refused before any of the range is posted,
// with a *PostError that names it and matches syscall.EINVAL: Post checks
// the SGEs of a batch's inline requests at each post, as their MRs may
// have closed since they were set; and it refuses so a request with
// SendInline (from SetFlags) whose opcode is not a send or RDMA write,
// and an atomic whose remote address SetRemoteAddr made not 8-byte
// aligned ("ATOMIC_FETCH_AND_ADD at 0x1004: atomics need an 8-byte
// aligned address"), which ibv_post_send refuses with EINVAL but the
// ibv_wr_* API posts (rxe: REM_INV_REQ_ERR, the QP to the error state).
func (b *SendBatch) Post(from, n, listLen int) error {
	if b.s == nil || b.qp.c == nil {
		return ErrClosed
	}
	if from < 0 || n < 0 || n > len(b.wrs)-from || listLen < 0 {
		return fmt.Errorf("ibv_post_send: requests %d+%d in lists of %d of a batch of %d: %w",
			from, n, listLen, len(b.wrs), syscall.EINVAL)
	}
	if n == 0 {
		return nil
	}
	if b.check > 0 {
		if err := b.checkPost(from, n); err != nil {
			return err
		}
	}
	if bad, err := b.qp.post(&b.wrs[from], n, listLen); err != nil {
		return b.refused(from, n, listLen, from+bad, err)
	}
	return nil
}

// refused is the error of a post of requests from to from+n-1 in lists
// of listLen that the device refused at request i with err. Where the
// request carries more bytes inline than the QP allows, which SetFlags
// and SetSGE do not check (Set does), it says so, as PostSend's check
// would, with the device's errno: "ibv_post_send: inline 300 bytes, the
// QP allows 256: invalid argument". Through the ibv_wr_* API a list is
// refused whole, at its first request: the one of its requests that is
// too long is named.
func (b *SendBatch) refused(from, n, listLen, i int, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return &PostError{Index: i, Err: err}
	}
	end := i + 1
	if b.qp.qx != nil {
		end = from + n
		if listLen > 0 {
			end = min(end, i+listLen)
		}
	}
	most := uint64(b.qp.cap.MaxInline)
	for k := i; k < end; k++ {
		w := &b.wrs[k]
		if w.send_flags&C.IBV_SEND_INLINE == 0 || w.opcode >= 32 || inlineOps&(1<<w.opcode) == 0 {
			continue
		}
		var bytes uint64
		for _, sge := range b.sges[k*b.maxSGE : k*b.maxSGE+int(w.num_sge)] {
			bytes += uint64(sge.Length)
		}
		if bytes > most {
			which := ""
			if k != i {
				which = fmt.Sprintf(" in request %d", k)
			}
			err = os.NewSyscallError(b.qp.postVerb(), fmt.Errorf("inline %d bytes%s, the QP allows %d: %w", bytes, which, most, errno))
			break
		}
	}
	return &PostError{Index: i, Err: err}
}

// PostPoll posts requests from to from+n-1 as Post does and then polls
// cq into wcs, in the same cgo call, until it takes a completion or about
// spin has passed; with spin 0 it polls once. It returns the number of
// completions taken, which are returned as they are, as Poll's are; if
// the post fails it polls nothing. It checks inline requests and
// misaligned atomics as Post does.
//
// A loop that posts a request and waits for its completion (read_lat, a
// synchronous remote read) makes one cgo call an iteration instead of at
// least two, and with a spin sees the completion within one ibv_poll_cq
// instead of within one cgo call. The spin holds the caller's thread; in
// a program with no idle P, one that outlasts the runtime's 20 µs monitor
// tick lets the runtime hand the P to another thread, which the call then
// waits to get back (docs/performance.md, item 18).
func (b *SendBatch) PostPoll(from, n, listLen int, cq *CQ, wcs []WC, spin time.Duration) (int, error) {
	if b.s == nil || b.qp.c == nil {
		return 0, ErrClosed
	}
	if from < 0 || n < 1 || n > len(b.wrs)-from || listLen < 0 || len(wcs) == 0 {
		return 0, fmt.Errorf("ibv_post_send: requests %d+%d in lists of %d of a batch of %d, %d completions: %w",
			from, n, listLen, len(b.wrs), len(wcs), syscall.EINVAL)
	}
	if b.check > 0 {
		if err := b.checkPost(from, n); err != nil {
			return 0, err
		}
	}
	// The QP cannot close while the batch is open, nor its CQs while it
	// is: another CQ's Close waits for the poll, which enters it.
	guard := cq != b.qp.send && cq != b.qp.recv
	if guard && !cq.use.Enter() {
		return 0, ErrClosed
	}
	var bad, polled C.int
	rc := C.gv_post_poll(handle(b.qp.c), handle(b.qp.qx), handle(&b.wrs[from]), C.int(n), C.int(min(listLen, n)), &bad,
		handle(cq.c), C.int(min(len(wcs), math.MaxInt32)), (*C.struct_gv_wc)(unsafe.Pointer(&wcs[0])), C.int64_t(spin), &polled)
	if guard {
		cq.use.Leave()
	}
	if rc != 0 {
		return 0, b.refused(from, n, listLen, from+int(bad), b.qp.postError(int(rc), sendWRAt(&b.wrs[from], n, int(bad))))
	}
	if polled < 0 {
		return 0, verbError("ibv_poll_cq", int(-polled))
	}
	return int(polled), nil
}

// Close frees the batch's memory. Closing it twice is a no-op.
func (b *SendBatch) Close() error {
	if b.s == nil {
		return nil
	}
	C.gv_scratch_free(b.s)
	b.s, b.wrs, b.sges = nil, nil, nil
	for _, ah := range b.ahs {
		if ah != nil {
			ah.users.done()
		}
	}
	b.ahs = nil
	b.qp.kids.done()
	return nil
}

// RecvBatch is SendBatch's counterpart for receive work requests: a struct
// ibv_recv_wr array in C memory, built once and posted many times, to a
// QP's receive queue or to an SRQ. A loop that replaces each receive as it
// completes posts the same requests again and again; from a batch that
// costs no conversion.
//
// A batch belongs to its QP or SRQ, which refuses to close while it is
// open. Its methods must not run concurrently with each other or with
// another post to the same queue. The setters panic on an index out of
// range or after Close.
type RecvBatch struct {
	qp     *QP  // the owner: a QP,
	srq    *SRQ // or an SRQ
	s      *C.struct_gv_post_scratch
	wrs    []C.struct_ibv_recv_wr
	sges   []SGE
	maxSGE int
}

// NewRecvBatch copies wrs into a new batch for the QP's receive queue,
// checking each as PostRecv does. A QP that takes its receives from an SRQ
// has none: make the batch with SRQ.NewRecvBatch.
func (qp *QP) NewRecvBatch(wrs []RecvWR) (*RecvBatch, error) {
	if !qp.use.Enter() {
		return nil, ErrClosed
	}
	defer qp.use.Leave()
	if qp.srq != nil {
		return nil, fmt.Errorf("ibv_post_recv: the QP takes receives from its SRQ: %w", syscall.EINVAL)
	}
	b, err := newRecvBatch(nil, wrs, max(qp.cap.MaxRecvSGE, 1))
	if err != nil {
		return nil, err
	}
	b.qp = qp
	qp.kids.add()
	return b, nil
}

// NewRecvBatch copies wrs into a new batch for the SRQ, checking each as
// PostRecv does.
func (srq *SRQ) NewRecvBatch(wrs []RecvWR) (*RecvBatch, error) {
	if !srq.use.Enter() {
		return nil, ErrClosed
	}
	defer srq.use.Leave()
	b, err := newRecvBatch(srq.c, wrs, int(srq.s.max_sge))
	if err != nil {
		return nil, err
	}
	b.srq = srq
	srq.kids.add()
	return b, nil
}

func newRecvBatch(srq *C.struct_ibv_srq, wrs []RecvWR, maxSGE int) (*RecvBatch, error) {
	if len(wrs) == 0 {
		return nil, fmt.Errorf("ibverbs: a receive batch of no requests: %w", syscall.EINVAL)
	}
	for i := range wrs {
		if err := checkRecv(srq, &wrs[i], maxSGE); err != nil {
			return nil, &PostError{Index: i, Err: err}
		}
	}
	s := C.gv_scratch_new(C.int(len(wrs)), C.int(maxSGE), 0)
	if s == nil {
		return nil, fmt.Errorf("ibverbs: out of memory for a receive batch of %d: %w", len(wrs), syscall.ENOMEM)
	}
	b := &RecvBatch{s: s, maxSGE: int(s.max_sge),
		wrs:  unsafe.Slice(s.rwr, len(wrs)),
		sges: unsafe.Slice((*SGE)(unsafe.Pointer(s.sge)), len(wrs)*int(s.max_sge))}
	for i := range wrs {
		b.fill(i, &wrs[i])
	}
	return b, nil
}

func (b *RecvBatch) fill(i int, w *RecvWR) {
	fillRecv(&b.wrs[i], b.sges[i*b.maxSGE:(i+1)*b.maxSGE], w)
}

// owner returns the C handles posts go to, nil if the owner is closed.
func (b *RecvBatch) owner() (*C.struct_ibv_qp, *C.struct_ibv_srq, bool) {
	if b.srq != nil {
		return nil, b.srq.c, b.srq.c != nil
	}
	return b.qp.c, nil, b.qp.c != nil
}

// Len returns the number of requests in the batch.
func (b *RecvBatch) Len() int { return len(b.wrs) }

// Set replaces request i whole, checked as PostRecv checks it.
func (b *RecvBatch) Set(i int, w RecvWR) error {
	if b.s == nil {
		return ErrClosed
	}
	_ = b.wrs[i]
	_, srq, _ := b.owner()
	if err := checkRecv(srq, &w, b.maxSGE); err != nil {
		return err
	}
	b.fill(i, &w)
	return nil
}

// SetID sets request i's ID, which its completion carries.
func (b *RecvBatch) SetID(i int, id uint64) { b.wrs[i].wr_id = C.uint64_t(id) }

// SetSGE sets SGE j of request i, which must have more than j SGEs; it
// panics otherwise.
func (b *RecvBatch) SetSGE(i, j int, sge SGE) {
	if n := int(b.wrs[i].num_sge); j < 0 || j >= n {
		panic(fmt.Sprintf("ibverbs: SetSGE %d of request %d, which has %d", j, i, n))
	}
	b.sges[i*b.maxSGE+j] = sge
}

// Post posts requests from to from+n-1 of the batch as one list
// (ibv_post_recv or ibv_post_srq_recv) in one cgo call, without
// allocating. A range outside the batch is an error matching
// syscall.EINVAL. If the device refuses a request, the error is a
// *PostError whose Index is that request's index in the batch: those
// before it were posted.
func (b *RecvBatch) Post(from, n int) error { return b.PostLists(from, n, 0) }

// PostLists posts requests from to from+n-1 of the batch in lists of
// listLen requests, one ibv_post_recv (or ibv_post_srq_recv) per list, the
// last list shorter if n is not a multiple; listLen 0 posts them as one
// list, as Post does. It makes one cgo call and does not allocate; errors
// are Post's, and on a refused request the lists before its own were
// posted. perftest's --recv_post_list posts receives this way.
func (b *RecvBatch) PostLists(from, n, listLen int) error {
	qp, srq, open := b.owner()
	if b.s == nil || !open {
		return ErrClosed
	}
	if from < 0 || n < 0 || n > len(b.wrs)-from || listLen < 0 {
		return fmt.Errorf("%s: requests %d+%d in lists of %d, of a batch of %d: %w", recvVerb(srq), from, n, listLen, len(b.wrs), syscall.EINVAL)
	}
	if n == 0 {
		return nil
	}
	if bad, err := postRecvC(qp, srq, &b.wrs[from], n, listLen); err != nil {
		return &PostError{Index: from + bad, Err: err}
	}
	return nil
}

// Close frees the batch's memory. Closing it twice is a no-op.
func (b *RecvBatch) Close() error {
	if b.s == nil {
		return nil
	}
	C.gv_scratch_free(b.s)
	b.s, b.wrs, b.sges = nil, nil, nil
	if b.srq != nil {
		b.srq.kids.done()
	} else {
		b.qp.kids.done()
	}
	return nil
}
