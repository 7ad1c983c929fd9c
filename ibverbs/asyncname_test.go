//go:build linux && cgo

package ibverbs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// An event about a CQ or an SRQ names it by its handle, as one about a QP
// names it by its number: 17 bare "CQ_ERR" lines did not say which CQ.
func TestAsyncEventString(t *testing.T) {
	for _, tc := range []struct {
		e    ibverbs.AsyncEvent
		want string
	}{
		{ibverbs.AsyncEvent{Type: ibverbs.EventPortActive, Port: 1}, "PORT_ACTIVE on port 1"},
		{ibverbs.AsyncEvent{Type: ibverbs.EventQPFatal, QPN: 0x11}, "QP_FATAL on QP 0x11"},
		{ibverbs.AsyncEvent{Type: ibverbs.EventCQErr, Handle: 3}, "CQ_ERR on CQ handle 3"},
		{ibverbs.AsyncEvent{Type: ibverbs.EventSRQErr, Handle: 2}, "SRQ_ERR on SRQ handle 2"},
		{ibverbs.AsyncEvent{Type: ibverbs.EventSRQLimitReached, Handle: 0}, "SRQ_LIMIT_REACHED on SRQ handle 0"},
		{ibverbs.AsyncEvent{Type: ibverbs.EventDeviceFatal}, "DEVICE_FATAL"},
	} {
		if s := tc.e.String(); s != tc.want {
			t.Errorf("%+v prints %q, want %q", tc.e, s, tc.want)
		}
	}
}

// A CQ too small for the completions of its QP overruns: on soft-RoCE,
// Poll says nothing of it, and the CQ_ERR events that do name the CQ,
// by the pointer (AsyncEvent.CQ) and by the handle CQ.Handle returns.
func TestCQOverrunEventNamesCQ(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	events, err := p.ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	small, err := p.ctx.CreateCQ(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, small) })
	// Another CQ made after it has another handle.
	other, err := p.ctx.CreateCQ(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, other)
	if small.Handle() == other.Handle() {
		t.Errorf("two CQs open at once have the same handle %d", small.Handle())
	}
	qp, err := p.a.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: small,
		Cap: ibverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	ep, err := qp.Endpoint(p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := p.b.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.b.cq,
		Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, peer) })
	pep, err := peer.Endpoint(p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	cp := ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}
	if err := qp.Connect(pep, cp); err != nil {
		t.Fatal(err)
	}
	if err := peer.Connect(ep, cp); err != nil {
		t.Fatal(err)
	}
	n := small.Len() + 8
	wrs := make([]ibverbs.SendWR, n)
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}
		if err := wrs[i].SetRemote(p.b.mr.Remote(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("CQ_ERR on CQ handle %d", small.Handle())
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type != ibverbs.EventCQErr {
				t.Logf("other event: %v", ev)
				continue
			}
			if ev.CQ != small || ev.Handle != small.Handle() || ev.String() != want {
				t.Errorf("event %q (CQ %p, handle %d), want %q on CQ %p", ev, ev.CQ, ev.Handle, want, small)
			}
			return
		case <-deadline:
			t.Fatalf("no CQ_ERR in 10 s after %d signalled writes on a CQ of %d", n, small.Len())
		}
	}
}

// An SRQ limit event names the SRQ by its handle: with the limit at 3,
// one receive of 3 taken leaves 2, under it.
func TestSRQLimitEventNamesSRQ(t *testing.T) {
	e := newSRQEnv(t)
	r, s := e.side(t, true), e.side(t, false)
	if err := e.srq.Arm(3); err != nil {
		t.Fatal(err)
	}
	events, err := e.ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	e.connect(t, r, s)
	wrs := make([]ibverbs.RecvWR, 3)
	for i := range wrs {
		wrs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{r.mr.SGE(i*256, 256)}}
	}
	if err := e.srq.PostRecv(wrs); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{s.mr.SGE(0, 3)}}}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, s.cq, ibverbs.WCSend)
	select {
	case ev := <-events:
		want := fmt.Sprintf("SRQ_LIMIT_REACHED on SRQ handle %d", e.srq.Handle())
		if ev.Type != ibverbs.EventSRQLimitReached || ev.SRQ != e.srq || ev.Handle != e.srq.Handle() || ev.String() != want {
			t.Errorf("event %q (SRQ %p), want %q on %p", ev, ev.SRQ, want, e.srq)
		}
	case <-time.After(10 * time.Second):
		t.Error("no SRQ_LIMIT_REACHED event in 10s")
	}
}
