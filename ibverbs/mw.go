//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// MW is a memory window (struct ibv_mw): an rkey a peer uses for RDMA and
// atomics on a part of an MR that the window's owner chooses, and can move
// or revoke, without registering memory again.
type MW struct {
	// c is the window's struct ibv_mw, set by AllocMW and never written
	// again, so that a getter or a PostSend's check beside Close reads
	// no field that Close writes: closed says whether it is live.
	c    *C.struct_ibv_mw
	pd   *PD
	typ  MWType
	rkey atomic.Uint32 // as c.rkey, which a concurrent Close frees
	// closed is set by Close once it has deallocated the window.
	closed atomic.Bool
	// closeMu is held by Close, QP.BindMW and a PostSend of an OpBindMW
	// naming the window (lockBinds), so that none hands the verbs a
	// struct ibv_mw that another freed.
	closeMu sync.Mutex
}

// AllocMW allocates an unbound memory window (ibv_alloc_mw). A device
// without memory windows fails with an error that matches
// errors.ErrUnsupported; DeviceAttr.MaxMW says how many it has.
func (pd *PD) AllocMW(t MWType) (*MW, error) {
	if !pd.use.Enter() {
		return nil, ErrClosed
	}
	defer pd.use.Leave()
	var errno C.int
	w := C.gv_alloc_mw(pd.c, C.enum_ibv_mw_type(t), &errno)
	if w == nil {
		return nil, fmt.Errorf("memory window of %v: %w", t, verbError("ibv_alloc_mw", int(errno)))
	}
	pd.kids.add()
	mw := &MW{c: w, pd: pd, typ: t}
	mw.rkey.Store(uint32(w.rkey))
	return mw, nil
}

// RKey returns the window's rkey as its struct ibv_mw holds it: the key
// of the last bind posted, by QP.BindMW or an OpBindMW request (whose
// successful post sets it, since providers name a window by this key), or
// before any, the one it was allocated with. A bind that completes with
// an error leaves the device with the window's old key. It returns 0 once
// the window is closed, and may run beside Close.
func (mw *MW) RKey() uint32 {
	if mw.closed.Load() {
		return 0
	}
	return mw.rkey.Load()
}

// Type returns the window's type.
func (mw *MW) Type() MWType { return mw.typ }

// PD returns the protection domain the window belongs to.
func (mw *MW) PD() *PD { return mw.pd }

// Raw returns the struct ibv_mw pointer, valid until Close; nil once
// closed. It may run beside Close.
func (mw *MW) Raw() unsafe.Pointer {
	if mw.closed.Load() {
		return nil
	}
	return unsafe.Pointer(mw.c)
}

// Close deallocates the window (ibv_dealloc_mw); its rkey stops working.
// Closing twice is a no-op; two Closes may run at once (one deallocates
// the window and the other returns nil once it has), and so may a Close
// and a QP.BindMW of the window, or a PostSend of an OpBindMW naming it,
// which then binds it before the Close or refuses a closed window after
// it (EINVAL).
func (mw *MW) Close() error {
	mw.closeMu.Lock()
	defer mw.closeMu.Unlock()
	if mw.closed.Load() {
		return nil
	}
	if rc := C.ibv_dealloc_mw(mw.c); rc != 0 {
		return verbError("ibv_dealloc_mw", int(rc))
	}
	mw.closed.Store(true)
	mw.pd.kids.done()
	return nil
}

// NextRKey returns rkey with its low 8 bits, the key the owner chooses,
// one higher (ibv_inc_rkey): the rkey to give a type 2 window's next
// OpBindMW, which must differ from its last.
func NextRKey(rkey uint32) uint32 {
	return rkey&^0xff | (rkey+1)&0xff
}

