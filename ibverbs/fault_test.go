//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRemoteAccessError(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 77, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey() ^ 0x5a5a00}})
	if err != nil {
		t.Fatal(err)
	}
	wc := pollN(t, p.a.cq, 1)[0]
	var we *ibverbs.WCError
	if !errors.As(wc.Err(), &we) {
		t.Fatalf("completion %+v succeeded, want an error", wc)
	}
	if we.Status != ibverbs.WCRemAccessErr || we.WRID != 77 || we.QPN != p.a.qp.Num() {
		t.Errorf("got %v, want REM_ACCESS_ERR for wr_id 77", we)
	}
	// The fields the verbs leave undefined in a failed completion are 0.
	if wc.Opcode != 0 || wc.ByteLen != 0 || wc.Imm != 0 || wc.SrcQP != 0 || wc.Flags != 0 ||
		wc.PKeyIndex != 0 || wc.SLID != 0 || wc.SL != 0 || wc.DLIDPathBits != 0 {
		t.Errorf("failed completion %+v: want its undefined fields 0", wc)
	}
	if !strings.Contains(we.Error(), "IBV_WC_REM_ACCESS_ERR") {
		t.Errorf("error text %q lacks the status name", we.Error())
	}
	// The requester's QP is now in the error state.
	if s, err := p.a.qp.State(); err != nil || s != ibverbs.QPStateError {
		t.Errorf("QP state after the error: %v, %v", s, err)
	}
}

func TestRNRRetryExceeded(t *testing.T) {
	// No receive posted on b: a's send meets RNR NAKs until its one retry
	// is spent.
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, params: ibverbs.ConnParams{RNRRetry: 1, MinRNRTimer: 1}})
	err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 5, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 16)}}})
	if err != nil {
		t.Fatal(err)
	}
	if we := pollErr(t, p.a.cq); we.Status != ibverbs.WCRNRRetryExcErr || we.WRID != 5 {
		t.Errorf("got %v, want RNR_RETRY_EXC_ERR", we)
	}
}

func TestFlushOnError(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	recvs := []ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}, {ID: 2, SGL: []ibverbs.SGE{p.b.mr.SGE(64, 64)}}}
	if err := p.b.qp.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	if err := p.b.qp.ToError(); err != nil {
		t.Fatal(err)
	}
	for i, wc := range pollN(t, p.b.cq, 2) {
		if wc.Status != ibverbs.WCWRFlushErr || wc.WRID != uint64(i+1) {
			t.Errorf("completion %d: %+v, want WR_FLUSH_ERR for wr_id %d", i, wc, i+1)
		}
	}
	// Reset and reconnect: the QP works again.
	if err := p.b.qp.Reset(); err != nil {
		t.Fatal(err)
	}
	if s, _ := p.b.qp.State(); s != ibverbs.QPStateReset {
		t.Fatalf("state after Reset: %v", s)
	}
}

func TestSRQSharedByTwoQPs(t *testing.T) {
	e := newSRQEnv(t)
	ctx, srq := e.ctx, e.srq
	// Two receivers share srq; each has its own sender.
	r1, r2 := e.side(t, true), e.side(t, true)
	s1, s2 := e.side(t, false), e.side(t, false)
	if err := srq.Arm(3); err != nil {
		t.Fatal(err)
	}
	events, err := ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	e.connect(t, r1, s1)
	e.connect(t, r2, s2)
	if err := r1.qp.PostRecv(nil); err == nil {
		t.Error("PostRecv on a QP with an SRQ succeeded")
	}
	// The SRQ's receives land in r1's buffer, whoever they are for.
	wrs := make([]ibverbs.RecvWR, 4)
	for i := range wrs {
		wrs[i] = ibverbs.RecvWR{ID: uint64(100 + i), SGL: []ibverbs.SGE{r1.mr.SGE(i*256, 256)}}
	}
	if err := srq.PostRecv(wrs); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*side{s1, s2} {
		copy(s.buf.Bytes(), []byte{byte('A' + i), 'x', 'y'})
		if err := s.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{s.mr.SGE(0, 3)}}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, s.cq, ibverbs.WCSend)
	}
	w1 := pollOK(t, r1.cq, ibverbs.WCRecv)
	w2 := pollOK(t, r2.cq, ibverbs.WCRecv)
	if w1.QPN != r1.qp.Num() || w2.QPN != r2.qp.Num() {
		t.Errorf("receive completions on QPs %#x, %#x; want %#x, %#x", w1.QPN, w2.QPN, r1.qp.Num(), r2.qp.Num())
	}
	seen := map[byte]bool{}
	for _, wc := range []ibverbs.WC{w1, w2} {
		if wc.WRID < 100 || wc.WRID > 103 {
			t.Fatalf("wr_id %d is not one of the SRQ's", wc.WRID)
		}
		seen[r1.buf.Bytes()[(wc.WRID-100)*256]] = true
	}
	if !seen['A'] || !seen['B'] {
		t.Errorf("SRQ buffers hold %v, want messages from both senders", seen)
	}
	// Two of four receives are left, under the limit of 3: the SRQ limit
	// event arrives on the context's event stream.
	waitSRQLimit(t, events, srq)
	// QPs using the SRQ keep it open.
	if err := srq.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("closing an SRQ in use: %v, want EBUSY", err)
	}
}

