//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// MR is a registered memory region (struct ibv_mr) over all or part of a
// Buffer. The buffer cannot be closed while the MR is registered.
//
// Its getters (LKey, RKey, Addr, Len, Bytes, Buffer, SGE and Remote) may
// run in several goroutines at once, and beside its Rereg and Close,
// with no lock: each answers from the registration as it was before the
// change or as it is after, never a mix of the two (an SGE with the old
// address and the new lkey).
//
// Raw, and a QP.BindMW or OpBindMW naming the MR, read the registration
// through that same state too: its struct ibv_mr (nil once closed) and its
// PD, which Rereg may change.
type MR struct {
	// c is the registration's struct ibv_mr, set by RegMR and never
	// written again (ibv_rereg_mr changes it in place), for the verbs
	// that closeMu keeps from Close and for an OpBindMW's post: whether
	// it is live is st's to say (st.c, nil once closed).
	c *C.struct_ibv_mr

	// st is what the getters answer, replaced whole by Rereg and Close:
	// a getter beside them, which takes no lock, reads one
	// registration's keys, address and memory, never a mix, and touches
	// no C memory that Close frees.
	st atomic.Pointer[mrState]

	// closeMu is held by Close and Rereg, so that two of them never hand
	// the verbs the same struct ibv_mr, one freed by the other, and by a
	// QP.BindMW to the region or a PostSend of an OpBindMW naming it
	// (lockBinds), which hand it to the verbs too. The getters the posts
	// use (LKey, RKey, SGE) do not take it.
	closeMu sync.Mutex
}

// mrState is an MR's registration as its getters answer it; it does not
// change once stored.
type mrState struct {
	c   *C.struct_ibv_mr // Raw's; nil once closed
	pd  *PD              // the PD the region is in: Rereg may move it
	buf *Buffer
	b   []byte // nil once closed: the buffer may be unmapped then
	n   int    // the region's length, kept by Close

	lkey, rkey uint32 // copied from the struct ibv_mr; 0 once closed
	addr       uint64 // the device's address of the first byte: iova for RegMRIOVA; 0 once closed

	// ptr is the process's address of the region's first byte, which an
	// inline send copies from.
	ptr uint64
}

// mrKey names a registration the way an inline send's SGE does: by its
// PD and lkey.
type mrKey struct {
	pd   *C.struct_ibv_pd
	lkey uint32
}

// liveMRs are the MRs registered and not yet closed, by PD and lkey: what
// an inline SGE must lie in (inlineCache.checkSGL).
var liveMRs struct {
	sync.Mutex
	m map[mrKey]*MR
}

// lookupMR returns the live MR of pd with lkey, or nil.
func lookupMR(pd *C.struct_ibv_pd, lkey uint32) *MR {
	liveMRs.Lock()
	m := liveMRs.m[mrKey{pd, lkey}]
	liveMRs.Unlock()
	return m
}

// covers reports whether [addr, addr+n) lies in the process memory the
// live MR m registered.
func (m *MR) covers(addr uint64, n uint32) bool {
	s := m.st.Load()
	return s.b != nil && addr >= s.ptr && addr-s.ptr <= uint64(s.n) && uint64(n) <= uint64(s.n)-(addr-s.ptr)
}

// RegMR registers the whole buffer with the given access (ibv_reg_mr). A
// nil buf is an error matching syscall.EINVAL, as for RegMRRange and
// RegMRIOVA; so is remote write or atomic access without
// AccessLocalWrite, which the verbs require (see RegMRRange), refused
// before the verb, with an error that says so.
//
// The three register through ibv_reg_mr_iova2 (ibv_reg_mr is a macro
// over it), which a verb's error names.
func (pd *PD) RegMR(buf *Buffer, access Access) (*MR, error) {
	return pd.regMR("ibv_reg_mr", buf, 0, 0, true, 0, false, access)
}

// RegMRRange registers length bytes of buf from offset off (ibv_reg_mr).
// Remote write or atomic access requires AccessLocalWrite too, as in C.
func (pd *PD) RegMRRange(buf *Buffer, off, length int, access Access) (*MR, error) {
	return pd.regMR("ibv_reg_mr", buf, off, length, false, 0, false, access)
}

// RegMRIOVA registers length bytes of buf from offset off, as RegMRRange,
// under the I/O virtual address iova instead of the memory's own
// (ibv_reg_mr_iova2): the device, and so local SGEs and peers' RDMA
// requests, name the region's first byte iova. A region registered at 0 is
// zero-based: a peer addresses it by offset, not by this process's
// pointers. Addr and SGE answer in iova's space. iova must lie as far into
// its page as the memory does (the kernel's rule): with a page-aligned off,
// a page-aligned iova.
func (pd *PD) RegMRIOVA(buf *Buffer, off, length int, iova uint64, access Access) (*MR, error) {
	return pd.regMR("ibv_reg_mr_iova2", buf, off, length, false, iova, true, access)
}

