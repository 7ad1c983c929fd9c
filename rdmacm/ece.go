//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"fmt"
	"os"
	"syscall"

	"github.com/gorperf/gorperf/ibverbs"
)

// SetLocalECE sets the ECE options (see ibverbs.ECE) that the ID's
// connection request (Connect) or reply (Accept) offers the peer
// (rdma_set_local_ece), for a QP that the ID did not make: call it before
// Connect or Accept, with the QP's own options (ibverbs' QP.QueryECE) or
// those the peer's request offered that the QP takes. librdmacm sets those
// of a QP from CreateQP itself, and refuses with an error matching
// syscall.EINVAL on an ID that has one, as it does for a VendorID of 0.
// The CM carries the options whatever the device: soft-RoCE's QPs have no
// ECE (QP.QueryECE fails with errors.ErrUnsupported), but its connections
// carry the values to the peer's RemoteECE. After Close it returns
// ErrClosed.
func (id *ID) SetLocalECE(e ibverbs.ECE) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	if id.c.qp != nil {
		return fmt.Errorf("the ID has a QP from CreateQP, whose ECE librdmacm sets: %w",
			os.NewSyscallError("rdma_set_local_ece", syscall.EINVAL))
	}
	c := C.struct_ibv_ece{vendor_id: C.uint32_t(e.VendorID), options: C.uint32_t(e.Options)}
	if r, err := C.rdma_set_local_ece(id.c, &c); r != 0 {
		return fmt.Errorf("ECE vendor %#x options %#x: %w", e.VendorID, e.Options, cmError("rdma_set_local_ece", err))
	}
	return nil
}

// RemoteECE returns the ECE options the peer offered
// (rdma_get_remote_ece): on the passive side those of the connection
// request, from the CONNECT_REQUEST on (the ID of Event.ID); on the
// active side those of the peer's reply, from CONNECT_RESPONSE on. A peer
// that offered none gives the zero ECE. It is for a QP that the ID did
// not make, which the caller then sets the options on (ibverbs'
// QP.SetECE) before it moves the QP to RTR; on an ID with a QP from
// CreateQP, whose ECE librdmacm sets itself, it fails with an error
// matching syscall.EINVAL. After Close it returns ErrClosed.
func (id *ID) RemoteECE() (ibverbs.ECE, error) {
	if !id.lock() {
		return ibverbs.ECE{}, ErrClosed
	}
	defer id.unlock()
	if id.c.qp != nil {
		return ibverbs.ECE{}, fmt.Errorf("the ID has a QP from CreateQP, whose ECE librdmacm sets: %w",
			os.NewSyscallError("rdma_get_remote_ece", syscall.EINVAL))
	}
	var c C.struct_ibv_ece
	if r, err := C.rdma_get_remote_ece(id.c, &c); r != 0 {
		return ibverbs.ECE{}, cmError("rdma_get_remote_ece", err)
	}
	return ibverbs.ECE{VendorID: uint32(c.vendor_id), Options: uint32(c.options)}, nil
}
