//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestUDShortReceive pins what the Conn and RemoteUD docs say of a UD
// receive too short for the GRH and the datagram: on soft-RoCE it
// completes with WCLocQPOpErr and moves the QP to the error state, while
// the Conn's Done stays open and Err nil; the QP comes back through
// RESET, INIT (with the port, P_Key index and Q_Key it had), RTR and
// RTS, and then takes datagrams again.
func TestUDShortReceive(t *testing.T) {
	n := device(t)
	cfg := &rdmacm.Config{UD: true}
	l := listen(t, n.IP, cfg)
	srv, cli := connect(t, l, n.IP, cfg)
	ah, qpn, qkey := cli.RemoteUD()
	const grh = 40
	sm := register(t, srv.PD(), 4096, 0)
	cm := register(t, cli.PD(), 4096, 0)
	msg := []byte("a datagram longer than its receive")
	copy(cm.buf.Bytes(), msg)
	sendUD := func() {
		t.Helper()
		err := cli.QP().PostSend([]ibverbs.SendWR{{ID: 3, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{cm.mr.SGE(0, len(msg))}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}})
		if err != nil {
			t.Fatal(err)
		}
		waitWC(t, cli.SendCQ(), 20*time.Second)
	}
	before, err := srv.QP().Query()
	if err != nil {
		t.Fatal(err)
	}

	postRecv(t, srv, sm, 0, grh+len(msg)-1) // one byte short
	sendUD()
	_, err = pollWC(srv.RecvCQ(), 20*time.Second)
	if !errors.Is(err, ibverbs.WCLocQPOpErr) {
		t.Fatalf("a receive of GRH + %d bytes for a datagram of %d: %v, want WCLocQPOpErr", len(msg)-1, len(msg), err)
	}
	t.Logf("the short receive: %v", err)
	if a, err := srv.QP().Query(); err != nil || a.State != ibverbs.QPStateError {
		t.Errorf("the QP after the short receive: %v, %v; want the error state", a.State, err)
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case <-srv.Done():
		t.Error("Done closed for the UD QP's error state")
	default:
	}
	if err := srv.Err(); err != nil {
		t.Errorf("Err after the short receive: %v, want nil", err)
	}

	// The way back: RESET, then INIT with what the QP had, RTR and RTS.
	qp := srv.QP()
	if err := qp.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateInit, PKeyIndex: before.PKeyIndex, Port: before.Port, QKey: before.QKey},
		ibverbs.QPAttrState|ibverbs.QPAttrPKeyIndex|ibverbs.QPAttrPort|ibverbs.QPAttrQKey); err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTR}, ibverbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS, SQPSN: before.SQPSN}, ibverbs.QPAttrState|ibverbs.QPAttrSQPSN); err != nil {
		t.Fatal(err)
	}
	postRecv(t, srv, sm, 0, grh+len(msg))
	sendUD()
	wc := waitWC(t, srv.RecvCQ(), 20*time.Second)
	if int(wc.ByteLen) != grh+len(msg) || !bytes.Equal(sm.buf.Bytes()[grh:grh+len(msg)], msg) {
		t.Errorf("after the QP's reset: received %d bytes, payload %q", wc.ByteLen, sm.buf.Bytes()[grh:wc.ByteLen])
	}
}