// MWBind says what a memory window covers once bound (struct
// ibv_mw_bind_info, and for OpBindMW the window itself): Length bytes from
// Addr, inside MR, which must have been registered with AccessMWBind, and
// the access a peer gets (AccessRemoteRead, AccessRemoteWrite,
// AccessRemoteAtomic). Length 0 unbinds a type 1 window. The window, the
// MR and the QP that binds must be of one PD, for either type of window:
// a bind otherwise is refused before it is posted (EINVAL for the QP's,
// EPERM for the MR's).
type MWBind struct {
	MW     *MW // for OpBindMW; QP.BindMW takes the window as an argument
	MR     *MR
	Addr   uint64
	Length uint64
	Access Access
}

// checkBind says why a bind of b on mw through qp would fail before the
// provider sees it, which for some (a missing MR) would crash.
func (qp *QP) checkBind(verb string, mw *MW, b *MWBind) error {
	var ms *mrState // the MR's, which its Close and Rereg may replace beside a PostSend
	if b.MR != nil {
		ms = b.MR.st.Load()
	}
	switch {
	case mw == nil || mw.closed.Load():
		return fmt.Errorf("%s: no memory window, or a closed one: %w", verb, syscall.EINVAL)
	case ms == nil || ms.c == nil:
		return fmt.Errorf("%s: no MR, or a closed one (to unbind, give the MR and length 0): %w", verb, syscall.EINVAL)
	case ms.pd != mw.pd:
		return fmt.Errorf("%s: the MR and the window belong to different PDs: %w", verb, syscall.EPERM)
	}
	if err := qp.pd.ctx.sameContext(verb, "the memory window", mw.pd.ctx); err != nil {
		return err
	}
	if mw.pd.c != qp.pd.c {
		// The verbs require the QP, window and MR of one PD, for either
		// type (IBTA C10-72); a type 2 bind fails with MW_BIND_ERR and the
		// QP goes to the error state, while soft-RoCE lets a type 1 bind
		// through.
		return fmt.Errorf("%s: the memory window is of another PD than the QP's: %w", verb, syscall.EINVAL)
	}
	return nil
}

// BindMW binds a type 1 memory window to b's part of an MR (ibv_bind_mw),
// through a bind request on the QP's send queue with the given wr_id and
// flags (SendSignaled for a WCBindMW completion), and returns the
// window's new rkey, which peers may use once the bind has completed. On
// a failed completion the window keeps its old key on the device, but
// MW.RKey reports the new one. The QP must be in a connected state. It
// may run beside the Close or Rereg of b.MR, which waits for it, or
// which it waits for and then refuses a closed MR (EINVAL) or binds to
// the region as changed.
func (qp *QP) BindMW(mw *MW, id uint64, flags SendFlags, b MWBind) (uint32, error) {
	qp.sendMu.Lock() // a post to the send queue, as PostSend's
	defer qp.sendMu.Unlock()
	if qp.c == nil {
		return 0, ErrClosed
	}
	if mw != nil {
		mw.closeMu.Lock() // as MW.Close, which would free mw.c
		defer mw.closeMu.Unlock()
	}
	if b.MR != nil {
		// As MR.Close and Rereg, which would free the struct ibv_mr
		// the bind names, or change it, between the check and the bind.
		b.MR.closeMu.Lock()
		defer b.MR.closeMu.Unlock()
	}
	if err := qp.checkBind("ibv_bind_mw", mw, &b); err != nil {
		return 0, err
	}
	if mw.typ != MWType1 {
		return 0, fmt.Errorf("ibv_bind_mw: a %v window is bound by an OpBindMW request: %w", mw.typ, syscall.EINVAL)
	}
	if rc := C.gv_bind_mw(qp.c, mw.c, C.uint64_t(id), C.uint(flags), b.MR.c,
		C.uint64_t(b.Addr), C.uint64_t(b.Length), C.uint(b.Access)); rc != 0 {
		return 0, verbError("ibv_bind_mw", int(rc))
	}
	k := uint32(mw.c.rkey) // ibv_bind_mw set it
	mw.rkey.Store(k)
	return k, nil
}
