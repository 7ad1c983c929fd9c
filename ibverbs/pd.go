//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// PD is a protection domain (struct ibv_pd). MRs, MWs, QPs, AHs and SRQs belong
// to one.
type PD struct {
	c    *C.struct_ibv_pd
	ctx  *Context
	kids refs
	use  inUse // guards c against Close
}

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (c *Context) AllocPD() (*PD, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	p, err := C.ibv_alloc_pd(c.c)
	if p == nil {
		return nil, fmt.Errorf("%s: %w", c.name, errnoOf("ibv_alloc_pd", err))
	}
	c.kids.add()
	pd := &PD{c: p, ctx: c}
	pd.use.Open()
	return pd, nil
}

// Context returns the device context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Raw returns the struct ibv_pd pointer, valid until Close.
func (pd *PD) Raw() unsafe.Pointer { return unsafe.Pointer(pd.c) }

// Close deallocates the PD (ibv_dealloc_pd). It fails with EBUSY while MRs,
// MWs, QPs, AHs or SRQs of the PD are open. Closing twice is a no-op. A
// method of the PD under way in another goroutine (a RegMR, a CreateQP)
// finishes first, and the object it made keeps the PD open; one that
// begins once Close has begun returns ErrClosed.
func (pd *PD) Close() error {
	pd.use.Lock()
	defer pd.use.Unlock()
	if pd.c == nil {
		return nil
	}
	if n := pd.use.Quiesce(pd.kids.count, nil); n > 0 {
		return busyError("ibv_dealloc_pd", n, "object (an MR, MW, QP, AH or SRQ)", "objects (MRs, MWs, QPs, AHs, SRQs)")
	}
	rc := C.ibv_dealloc_pd(pd.c)
	if rc != 0 {
		pd.use.Open()
		return verbError("ibv_dealloc_pd", int(rc))
	}
	pd.c = nil
	pd.ctx.kids.done()
	return nil
}
