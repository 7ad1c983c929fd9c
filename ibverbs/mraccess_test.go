//go:build linux && cgo

package ibverbs_test

import (
	"fmt"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// Remote write or atomic access without local write is refused before
// the verb, by RegMR, RegMRRange, RegMRIOVA and Rereg, with an error
// that says what it needs, where the verb's said "invalid argument"
// alone (and Rereg's, on a provider without it, "not supported").
func TestRegMRRemoteNeedsLocalWrite(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd := newPD(t, ctx)
	buf := newBuffer(t, 1<<16)
	for _, a := range []ibverbs.Access{ibverbs.AccessRemoteWrite, ibverbs.AccessRemoteAtomic,
		ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead | ibverbs.AccessRemoteAtomic} {
		want := "needs LOCAL_WRITE too"
		mr, err := pd.RegMR(buf, a)
		refusedWith(t, fmt.Sprintf("RegMR %s", a), err, "ibv_reg_mr: access "+a.String(), want)
		if mr != nil {
			closeOK(t, mr)
		}
		mr, err = pd.RegMRRange(buf, 0, 4096, a)
		refusedWith(t, fmt.Sprintf("RegMRRange %s", a), err, want)
		if mr != nil {
			closeOK(t, mr)
		}
		mr, err = pd.RegMRIOVA(buf, 0, 4096, 0, a)
		refusedWith(t, fmt.Sprintf("RegMRIOVA %s", a), err, "ibv_reg_mr_iova2: ", want)
		if mr != nil {
			closeOK(t, mr)
		}
	}
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mr)
	lkey := mr.LKey()
	refusedWith(t, "Rereg to REMOTE_WRITE", mr.Rereg(ibverbs.MRChange{SetAccess: true, Access: ibverbs.AccessRemoteWrite}),
		"ibv_rereg_mr: access REMOTE_WRITE", "needs LOCAL_WRITE too")
	if mr.LKey() != lkey {
		t.Errorf("the refused Rereg changed the lkey: %#x, was %#x", mr.LKey(), lkey)
	}
}
