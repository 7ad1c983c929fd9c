//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestUDCloseKeepsAHWhileQPOpen: a UD Conn's Close that fails to destroy
// its QP (EBUSY: a receive batch of the QP is open) leaves the Conn's AH
// open, as the QP, which can still send with it, is; the next Close, once
// the batch is closed, closes both. (The old Close destroyed the AH
// first, and left a QP open without the AH that addresses its sends.)
func TestUDCloseKeepsAHWhileQPOpen(t *testing.T) {
	n := device(t)
	cfg := &rdmacm.Config{UD: true}
	l := listen(t, n.IP, cfg)
	srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n.IP, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	ah, _, _ := cli.RemoteUD()
	if ah == nil {
		t.Fatal("a UD Conn from Dial has no AH")
	}
	batch, err := cli.QP().NewRecvBatch([]ibverbs.RecvWR{{ID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); !errors.Is(err, syscall.EBUSY) {
		batch.Close()
		t.Fatalf("Close with a receive batch of the QP open: %v, want EBUSY", err)
	}
	if ah.Raw() == nil {
		t.Error("the failed Close destroyed the AH while the QP that sends with it stays open")
	}
	closeOK(t, batch)
	if err := cli.Close(); err != nil {
		t.Fatalf("Close again once the batch is closed: %v", err)
	}
	if ah.Raw() != nil {
		t.Error("the AH is open after a Close that returned nil")
	}
}

// TestUDCloseWhileSending: a UD Conn's Close while another goroutine
// posts sends addressed with the Conn's AH. The QP closes first, waiting
// for a PostSend under way, so that every send fails for the QP being
// closed (ErrClosed), never for its AH: a post in between would have
// handed the provider a destroyed AH, which the old order (AH, then QP)
// allowed (-race reported the AH's Close against the PostSend's read).
func TestUDCloseWhileSending(t *testing.T) {
	n := device(t)
	cfg := &rdmacm.Config{UD: true, Cap: ibverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 4}}
	l := listen(t, n.IP, cfg)
	for round := range 4 {
		srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n.IP, cfg)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// On the Conn's PD, which then stays open: Close fails with
		// EBUSY for it, having closed the QP and the AH.
		mr, err := cli.PD().RegMR(buf, ibverbs.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		ah, qpn, qkey := cli.RemoteUD()
		qp, cq := cli.QP(), cli.SendCQ()
		var wg sync.WaitGroup
		var sendErr error
		posted := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			wrs := []ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
				SGL: []ibverbs.SGE{mr.SGE(0, 64)}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}}
			wcs := make([]ibverbs.WC, 16)
			for i := 0; ; i++ {
				err := qp.PostSend(wrs)
				if i == 0 {
					close(posted)
				}
				if err != nil && !errors.Is(err, syscall.ENOMEM) { // ENOMEM: the send queue is full
					sendErr = err
					return
				}
				// Once the CQ is closed, Poll fails, and the next
				// PostSend finds the QP closed before it.
				cq.Poll(wcs)
			}
		}()
		<-posted
		time.Sleep(time.Duration(round) * time.Millisecond)
		first := cli.Close()
		wg.Wait()
		var pe *ibverbs.PostError
		if errors.As(sendErr, &pe) || !errors.Is(sendErr, ibverbs.ErrClosed) {
			t.Errorf("round %d: a PostSend during Close: %v, want ErrClosed for the QP", round, sendErr)
		}
		closeOK(t, mr)
		closeOK(t, buf)
		if err := cli.Close(); err != nil {
			t.Fatalf("round %d: Close once the MR is closed: %v (the first: %v)", round, err, first)
		}
		closeOK(t, srv)
	}
}
