//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestModifyRefusesFieldlessMasks: Modify refuses, naming them, the mask
// bits whose attributes QPAttr has no fields for, and bits verbs.h does
// not define, which the verb would apply as zeros, in words for one bit
// or several. Without a device it asks a QP that was never made, which
// answers the mask before its state, as it does a mask QPAttr covers,
// QPAttrEnSQDAsync now among them.
func TestModifyRefusesFieldlessMasks(t *testing.T) {
	for _, tc := range []struct {
		mask ibverbs.QPAttrMask
		name string
	}{
		{ibverbs.QPAttrAltPath, "mask QPAttrAltPath: QPAttr has no field for it:"},
		{ibverbs.QPAttrPathMigState, "mask QPAttrPathMigState: QPAttr has no field for it:"},
		{ibverbs.QPAttrRateLimit, "mask QPAttrRateLimit: QPAttr has no field for it:"},
		{1 << 21, "mask unknown bits 0x200000: QPAttr has no field for it:"},
		{ibverbs.QPAttrAltPath | ibverbs.QPAttrRateLimit | ibverbs.QPAttrEnSQDAsync,
			"mask QPAttrAltPath, QPAttrRateLimit: QPAttr has no field for them:"},
	} {
		var qp ibverbs.QP
		err := qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS}, ibverbs.QPAttrState|tc.mask)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Modify with %#x: %v, want EINVAL with %q", uint32(tc.mask), err, tc.name)
		}
	}
	var qp ibverbs.QP
	for _, m := range []ibverbs.QPAttrMask{ibverbs.QPAttrCap, ibverbs.QPAttrEnSQDAsync} {
		if err := qp.Modify(&ibverbs.QPAttr{}, ibverbs.QPAttrState|m); !errors.Is(err, ibverbs.ErrClosed) {
			t.Errorf("Modify of a closed QP with %#x, a mask QPAttr covers: %v, want ErrClosed", uint32(m), err)
		}
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

// TestModifySQDAsync: a move to SQD that asks for its event
// (QPAttrEnSQDAsync, QPAttr.EnSQDAsync), which Modify refused as a mask
// QPAttr had no field for, moves the QP and brings EventSQDrained for it;
// the QP goes back to RTS and sends again.
func TestModifySQDAsync(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	events, err := p.ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	err = p.a.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateSQD, EnSQDAsync: true},
		ibverbs.QPAttrState|ibverbs.QPAttrEnSQDAsync)
	if err != nil {
		t.Fatalf("Modify to SQD with QPAttrEnSQDAsync: %v", err)
	}
	if st, err := p.a.qp.State(); err != nil || st != ibverbs.QPStateSQD {
		t.Fatalf("state after the move to SQD: %v, %v", st, err)
	}
	deadline := time.After(10 * time.Second)
	for drained := false; !drained; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event channel closed")
			}
			drained = ev.Type == ibverbs.EventSQDrained && ev.QP == p.a.qp
			if !drained {
				t.Logf("passed over event %v", ev)
			}
		case <-deadline:
			t.Fatal("no SQ_DRAINED event for the QP in 10s")
		}
	}
	if err := p.a.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS}, ibverbs.QPAttrState); err != nil {
		t.Fatalf("SQD to RTS: %v", err)
	}
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	pollOK(t, p.b.cq, ibverbs.WCRecv)
}
