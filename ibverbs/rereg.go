//go:build linux && cgo

package ibverbs

// #include <infiniband/verbs.h>
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// MRChange says what Rereg changes in a registered region. Each part that
// is set adds its IBV_REREG_MR_CHANGE_* flag; the others stay as they are.
type MRChange struct {
	// PD, if not nil, moves the region to this PD, which must be of the
	// MR's context (IBV_REREG_MR_CHANGE_PD).
	PD *PD
	// Access replaces the region's access where SetAccess is true
	// (IBV_REREG_MR_CHANGE_ACCESS); 0 is an access too, local read only.
	Access    Access
	SetAccess bool
	// Buf, if not nil, makes the region Len bytes of Buf from Off, at
	// their own address as RegMRRange registers them, whatever address or
	// iova the region had (IBV_REREG_MR_CHANGE_TRANSLATION).
	Buf      *Buffer
	Off, Len int
}

// Rereg changes the region's PD, access or memory in place
// (ibv_rereg_mr), keeping the MR, where closing it and registering anew
// would not. The device may give the region new keys: LKey, RKey, Addr,
// SGE and Remote answer with the new ones after it, and an SGE or a
// RemoteMR made before it may name nothing: a peer that holds the old
// rkey needs the new one. Once the region has moved, it counts as a child
// of the new PD and Buffer, whose Close refuses while the MR is open, and
// no longer of the old ones. A change of nothing fails with an error
// matching syscall.EINVAL, as do a range outside Buf and a PD of another
// context, and an Access with remote write or atomic access but not
// AccessLocalWrite (as RegMR); a closed MR, PD or Buffer fails with
// ErrClosed. All of these leave the MR as it was.
//
// Many providers do not implement it (soft-RoCE's does not): their error
// matches errors.ErrUnsupported and leaves the MR as it was, to be closed
// and registered anew (the MR.Rereg example). Where the device fails the
// change for another reason, the error says whether the region is as it
// was or not to be used, a state the verbs leave undefined: close the MR
// then. Where the change is made but libibverbs could not restore fork's
// copying of the old range (after ForkInit), the MR has its new keys and
// the error says so. As in C, no request that names the region may be in
// flight while it runs. The MR's getters may run beside it (see MR), each
// answering the keys and memory from before the change or from after.
func (m *MR) Rereg(c MRChange) error {
	const verb = "ibv_rereg_mr"
	m.closeMu.Lock() // as Close, which would free m.c under it
	defer m.closeMu.Unlock()
	s := *m.st.Load() // changed only under closeMu
	if s.c == nil {
		return ErrClosed
	}
	var flags C.int
	var pdc *C.struct_ibv_pd
	if c.PD != nil {
		if !c.PD.use.Enter() {
			return ErrClosed
		}
		defer c.PD.use.Leave()
		if err := s.pd.ctx.sameContext(verb, "the new PD", c.PD.ctx); err != nil {
			return err
		}
		flags |= C.IBV_REREG_MR_CHANGE_PD
		pdc = c.PD.c
	}
	var access C.int
	if c.SetAccess {
		if err := checkAccess(verb, c.Access); err != nil {
			return err
		}
		flags |= C.IBV_REREG_MR_CHANGE_ACCESS
		access = C.int(c.Access)
	}
	var b []byte
	var p unsafe.Pointer
	if c.Buf != nil {
		if !c.Buf.use.Enter() {
			return ErrClosed
		}
		defer c.Buf.use.Leave()
		if c.Off < 0 || c.Len <= 0 || c.Len > c.Buf.Len()-c.Off {
			return fmt.Errorf("%s: %d bytes at offset %d: outside a buffer of %d bytes: %w",
				verb, c.Len, c.Off, c.Buf.Len(), syscall.EINVAL)
		}
		b = c.Buf.b[c.Off : c.Off+c.Len : c.Off+c.Len]
		p = unsafe.Pointer(&b[0])
		flags |= C.IBV_REREG_MR_CHANGE_TRANSLATION
	}
	if flags == 0 {
		return fmt.Errorf("%s: the MRChange changes nothing (no PD, Buf or SetAccess): %w", verb, syscall.EINVAL)
	}
	rc, err := C.ibv_rereg_mr(m.c, flags, pdc, p, C.size_t(len(b)), access)
	if rc != 0 && rc != C.IBV_REREG_MR_ERR_DO_FORK_OLD {
		return reregError(verb, rc, err)
	}
	// Changed: the keys are the device's answer, under the PD the region
	// is now in.
	old := mrKey{s.pd.c, s.lkey}
	if c.PD != nil && c.PD != s.pd {
		c.PD.kids.add()
		s.pd.kids.done()
		s.pd = c.PD
	}
	if c.Buf != nil {
		if c.Buf != s.buf {
			c.Buf.kids.add()
			s.buf.kids.done()
			s.buf = c.Buf
		}
		s.b, s.n = b, len(b)
		s.ptr = uint64(uintptr(p))
		s.addr = s.ptr
	}
	s.lkey, s.rkey = uint32(m.c.lkey), uint32(m.c.rkey)
	m.st.Store(&s)
	liveMRs.Lock()
	if liveMRs.m[old] == m {
		delete(liveMRs.m, old)
	}
	liveMRs.m[mrKey{s.pd.c, s.lkey}] = m
	liveMRs.Unlock()
	if rc != 0 {
		// The change is made, only the old range's fork protection is not
		// restored (ibv_fork_init's madvise).
		return fmt.Errorf("%s: the region changed, but restoring fork's copying of the old range failed: %w",
			verb, errnoOf(verb, err))
	}
	return nil
}

// reregError says what a failed ibv_rereg_mr, returning rc with errno
// err, left of the region.
func reregError(verb string, rc C.int, err error) error {
	e := errnoOf(verb, err)
	switch rc {
	case C.IBV_REREG_MR_ERR_INPUT, C.IBV_REREG_MR_ERR_DONT_FORK_NEW:
		return fmt.Errorf("the region is unchanged: %w", e)
	}
	if errors.Is(e, errors.ErrUnsupported) {
		// The provider's missing op fails before it touches the region.
		return fmt.Errorf("the provider cannot re-register: the region is unchanged: %w", e)
	}
	return fmt.Errorf("the device failed the change and the region should not be used: close the MR: %w", e)
}
