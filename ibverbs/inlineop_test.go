//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// Only sends and RDMA writes carry their bytes inline: a READ or an
// atomic with SendInline is refused with EINVAL, naming the opcode,
// through PostSend, a SendBatch's Set and a Post after SetFlags, and the
// QP stays in RTS and goes on working. On the old code the provider took
// both: rxe's READ completed with LOC_PROT_ERR and took the QP to ERR.
func TestInlineOnlySendsAndWrites(t *testing.T) { bothPostPaths(t, testInlineOnlySendsAndWrites) }

func testInlineOnlySendsAndWrites(t *testing.T, wrapi bool) {
	o := pairOpts{typ: ibverbs.QPTypeRC, wrapi: wrapi}
	if wrapi {
		o.wrOps = []ibverbs.Opcode{ibverbs.OpSend, ibverbs.OpRDMAWrite, ibverbs.OpRDMARead,
			ibverbs.OpAtomicFetchAdd, ibverbs.OpAtomicCmpAndSwp}
	}
	p := newPair(t, o)
	remote := p.b.mr.Remote()
	req := func(op ibverbs.Opcode, flags ibverbs.SendFlags) ibverbs.SendWR {
		n := 16
		if op == ibverbs.OpAtomicFetchAdd || op == ibverbs.OpAtomicCmpAndSwp {
			n = 8
		}
		w := ibverbs.SendWR{ID: uint64(op), Opcode: op, Flags: flags | ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, n)}, CompareAdd: 1}
		if err := w.SetRemote(remote, 0); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, op := range []ibverbs.Opcode{ibverbs.OpRDMARead, ibverbs.OpAtomicFetchAdd, ibverbs.OpAtomicCmpAndSwp} {
		want := "SendInline on a " + op.String() + " request"
		err := p.a.qp.PostSend([]ibverbs.SendWR{req(op, ibverbs.SendInline)})
		postRefused(t, "PostSend of "+op.String(), err, 0, syscall.EINVAL, want)

		b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{req(op, 0)})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(0, req(op, ibverbs.SendInline)); !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("SendBatch.Set of %v with SendInline: %v, want EINVAL saying %q", op, err, want)
		}
		b.SetFlags(0, ibverbs.SendInline|ibverbs.SendSignaled)
		postRefused(t, "SendBatch.Post of "+op.String()+" after SetFlags", b.Post(0, 1, 0), 0, syscall.EINVAL, want)
		closeOK(t, b)

		if st, err := p.a.qp.State(); err != nil || st != ibverbs.QPStateRTS {
			t.Fatalf("after %v with SendInline the QP is in %v (%v), want RTS", op, st, err)
		}
		// The same request without the flag goes, and completes.
		if err := p.a.qp.PostSend([]ibverbs.SendWR{req(op, 0)}); err != nil {
			t.Fatalf("%v without SendInline: %v", op, err)
		}
		if wc := pollN(t, p.a.cq, 1)[0]; wc.Err() != nil {
			t.Fatalf("%v without SendInline: %v", op, wc.Err())
		}
	}
}
