//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestCompChannelCloseCQDuringWait races a CQ's Close with a Block, or a
// Wait, on its channel while an event for the CQ is there to be read: the
// waiter reads the event as Close takes the CQ out of the binding's table
// and ibv_destroy_cq waits for the event's ack. The waiter must return
// that CQ or nothing, never an error for an unknown CQ, nor the CQ that
// the closing goroutine creates at once after Close, which malloc may
// place at the freed CQ's address. Each round makes the CQ and an RC pair
// whose write completes on it, with Close started after a growing delay to
// sweep the window; the rounds stop after 300 or 8 s.
func TestCompChannelCloseCQDuringWait(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	gid := rdmatest.GIDIndex(t, ctx, info.Port)
	pd := newPD(t, ctx)
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	buf := newBuffer(t, 4096)
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, mr) })
	peerCQ, err := ctx.CreateCQ(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, peerCQ) })
	cp := ibverbs.ConnParams{Port: info.Port, GIDIndex: gid}
	qpCap := ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}

	// armed returns a CQ on ch with an event for it on the channel,
	// unread: it is armed, and a write's completion raised the event.
	armed := func() *ibverbs.CQ {
		t.Helper()
		cq, err := ctx.CreateCQ(4, ch)
		if err != nil {
			t.Fatal(err)
		}
		a, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, Cap: qpCap})
		if err != nil {
			t.Fatal(err)
		}
		defer closeOK(t, a)
		b, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: peerCQ, Cap: qpCap})
		if err != nil {
			t.Fatal(err)
		}
		defer closeOK(t, b)
		for _, c := range [][2]*ibverbs.QP{{a, b}, {b, a}} {
			ep, err := c[1].Endpoint(info.Port, gid)
			if err != nil {
				t.Fatal(err)
			}
			if err := c[0].Connect(ep, cp); err != nil {
				t.Fatal(err)
			}
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		if err := a.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{mr.SGE(0, 8)}, RemoteAddr: mr.Addr() + 64, RKey: mr.RKey()}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, cq, ibverbs.WCRDMAWrite) // the event stays on the channel
		return cq
	}

	type result struct {
		cq  *ibverbs.CQ
		err error
	}
	var got, none, rounds int
	end := time.Now().Add(8 * time.Second)
	for i := 0; i < 300 && time.Now().Before(end); i++ {
		rounds++
		cq := armed()
		block := i%2 == 0
		start := make(chan struct{})
		closed := make(chan *ibverbs.CQ, 1)
		go func() {
			<-start
			// 0 to 30 µs later than the waiter, by round.
			for t0 := time.Now(); time.Since(t0) < time.Duration(i/2%31)*time.Microsecond; {
			}
			if err := cq.Close(); err != nil {
				t.Errorf("round %d: Close: %v", i, err)
			}
			next, err := ctx.CreateCQ(4, ch)
			if err != nil {
				t.Errorf("round %d: the CQ after Close: %v", i, err)
			}
			closed <- next
		}()
		close(start)
		var r result
		if block {
			r.cq, r.err = ch.Block(20 * time.Millisecond)
		} else {
			wctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			r.cq, r.err = ch.Wait(wctx)
			cancel()
			if errors.Is(r.err, context.DeadlineExceeded) {
				r.err = nil
			}
		}
		next := <-closed
		switch {
		case r.err != nil:
			t.Errorf("round %d (Block %v): the wait during the CQ's Close: %v", i, block, r.err)
		case r.cq == nil:
			none++
		case r.cq != cq:
			t.Errorf("round %d (Block %v): the wait during the CQ's Close returned %p, not the closed CQ %p (the CQ made after it is %p)",
				i, block, r.cq, cq, next)
		default:
			got++
		}
		if next != nil {
			closeOK(t, next)
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("%d rounds: the closing CQ returned %d times, nothing %d times", rounds, got, none)
}
