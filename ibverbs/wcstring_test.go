package ibverbs_test

import (
	"fmt"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// WC.String shows a failed completion without the opcode, which the verbs
// leave undefined then (Poll may leave it 0, SEND, for any request), and
// a successful one with it.
func TestWCString(t *testing.T) {
	for _, tc := range []struct {
		wc   ibverbs.WC
		want string
	}{
		{ibverbs.WC{WRID: 7, Status: ibverbs.WCSuccess, Opcode: ibverbs.WCRDMAWrite, ByteLen: 64, QPN: 0x11},
			"WC{WRID:0x7 Status:SUCCESS Opcode:RDMA_WRITE ByteLen:64 QPN:0x11}"},
		{ibverbs.WC{WRID: 1, Status: ibverbs.WCSuccess, Opcode: ibverbs.WCRecvRDMAWithImm, ByteLen: 8, QPN: 0x12,
			SrcQP: 0x13, Imm: 0xabcd, Flags: ibverbs.WCWithImm},
			"WC{WRID:0x1 Status:SUCCESS Opcode:RECV_RDMA_WITH_IMM ByteLen:8 QPN:0x12 Imm:0xabcd SrcQP:0x13 Flags:WITH_IMM}"},
		{ibverbs.WC{WRID: 7, Status: ibverbs.WCLocQPOpErr, Opcode: ibverbs.WCSend, VendorErr: 0x32, QPN: 0x12},
			"WC{WRID:0x7 Status:LOC_QP_OP_ERR VendorErr:0x32 QPN:0x12}"},
	} {
		if got := fmt.Sprint(tc.wc); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	ex := ibverbs.WCEx{WC: ibverbs.WC{WRID: 2, Status: ibverbs.WCSuccess, Opcode: ibverbs.WCSend, ByteLen: 4, QPN: 1}, Timestamp: 5, Wallclock: 6}
	if got, want := fmt.Sprint(ex), "WC{WRID:0x2 Status:SUCCESS Opcode:SEND ByteLen:4 QPN:0x1 Timestamp:5 Wallclock:6}"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
