//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// NullMR is a null memory region (ibv_alloc_null_mr): a region of no
// memory and the greatest length, which discards whatever the device
// writes into it and reads as zeros. Only its lkey means anything: a
// receive request whose SGE names it (NullMR.SGE) drops that part of the
// message, to skip a header, say, and a send request's reads zeros. It
// has no rkey, so a peer cannot name it. mlx5 has null MRs; many
// providers, soft-RoCE among them, do not.
type NullMR struct {
	mu   sync.Mutex // held by Close and Raw
	c    *C.struct_ibv_mr
	pd   *PD
	lkey atomic.Uint32 // copied at allocation, so that SGE never reads C memory
	open atomic.Bool   // cleared by Close, for SGE: a null MR's lkey may be 0
}

// AllocNullMR allocates a null memory region in the PD
// (ibv_alloc_null_mr). A device without null MRs, soft-RoCE among them,
// fails with an error matching errors.ErrUnsupported. The region counts as
// the PD's child, as an MR does.
func (pd *PD) AllocNullMR() (*NullMR, error) {
	if !pd.use.Enter() {
		return nil, ErrClosed
	}
	defer pd.use.Leave()
	c, err := C.gv_alloc_null_mr(pd.c)
	if c == nil {
		return nil, fmt.Errorf("%s: null MR: %w", pd.ctx.name, errnoOf("ibv_alloc_null_mr", err))
	}
	pd.kids.add()
	m := &NullMR{c: c, pd: pd}
	m.lkey.Store(uint32(c.lkey))
	m.open.Store(true)
	return m, nil
}

// PD returns the protection domain the region belongs to.
func (m *NullMR) PD() *PD { return m.pd }

// LKey returns the region's local key, or 0 once it is closed.
func (m *NullMR) LKey() uint32 { return m.lkey.Load() }

// SGE returns a scatter/gather element of length bytes in the region:
// in a receive request, length bytes of the message to discard; in a send
// request, length zeros. Its Addr is 0, which the device ignores. Like
// MR.SGE it panics for a negative length, one over math.MaxUint32, or a
// closed region, whose key the device may since have given to another.
func (m *NullMR) SGE(length int) SGE {
	k := m.lkey.Load()
	if !m.open.Load() {
		panic(fmt.Sprintf("ibverbs: SGE of %d bytes of a closed null MR", length))
	}
	if length < 0 || length > math.MaxUint32 {
		panic(fmt.Sprintf("ibverbs: SGE of %d bytes: an SGE holds 0 to %d", length, uint32(math.MaxUint32)))
	}
	return SGE{Length: uint32(length), LKey: k}
}

// Raw returns the struct ibv_mr pointer, valid until Close; nil after it.
func (m *NullMR) Raw() unsafe.Pointer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return unsafe.Pointer(m.c)
}

// Close frees the region (ibv_dereg_mr). Closing twice is a no-op, and
// two Closes may run at once: one frees the region and the other returns
// nil once it has. As for an MR, no request in flight may name it.
func (m *NullMR) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		return nil
	}
	if rc := C.ibv_dereg_mr(m.c); rc != 0 {
		return verbError("ibv_dereg_mr", int(rc))
	}
	m.c = nil
	m.open.Store(false)
	m.lkey.Store(0)
	m.pd.kids.done()
	return nil
}
