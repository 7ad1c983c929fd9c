//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
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
	return ownQPOf(t, id, ibverbs.QPTypeRC)
}

// ownQPOf is ownQP for a QP of type typ.
func ownQPOf(t *testing.T, id *rdmacm.ID, typ ibverbs.QPType) (*ibverbs.QP, *ibverbs.CQ, *mem) {
	t.Helper()
	pd, cq := idPDCQ(t, id)
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: typ, SendCQ: cq,
		Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	return qp, cq, register(t, pd, 4096, 0)
}

// ownConn is a connection under way between QPs made with ibverbs
// (ownQP): the listener's channel lch, the client's ID cid with its QP,
// CQ and memory, and, once await has taken the request, the server's ID.
type ownConn struct {
	t    *testing.T
	lch  *rdmacm.EventChannel
	cid  *rdmacm.ID
	cqp  *ibverbs.QP
	ccq  *ibverbs.CQ
	cm   *mem
	next func(rdmacm.EventType) *rdmacm.Event // the client's next event, of that type
	req  *rdmacm.Event                        // the CONNECT_REQUEST, once await has it
}

// connectOwn listens on n's address and connects a client's own RC QP,
// in INIT, to it (Connect with its number).
func connectOwn(t *testing.T, ctx context.Context, n testNet) *ownConn {
	t.Helper()
	lch, lid := rawListener(t, n.IP)
	_, cid, next := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
	cqp, ccq, cm := ownQP(t, cid)
	moveQP(t, cid, cqp, ibverbs.QPStateInit)
	if err := cid.Connect(&rdmacm.ConnParam{QPNum: cqp.Num(), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	return &ownConn{t: t, lch: lch, cid: cid, cqp: cqp, ccq: ccq, cm: cm, next: next}
}

// await takes the client's CONNECT_REQUEST and returns its ID, the
// server's, which closes when the test ends.
func (o *ownConn) await(ctx context.Context) *rdmacm.ID {
	o.t.Helper()
	req, err := o.lch.Await(ctx, rdmacm.EventConnectRequest)
	if err != nil {
		o.t.Fatal(err)
	}
	o.req = req
	o.t.Cleanup(func() { closeOK(o.t, req.ID) })
	return req.ID
}

// accept makes the server's own QP, moves it to RTS and accepts the
// request with it.
func (o *ownConn) accept() (*ibverbs.QP, *ibverbs.CQ, *mem) {
	o.t.Helper()
	sid := o.req.ID
	sqp, scq, sm := ownQP(o.t, sid)
	moveQP(o.t, sid, sqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
	if err := sid.Accept(&rdmacm.ConnParam{QPNum: sqp.Num(), RNRRetryCount: 7}); err != nil {
		o.t.Fatal(err)
	}
	return sqp, scq, sm
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
			o := connectOwn(t, ctx, n)
			lch, cid, cqp, ccq, cm, next := o.lch, o.cid, o.cqp, o.ccq, o.cm, o.next
			sid := o.await(ctx)
			if o.req.Param.QPNum != cqp.Num() {
				t.Errorf("the request names QP %#x, want the client's own, %#x", o.req.Param.QPNum, cqp.Num())
			}
			sqp, scq, sm := o.accept()
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
	_, lid := rawListener(t, n.IP)
	_, cid, _ := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
	idQP(t, cid)
	if err := cid.Establish(); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CreateQP") {
		t.Errorf("Establish with a QP from CreateQP: %v, want EINVAL naming CreateQP", err)
	}
}

// TestInitQPAttrBeforePeer: on an RC ID that has resolved its route but
// not connected, the kernel gives INIT's attributes (no address vector,
// destination QP or send PSN) for any state and no error; InitQPAttr
// gives INIT and refuses RTR and RTS with EINVAL saying what comes
// first, and any other state with EINVAL. (It gave INIT's mask, 0x39,
// for every state, which Modify then refused at RTR.)
func TestInitQPAttrBeforePeer(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 30*time.Second)
	_, lid := rawListener(t, n.IP)
	_, cid, _ := rdmatest.RoutedID(t, ctx, n.IP, lid.LocalAddr())
	qp, _, _ := ownQP(t, cid)
	moveQP(t, cid, qp, ibverbs.QPStateInit)
	for _, s := range []ibverbs.QPState{ibverbs.QPStateRTR, ibverbs.QPStateRTS} {
		attr, mask, err := cid.InitQPAttr(s)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CONNECT_RESPONSE") {
			t.Errorf("InitQPAttr(%s) before Connect: state %s, mask %#x, %v; want EINVAL naming CONNECT_RESPONSE", s, attr.State, mask, err)
		}
	}
	for _, s := range []ibverbs.QPState{ibverbs.QPStateReset, ibverbs.QPStateSQD, ibverbs.QPStateError, ibverbs.QPState(99)} {
		if attr, mask, err := cid.InitQPAttr(s); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("InitQPAttr(%s): state %s, mask %#x, %v; want EINVAL", s, attr.State, mask, err)
		}
	}
}

