//go:build linux && cgo

package ibverbs

import "testing"

// TestRTSMask: ToRTS asks for what the kernel requires from RTR to RTS
// (ib_modify_qp_is_ok's table), and no more, which it would refuse: a
// send PSN for UD and UC, with the retry, timeout and read/atomic depth
// for RC, and for a raw packet QP nothing but the state. (Soft-RoCE makes
// no raw packet QPs, so no device test moves one.)
func TestRTSMask(t *testing.T) {
	for _, tc := range []struct {
		typ  QPType
		want QPAttrMask
	}{
		{QPTypeRC, QPAttrState | QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic},
		{QPTypeUC, QPAttrState | QPAttrSQPSN},
		{QPTypeUD, QPAttrState | QPAttrSQPSN},
		{QPTypeRawPacket, QPAttrState},
	} {
		if got := rtsMask(tc.typ); got != tc.want {
			t.Errorf("ToRTS mask for %v: %#x, want %#x", tc.typ, uint32(got), uint32(tc.want))
		}
	}
}
