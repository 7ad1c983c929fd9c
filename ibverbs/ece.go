//go:build linux && cgo

package ibverbs

// #include <infiniband/verbs.h>
import "C"

import "fmt"

// ECE is an enhanced connection establishment value (struct ibv_ece):
// the options of a vendor's devices that a QP offers its peer or has
// agreed on with it, such as a newer congestion control. The two sides
// swap them while they connect (rdma_cm carries them in its REQ and
// REP: see package rdmacm's ID.SetLocalECE and RemoteECE), and each sets
// on its QP what the other accepted (QP.SetECE) before it moves the QP to
// RTR. The zero ECE offers nothing.
type ECE struct {
	// VendorID is the vendor's IEEE OUI, which tells devices of other
	// vendors, whose options mean something else, apart; 0 for none.
	VendorID uint32
	// Options are the vendor's option bits.
	Options uint32
}

// QueryECE returns the ECE options the QP's device offers for it, or
// those set with SetECE (ibv_query_ece). A device without ECE, soft-RoCE
// among them, fails with an error matching errors.ErrUnsupported.
func (qp *QP) QueryECE() (ECE, error) {
	if !qp.use.Enter() {
		return ECE{}, ErrClosed
	}
	defer qp.use.Leave()
	var e C.struct_ibv_ece
	if rc := C.ibv_query_ece(qp.c, &e); rc != 0 {
		return ECE{}, fmt.Errorf("%s QP %#x: %w", qp.pd.ctx.name, qp.num, verbError("ibv_query_ece", int(rc)))
	}
	return ECE{VendorID: uint32(e.vendor_id), Options: uint32(e.options)}, nil
}

// SetECE asks the device to use the ECE options e for the QP as it moves
// through its states (ibv_set_ece), and returns the options it accepted.
// Set them before the QP moves to RTR: e is the peer's, as the peer's
// connection request or reply carried them, or the QP's own (QueryECE)
// with no options where the peer's VendorID is another. A device without
// ECE, soft-RoCE among them, fails with an error matching
// errors.ErrUnsupported.
func (qp *QP) SetECE(e ECE) (ECE, error) {
	if !qp.use.Enter() {
		return ECE{}, ErrClosed
	}
	defer qp.use.Leave()
	c := C.struct_ibv_ece{vendor_id: C.uint32_t(e.VendorID), options: C.uint32_t(e.Options)}
	if rc := C.ibv_set_ece(qp.c, &c); rc != 0 {
		return ECE{}, fmt.Errorf("%s QP %#x: ECE vendor %#x options %#x: %w", qp.pd.ctx.name, qp.num,
			e.VendorID, e.Options, verbError("ibv_set_ece", int(rc)))
	}
	return ECE{VendorID: uint32(c.vendor_id), Options: uint32(c.options)}, nil
}