// TestAsyncEventPort takes the port's netdev down and up again and expects
// PORT_ERR and then PORT_ACTIVE on the event stream. It needs to own the
// netdev, so it runs only where the rxe VM says which netdev that is.
// (rxe on Linux 6.1 raises no QP async events but SQ_DRAINED, see
// TestModifySQDAsync: a QP that fails, or is moved to the error state,
// only flushes its work; see TestRemoteAccessError and TestFlushOnError.)
func TestAsyncEventPort(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	nd := os.Getenv("RXE_NETDEV")
	if nd == "" || os.Getenv("GORPERF_TEST_DEVICE") != os.Getenv("RXE_DEV") {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("in the rxe VM but RXE_NETDEV is unset")
		}
		t.Skip("needs the rxe VM's netdev (RXE_NETDEV) to take down")
	}
	events, err := ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	link := func(state string) {
		t.Helper()
		if out, err := exec.Command("ip", "link", "set", nd, state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v: %s", nd, state, err, out)
		}
	}
	expect := func(want ibverbs.EventType) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("event stream closed")
				}
				if ev.Type == want && ev.Port == info.Port {
					return
				}
				t.Logf("skipping event %v", ev)
			case <-timeout:
				t.Fatalf("no %v event in 10s", want)
			}
		}
	}
	link("down")
	t.Cleanup(func() { rdmatest.LinkUp(t, nd) }) // the VM's routes through nd too, which going down removed
	expect(ibverbs.EventPortErr)
	if pa, err := ctx.QueryPort(info.Port); err != nil || pa.State == ibverbs.PortActive {
		t.Errorf("port after link down: %v, %v", pa.State, err)
	}
	link("up")
	expect(ibverbs.EventPortActive)
	waitFor(t, func() bool {
		pa, err := ctx.QueryPort(info.Port)
		return err == nil && pa.State == ibverbs.PortActive
	})
	// Closing the context ends the stream.
}

func TestCQWait(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	gid := rdmatest.GIDIndex(t, ctx, info.Port)
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	cq, err := ctx.CreateCQ(16, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cq) })
	if cq.Channel() != ch {
		t.Errorf("CQ.Channel = %p, want the channel it was made with, %p", cq.Channel(), ch)
	}
	wcs := make([]ibverbs.WC, 4)

	// Nothing arrives: a cancelled context ends the wait promptly.
	c1, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, err := cq.Wait(c1, wcs); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled Wait took %v", d)
	}
	c2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := cq.Wait(c2, wcs); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want context.DeadlineExceeded", err)
	}

	// A completion wakes the waiter.
	pd := newPD(t, ctx)
	a := newSide(t, ctx, pd, pairOpts{typ: ibverbs.QPTypeRC}, nil, info.Port, gid)
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: a.cq, RecvCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	ep, err := qp.Endpoint(info.Port, gid)
	if err != nil {
		t.Fatal(err)
	}
	cp := ibverbs.ConnParams{Port: info.Port, GIDIndex: gid}
	if err := qp.Connect(a.ep, cp); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Connect(ep, cp); err != nil {
		t.Fatal(err)
	}
	if err := qp.PostRecv([]ibverbs.RecvWR{{ID: 11, SGL: []ibverbs.SGE{a.mr.SGE(4096, 64)}}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := cq.Wait(ctx, wcs)
		if err == nil && (n != 1 || wcs[0].WRID != 11 || wcs[0].Err() != nil) {
			err = errors.New("wrong completion")
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, SGL: []ibverbs.SGE{a.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Wait for a completion: %v", err)
	}
}

// A QP counts once with a CQ that is both its send and its receive CQ:
// CQ.Close said "2 QPs using the CQ" for one (and "1 QPs" for one QP,
// where it now says "1 QP ..., close it first"). Each QP's Close lowers
// the counts it raised, so that both CQs then close.
func TestCQCountsQPOnce(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, pd)
	cq, err := ctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	cq2, err := ctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	caps := ibverbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2}
	both, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, Cap: caps})
	if err != nil {
		t.Fatal(err)
	}
	split, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq2, Cap: caps})
	if err != nil {
		t.Fatal(err)
	}
	busy := func(c *ibverbs.CQ, n int) {
		t.Helper()
		want := fmt.Sprintf("%d QPs using the CQ still open, close them first", n)
		if n == 1 {
			want = "1 QP using the CQ still open, close it first"
		}
		if err := c.Close(); !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), want) {
			t.Errorf("CQ.Close: %v, want EBUSY saying %q", err, want)
		}
	}
	busy(cq, 2)
	busy(cq2, 1)
	closeOK(t, both)
	busy(cq, 1)
	closeOK(t, split)
	closeOK(t, cq)
	closeOK(t, cq2)
}

