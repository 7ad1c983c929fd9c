//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestModifyRefusesFieldlessMasks: Modify refuses, naming them, the mask
// bits whose attributes QPAttr has no fields for, and bits verbs.h does
// not define, which the verb would apply as zeros. Without a device it
// asks a QP that was never made, which answers the mask before its state.
func TestModifyRefusesFieldlessMasks(t *testing.T) {
	for _, tc := range []struct {
		mask ibverbs.QPAttrMask
		name string
	}{
		{ibverbs.QPAttrEnSQDAsync, "QPAttrEnSQDAsync"},
		{ibverbs.QPAttrAltPath, "QPAttrAltPath"},
		{ibverbs.QPAttrPathMigState, "QPAttrPathMigState"},
		{ibverbs.QPAttrRateLimit, "QPAttrRateLimit"},
		{1 << 21, "unknown bits 0x200000"},
	} {
		var qp ibverbs.QP
		err := qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS}, ibverbs.QPAttrState|tc.mask)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Modify with %s: %v, want EINVAL naming it", tc.name, err)
		}
	}
	var qp ibverbs.QP
	if err := qp.Modify(&ibverbs.QPAttr{}, ibverbs.QPAttrState|ibverbs.QPAttrCap); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("Modify of a closed QP with a mask QPAttr covers: %v, want ErrClosed", err)
	}
}

// TestModifyPathMigState: on a device, Modify of an RTS RC QP with
// QPAttrPathMigState, which the verbs accept there, is refused rather than
// setting the path migration state to zero (MIGRATED).
func TestModifyPathMigState(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	err := p.a.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS}, ibverbs.QPAttrState|ibverbs.QPAttrPathMigState)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "QPAttrPathMigState") {
		t.Errorf("Modify RTS to RTS with QPAttrPathMigState: %v, want EINVAL naming it", err)
	}
}
