//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

const bufSize = 64 << 10

// side is one end of a test connection: its QP and the resources under it.
type side struct {
	pd  *ibverbs.PD
	buf *ibverbs.Buffer
	mr  *ibverbs.MR
	cq  *ibverbs.CQ
	qp  *ibverbs.QP
	ep  ibverbs.Endpoint
}

type pairOpts struct {
	typ    ibverbs.QPType
	params ibverbs.ConnParams
	cap    ibverbs.QPCap
	wrapi  bool // post sends through the ibv_wr_* API
	wrOps  []ibverbs.Opcode
	// ch, if set, is the completion channel of the sides' CQs; newPair
	// sets it when events is.
	ch     *ibverbs.CompChannel
	events bool
	// singleThreaded makes the sides' CQs with CreateCQEx and
	// CQInit.SingleThreaded.
	singleThreaded bool
	// gidFamily, 4 or 6, connects the pair through the port's RoCE v2 GID
	// of that family; the test is skipped where there is none. 0 takes
	// rdmatest.GIDIndex's.
	gidFamily int
	// timestamps and wallclock make the sides' CQs with CreateCQEx and
	// CQInit.Timestamps and Wallclock; cqEx with CreateCQEx alone.
	timestamps, wallclock, cqEx bool
}

// pair is two QPs of one type on the test device, connected to each other.
type pair struct {
	ctx  *ibverbs.Context
	port int
	gid  int
	ch   *ibverbs.CompChannel // with pairOpts.events
	a, b *side
}

func newSide(t testing.TB, ctx *ibverbs.Context, pd *ibverbs.PD, o pairOpts, srq *ibverbs.SRQ, port, gid int) *side {
	t.Helper()
	s := &side{pd: pd}
	var err error
	if s.buf, err = ibverbs.NewBuffer(bufSize, ibverbs.BufferOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, s.buf) })
	access := ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead | ibverbs.AccessRemoteAtomic
	if s.mr, err = pd.RegMR(s.buf, access); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, s.mr) })
	if o.singleThreaded || o.timestamps || o.wallclock || o.cqEx {
		s.cq, err = ctx.CreateCQEx(ibverbs.CQInit{Entries: 256, Channel: o.ch, SingleThreaded: o.singleThreaded,
			Timestamps: o.timestamps, Wallclock: o.wallclock})
	} else {
		s.cq, err = ctx.CreateCQ(256, o.ch)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, s.cq) })
	c := o.cap
	if c.MaxSendWR == 0 {
		c = ibverbs.QPCap{MaxSendWR: 128, MaxRecvWR: 128, MaxSendSGE: 4, MaxRecvSGE: 4}
	}
	if s.qp, err = pd.CreateQP(ibverbs.QPInit{Type: o.typ, SendCQ: s.cq, SRQ: srq, Cap: c, WRAPI: o.wrapi, WROps: o.wrOps}); err != nil {
		if o.wrapi && errors.Is(err, errors.ErrUnsupported) {
			rdmatest.Lacking(t, "ibv_wr_api", "%s has no ibv_wr_* API: %v", ctx.Name(), err)
		}
		t.Fatal(err)
	}
	if s.qp.WRAPI() != o.wrapi {
		t.Fatalf("QP.WRAPI() = %v, want %v", s.qp.WRAPI(), o.wrapi)
	}
	if s.qp.SRQ() != srq {
		t.Fatalf("QP.SRQ() = %p, want %p", s.qp.SRQ(), srq)
	}
	t.Cleanup(func() { closeOK(t, s.qp) })
	if s.ep, err = s.qp.Endpoint(port, gid); err != nil {
		t.Fatal(err)
	}
	return s
}

func newPair(t testing.TB, o pairOpts) *pair {
	t.Helper()
	ctx, info := rdmatest.Open(t)
	p := &pair{ctx: ctx, port: info.Port, gid: rdmatest.GIDIndex(t, ctx, info.Port)}
	if o.gidFamily != 0 {
		ch, err := ctx.SelectGID(info.Port, ibverbs.GIDRule{Family: o.gidFamily})
		if none := (*ibverbs.NoGIDError)(nil); errors.As(err, &none) {
			rdmatest.Lacking(t, fmt.Sprintf("ipv%d-gid", o.gidFamily), "no IPv%d RoCE v2 GID: %v", o.gidFamily, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		p.gid = ch.Entry.Index
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	if o.events {
		if o.ch, err = ctx.CreateCompChannel(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, o.ch) })
		p.ch = o.ch
	}
	p.a = newSide(t, ctx, pd, o, nil, p.port, p.gid)
	p.b = newSide(t, ctx, pd, o, nil, p.port, p.gid)
	p.connect(t, o.params)
	return p
}

func (p *pair) connect(t testing.TB, params ibverbs.ConnParams) {
	t.Helper()
	params.Port, params.GIDIndex = p.port, p.gid
	if err := p.a.qp.Connect(p.b.ep, params); err != nil {
		t.Fatal(err)
	}
	if err := p.b.qp.Connect(p.a.ep, params); err != nil {
		t.Fatal(err)
	}
}

// srqEnv is a PD on the test device with an SRQ of 16 one-SGE receives,
// for sides made with newSide.
type srqEnv struct {
	ctx       *ibverbs.Context
	pd        *ibverbs.PD
	srq       *ibverbs.SRQ
	port, gid int
}

func newSRQEnv(t testing.TB) *srqEnv {
	t.Helper()
	ctx, info := rdmatest.Open(t)
	e := &srqEnv{ctx: ctx, port: info.Port, gid: rdmatest.GIDIndex(t, ctx, info.Port)}
	var err error
	if e.pd, err = ctx.AllocPD(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e.pd) })
	if e.srq, err = e.pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 16, MaxSGE: 1}); err != nil {
		rdmatest.SkipIfUnsupported(t, err)
	}
	t.Cleanup(func() { closeOK(t, e.srq) })
	return e
}

