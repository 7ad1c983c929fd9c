//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// wrap returns a new borrowed handle on ctx's device, closed at the end of
// the test.
func wrap(t *testing.T, ctx *ibverbs.Context) *ibverbs.Context {
	t.Helper()
	w, err := ibverbs.WrapContext(ctx.Raw())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, w) })
	return w
}

// TestWrappedHandlesShare makes a CQ through one handle on the device with
// a completion channel and async events through two others, as rdmacm's
// per-connection handles do, and expects each to know the others' objects.
func TestWrappedHandlesShare(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	a, b, c := wrap(t, ctx), wrap(t, ctx), wrap(t, ctx)
	evB, err := b.Events()
	if err != nil {
		t.Fatal(err)
	}
	evC, err := c.Events()
	if err != nil {
		t.Fatal(err)
	}
	if evB != evC {
		t.Error("two handles on one device have two async event streams")
	}
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })

	pd := newPD(t, a)
	srq, err := pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 16, MaxSGE: 1})
	if err != nil {
		rdmatest.SkipIfUnsupported(t, err)
	}
	t.Cleanup(func() { closeOK(t, srq) })
	gid := rdmatest.GIDIndex(t, ctx, info.Port)
	o := pairOpts{typ: ibverbs.QPTypeRC, ch: ch}
	r := newSide(t, a, pd, o, srq, info.Port, gid)
	s := newSide(t, a, pd, o, nil, info.Port, gid)
	e := &srqEnv{ctx: a, pd: pd, srq: srq, port: info.Port, gid: gid}
	e.connect(t, r, s)
	if err := srq.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{r.mr.SGE(0, 64)}},
		{ID: 2, SGL: []ibverbs.SGE{r.mr.SGE(64, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := srq.Arm(2); err != nil {
		t.Fatal(err)
	}
	if err := s.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{s.mr.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := ch.Wait(wctx)
	if err != nil || got != s.cq {
		t.Errorf("Wait on a channel from another handle: %p, %v; want the sender's CQ %p", got, err, s.cq)
	}
	pollOK(t, s.cq, ibverbs.WCSend)
	pollOK(t, r.cq, ibverbs.WCRecv)
	waitSRQLimit(t, evB, srq)
}

// TestWrappedEventsOutliveAHandle closes two of three handles that share
// the device's event stream, the stream's first reader among them, and
// expects the stream to stay open until the last, the device's owner,
// closes.
func TestWrappedEventsOutliveAHandle(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	a, err := ibverbs.WrapContext(ctx.Raw())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ibverbs.WrapContext(ctx.Raw())
	if err != nil {
		closeOK(t, a)
		t.Fatal(err)
	}
	ev, err := a.Events()
	if err != nil {
		t.Fatal(err)
	}
	open := func(when string) {
		t.Helper()
		select {
		case e, ok := <-ev:
			if !ok {
				t.Fatalf("the event stream closed %s", when)
			}
			t.Logf("event %v", e)
		case <-time.After(100 * time.Millisecond):
		}
	}
	closeOK(t, a)
	if _, err := a.Events(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("Events on a closed handle: %v, want ErrClosed", err)
	}
	open("with the first reader's handle closed")
	if evB, err := b.Events(); err != nil || evB != ev {
		t.Errorf("the other handle's Events: %v, %v; want the same stream", evB, err)
	}
	closeOK(t, b)
	open("with the device's owner open")
	if evO, err := ctx.Events(); err != nil || evO != ev {
		t.Errorf("the owner's Events: %v, %v; want the same stream", evO, err)
	}
	closeOK(t, ctx)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ev:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the event stream is open after its device closed")
		}
	}
}

// TestCQChannelOtherContext refuses a CQ whose channel is on another
// struct ibv_context, even of the same device.
func TestCQChannelOtherContext(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	other, err := ibverbs.Open(ctx.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, other)
	if other.Raw() == ctx.Raw() {
		t.Fatal("two Opens gave one struct ibv_context")
	}
	ch, err := other.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ch)
	if cq, err := ctx.CreateCQ(4, ch); !errors.Is(err, syscall.EINVAL) {
		if cq != nil {
			closeOK(t, cq)
		}
		t.Errorf("CreateCQ with another context's channel: %v, want EINVAL", err)
	}
}

