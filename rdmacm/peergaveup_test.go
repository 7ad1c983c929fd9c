//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestDialPeerGaveUpAfterReply: a listener that replies (rdma_accept) and
// at once destroys its QP and ID, which has its CM send a REJ, leaves
// the dialer's librdmacm to send its RTU after the REJ has come: that
// fails with EINVAL, and rdma_get_cm_event reports CONNECT_ERROR. Dial's
// error then says that the peer gave up after replying, and matches
// ErrDisconnected, where it said only "connection error
// (RDMA_CM_EVENT_CONNECT_ERROR: invalid argument)". A Dial whose own QP
// refuses the transitions (Config.Prepare moved it to the error state)
// gets CONNECT_ERROR with EINVAL too, and is not blamed on the peer.
func TestDialPeerGaveUpAfterReply(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	lch, lid := rawListener(t, n.IP)
	gaveUp := 0
	for i := 0; i < 10 && gaveUp < 3; i++ {
		type result struct {
			c   *rdmacm.Conn
			err error
		}
		dialed := make(chan result, 1)
		go func() {
			c, err := rdmacm.Dial(timeout(t, 20*time.Second), lid.LocalAddr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
			dialed <- result{c, err}
		}()
		ev, err := lch.Await(timeout(t, 10*time.Second), rdmacm.EventConnectRequest)
		if err != nil {
			t.Fatal(err)
		}
		ctx, pd, cq, qp := rawQP(t, ev.ID)
		if err := ev.ID.Accept(nil); err != nil {
			t.Fatal(err)
		}
		closeOK(t, qp)
		closeOK(t, ev.ID)
		closeOK(t, cq)
		closeOK(t, pd)
		closeOK(t, ctx)
		r := <-dialed
		if r.c != nil {
			// The RTU went before the REJ came: the connection ends.
			select {
			case <-r.c.Done():
			case <-time.After(10 * time.Second):
				t.Errorf("Dial succeeded, and its connection to a peer that destroyed its ID is up 10 s later")
			}
			closeOK(t, r.c)
			continue
		}
		t.Logf("Dial: %v", r.err)
		var ee *rdmacm.EventError
		if errors.As(r.err, &ee) && ee.Event == rdmacm.EventConnectError {
			if !errors.Is(r.err, rdmacm.ErrDisconnected) || !strings.Contains(r.err.Error(), "gave up on the connection after replying") {
				t.Errorf("Dial whose peer gave up after its reply: %v, want ErrDisconnected saying so", r.err)
			}
			gaveUp++
		}
	}
	if gaveUp == 0 {
		t.Error("no Dial got CONNECT_ERROR from a peer that gave up after replying, in 10 tries")
	}

	// This side's own failure: not the peer's.
	l := listen(t, n.IP, nil)
	acc := acceptOne(timeout(t, 20*time.Second), l)
	c, err := rdmacm.Dial(timeout(t, 10*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String(),
		Prepare: func(c *rdmacm.Conn) (func() error, error) { return nil, c.QP().ToError() }})
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, syscall.EINVAL) || errors.Is(err, rdmacm.ErrDisconnected) {
		t.Errorf("Dial whose QP was in the error state: %v, want EINVAL, not ErrDisconnected", err)
	}
	<-acc
}

// rawQP opens id's device and makes a PD, a CQ and an RC QP on it; the
// caller closes them, the QP first.
func rawQP(t *testing.T, id *rdmacm.ID) (*ibverbs.Context, *ibverbs.PD, *ibverbs.CQ, *ibverbs.QP) {
	t.Helper()
	ctx, err := id.Context()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := ctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := id.CreateQP(pd, ibverbs.QPInit{SendCQ: cq, RecvCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, pd, cq, qp
}
