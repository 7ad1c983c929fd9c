//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// SRQ is a shared receive queue (struct ibv_srq): QPs created with it take
// their receive work requests from it.
type SRQ struct {
	c    *C.struct_ibv_srq
	pd   *PD
	s    *C.struct_gv_post_scratch
	mu   sync.Mutex // PostRecv's, for s
	kids refs
	use  inUse // guards c against Close, for the methods that do not take mu
	// handle is struct ibv_srq's, kept for Handle after Close.
	handle uint32
}

// SRQInit describes a shared receive queue (struct ibv_srq_init_attr).
// Each field is from 0 to math.MaxUint32, the verbs' uint32_t: CreateSRQ
// refuses others with an error matching syscall.EINVAL.
type SRQInit struct {
	MaxWR  int // how many receives the SRQ holds
	MaxSGE int // how many SGEs a receive may have; 0 asks for 1
	// Limit arms the SRQ limit event, as Arm does once the SRQ is made:
	// EventSRQLimitReached fires when fewer than Limit receives remain.
	// 0 leaves it disarmed. (ibv_create_srq's own srq_limit is ignored by
	// some providers, mlx5 among them, so it is not used.)
	Limit int
}

// CreateSRQ creates a shared receive queue (ibv_create_srq) and, with
// init.Limit, arms it (ibv_modify_srq); a failure after ibv_create_srq
// destroys the SRQ again (ibv_destroy_srq).
func (pd *PD) CreateSRQ(init SRQInit) (*SRQ, error) {
	if !pd.use.Enter() {
		return nil, ErrClosed
	}
	defer pd.use.Leave()
	for _, f := range []struct {
		name string
		n    int
	}{{"MaxWR", init.MaxWR}, {"MaxSGE", init.MaxSGE}, {"Limit", init.Limit}} {
		if err := checkU32("ibv_create_srq", "SRQInit."+f.name, f.n); err != nil {
			return nil, err
		}
	}
	if init.MaxSGE == 0 {
		init.MaxSGE = 1
	}
	var a C.struct_ibv_srq_init_attr
	a.attr.max_wr = C.uint32_t(init.MaxWR)
	a.attr.max_sge = C.uint32_t(init.MaxSGE)
	q, err := C.ibv_create_srq(pd.c, &a)
	if q == nil {
		return nil, fmt.Errorf("SRQ with %d WRs: %w", init.MaxWR, errnoOf("ibv_create_srq", err))
	}
	s := C.gv_scratch_new(C.int(min(max(int(a.attr.max_wr), 1), maxBatch)), C.int(a.attr.max_sge), 0)
	if s == nil {
		C.ibv_destroy_srq(q)
		return nil, fmt.Errorf("ibverbs: out of memory for post scratch: %w", syscall.ENOMEM)
	}
	srq := &SRQ{c: q, pd: pd, s: s, handle: uint32(q.handle)}
	srq.use.Open()
	if init.Limit > 0 {
		if err := srq.Arm(init.Limit); err != nil {
			C.ibv_destroy_srq(q)
			C.gv_scratch_free(s)
			return nil, fmt.Errorf("SRQ with %d WRs and limit %d: %w", init.MaxWR, init.Limit, err)
		}
	}
	pd.kids.add()
	pd.ctx.register(unsafe.Pointer(q), srq)
	return srq, nil
}

// Handle returns the number the kernel knows the SRQ by on its context
// (struct ibv_srq's handle), how AsyncEvent.String names the SRQ of an
// SRQ event (SRQ_LIMIT_REACHED on SRQ handle N). It goes on answering
// after Close, when the kernel may give it to a later SRQ.
func (srq *SRQ) Handle() uint32 { return srq.handle }

// PostRecv posts receive work requests to the SRQ (ibv_post_srq_recv), in
// one cgo call per 256.
func (srq *SRQ) PostRecv(wrs []RecvWR) error {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.c == nil {
		return ErrClosed
	}
	return postRecv(nil, srq.c, srq.s, wrs)
}

// Arm sets the SRQ limit (ibv_modify_srq with IBV_SRQ_LIMIT): when fewer
// than limit receives remain, the context's event stream gets
// EventSRQLimitReached once, and the SRQ must be armed again. A limit the
// device refuses with EINVAL, as one above the SRQ's size, fails with an
// error that matches syscall.EINVAL and says that size, which Arm then
// queries (ibv_query_srq): "limit 32, the SRQ holds 31 receives".
func (srq *SRQ) Arm(limit int) error {
	if !srq.use.Enter() {
		return ErrClosed
	}
	defer srq.use.Leave()
	if err := checkU32("ibv_modify_srq", "limit", limit); err != nil {
		return err
	}
	var a C.struct_ibv_srq_attr
	a.srq_limit = C.uint32_t(limit)
	if rc := C.ibv_modify_srq(srq.c, &a, C.IBV_SRQ_LIMIT); rc != 0 {
		return srq.armError(limit, int(rc))
	}
	return nil
}

// armError wraps errno from Arm's ibv_modify_srq: EINVAL, which a limit
// beyond the SRQ's size gets, says that size, which only then it queries
// (ibv_query_srq): "ibv_modify_srq: limit 32, the SRQ holds 31 receives:
// invalid argument". The caller has entered srq.
func (srq *SRQ) armError(limit, errno int) error {
	const verb = "ibv_modify_srq"
	if errno != int(syscall.EINVAL) {
		return verbError(verb, errno)
	}
	var a C.struct_ibv_srq_attr
	if C.ibv_query_srq(srq.c, &a) != 0 {
		return verbError(verb, errno)
	}
	return os.NewSyscallError(verb, fmt.Errorf("limit %d, the SRQ holds %d receives: %w", limit, int(a.max_wr), syscall.EINVAL))
}

