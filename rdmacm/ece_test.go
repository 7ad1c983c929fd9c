//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestECE: the ECE options a client sets on its ID (SetLocalECE, for its
// own QP) travel in its connection request to the server's ID
// (RemoteECE on the CONNECT_REQUEST's), and those the server sets before
// Accept come back in the reply, under the client's vendor, to the
// client's ID on CONNECT_RESPONSE; the connection then carries a send.
// The CM carries them on soft-RoCE too, whose QPs have no ECE of their
// own. Before any answer RemoteECE is the zero ECE. A VendorID of 0, an
// ID with a QP from CreateQP (whose ECE librdmacm sets) and a closed ID
// are refused: EINVAL, EINVAL naming CreateQP, ErrClosed.
func TestECE(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 60*time.Second)
	lch, lid := rawListener(t, n.IP)
	_, cid, next := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
	cqp, ccq, cm := ownQP(t, cid)
	moveQP(t, cid, cqp, ibverbs.QPStateInit)
	if err := cid.SetLocalECE(ibverbs.ECE{Options: 1}); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "rdma_set_local_ece: ") {
		t.Errorf("SetLocalECE with VendorID 0 = %v, want EINVAL of rdma_set_local_ece", err)
	}
	if e, err := cid.RemoteECE(); err != nil || e != (ibverbs.ECE{}) {
		t.Errorf("RemoteECE before Connect = %+v, %v; want the zero ECE", e, err)
	}
	offer := ibverbs.ECE{VendorID: 0x123456, Options: 0x5}
	if err := cid.SetLocalECE(offer); err != nil {
		t.Fatalf("SetLocalECE(%+v): %v", offer, err)
	}
	if err := cid.Connect(&rdmacm.ConnParam{QPNum: cqp.Num(), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	o := &ownConn{t: t, lch: lch, cid: cid, cqp: cqp, ccq: ccq, cm: cm, next: next}
	sid := o.await(ctx)
	if e, err := sid.RemoteECE(); err != nil || e != offer {
		t.Errorf("server's RemoteECE = %+v, %v; want the client's offer %+v", e, err, offer)
	}
	answer := ibverbs.ECE{VendorID: offer.VendorID, Options: 0x1}
	if err := sid.SetLocalECE(answer); err != nil {
		t.Fatalf("server's SetLocalECE(%+v): %v", answer, err)
	}
	sqp, scq, sm := o.accept()
	next(rdmacm.EventConnectResponse)
	if e, err := cid.RemoteECE(); err != nil || e != answer {
		t.Errorf("client's RemoteECE on CONNECT_RESPONSE = %+v, %v; want the server's answer %+v", e, err, answer)
	}
	moveQP(t, cid, cqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
	if err := cid.Establish(); err != nil {
		t.Fatalf("Establish: %v", err)
	}
	if ev, err := lch.Await(ctx, rdmacm.EventEstablished); err != nil || ev.ID != sid {
		t.Fatalf("server after the client's Establish: %v, %v; want ESTABLISHED for its ID", ev, err)
	}
	exchange(t, "with ECE", cqp, ccq, cm, sqp, scq, sm)

	_, qid, _ := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
	idQP(t, qid)
	if err := qid.SetLocalECE(offer); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CreateQP") {
		t.Errorf("SetLocalECE on an ID with a QP from CreateQP = %v, want EINVAL naming CreateQP", err)
	}
	if _, err := qid.RemoteECE(); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CreateQP") {
		t.Errorf("RemoteECE on an ID with a QP from CreateQP = %v, want EINVAL naming CreateQP", err)
	}
	closed, err := lch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, closed)
	if err := closed.SetLocalECE(offer); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("SetLocalECE of a closed ID = %v, want ErrClosed", err)
	}
	if _, err := closed.RemoteECE(); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("RemoteECE of a closed ID = %v, want ErrClosed", err)
	}
}
