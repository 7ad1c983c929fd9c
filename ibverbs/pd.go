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
}

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (c *Context) AllocPD() (*PD, error) {
	if c.c == nil {
		return nil, ErrClosed
	}
	p, err := C.ibv_alloc_pd(c.c)
	if p == nil {
		return nil, fmt.Errorf("%s: %w", c.name, errnoOf("ibv_alloc_pd", err))
	}
	c.kids.add()
	return &PD{c: p, ctx: c}, nil
}

// Context returns the device context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Raw returns the struct ibv_pd pointer, valid until Close.
func (pd *PD) Raw() unsafe.Pointer { return unsafe.Pointer(pd.c) }

// Close deallocates the PD (ibv_dealloc_pd). It fails with EBUSY while MRs,
// MWs, QPs, AHs or SRQs of the PD are open. Closing twice is a no-op.
func (pd *PD) Close() error {
	if pd.c == nil {
		return nil
	}
	if n := pd.kids.count(); n > 0 {
		return busyError("ibv_dealloc_pd", "objects (MRs, MWs, QPs, AHs, SRQs)", n)
	}
	rc := C.ibv_dealloc_pd(pd.c)
	if rc != 0 {
		return verbError("ibv_dealloc_pd", int(rc))
	}
	pd.c = nil
	pd.ctx.kids.done()
	return nil
}
