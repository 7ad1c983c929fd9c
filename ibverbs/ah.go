//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// AH is an address handle (struct ibv_ah) that addresses UD sends.
type AH struct {
	c  *C.struct_ibv_ah
	pd *PD
}

// CreateAH creates an address handle (ibv_create_ah).
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	if pd.c == nil {
		return nil, ErrClosed
	}
	var a C.struct_ibv_ah_attr
	attr.toC(&a)
	h, err := C.ibv_create_ah(pd.c, &a)
	if h == nil {
		return nil, fmt.Errorf("AH to %s: %w", attr.GRH.DGID, errnoOf("ibv_create_ah", err))
	}
	pd.kids.add()
	return &AH{c: h, pd: pd}, nil
}

// CreateAHTo creates an address handle for remote, sent from the local GID
// at gidIndex on port.
func (pd *PD) CreateAHTo(remote Endpoint, port, gidIndex int) (*AH, error) {
	return pd.CreateAH(AHAttr{
		DLID: remote.LID, Port: uint8(port), IsGlobal: !remote.GID.IsZero(),
		GRH: GlobalRoute{DGID: remote.GID, SGIDIndex: uint8(gidIndex), HopLimit: 64},
	})
}

// Raw returns the struct ibv_ah pointer, valid until Close.
func (ah *AH) Raw() unsafe.Pointer { return unsafe.Pointer(ah.c) }

// Close destroys the address handle (ibv_destroy_ah). Closing twice is a
// no-op.
func (ah *AH) Close() error {
	if ah.c == nil {
		return nil
	}
	if rc := C.ibv_destroy_ah(ah.c); rc != 0 {
		return verbError("ibv_destroy_ah", int(rc))
	}
	ah.c = nil
	ah.pd.kids.done()
	return nil
}