// SRQAttr is what an SRQ holds (struct ibv_srq_attr).
type SRQAttr struct {
	// MaxWR and MaxSGE are the capacity granted, which may exceed
	// SRQInit's.
	MaxWR, MaxSGE int
	// Limit is the armed limit (Arm); 0 once its event has fired, or
	// when it was never armed.
	Limit int
}

// Query returns the SRQ's capacity and limit (ibv_query_srq).
func (srq *SRQ) Query() (SRQAttr, error) {
	if !srq.use.Enter() {
		return SRQAttr{}, ErrClosed
	}
	defer srq.use.Leave()
	var a C.struct_ibv_srq_attr
	if rc := C.ibv_query_srq(srq.c, &a); rc != 0 {
		return SRQAttr{}, verbError("ibv_query_srq", int(rc))
	}
	return SRQAttr{MaxWR: int(a.max_wr), MaxSGE: int(a.max_sge), Limit: int(a.srq_limit)}, nil
}

// Resize makes the SRQ hold at least maxWR receives (ibv_modify_srq with
// IBV_SRQ_MAX_WR), keeping those posted. A device that cannot
// (DeviceAttr.DeviceCapFlags without IBV_DEVICE_SRQ_RESIZE) fails it. A
// size over the device's limit, below the limit the SRQ is armed with, or
// below the receives posted fails with an error matching syscall.EINVAL
// that says which.
func (srq *SRQ) Resize(maxWR int) error {
	if !srq.use.Enter() {
		return ErrClosed
	}
	defer srq.use.Leave()
	if maxWR < 1 || uint64(maxWR) > math.MaxUint32 {
		return fmt.Errorf("ibv_modify_srq: %d receives: want 1 to %d: %w", maxWR, uint32(math.MaxUint32), syscall.EINVAL)
	}
	var a C.struct_ibv_srq_attr
	a.max_wr = C.uint32_t(maxWR)
	if rc := C.ibv_modify_srq(srq.c, &a, C.IBV_SRQ_MAX_WR); rc != 0 {
		return srq.resizeError(maxWR, verbError("ibv_modify_srq", int(rc)))
	}
	return nil
}

// resizeError gives Resize's err the reason where a device's EINVAL has
// one that the SRQ and the device can show: more than the device's
// limit, below the limit the SRQ is armed with, or a shrink, which fails
// below the receives posted.
func (srq *SRQ) resizeError(maxWR int, err error) error {
	name := srq.pd.ctx.name
	if !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%s: %d receives: %w", name, maxWR, err)
	}
	if da, qerr := srq.pd.ctx.QueryDevice(); qerr == nil && maxWR > da.MaxSRQWR {
		return fmt.Errorf("%s: %d receives, more than the device's limit of %d (DeviceAttr.MaxSRQWR): %w",
			name, maxWR, da.MaxSRQWR, err)
	}
	var a C.struct_ibv_srq_attr
	if C.ibv_query_srq(srq.c, &a) == 0 {
		switch {
		case int(a.srq_limit) > maxWR:
			return fmt.Errorf("%s: %d receives, below the limit of %d the SRQ is armed with (Arm): %w",
				name, maxWR, a.srq_limit, err)
		case maxWR < int(a.max_wr):
			return fmt.Errorf("%s: %d receives, fewer than the SRQ's %d: it cannot shrink below the receives posted to it: %w",
				name, maxWR, a.max_wr, err)
		}
	}
	return fmt.Errorf("%s: %d receives: %w", name, maxWR, err)
}

// Raw returns the struct ibv_srq pointer, valid until Close.
func (srq *SRQ) Raw() unsafe.Pointer { return unsafe.Pointer(srq.c) }

// Close destroys the SRQ (ibv_destroy_srq). It fails with EBUSY while QPs
// use it or RecvBatches of it are open. Closing twice is a no-op. It may
// run while other goroutines use the SRQ: a PostRecv, Arm, Resize, Query
// or NewRecvBatch under way finishes before the SRQ is destroyed, and
// one that begins once Close has begun returns ErrClosed.
func (srq *SRQ) Close() error {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.c == nil {
		return nil
	}
	if n := srq.use.Quiesce(srq.kids.count, nil); n > 0 {
		return busyError("ibv_destroy_srq", n, "QP using the SRQ or receive batch of it", "QPs using the SRQ or receive batches of it")
	}
	p := unsafe.Pointer(srq.c)
	srq.pd.ctx.unregister(p) // before its address can be another's
	if rc := C.ibv_destroy_srq(srq.c); rc != 0 {
		srq.pd.ctx.register(p, srq)
		srq.use.Open()
		return verbError("ibv_destroy_srq", int(rc))
	}
	srq.c = nil
	C.gv_scratch_free(srq.s)
	srq.s = nil
	srq.pd.kids.done()
	return nil
}

// srqUse returns srq's guard, or nil for no SRQ.
func srqUse(srq *SRQ) *inUse {
	if srq == nil {
		return nil
	}
	return &srq.use
}
