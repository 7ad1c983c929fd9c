//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestSizesOutOfRange: sizes the verbs' int and uint32_t fields cannot
// hold are refused, not wrapped (1<<32 + 16 entries to 16), nor, when
// negative, passed on as 4 billion.
func TestSizesOutOfRange(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	const wraps = 1<<32 + 16
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", what, err)
		}
	}
	for _, n := range []int{wraps, -1, 0} {
		cq, err := ctx.CreateCQ(n, nil)
		if cq != nil {
			t.Logf("CreateCQ(%d) made a CQ of %d entries", n, cq.Len())
			closeOK(t, cq)
		}
		refused(fmt.Sprintf("CreateCQ(%d)", n), err)
		cq, err = ctx.CreateCQEx(ibverbs.CQInit{Entries: n})
		if cq != nil {
			closeOK(t, cq)
		}
		refused(fmt.Sprintf("CreateCQEx with %d entries", n), err)
	}
	cq, err := ctx.CreateCQ(16, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, cq)
	refused("Resize to 1<<32 + 16 entries", cq.Resize(wraps))
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, pd)
	for _, c := range []ibverbs.QPCap{{MaxSendWR: wraps, MaxRecvWR: 4}, {MaxSendWR: 4, MaxRecvWR: wraps},
		{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: wraps}, {MaxSendWR: 4, MaxRecvWR: 4, MaxInline: -1}} {
		qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, Cap: c})
		if qp != nil {
			closeOK(t, qp)
		}
		refused(fmt.Sprintf("CreateQP with %+v", c), err)
	}
	srq, err := pd.CreateSRQ(ibverbs.SRQInit{MaxWR: wraps})
	if srq != nil {
		closeOK(t, srq)
	}
	refused("CreateSRQ of 1<<32 + 16 receives", err)
	if srq, err = pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 16}); err != nil {
		rdmatest.SkipIfUnsupported(t, err)
	}
	defer closeOK(t, srq)
	refused("SRQ.Arm(1<<32 + 1)", srq.Arm(1<<32+1))
	refused("SRQ.Resize(1<<32 + 32)", srq.Resize(1<<32+32))
}