// TestOwnQPUD: a UD QP made with ibverbs for a PortSpaceUDP ID goes to
// INIT, RTR and RTS with what InitQPAttr gives, as librdmacm moves its
// own UD QPs (the kernel's INIT attributes, then the state alone, then
// the state and send PSN 0), on both sides of a lookup, and a datagram
// goes from the client's QP to the server's, addressed by the client's
// ESTABLISHED. (InitQPAttr gave the kernel's INIT mask, 0x71, for RTR
// and RTS, which Modify refused.)
func TestOwnQPUD(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 30*time.Second)
	lch, lid := newID(t, rdmacm.PortSpaceUDP)
	if err := lid.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
		t.Fatal(err)
	}
	if err := lid.Listen(0); err != nil {
		t.Fatal(err)
	}
	cch, cid := newID(t, rdmacm.PortSpaceUDP)
	if err := cid.ResolveAddr(netip.AddrPortFrom(n.IP, 0), lid.LocalAddr(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := cch.Await(ctx, rdmacm.EventAddrResolved); err != nil {
		t.Fatal(err)
	}
	if err := cid.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := cch.Await(ctx, rdmacm.EventRouteResolved); err != nil {
		t.Fatal(err)
	}
	cqp, ccq, cm := ownQPOf(t, cid, ibverbs.QPTypeUD)
	moveQP(t, cid, cqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
	if a, err := cqp.Query(); err != nil || a.QKey != rdmacm.UDPQKey {
		t.Errorf("client QP's Q_Key %#x, %v; want rdma_cm's, %#x", a.QKey, err, rdmacm.UDPQKey)
	}
	if err := cid.Connect(&rdmacm.ConnParam{QPNum: cqp.Num()}); err != nil {
		t.Fatal(err)
	}
	req, err := lch.Await(ctx, rdmacm.EventConnectRequest)
	if err != nil {
		t.Fatal(err)
	}
	sid := req.ID
	t.Cleanup(func() { closeOK(t, sid) })
	sqp, scq, sm := ownQPOf(t, sid, ibverbs.QPTypeUD)
	moveQP(t, sid, sqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
	if err := sid.Accept(&rdmacm.ConnParam{QPNum: sqp.Num()}); err != nil {
		t.Fatal(err)
	}
	ev, err := cch.Await(ctx, rdmacm.EventEstablished)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.IsUD || ev.UD.QPNum != sqp.Num() || ev.UD.QKey != rdmacm.UDPQKey {
		t.Fatalf("client's ESTABLISHED: UD %v, QP %#x, Q_Key %#x; want the server's QP %#x and %#x", ev.IsUD, ev.UD.QPNum, ev.UD.QKey, sqp.Num(), rdmacm.UDPQKey)
	}
	ah, err := cqp.PD().CreateAH(ev.UD.AHAttr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ah) })

	const grh = 40 // a UD receive starts with room for the GRH
	msg := "a datagram from the client's own QP"
	if err := sqp.PostRecv([]ibverbs.RecvWR{{ID: 2, SGL: []ibverbs.SGE{sm.mr.SGE(0, grh+64)}}}); err != nil {
		t.Fatal(err)
	}
	copy(cm.buf.Bytes(), msg)
	if err := cqp.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{cm.mr.SGE(0, len(msg))}, AH: ah, RemoteQPN: ev.UD.QPNum, RemoteQKey: ev.UD.QKey}}); err != nil {
		t.Fatal(err)
	}
	if wc := waitWC(t, ccq, 20*time.Second); wc.Opcode != ibverbs.WCSend {
		t.Errorf("sender's completion: %v, want a send", wc)
	}
	wc := waitWC(t, scq, 20*time.Second)
	got := sm.buf.Bytes()[grh : grh+len(msg)]
	if wc.Opcode != ibverbs.WCRecv || int(wc.ByteLen) != grh+len(msg) || string(got) != msg {
		t.Errorf("receiver's completion %v, data %q; want a receive of %q after the GRH", wc, got, msg)
	}
}

// TestEstablishTooEarly: Establish on the ID of a CONNECT_REQUEST, or on
// the active side right after Connect, before CONNECT_RESPONSE, is
// refused with EINVAL, and the connection then completes as it should:
// the client gets CONNECT_RESPONSE, Establishes, the server gets
// ESTABLISHED, and a message goes each way. (librdmacm's rdma_establish
// there had the kernel reject the request, or break the connection,
// while it returned EINVAL.)
func TestEstablishTooEarly(t *testing.T) {
	n := device(t)
	for _, passive := range []bool{true, false} {
		t.Run(map[bool]string{true: "passive", false: "active"}[passive], func(t *testing.T) {
			ctx := timeout(t, 20*time.Second)
			o := connectOwn(t, ctx, n)
			lch, cid, cqp, ccq, cm := o.lch, o.cid, o.cqp, o.ccq, o.cm
			if !passive {
				if err := cid.Establish(); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "CONNECT_RESPONSE") {
					t.Errorf("client's Establish right after Connect: %v; want EINVAL naming CONNECT_RESPONSE", err)
				}
			}
			sid := o.await(ctx)
			if passive {
				if err := sid.Establish(); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Accept") {
					t.Errorf("server's Establish on the CONNECT_REQUEST's ID: %v; want EINVAL naming Accept", err)
				}
			}
			sqp, scq, sm := o.accept()
			o.next(rdmacm.EventConnectResponse)
			moveQP(t, cid, cqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
			if err := cid.Establish(); err != nil {
				t.Fatalf("Establish on CONNECT_RESPONSE: %v", err)
			}
			if ev, err := lch.Await(ctx, rdmacm.EventEstablished); err != nil || ev.ID != sid {
				t.Fatalf("server after the client's Establish: %v, %v; want ESTABLISHED for its ID", ev, err)
			}
			exchange(t, "from the client", cqp, ccq, cm, sqp, scq, sm)
			exchange(t, "from the server", sqp, scq, sm, cqp, ccq, cm)
		})
	}
}
