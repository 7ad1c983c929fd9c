//go:build linux && cgo

package ibverbs_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// A UC QP takes writes and sends, not reads or atomics: PostSend, a
// SendBatch's NewSendBatch and Set refuse them before the device, with
// EINVAL and a message that says so. ibv_post_send took them: rxe
// completed the read with LOC_QP_OP_ERR and took the QP to the error
// state, flushing every later request, a good write included, which here
// still lands. (A QPInit.WRAPI QP refused them as opcodes it was not
// created with.)
func TestUCRefusesReadsAndAtomics(t *testing.T) { bothPostPaths(t, testUCRefusesReadsAndAtomics) }

func testUCRefusesReadsAndAtomics(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeUC, wrapi: wrapi})
	a, b := p.a, p.b
	write := ibverbs.SendWR{ID: 1, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{a.mr.SGE(0, 8)}}
	if err := write.SetRemote(b.mr.Remote(), 64); err != nil {
		t.Fatal(err)
	}
	for _, op := range []ibverbs.Opcode{ibverbs.OpRDMARead, ibverbs.OpAtomicCmpAndSwp, ibverbs.OpAtomicFetchAdd} {
		wr := ibverbs.SendWR{ID: 2, Opcode: op, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{a.mr.SGE(8, 8)}}
		if err := wr.SetRemote(b.mr.Remote(), 0); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("a UC QP takes writes and sends, not %v", op)
		postRefused(t, fmt.Sprintf("PostSend of a write and a %v", op), a.qp.PostSend([]ibverbs.SendWR{write, wr}), 1, syscall.EINVAL, want)
		if wc := pollOK(t, a.cq, ibverbs.WCRDMAWrite); wc.WRID != 1 {
			t.Fatalf("completion of wr_id %d, want the write's, 1", wc.WRID)
		}
		if bt, err := a.qp.NewSendBatch([]ibverbs.SendWR{write, wr}); err == nil {
			closeOK(t, bt)
			t.Errorf("NewSendBatch took a %v on a UC QP", op)
		} else {
			postRefused(t, fmt.Sprintf("NewSendBatch with a %v", op), err, 1, syscall.EINVAL, want)
		}
		bt, err := a.qp.NewSendBatch([]ibverbs.SendWR{write})
		if err != nil {
			t.Fatal(err)
		}
		if err := bt.Set(0, wr); !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("SendBatch.Set of a %v on a UC QP: %v, want EINVAL that says %q", op, err, want)
		}
		closeOK(t, bt)
	}
	// The QP is in RTS and a write lands.
	if st, err := a.qp.State(); err != nil || st != ibverbs.QPStateRTS {
		t.Fatalf("QP state %v, %v; want RTS", st, err)
	}
	binary.NativeEndian.PutUint64(a.buf.Bytes(), 0x1122334455667788)
	if err := a.qp.PostSend([]ibverbs.SendWR{write}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, a.cq, ibverbs.WCRDMAWrite)
	if got := binary.NativeEndian.Uint64(b.buf.Bytes()[64:]); got != 0x1122334455667788 {
		t.Errorf("remote bytes %#x after the write, want %#x", got, uint64(0x1122334455667788))
	}
}
