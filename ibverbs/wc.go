package ibverbs

// WC is a work completion (struct ibv_wc). Its layout matches the shim's
// struct gv_wc, so Poll fills a caller's []WC without copying. Its fields
// are struct ibv_wc's of the same names in MixedCaps (WRID is wr_id, QPN
// qp_num, Flags wc_flags); see ibv_poll_cq(3). A failed completion has
// only WRID, Status, VendorErr and QPN (Err).
type WC struct {
	WRID         uint64
	Status       WCStatus
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
