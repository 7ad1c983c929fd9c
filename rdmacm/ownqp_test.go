//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// ownQP makes an RC QP with ibverbs on id's device, not with
// ID.CreateQP, with its CQ and a registered page; all close when the
// test ends.
func ownQP(t *testing.T, id *rdmacm.ID) (*ibverbs.QP, *ibverbs.CQ, *mem) {
	t.Helper()
	dctx, err := id.Context()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, dctx) })
	pd, err := dctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	cq, err := dctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cq) })
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq,
		Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	return qp, cq, register(t, pd, 4096, 0)
}

// moveQP moves qp through states with the attributes id's InitQPAttr
// gives, as librdmacm does for a QP of its own.
func moveQP(t *testing.T, id *rdmacm.ID, qp *ibverbs.QP, states ...ibverbs.QPState) {
	t.Helper()
	for _, s := range states {
		attr, mask, err := id.InitQPAttr(s)
		if err != nil {
			t.Fatalf("InitQPAttr(%s): %v", s, err)
		}
		if attr.State != s || mask&ibverbs.QPAttrState == 0 {
			t.Fatalf("InitQPAttr(%s): state %s, mask %#x; want the state asked for, in the mask", s, attr.State, mask)
		}
		if err := qp.Modify(&attr, mask); err != nil {
			t.Fatalf("Modify to %s with InitQPAttr's mask %#x: %v", s, mask, err)
		}
		if got, err := qp.State(); err != nil || got != s {
			t.Fatalf("QP after Modify to %s: %s, %v", s, got, err)
		}
	}
}