// TestCloseOrder closes parents before children, children twice and uses
// closed objects: each gives a defined error, never a crash.
func TestCloseOrder(t *testing.T) {
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := ctx.AllocPD()
	buf, _ := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := ctx.CreateCompChannel()
	cq, _ := ctx.CreateCQ(8, ch)
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 2, MaxRecvWR: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]closer{"context": ctx, "pd": pd, "buffer": buf, "cq": cq, "channel": ch} {
		if err := c.Close(); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("closing the %s with live children: %v, want EBUSY", name, err)
		}
	}
	for _, c := range []closer{qp, qp, mr, mr, cq, ch, buf, pd, ctx, ctx} {
		if err := c.Close(); err != nil {
			t.Errorf("Close %T: %v", c, err)
		}
	}
	wc := make([]ibverbs.WC, 1)
	checks := map[string]error{
		"PostSend":    qp.PostSend([]ibverbs.SendWR{{}}),
		"PostRecv":    qp.PostRecv([]ibverbs.RecvWR{{}}),
		"ToError":     qp.ToError(),
		"ReqNotify":   cq.ReqNotify(false),
		"AllocPD":     second(ctx.AllocPD()),
		"CreateCQ":    second(ctx.CreateCQ(1, nil)),
		"RegMR":       second(pd.RegMR(buf, 0)),
		"QueryDevice": second(ctx.QueryDevice()),
		"Events":      second(ctx.Events()),
		"Wait":        second(ch.Wait(timeout(t, 10*time.Second))),
		"Block":       second(ch.Block(0)),
	}
	_, checks["Poll"] = cq.Poll(wc)
	for name, err := range checks {
		if !errors.Is(err, ibverbs.ErrClosed) || !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	// Getters of closed objects answer from what they cached, but a
	// closed MR forgets its keys (TestMRCloseForgetsKeys).
	if k := mr.LKey() | mr.RKey(); k != 0 {
		t.Errorf("a closed MR's keys: %#x, want 0", k)
	}
	_ = qp.Num()
	if mr.Len() != 4096 {
		t.Errorf("Len of a closed MR: %d, want the 4096 it was registered with", mr.Len())
	}
	// But no memory: the MR's buffer is unmapped.
	if b := mr.Bytes(); b != nil {
		t.Errorf("Bytes of a closed MR over a closed buffer: %d bytes, want nil", len(b))
	}
}

func second[T any](_ T, err error) error { return err }

// Query reports an SRQ's capacity and armed limit; Resize grows it while
// it is full, so that more fit than it was made for, and says why it
// refuses a size.
func TestSRQQueryResize(t *testing.T) {
	e := newSRQEnv(t)
	a, err := e.srq.Query()
	if err != nil {
		t.Fatal(err)
	}
	if a.MaxWR < 16 || a.MaxSGE < 1 || a.Limit != 0 {
		t.Fatalf("Query of a 16-receive SRQ: %+v", a)
	}
	if err := e.srq.Arm(4); err != nil {
		t.Fatal(err)
	}
	if a, err = e.srq.Query(); err != nil || a.Limit != 4 {
		t.Fatalf("Query after Arm(4): %+v, %v", a, err)
	}
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, buf)
	mr, err := e.pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mr)
	recvs := func(n int) []ibverbs.RecvWR {
		wrs := make([]ibverbs.RecvWR, n)
		for i := range wrs {
			wrs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{mr.SGE(0, 64)}}
		}
		return wrs
	}
	if err := e.srq.PostRecv(recvs(a.MaxWR)); err != nil {
		t.Fatalf("filling the SRQ: %v", err)
	}
	if err := e.srq.Resize(4 * a.MaxWR); err != nil {
		rdmatest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	b, err := e.srq.Query()
	if err != nil || b.MaxWR < 4*a.MaxWR {
		t.Fatalf("Query after Resize(%d): %+v, %v", 4*a.MaxWR, b, err)
	}
	// Three times the first capacity are posted (rxe refuses the one
	// after MaxWR: it reports the queue's real size).
	if err := e.srq.PostRecv(recvs(2 * a.MaxWR)); err != nil {
		t.Errorf("posting %d more after the resize: %v", 2*a.MaxWR, err)
	}
	if err := e.srq.Resize(0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Resize(0) = %v, want EINVAL", err)
	}
	// A resize the device refuses says why (it gave a bare EINVAL): a
	// shrink below the 3×MaxWR receives posted, below the armed limit of
	// 4, or over the device's limit.
	da, err := e.pd.Context().QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{a.MaxWR, "it cannot shrink below the receives posted to it"},
		{2, "below the limit of 4 the SRQ is armed with (Arm)"},
		{da.MaxSRQWR + 1, fmt.Sprintf("more than the device's limit of %d (DeviceAttr.MaxSRQWR)", da.MaxSRQWR)},
	} {
		if err := e.srq.Resize(tc.n); !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("Resize(%d) = %v, want EINVAL saying %q", tc.n, err, tc.want)
		}
	}
}

