//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestECE: QueryECE (ibv_query_ece) and SetECE (ibv_set_ece) on an RC
// QP in RESET: a device with ECE gives its options and accepts them
// back; one without, soft-RoCE among them, fails both with an error
// naming the verb that matches errors.ErrUnsupported. A closed QP gives
// ErrClosed.
func TestECE(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	qp := p.spareRCQP(t)
	e, err := qp.QueryECE()
	if err != nil && (!errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "ibv_query_ece: ")) {
		t.Errorf("QueryECE() = %v, want nil or an error of ibv_query_ece matching errors.ErrUnsupported", err)
	}
	t.Logf("QueryECE on %s: %+v, %v", p.ctx.Name(), e, err)
	if err != nil {
		// Without the query, the offer is the peer's, which the device
		// must refuse the same way.
		e = ibverbs.ECE{VendorID: 0x02c9, Options: 1}
	}
	got, serr := qp.SetECE(e)
	if (serr == nil) != (err == nil) {
		t.Errorf("SetECE(%+v) = %+v, %v, where QueryECE gave %v: want both to work or neither", e, got, serr, err)
	}
	if serr != nil && (!errors.Is(serr, errors.ErrUnsupported) || !strings.Contains(serr.Error(), "ibv_set_ece: ")) {
		t.Errorf("SetECE(%+v) = %v, want nil or an error of ibv_set_ece matching errors.ErrUnsupported", e, serr)
	}
	if serr == nil && (got.VendorID != e.VendorID || got.Options&^e.Options != 0) {
		t.Errorf("SetECE(%+v) accepted %+v: want the vendor's options, no more", e, got)
	}
	closeOK(t, qp)
	if _, err := qp.QueryECE(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("QueryECE of a closed QP = %v, want ErrClosed", err)
	}
	if _, err := qp.SetECE(e); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("SetECE of a closed QP = %v, want ErrClosed", err)
	}
}
