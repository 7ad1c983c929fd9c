//go:build linux && cgo

package ibverbs_test

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// An atomic at a remote address not 8-byte aligned, set by hand
// (SetRemote refuses it), is refused by PostSend, NewSendBatch and Set
// before the device, in SetRemote's words. ibv_post_send refused it with
// an error that said only that the provider had ("the provider refused
// the request ... invalid argument"); the ibv_wr_* API posted it, and rxe
// failed it with REM_INV_REQ_ERR, the QP to the error state. A batch's
// SetRemoteAddr can misalign one: its post is refused, before any of the
// range goes, as PostSend would refuse it.
func TestAtomicMisalignedSaysWhy(t *testing.T) { bothPostPaths(t, testAtomicMisalignedSaysWhy) }

func testAtomicMisalignedSaysWhy(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, wrapi: wrapi})
	a, b := p.a, p.b
	addr := b.mr.Addr() + 4
	write := ibverbs.SendWR{ID: 2, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{a.mr.SGE(16, 8)},
		RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey()}
	for _, op := range []ibverbs.Opcode{ibverbs.OpAtomicCmpAndSwp, ibverbs.OpAtomicFetchAdd} {
		wr := ibverbs.SendWR{ID: 1, Opcode: op, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{a.mr.SGE(0, 8)},
			RemoteAddr: addr, RKey: b.mr.RKey(), CompareAdd: 1}
		want := fmt.Sprintf("ibv_post_send: %v at %#x: atomics need an 8-byte aligned address", op, addr)
		postRefused(t, fmt.Sprintf("PostSend of a %v at a misaligned address", op), a.qp.PostSend([]ibverbs.SendWR{wr}), 0, syscall.EINVAL, want)
		if bt, err := a.qp.NewSendBatch([]ibverbs.SendWR{write, wr}); err == nil {
			closeOK(t, bt)
			t.Errorf("NewSendBatch took a %v at a misaligned address", op)
		} else {
			postRefused(t, fmt.Sprintf("NewSendBatch of a misaligned %v", op), err, 1, syscall.EINVAL, want)
		}
	}

	// A batch of a write and a fetch-and-add, whose address SetRemoteAddr
	// then misaligns: a post of the atomic is refused before any of the
	// range goes.
	faa := ibverbs.SendWR{ID: 3, Opcode: ibverbs.OpAtomicFetchAdd, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{a.mr.SGE(0, 8)},
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), CompareAdd: 5}
	bt, err := a.qp.NewSendBatch([]ibverbs.SendWR{write, faa})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, bt)
	bt.SetRemoteAddr(1, addr)
	want := fmt.Sprintf("ibv_post_send: ATOMIC_FETCH_AND_ADD at %#x: atomics need an 8-byte aligned address", addr)
	postRefused(t, "SendBatch.Post of a misaligned fetch-and-add", bt.Post(0, 2, 0), 1, syscall.EINVAL, want)
	_, err = bt.PostPoll(1, 1, 0, a.cq, make([]ibverbs.WC, 1), 0)
	postRefused(t, "SendBatch.PostPoll of a misaligned fetch-and-add", err, 1, syscall.EINVAL, want)
	// The write alone still goes; Set of an aligned request clears the
	// misaligned one.
	if err := bt.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	pollOK(t, a.cq, ibverbs.WCRDMAWrite)
	if err := bt.Set(1, faa); err != nil {
		t.Fatal(err)
	}
	bt.SetRemoteAddr(1, addr)
	postRefused(t, "SendBatch.Post after SetRemoteAddr again", bt.Post(1, 1, 0), 1, syscall.EINVAL, want)
	// Aligned again, the batch's atomic lands, and the QP took no harm.
	bt.SetRemoteAddr(1, b.mr.Addr())
	binary.NativeEndian.PutUint64(b.buf.Bytes(), 100)
	if err := bt.Post(0, 2, 0); err != nil {
		t.Fatal(err)
	}
	pollOK(t, a.cq, ibverbs.WCRDMAWrite)
	pollOK(t, a.cq, ibverbs.WCFetchAdd)
	if got := binary.NativeEndian.Uint64(b.buf.Bytes()); got != 105 {
		t.Errorf("remote value %d after fetch-and-add of 5 to 100, want 105", got)
	}
	if st, err := a.qp.State(); err != nil || st != ibverbs.QPStateRTS {
		t.Errorf("QP state %v, %v; want RTS", st, err)
	}
}