// regMR registers length bytes of buf from off, or the whole buffer
// where whole is set (off and length then unread), at iova where
// withIOVA is set.
func (pd *PD) regMR(verb string, buf *Buffer, off, length int, whole bool, iova uint64, withIOVA bool, access Access) (*MR, error) {
	if buf == nil {
		return nil, fmt.Errorf("%s: no Buffer (nil): %w", verb, syscall.EINVAL)
	}
	if err := checkAccess(verb, access); err != nil {
		return nil, err
	}
	if !pd.use.Enter() {
		return nil, ErrClosed
	}
	defer pd.use.Leave()
	// The buffer too: its Close waits for the registration, which reads
	// its mapping, and counts the MR made, rather than unmap the memory
	// under it.
	if !buf.use.Enter() {
		return nil, ErrClosed
	}
	defer buf.use.Leave()
	if whole {
		off, length = 0, buf.Len()
	}
	if off < 0 || length <= 0 || length > buf.Len()-off {
		return nil, fmt.Errorf("%s: %d bytes at offset %d: outside a buffer of %d bytes: %w",
			verb, length, off, buf.Len(), syscall.EINVAL)
	}
	b := buf.b[off : off+length : off+length]
	p := unsafe.Pointer(&b[0])
	if !withIOVA {
		iova = uint64(uintptr(p))
	} else if iova > math.MaxUint64-uint64(length-1) {
		return nil, fmt.Errorf("%s: %d bytes at iova %#x pass the end of the address space: %w",
			verb, length, iova, syscall.EINVAL)
	} else if pg := uint64(os.Getpagesize()); iova%pg != uint64(uintptr(p))%pg {
		// The kernel's rule (ib_uverbs_reg_mr), said here with the numbers.
		return nil, fmt.Errorf("%s: iova %#x is %d bytes into its page, the memory at offset %d is %d: they must match: %w",
			verb, iova, iova%pg, off, uint64(uintptr(p))%pg, syscall.EINVAL)
	}
	if h := regMRHook.Load(); h != nil {
		(*h)()
	}
	var errno C.int
	m := C.gv_reg_mr(pd.c, p, C.size_t(length), C.uint64_t(iova), C.uint(access), &errno)
	if m == nil {
		err := verbError("ibv_reg_mr_iova2", int(errno)) // the verb gv_reg_mr calls
		if errno == C.int(syscall.ENOMEM) || errno == C.int(syscall.EPERM) {
			return nil, fmt.Errorf("registering %d bytes: %w (the locked-memory limit may be too low: "+
				"raise it with `ulimit -l unlimited`, or `--ulimit memlock=-1` for a container)", length, err)
		}
		return nil, fmt.Errorf("registering %d bytes with access %s: %w", length, access, err)
	}
	pd.kids.add()
	buf.kids.add()
	mr := &MR{c: m}
	mr.st.Store(&mrState{c: m, pd: pd, buf: buf, b: b, n: length, lkey: uint32(m.lkey), rkey: uint32(m.rkey), addr: iova,
		ptr: uint64(uintptr(p))})
	liveMRs.Lock()
	if liveMRs.m == nil {
		liveMRs.m = make(map[mrKey]*MR)
	}
	liveMRs.m[mrKey{pd.c, uint32(m.lkey)}] = mr
	liveMRs.Unlock()
	return mr, nil
}

// checkAccess refuses, as the verbs do with EINVAL (the kernel's
// ib_check_mr_access), an access to registered memory with remote write
// or atomic access but not local write, saying so where the verb would
// not: verb names the call in the error.
func checkAccess(verb string, access Access) error {
	if remote := access & (AccessRemoteWrite | AccessRemoteAtomic); remote != 0 && access&AccessLocalWrite == 0 {
		return fmt.Errorf("%s: access %s: %s needs LOCAL_WRITE too (REMOTE_WRITE and REMOTE_ATOMIC require AccessLocalWrite): %w",
			verb, access, remote, syscall.EINVAL)
	}
	return nil
}

// regMRHook, if set, runs in each RegMR just before it registers the
// memory (for the tests).
var regMRHook atomic.Pointer[func()]

// LKey returns the key local work requests use to name this memory, or 0
// once the MR is closed: deregistration frees the key for the device to
// give a later registration, of this process or another's, so a key kept
// past Close could name someone else's memory. (0 is not promised to be
// a key that no device gives out: SGE, which requests are built with,
// panics for a closed MR instead.)
func (m *MR) LKey() uint32 { return m.st.Load().lkey }

// RKey returns the key a peer uses for RDMA read, write and atomics
// (Remote has it with the address and length), or 0 once the MR is
// closed, as LKey.
func (m *MR) RKey() uint32 { return m.st.Load().rkey }