// exchange sends the message msg from a to b: b's receive is posted
// first, and both completions are awaited.
func exchange(t *testing.T, msg string, a *ibverbs.QP, acq *ibverbs.CQ, am *mem, b *ibverbs.QP, bcq *ibverbs.CQ, bm *mem) {
	t.Helper()
	if err := b.PostRecv([]ibverbs.RecvWR{{ID: 2, SGL: []ibverbs.SGE{bm.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	copy(am.buf.Bytes(), msg)
	if err := a.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{am.mr.SGE(0, len(msg))}}}); err != nil {
		t.Fatal(err)
	}
	if wc := waitWC(t, acq, 20*time.Second); wc.Opcode != ibverbs.WCSend {
		t.Errorf("sender's completion: %v, want a send", wc)
	}
	wc := waitWC(t, bcq, 20*time.Second)
	if wc.Opcode != ibverbs.WCRecv || int(wc.ByteLen) != len(msg) || !bytes.Equal(bm.buf.Bytes()[:len(msg)], []byte(msg)) {
		t.Errorf("receiver's completion %v, data %q; want a receive of %q", wc, bm.buf.Bytes()[:len(msg)], msg)
	}
}

// TestOwnQP: a server and a client that each make their QP with ibverbs
// (PD.CreateQP, not ID.CreateQP) connect it with rdma_cm, as pyverbs'
// CMID users do: Connect and Accept send its number (ConnParam.QPNum),
// InitQPAttr gives what moves it to INIT, RTR and RTS, the client gets
// CONNECT_RESPONSE (not ESTABLISHED) and completes with Establish, and
// only then does the server get ESTABLISHED; or, with Notify(COMM_EST),
// the server gets it before. A send goes each way.
func TestOwnQP(t *testing.T) {
	n := device(t)
	for _, notify := range []bool{false, true} {
		t.Run(map[bool]string{false: "establish", true: "notify"}[notify], func(t *testing.T) {
			ctx := timeout(t, 60*time.Second)
			lch, lid := rawListener(t, n.IP)
			t.Cleanup(func() { closeOK(t, lch) })
			t.Cleanup(func() { closeOK(t, lid) })
			_, cid, next := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
			cqp, ccq, cm := ownQP(t, cid)
			moveQP(t, cid, cqp, ibverbs.QPStateInit)
			if err := cid.Connect(&rdmacm.ConnParam{QPNum: cqp.Num(), RetryCount: 7, RNRRetryCount: 7}); err != nil {
				t.Fatal(err)
			}

			req, err := lch.Await(ctx, rdmacm.EventConnectRequest)
			if err != nil {
				t.Fatal(err)
			}
			sid := req.ID
			t.Cleanup(func() { closeOK(t, sid) })
			if req.Param.QPNum != cqp.Num() {
				t.Errorf("the request names QP %#x, want the client's own, %#x", req.Param.QPNum, cqp.Num())
			}
			sqp, scq, sm := ownQP(t, sid)
			moveQP(t, sid, sqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
			if err := sid.Accept(&rdmacm.ConnParam{QPNum: sqp.Num(), RNRRetryCount: 7}); err != nil {
				t.Fatal(err)
			}
			if notify {
				if err := sid.Notify(ibverbs.EventPortActive); !errors.Is(err, syscall.EINVAL) {
					t.Errorf("Notify(PORT_ACTIVE): %v, want EINVAL", err)
				}
				if err := sid.Notify(ibverbs.EventCommEst); err != nil {
					t.Fatalf("Notify(COMM_EST): %v", err)
				}
				if ev, err := lch.Await(ctx, rdmacm.EventEstablished); err != nil || ev.ID != sid {
					t.Fatalf("server after Notify(COMM_EST): %v, %v; want ESTABLISHED for its ID before the client's Establish", ev, err)
				}
			}

			resp := next(rdmacm.EventConnectResponse)
			if resp.Param.QPNum != sqp.Num() {
				t.Errorf("the response names QP %#x, want the server's own, %#x", resp.Param.QPNum, sqp.Num())
			}
			moveQP(t, cid, cqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
			for _, p := range []struct {
				qp   *ibverbs.QP
				peer uint32
			}{{cqp, sqp.Num()}, {sqp, cqp.Num()}} {
				if a, err := p.qp.Query(); err != nil || a.DestQPN != p.peer {
					t.Errorf("QP %#x: destination QP %#x, %v; want the peer's, %#x", p.qp.Num(), a.DestQPN, err, p.peer)
				}
			}
			if !notify {
				short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				ev, err := lch.Await(short, rdmacm.EventEstablished)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("server before the client's Establish: %v, %v; want no event", ev, err)
				}
			}
			if err := cid.Establish(); err != nil {
				t.Fatalf("Establish: %v", err)
			}
			if !notify {
				if ev, err := lch.Await(ctx, rdmacm.EventEstablished); err != nil || ev.ID != sid {
					t.Fatalf("server after the client's Establish: %v, %v; want ESTABLISHED for its ID", ev, err)
				}
			}

			exchange(t, "from the client", cqp, ccq, cm, sqp, scq, sm)
			exchange(t, "from the server", sqp, scq, sm, cqp, ccq, cm)

			// The server's CM answers the client's disconnect request
			// when the server disconnects in turn, as a Conn does on
			// DISCONNECTED; the client's DISCONNECTED comes then.
			if err := cid.Disconnect(); err != nil {
				t.Errorf("client's Disconnect: %v", err)
			}
			if ev, err := lch.Await(ctx, rdmacm.EventDisconnected); err != nil || ev.ID != sid {
				t.Fatalf("server: %v, %v; want DISCONNECTED for its ID", ev, err)
			}
			if err := sid.Disconnect(); err != nil {
				t.Errorf("server's Disconnect: %v", err)
			}
			next(rdmacm.EventDisconnected)
		})
	}
}

// TestEstablishWithCreateQP: Establish on an ID whose QP CreateQP made,
// whose connection librdmacm completes itself, is refused with EINVAL
// saying so.
func TestEstablishWithCreateQP(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 60*time.Second)
	lch, lid := rawListener(t, n.IP)
	t.Cleanup(func() { closeOK(t, lch) })
	t.Cleanup(func() { closeOK(t, lid) })
	_, cid, _ := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
	idQP(t, cid)
	if err := cid.Establish(); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CreateQP") {
		t.Errorf("Establish with a QP from CreateQP: %v, want EINVAL naming CreateQP", err)
	}
}
