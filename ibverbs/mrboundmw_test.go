//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// An MR that a memory window is bound to does not deregister: the device
// refuses (rxe: EINVAL), and Close's error keeps the errno and says that a
// window may still be bound, where it said only "ibv_dereg_mr: invalid
// argument". The MR stays open and usable, and closes once the window is
// closed (type 1) or invalidated (type 2).
func TestMRCloseWithWindowBound(t *testing.T) {
	const hint = "ibv_dereg_mr: a memory window may still be bound to the MR: close or invalidate it first"
	closeRefused := func(t *testing.T, p *mwPair) {
		t.Helper()
		err := p.mr.Close()
		if err == nil {
			t.Fatal("MR.Close with a window bound succeeded")
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), hint) {
			t.Errorf("MR.Close with a window bound: %v; want EINVAL that says %q", err, hint)
		}
		if p.mr.RKey() == 0 || p.mr.Bytes() == nil {
			t.Fatalf("the MR forgot its keys after a Close that failed: %v", err)
		}
	}
	t.Run("type1", func(t *testing.T) {
		p := newMWPair(t, ibverbs.MWType1, false)
		bind := p.bind(ibverbs.AccessRemoteWrite)
		rk, err := p.b.qp.BindMW(p.mw, 1, ibverbs.SendSignaled, bind)
		if err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.b.cq, ibverbs.WCBindMW)
		closeRefused(t, p)
		p.writeOK(t, rk, 3) // the window still works
		closeOK(t, p.mw)
		closeOK(t, p.mr)
	})
	t.Run("type2", func(t *testing.T) {
		p := newMWPair(t, ibverbs.MWType2, false)
		rk := ibverbs.NextRKey(p.mw.RKey())
		p.bind2(t, 1, rk)
		closeRefused(t, p)
		p.writeOK(t, rk, 4)
		if err := p.b.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpLocalInv, Flags: ibverbs.SendSignaled, Imm: rk}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.b.cq, ibverbs.WCLocalInv)
		closeOK(t, p.mr)
	})
}