// TestSRQInitLimit makes an SRQ armed by SRQInit.Limit, which
// ibv_create_srq alone leaves disarmed on some devices (mlx5), and expects
// its limit event when the receives fall below it.
func TestSRQInitLimit(t *testing.T) {
	e := newSRQEnv(t)
	srq, err := e.pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 16, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, srq) }) // after the QP's, which newSide registers later
	if a, err := srq.Query(); err != nil || a.Limit != 2 {
		t.Fatalf("Query of an SRQ made with Limit 2: %+v, %v", a, err)
	}
	if _, err := e.pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 16, Limit: -1}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateSRQ with Limit -1: %v, want EINVAL", err)
	}
	events, err := e.ctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	r := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeRC}, srq, e.port, e.gid)
	s := e.side(t, false)
	e.connect(t, r, s)
	if err := srq.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{r.mr.SGE(0, 64)}},
		{ID: 2, SGL: []ibverbs.SGE{r.mr.SGE(64, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{s.mr.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, s.cq, ibverbs.WCSend)
	pollOK(t, r.cq, ibverbs.WCRecv)
	waitSRQLimit(t, events, srq)
}

// TestWCErrorIsStatus: a failed completion's error matches its status
// with errors.Is, also wrapped, and no other status: an RDMA READ past
// the end of the peer's MR fails with REM_ACCESS_ERR, and a send posted
// after it on the QP, now in the error state, is flushed (WR_FLUSH_ERR).
// errors.As takes the status out.
func TestWCErrorIsStatus(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 9, Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}, RemoteAddr: p.b.mr.Addr() + uint64(p.b.mr.Len()) - 32, RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	werr := pollN(t, p.a.cq, 1)[0].Err()
	wrapped := fmt.Errorf("get key 9: %w", werr)
	for _, e := range []error{werr, wrapped} {
		if !errors.Is(e, ibverbs.WCRemAccessErr) {
			t.Errorf("errors.Is(%v, WCRemAccessErr) = false, want true", e)
		}
		if errors.Is(e, ibverbs.WCWRFlushErr) || errors.Is(e, ibverbs.WCRemOpErr) || errors.Is(e, ibverbs.ErrClosed) ||
			errors.Is(e, syscall.EIO) {
			t.Errorf("%v matches a status or error other than its own", e)
		}
		var st ibverbs.WCStatus
		if !errors.As(e, &st) || st != ibverbs.WCRemAccessErr {
			t.Errorf("errors.As(%v, *WCStatus): %v, want REM_ACCESS_ERR", e, st)
		}
	}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 10, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 16)}}}); err != nil {
		t.Fatal(err)
	}
	if werr := pollN(t, p.a.cq, 1)[0].Err(); !errors.Is(werr, ibverbs.WCWRFlushErr) || errors.Is(werr, ibverbs.WCRemAccessErr) {
		t.Errorf("the send after the failure: %v, want WR_FLUSH_ERR alone", werr)
	}
}

// TestSRQArmSaysWhy: Arm of a limit above the SRQ's size, which the
// device refuses, says the size, where it read "ibv_modify_srq: invalid
// argument" alone; the error matches syscall.EINVAL, and the SRQ keeps
// its limit.
func TestSRQArmSaysWhy(t *testing.T) {
	e := newSRQEnv(t)
	a, err := e.srq.Query()
	if err != nil {
		t.Fatal(err)
	}
	err = e.srq.Arm(a.MaxWR + 1)
	want := fmt.Sprintf("ibv_modify_srq: limit %d, the SRQ holds %d receives: invalid argument", a.MaxWR+1, a.MaxWR)
	if !errors.Is(err, syscall.EINVAL) || err.Error() != want {
		t.Errorf("Arm(%d) of an SRQ of %d: %v; want EINVAL: %q", a.MaxWR+1, a.MaxWR, err, want)
	}
	if b, err := e.srq.Query(); err != nil || b.Limit != 0 {
		t.Errorf("Query after the refused Arm: %+v, %v", b, err)
	}
}
