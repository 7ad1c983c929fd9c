//go:build linux && cgo

package ibverbs

import (
	"strings"
	"testing"
)

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

// TestMaskProblem: the table Modify's errors name mask bits from
// (ib_modify_qp_is_ok's) says what a mask lacks and has too many of, for
// the QP's type; nothing for a mask that suits the move, such as those of
// ToInit, ToRTR and ToRTS, or for a type the table does not know.
func TestMaskProblem(t *testing.T) {
	const s = QPAttrState
	resetInit := qpMove{QPStateReset, QPStateInit}
	for _, tc := range []struct {
		typ  QPType
		move qpMove
		mask QPAttrMask
		want string
	}{
		{QPTypeRC, resetInit, s, "it lacks QPAttrAccessFlags, QPAttrPKeyIndex and QPAttrPort, which the move requires"},
		{QPTypeUD, resetInit, s | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags,
			"it lacks QPAttrQKey, which the move requires, and has QPAttrAccessFlags, which the move does not take"},
		{QPTypeRawPacket, resetInit, s | QPAttrPort | QPAttrPKeyIndex, "it has QPAttrPKeyIndex, which the move does not take"},
		{QPTypeUC, qpMove{QPStateInit, QPStateRTR}, s | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMinRNRTimer,
			"a UC QP's move from INIT to RTR: it has QPAttrMinRNRTimer, which the move does not take"},
		{QPTypeRC, qpMove{QPStateRTS, QPStateRTS}, s | QPAttrPathMTU, "an RC QP's move from RTS to RTS: it has QPAttrPathMTU"},
		{QPTypeRC, qpMove{QPStateInit, QPStateError}, s | QPAttrQKey, "it has QPAttrQKey, which the move does not take"},
		{QPTypeUD, qpMove{QPStateRTS, QPStateSQD}, s | QPAttrEnSQDAsync, ""},
		{QPTypeUD, qpMove{QPStateInit, QPStateRTR}, s, ""},
		{QPType(9), resetInit, s, ""}, // XRC: not in the table
	} {
		got := maskProblem(tc.typ, tc.move, tc.mask)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%v %v mask %#x: %q, want %q", tc.typ, tc.move, uint32(tc.mask), got, tc.want)
		}
	}
	for _, typ := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD, QPTypeRawPacket} {
		if p := maskProblem(typ, qpMove{QPStateRTR, QPStateRTS}, rtsMask(typ)); p != "" {
			t.Errorf("ToRTS's mask for %v: %s", typ, p)
		}
	}
}