// side makes an RC side under e's PD, taking its receives from the SRQ if
// withSRQ.
func (e *srqEnv) side(t testing.TB, withSRQ bool) *side {
	var srq *ibverbs.SRQ
	if withSRQ {
		srq = e.srq
	}
	return newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeRC}, srq, e.port, e.gid)
}

// connect connects a's and b's QPs to each other.
func (e *srqEnv) connect(t testing.TB, a, b *side) {
	t.Helper()
	cp := ibverbs.ConnParams{Port: e.port, GIDIndex: e.gid}
	if err := a.qp.Connect(b.ep, cp); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(a.ep, cp); err != nil {
		t.Fatal(err)
	}
}

type closer interface{ Close() error }

func closeOK(t testing.TB, c closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close %T: %v", c, err)
	}
}

// newPD allocates a PD on ctx (ibv_alloc_pd), closed when the test ends.
func newPD(t testing.TB, ctx *ibverbs.Context) *ibverbs.PD {
	t.Helper()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	return pd
}

// newBuffer makes a Buffer of n bytes, closed when the test ends.
func newBuffer(t testing.TB, n int) *ibverbs.Buffer {
	t.Helper()
	buf, err := ibverbs.NewBuffer(n, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, buf) })
	return buf
}

// timeout is a context that ends after d, or when the test does: for a
// wait that should return at once, so that a regression fails the test
// rather than hang it until -test.timeout.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pollN polls cq until it has n completions or 10 s pass.
func pollN(t testing.TB, cq *ibverbs.CQ, n int) []ibverbs.WC {
	t.Helper()
	return pollUntil(t, n, cq.Poll)
}

// pollExN is pollN with PollEx.
func pollExN(t testing.TB, cq *ibverbs.CQ, n int) []ibverbs.WCEx {
	t.Helper()
	return pollUntil(t, n, cq.PollEx)
}

// pollUntil calls poll until it has taken n completions, for at most 10 s.
func pollUntil[W any](t testing.TB, n int, poll func([]W) (int, error)) []W {
	t.Helper()
	out := make([]W, 0, n)
	wcs := make([]W, 16)
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n {
		k, err := poll(wcs[:min(len(wcs), n-len(out))])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, wcs[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("got %d of %d completions in 10s", len(out), n)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return out
}

// pollOK polls one completion and fails the test unless it succeeded with
// the given opcode.
func pollOK(t testing.TB, cq *ibverbs.CQ, op ibverbs.WCOpcode) ibverbs.WC {
	t.Helper()
	wc := pollN(t, cq, 1)[0]
	if err := wc.Err(); err != nil {
		t.Fatal(err)
	}
	if wc.Opcode != op {
		t.Fatalf("completion opcode %v, want %v", wc.Opcode, op)
	}
	return wc
}

// pollErr polls one completion and returns its *WCError, failing the test
// if it succeeded.
func pollErr(t testing.TB, cq *ibverbs.CQ) *ibverbs.WCError {
	t.Helper()
	wc := pollN(t, cq, 1)[0]
	var we *ibverbs.WCError
	if !errors.As(wc.Err(), &we) {
		t.Fatalf("completion %+v succeeded, want an error", wc)
	}
	return we
}

// waitSRQLimit waits up to 10 s for the SRQ limit event of srq on events.
func waitSRQLimit(t testing.TB, events <-chan ibverbs.AsyncEvent, srq *ibverbs.SRQ) {
	t.Helper()
	select {
	case ev := <-events:
		if ev.Type != ibverbs.EventSRQLimitReached || ev.SRQ != srq {
			t.Errorf("event %v (SRQ %p), want SRQ_LIMIT_REACHED on %p", ev, ev.SRQ, srq)
		}
	case <-time.After(10 * time.Second):
		t.Error("no SRQ_LIMIT_REACHED event in 10s")
	}
}

// spareRCQP makes an RC QP in RESET on side a's PD and CQ, beside the
// pair's own, closed at the test's end: for tests of state transitions
// and their errors.
func (p *pair) spareRCQP(t testing.TB) *ibverbs.QP {
	t.Helper()
	qp, err := p.a.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.a.cq,
		Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	return qp
}
