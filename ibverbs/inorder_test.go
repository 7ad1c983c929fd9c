//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestDataInOrder asks an RTS RC QP whether each opcode's data lands in
// order: soft-RoCE's provider does not implement the query, so it answers
// false there; every device answers the same twice, and a closed QP
// answers ErrClosed.
func TestDataInOrder(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	if st, err := p.a.qp.State(); err != nil || st != ibverbs.QPStateRTS {
		t.Fatalf("QP state %v, %v: want RTS", st, err)
	}
	for _, op := range []ibverbs.Opcode{ibverbs.OpRDMAWrite, ibverbs.OpRDMAWriteWithImm, ibverbs.OpSend,
		ibverbs.OpSendWithImm, ibverbs.OpRDMARead, ibverbs.OpAtomicCmpAndSwp, ibverbs.OpAtomicFetchAdd} {
		in, err := p.a.qp.DataInOrder(op)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		again, err := p.a.qp.DataInOrder(op)
		if err != nil || again != in {
			t.Errorf("%v: %v, then %v, %v", op, in, again, err)
		}
		t.Logf("%s: DataInOrder(%v) = %v", p.ctx.Name(), op, in)
		if strings.HasPrefix(p.ctx.Name(), "rxe") && in {
			t.Errorf("%s: DataInOrder(%v) = true; soft-RoCE's provider was not known to answer", p.ctx.Name(), op)
		}
	}
	closeOK(t, p.b.qp)
	if _, err := p.b.qp.DataInOrder(ibverbs.OpRDMAWrite); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("DataInOrder of a closed QP: %v, want ErrClosed", err)
	}
}