// TestObjectsOtherContext refuses, on one Open of the device, a QP whose
// CQs or SRQ, a UD send whose AH, and a bind whose window were made on
// another Open of it: each context numbers its objects afresh, and these
// are made in the same order on both so that their numbers match, as the
// kernel would see them. A handle on the same struct ibv_context
// (WrapContext) is the same context, and its objects are accepted.
func TestObjectsOtherContext(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	other, err := ibverbs.Open(ctx.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, other) }) // after the objects' cleanups
	type objs struct {
		pd  *ibverbs.PD
		cq  *ibverbs.CQ
		srq *ibverbs.SRQ
		mr  *ibverbs.MR
	}
	buf := newBuffer(t, 4096)
	newObjs := func(c *ibverbs.Context) objs {
		var o objs
		var err error
		if o.pd, err = c.AllocPD(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, o.pd) })
		if o.cq, err = c.CreateCQ(16, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, o.cq) })
		if o.srq, err = o.pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 4}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, o.srq) })
		if o.mr, err = o.pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessMWBind); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, o.mr) })
		return o
	}
	a, b := newObjs(ctx), newObjs(other)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "on another context") {
			t.Errorf("%s of another context: %v, want EINVAL saying so", what, err)
		}
	}
	qcap := ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}
	for _, tc := range []struct {
		what string
		init ibverbs.QPInit
	}{
		{"CreateQP with a send CQ", ibverbs.QPInit{SendCQ: a.cq, RecvCQ: b.cq}},
		{"CreateQP with a receive CQ", ibverbs.QPInit{SendCQ: b.cq, RecvCQ: a.cq}},
		{"CreateQP with an SRQ", ibverbs.QPInit{SendCQ: b.cq, SRQ: a.srq}},
	} {
		tc.init.Type, tc.init.Cap = ibverbs.QPTypeRC, qcap
		qp, err := b.pd.CreateQP(tc.init)
		if qp != nil {
			closeOK(t, qp)
		}
		refused(tc.what, err)
	}

	ud, err := b.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeUD, SendCQ: b.cq, Cap: qcap})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ud)
	gid := rdmatest.GIDIndex(t, ctx, info.Port)
	ep, err := ud.Endpoint(info.Port, gid)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := a.pd.CreateAHTo(ep, info.Port, gid)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ah)
	var pe *ibverbs.PostError
	err = ud.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, AH: ah, RemoteQPN: ep.QPN, RemoteQKey: ep.QKey}})
	if !errors.As(err, &pe) || pe.Index != 0 {
		t.Errorf("PostSend with an AH of another context: %v, want a PostError at 0", err)
	}
	refused("PostSend with an AH", err)

	rc, err := b.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: b.cq, Cap: qcap})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, rc)
	mw, err := a.pd.AllocMW(ibverbs.MWType1)
	if err != nil {
		rdmatest.SkipIfUnsupported(t, err)
	}
	defer closeOK(t, mw)
	_, err = rc.BindMW(mw, 1, 0, ibverbs.MWBind{MR: a.mr, Addr: a.mr.Addr(), Length: 64, Access: ibverbs.AccessRemoteRead})
	refused("BindMW with a window", err)

	// Another handle on ctx's struct ibv_context is the same context.
	w := wrap(t, ctx)
	pd, err := w.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, pd)
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: a.cq, SRQ: a.srq, Cap: qcap})
	if err != nil {
		t.Fatalf("CreateQP on a wrapped handle with the owner's CQ and SRQ: %v", err)
	}
	closeOK(t, qp)
}

// TestOwnerCloseWaitsForWrappedHandles: the Context from Open refuses to
// close the device while a handle that WrapContext made on it is open, as
// that handle and its objects use the device: with a PD made through the
// handle, and with the handle alone. Once the PD and the handle are
// closed, so is the device. Until then the device is open and works.
func TestOwnerCloseWaitsForWrappedHandles(t *testing.T) {
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ibverbs.WrapContext(ctx.Raw())
	if err != nil {
		closeOK(t, ctx)
		t.Fatal(err)
	}
	pd, err := w.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); !errors.Is(err, syscall.EBUSY) {
		// The device is gone under pd: stop before using it.
		t.Fatalf("closing the owner with a PD open through another handle: %v, want EBUSY", err)
	}
	if err := w.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("closing the wrapped handle with its PD open: %v, want EBUSY", err)
	}
	cq, err := w.CreateCQ(4, nil)
	if err != nil {
		t.Fatalf("the device after its owner's refused Close: %v", err)
	}
	closeOK(t, cq)
	closeOK(t, pd)
	if err := ctx.Close(); !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "WrapContext") {
		t.Fatalf("closing the owner with a wrapped handle open: %v, want EBUSY naming WrapContext", err)
	}
	if _, err := w.QueryDevice(); err != nil {
		t.Errorf("the wrapped handle after its owner's refused Close: %v", err)
	}
	closeOK(t, w)
	closeOK(t, ctx)
	if _, err := ctx.AllocPD(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("AllocPD on the closed owner: %v, want ErrClosed", err)
	}
}

// TestOwnerCloseRefusedQuietly: the owner's Close while a borrowed
// handle is open fails with EBUSY before it turns anything away, so the
// owner's queries in another goroutine go on answering; they failed with
// ErrClosed while each refused Close shut the owner and then reopened it.
func TestOwnerCloseRefusedQuietly(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	wrap(t, ctx)
	stop := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		defer close(failed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := ctx.QueryPort(info.Port); err != nil {
				failed <- err
				return
			}
		}
	}()
	for range 2000 {
		if err := ctx.Close(); !errors.Is(err, syscall.EBUSY) {
			close(stop)
			t.Fatalf("the owner's Close with a borrowed handle open = %v; want EBUSY", err)
		}
	}
	close(stop)
	if err := <-failed; err != nil {
		t.Errorf("QueryPort while the owner's Close was refused: %v", err)
	}
}