// Addr returns the address of the region's first byte as the device knows
// it: its address in this process, or the iova of RegMRIOVA; 0 once the
// MR is closed, as LKey.
func (m *MR) Addr() uint64 { return m.st.Load().addr }

// Len returns the region's length in bytes, also once it is closed.
func (m *MR) Len() int { return m.st.Load().n }

// Bytes returns the registered memory, or nil once the MR is closed: its
// Buffer may then be closed too, and its memory unmapped.
func (m *MR) Bytes() []byte { return m.st.Load().b }

// Buffer returns the buffer the region lies in.
func (m *MR) Buffer() *Buffer { return m.st.Load().buf }

// SGE returns a scatter/gather element for length bytes at offset off of
// the region. It panics if they do not lie within the region, as slicing
// does. It panics too for a length over 4 GiB - 1, which the element's 32
// bits cannot hold.
//
// An element for a send with SendInline, which the CPU copies at the post,
// must name memory of a live MR of the QP's PD by that MR's LKey: the post
// refuses others (see SendInline). The SGEs of a region registered with
// RegMRIOVA name the iova, not this process's memory, and so cannot be
// sent inline.
//
// Unlike the MR's other methods, which answer zero once it is closed, SGE
// panics once the MR is closed, as slicing its Bytes, nil then, does:
// the region's lkey may by then name another registration's memory (see
// LKey), and there is no SGE value that every post and every device would
// refuse. This is the exception to the package's rule that calls after
// Close return ErrClosed (see Lifetimes in the package doc).
func (m *MR) SGE(off, length int) SGE {
	s := m.st.Load()
	if s.b == nil {
		panic(fmt.Sprintf("ibverbs: SGE [%d, %d+%d) of a closed MR", off, off, length))
	}
	if off < 0 || length < 0 || length > s.n-off {
		panic(fmt.Sprintf("ibverbs: SGE [%d, %d+%d) outside a region of %d bytes", off, off, length, s.n))
	}
	if length > math.MaxUint32 {
		panic(fmt.Sprintf("ibverbs: SGE of %d bytes: an SGE holds at most %d", length, uint32(math.MaxUint32)))
	}
	return SGE{Addr: s.addr + uint64(off), Length: uint32(length), LKey: s.lkey}
}

// deregError is MR.Close's error for errno from ibv_dereg_mr. EINVAL is
// what a device answers for a region that a memory window is still bound
// to (rxe's rxe_dereg_mr): the error says so, as a hint, since only the
// device knows whether a window is bound.
func deregError(errno int) error {
	if errno == int(syscall.EINVAL) || errno == -int(syscall.EINVAL) {
		return os.NewSyscallError("ibv_dereg_mr", fmt.Errorf("a memory window may still be bound to the MR: close or invalidate it first: %w", syscall.EINVAL))
	}
	return verbError("ibv_dereg_mr", errno)
}

// Raw returns the struct ibv_mr pointer, valid until Close; nil once
// closed. It may run beside Close and Rereg, as the other getters.
func (m *MR) Raw() unsafe.Pointer { return unsafe.Pointer(m.st.Load().c) }

// Close deregisters the region (ibv_dereg_mr). Closing twice is a no-op.
// Once closed, the MR forgets its keys and address: LKey, RKey and Addr
// return 0, Remote the zero RemoteMR, and SGE panics, so that nothing
// built from it later names memory the device may since have given the
// keys to. Len goes on answering. Two Closes may run at once: one
// deregisters the region and the other returns nil once it has.
//
// A memory window bound to the region is not counted as its child, as
// the peer can invalidate a type 2 window (OpSendWithInv) without this
// side's knowing: the device refuses to deregister a region with a
// window bound, rxe with EINVAL, and Close then fails with the device's
// errno, says that a window may still be bound ("ibv_dereg_mr: a memory
// window may still be bound to the MR: close or invalidate it first:
// invalid argument") and leaves the MR open, to close again once the
// window is closed, unbound or invalidated.
func (m *MR) Close() error {
	m.closeMu.Lock()
	defer m.closeMu.Unlock()
	s := m.st.Load() // changed only under closeMu
	if s.c == nil {
		return nil
	}
	if rc := C.ibv_dereg_mr(m.c); rc != 0 {
		return deregError(int(rc))
	}
	m.st.Store(&mrState{pd: s.pd, buf: s.buf, n: s.n})
	liveMRs.Lock()
	if liveMRs.m[mrKey{s.pd.c, s.lkey}] == m {
		delete(liveMRs.m, mrKey{s.pd.c, s.lkey})
	}
	liveMRs.Unlock()
	s.pd.kids.done()
	s.buf.kids.done()
	return nil
}
