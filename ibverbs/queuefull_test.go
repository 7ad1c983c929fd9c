//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// A full queue's ENOMEM names both sizes where the provider's queue holds
// more than the QP was granted (soft-RoCE: 7 for a MaxRecvWR of 4): what
// it holds, and Cap's, which a CQ sized from Cap has room for. (The old
// message named only what it holds, inviting a program to post, and size
// its CQ, to 7.) Where the two are the same, it says the size is Cap's.
func TestQueueFullNamesCap(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	for _, asked := range []int{4, 8} {
		qp, err := p.a.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.a.cq,
			Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: asked}})
		if err != nil {
			t.Fatal(err)
		}
		defer closeOK(t, qp)
		if err := qp.ToInit(ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}); err != nil {
			t.Fatal(err)
		}
		a, err := qp.Query()
		if err != nil {
			t.Fatal(err)
		}
		held, granted := a.Cap.MaxRecvWR, qp.Cap().MaxRecvWR
		t.Logf("MaxRecvWR %d: Cap %d, Query %d", asked, granted, held)
		wrs := make([]ibverbs.RecvWR, 10*asked)
		for i := range wrs {
			wrs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}
		}
		err = qp.PostRecv(wrs)
		var pe *ibverbs.PostError
		if !errors.As(err, &pe) || pe.Index != held {
			t.Fatalf("PostRecv of %d to a queue of %d: %v; want a PostError at %d", len(wrs), held, err, held)
		}
		want := fmt.Sprintf("ibv_post_recv: the receive queue of QP %#x is full: it holds %d requests (QP.Cap); ", qp.Num(), held)
		if held > granted {
			want = fmt.Sprintf("ibv_post_recv: the receive queue of QP %#x is full: it holds %d requests, %d more than the %d the QP was granted (QP.Cap), which a CQ sized from Cap has no room for; ",
				qp.Num(), held, held-granted, granted)
		}
		postRefused(t, fmt.Sprintf("PostRecv of %d to a QP of MaxRecvWR %d", len(wrs), asked), err, held, syscall.ENOMEM, want)
	}
}
