//go:build linux && cgo

package ibverbs

// SGE is a scatter/gather element (struct ibv_sge): Length bytes at Addr in
// memory registered with LKey. MR.SGE builds one. The device checks the
// SGEs of most requests against its registrations; those of a send with
// SendInline the CPU copies at the post, so the post checks them: each
// must lie in the process memory of a live MR of the QP's PD, with that
// MR's LKey (see SendInline).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is a send work request (struct ibv_send_wr) for PostSend. The
// memory its SGEs name must stay registered and untouched until the
// request's completion is polled (or, for inline sends, until PostSend
// returns).
type SendWR struct {
	ID     uint64    // wr_id: the caller's, returned in the completion (WC.WRID)
	Opcode Opcode    // what the request does
	Flags  SendFlags // SendSignaled for a completion, SendInline, ...
	// SGL is the memory to send from, or to read into for OpRDMARead and
	// atomics; nil or empty sends no bytes.
	SGL []SGE
	// Imm is the immediate data of *WithImm opcodes, in host order, or
	// the rkey to invalidate of OpSendWithInv and OpLocalInv.
	Imm uint32
	// RemoteAddr and RKey name the peer's memory for RDMA and atomics.
	// For OpBindMW, RKey is the key the window gets (see NextRKey).
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd is the value to add (fetch-and-add) or compare
	// (compare-and-swap); Swap the value swapped in.
	CompareAdd, Swap uint64
	// AH, RemoteQPN and RemoteQKey address a UD send. A UD message
	// goes in one packet, and so is at most the path MTU (the
	// Endpoint's MTU, PortAttr.ActiveMTU), not counting the GRH: a
	// longer one may complete with WCSuccess on the sender and still be
	// dropped on the way (on soft-RoCE a send of 1025 bytes over a path
	// MTU of 1024 completed so, and never arrived). The AH must be of the
	// QP's PD: a post refuses another's (EINVAL), which the device would
	// drop with LOC_QP_OP_ERR, the QP to the error state.
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
	// Bind is the window an OpBindMW binds and what it covers.
	Bind *MWBind
}

// RecvWR is a receive work request (struct ibv_recv_wr).
type RecvWR struct {
	ID  uint64 // wr_id: the caller's, returned in the completion (WC.WRID)
	SGL []SGE  // the memory a message received goes to
}
