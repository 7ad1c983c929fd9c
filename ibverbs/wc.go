package ibverbs

import "fmt"

// WC is a work completion (struct ibv_wc). Its layout matches the shim's
// struct gv_wc, so Poll fills a caller's []WC without copying. Its fields
// are struct ibv_wc's of the same names in MixedCaps (WRID is wr_id, QPN
// qp_num, Flags wc_flags); see ibv_poll_cq(3). A failed completion has
// only WRID, Status, VendorErr and QPN (Err): the verbs leave its other
// fields undefined, Opcode among them, which a provider may leave 0
// (WCSend) whatever the request was. String leaves them out.
type WC struct {
	WRID   uint64
	Status WCStatus
	// Opcode is what the request did; not valid unless Status is
	// WCSuccess.
	Opcode       WCOpcode
	VendorErr    uint32
	ByteLen      uint32
	Imm          uint32 // immediate data in host order if Flags has WCWithImm; the invalidated rkey if WCWithInv (which soft-RoCE does not set: see WCWithInv); else 0
	QPN          uint32
	SrcQP        uint32
	Flags        WCFlags
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
	_            [2]byte
}

// WCEx is a work completion that CQ.PollEx took: WC's fields and the
// completion's timestamps.
type WCEx struct {
	WC
	// Timestamp is the device's clock when it made the completion, in
	// the clock's ticks, where the CQ was made with CQInit.Timestamps;
	// else 0.
	Timestamp uint64
	// Wallclock is that time in nanoseconds since the Unix epoch, by the
	// host's real-time clock, where the CQ was made with
	// CQInit.Wallclock; else 0.
	Wallclock uint64
}

// Err returns nil for a successful completion, else a *WCError.
func (wc *WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &WCError{Status: wc.Status, VendorErr: wc.VendorErr, WRID: wc.WRID, QPN: wc.QPN, Opcode: wc.Opcode}
}

// String returns the completion in brief, for logs: "WC{WRID:0x7
// Status:SUCCESS Opcode:RDMA_WRITE ByteLen:64 QPN:0x11}", with Imm, SrcQP
// and Flags where set. A failed completion shows only the fields the
// verbs define for it: "WC{WRID:0x7 Status:LOC_QP_OP_ERR VendorErr:0x0
// QPN:0x12}", with no Opcode, which is not valid then.
func (wc WC) String() string {
	if wc.Status != WCSuccess {
		return fmt.Sprintf("WC{WRID:%#x Status:%v VendorErr:%#x QPN:%#x}", wc.WRID, wc.Status, wc.VendorErr, wc.QPN)
	}
	s := fmt.Sprintf("WC{WRID:%#x Status:%v Opcode:%v ByteLen:%d QPN:%#x", wc.WRID, wc.Status, wc.Opcode, wc.ByteLen, wc.QPN)
	if wc.Flags&(WCWithImm|WCWithInv) != 0 {
		s += fmt.Sprintf(" Imm:%#x", wc.Imm)
	}
	if wc.SrcQP != 0 {
		s += fmt.Sprintf(" SrcQP:%#x", wc.SrcQP)
	}
	if wc.Flags != 0 {
		s += fmt.Sprintf(" Flags:%v", wc.Flags)
	}
	return s + "}"
}

// String returns the completion as WC.String does, with its Timestamp
// and Wallclock where set.
func (wc WCEx) String() string {
	s := wc.WC.String()
	if wc.Timestamp == 0 && wc.Wallclock == 0 {
		return s
	}
	return fmt.Sprintf("%s Timestamp:%d Wallclock:%d}", s[:len(s)-1], wc.Timestamp, wc.Wallclock)
}
