//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// cqTraffic runs the same exchange on a new RC pair and a new UD pair,
// both with CQs made as o says, and polls every completion with poll: on
// RC a send, a send and a write with immediate data, and a write to a bad
// rkey that fails; on UD a send with immediate data. It returns the
// completions in the order polled, each QP number replaced by 1 for side
// a's QP and 2 for side b's, so that runs compare.
func cqTraffic(t *testing.T, o pairOpts, poll func(*ibverbs.CQ, int) []ibverbs.WC) []ibverbs.WC {
	t.Helper()
	var out []ibverbs.WC
	role := func(p *pair, wcs []ibverbs.WC) {
		for _, wc := range wcs {
			for _, q := range []*uint32{&wc.QPN, &wc.SrcQP} {
				switch *q {
				case p.a.qp.Num():
					*q = 1
				case p.b.qp.Num():
					*q = 2
				}
			}
			out = append(out, wc)
		}
	}

	o.typ = ibverbs.QPTypeRC
	p := newPair(t, o)
	for i := range 3 {
		if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: uint64(11 + i), SGL: []ibverbs.SGE{p.b.mr.SGE(i*512, 512)}}}); err != nil {
			t.Fatal(err)
		}
	}
	sge := func(n int) []ibverbs.SGE { return []ibverbs.SGE{p.a.mr.SGE(0, n)} }
	err := p.a.qp.PostSend([]ibverbs.SendWR{
		{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled, SGL: sge(100)},
		{ID: 2, Opcode: ibverbs.OpSendWithImm, Flags: ibverbs.SendSignaled, SGL: sge(200), Imm: 0x1234},
		{ID: 3, Opcode: ibverbs.OpRDMAWriteWithImm, Flags: ibverbs.SendSignaled, SGL: sge(300), Imm: 0xbeef,
			RemoteAddr: p.b.mr.Addr() + 4096, RKey: p.b.mr.RKey()},
		{ID: 4, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled, SGL: sge(8),
			RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey() ^ 0x5a5a00},
	})
	if err != nil {
		t.Fatal(err)
	}
	role(p, poll(p.a.cq, 4))
	role(p, poll(p.b.cq, 3))

	o.typ = ibverbs.QPTypeUD
	p = newPair(t, o)
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 21, SGL: []ibverbs.SGE{p.b.mr.SGE(0, ibverbs.GRHLen+64)}}}); err != nil {
		t.Fatal(err)
	}
	ah, err := p.a.pd.CreateAHTo(p.b.ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ah)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{ID: 22, Opcode: ibverbs.OpSendWithImm, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}, Imm: 7, AH: ah, RemoteQPN: p.b.ep.QPN, RemoteQKey: p.b.ep.QKey}})
	if err != nil {
		t.Fatal(err)
	}
	role(p, poll(p.a.cq, 1))
	role(p, poll(p.b.cq, 1))
	return out
}

// TestPollEx: the extended poll iterator and its field reads give the
// completions ibv_poll_cq gives, failed ones included, on CQs from
// ibv_create_cq_ex; on CQs from ibv_create_cq PollEx polls as Poll does.
func TestPollEx(t *testing.T) {
	viaPoll := func(cq *ibverbs.CQ, n int) []ibverbs.WC { return pollN(t, cq, n) }
	// viaPollEx polls with room for more completions than there are, so
	// that the iterator meets an empty CQ after the last, and checks that
	// the CQ is empty afterwards.
	viaPollEx := func(cq *ibverbs.CQ, n int) []ibverbs.WC {
		var out []ibverbs.WC
		var got []ibverbs.WCEx
		wcs := make([]ibverbs.WCEx, 16)
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < n && time.Now().Before(deadline) {
			k, err := cq.PollEx(wcs)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, wcs[:k]...)
		}
		time.Sleep(10 * time.Millisecond)
		if k, err := cq.PollEx(wcs); len(got) != n || k != 0 || err != nil {
			t.Fatalf("PollEx took %d completions and then %d (%v), want %d and then none: %+v", len(got), k, err, n, append(got, wcs[:k]...))
		}
		for _, wc := range got {
			if wc.Timestamp != 0 || wc.Wallclock != 0 {
				t.Errorf("completion %+v has timestamps its CQ was not asked for", wc)
			}
			out = append(out, wc.WC)
		}
		return out
	}
	extended := func(cq *ibverbs.CQ, n int) []ibverbs.WC {
		if !cq.Extended() {
			t.Fatal("CreateCQEx made a CQ with ibv_create_cq")
		}
		return viaPollEx(cq, n)
	}
	want := cqTraffic(t, pairOpts{}, viaPoll)
	for i := range want {
		// An extended CQ cannot be asked for the P_Key index.
		want[i].PKeyIndex = 0
	}
	if len(want) != 9 {
		t.Fatalf("%d completions: %+v", len(want), want)
	}
	// The fields Poll gave, checked against what was sent. The byte count
	// and immediate data are a receive's (soft-RoCE sets WCWithImm on a
	// send with immediate data too, with no data).
	ok := func(i int, id uint64, op ibverbs.WCOpcode, n, imm uint32, qpn uint32) {
		t.Helper()
		w := want[i]
		recv := op&ibverbs.WCRecv != 0
		if w.Err() != nil || w.WRID != id || w.Opcode != op || w.QPN != qpn ||
			recv && (w.ByteLen != n || w.Imm != imm || (imm != 0) != (w.Flags&ibverbs.WCWithImm != 0)) {
			t.Errorf("completion %d: %+v; want ID %d, %v, %d bytes, immediate %#x, QP %d", i, w, id, op, n, imm, qpn)
		}
	}
	ok(0, 1, ibverbs.WCSend, 100, 0, 1)
	ok(1, 2, ibverbs.WCSend, 200, 0, 1)
	ok(2, 3, ibverbs.WCRDMAWrite, 300, 0, 1)
	if w := want[3]; w.WRID != 4 || w.Status != ibverbs.WCRemAccessErr || w.QPN != 1 {
		t.Errorf("write to a bad rkey: %+v, want ID 4, %v, QP 1", w, ibverbs.WCRemAccessErr)
	}
	ok(4, 11, ibverbs.WCRecv, 100, 0, 2)
	ok(5, 12, ibverbs.WCRecv, 200, 0x1234, 2)
	ok(6, 13, ibverbs.WCRecvRDMAWithImm, 300, 0xbeef, 2)
	ok(7, 22, ibverbs.WCSend, 64, 0, 1)
	ok(8, 21, ibverbs.WCRecv, ibverbs.GRHLen+64, 7, 2)
	if w := want[8]; w.SrcQP != 1 || w.Flags&ibverbs.WCWithGRH == 0 {
		t.Errorf("UD receive %+v: want source QP 1 (side a's) and a GRH", w)
	}

	for _, c := range []struct {
		name string
		o    pairOpts
		poll func(*ibverbs.CQ, int) []ibverbs.WC
	}{
		{"ibv_create_cq_ex", pairOpts{singleThreaded: true}, extended},
		{"ibv_create_cq", pairOpts{}, viaPollEx},
	} {
		got := cqTraffic(t, c.o, c.poll)
		if len(got) != len(want) {
			t.Fatalf("%s: %d completions, Poll gave %d", c.name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: completion %d:\n PollEx %+v\n Poll   %+v", c.name, i, got[i], want[i])
			}
		}
	}
}

// TestCQTimestamps: a device whose attributes show no completion clock
// refuses timestamped CQs with ErrUnsupported (soft-RoCE); one with a
// clock stamps each completion, in order, and, where it can, with the
// wall-clock time.
func TestCQTimestamps(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	attr, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	wallclock := false
	// The single-threaded promise a device may refuse (it is then
	// dropped); the timestamps it may not.
	for _, init := range []ibverbs.CQInit{{Entries: 8, Timestamps: true}, {Entries: 8, Wallclock: true},
		{Entries: 8, Timestamps: true, SingleThreaded: true}} {
		cq, err := ctx.CreateCQEx(init)
		if attr.CompletionTimestampMask == 0 {
			if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "timestamps") {
				t.Errorf("%+v on a device without a completion clock: %v, want ErrUnsupported", init, err)
			} else {
				t.Logf("%s, as its attributes say: %v", ctx.Name(), err)
			}
			if err == nil {
				closeOK(t, cq)
			}
			continue
		}
		if init.Wallclock && errors.Is(err, errors.ErrUnsupported) {
			t.Logf("no wall-clock timestamps: %v", err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		wallclock = wallclock || init.Wallclock
		closeOK(t, cq)
	}
	if attr.CompletionTimestampMask == 0 {
		return
	}

	start := time.Now()
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, timestamps: true, wallclock: wallclock})
	var wrs []ibverbs.SendWR
	for i := range 4 {
		wrs = append(wrs, ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()})
	}
	if err := p.a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	wcs := pollExN(t, p.a.cq, len(wrs))
	for i, wc := range wcs {
		if wc.Err() != nil || wc.Timestamp == 0 || wc.Timestamp&^attr.CompletionTimestampMask != 0 {
			t.Errorf("completion %d %+v: want success and a timestamp within mask %#x", i, wc, attr.CompletionTimestampMask)
		}
		// Completions of one QP come in order; allow the clock to wrap.
		if i > 0 && (wc.Timestamp-wcs[i-1].Timestamp)&attr.CompletionTimestampMask > attr.CompletionTimestampMask/2 {
			t.Errorf("timestamps go back: %d after %d", wc.Timestamp, wcs[i-1].Timestamp)
		}
		if wall := time.Unix(0, int64(wc.Wallclock)); wallclock && (wall.Before(start.Add(-time.Second)) || wall.After(time.Now().Add(time.Second))) {
			t.Errorf("completion %d: wall clock %v, not between the test's start, %v, and now", i, wall, start)
		}
	}
	t.Logf("device clock %d kHz; timestamps %d to %d", attr.HCACoreClockKHz, wcs[0].Timestamp, wcs[len(wcs)-1].Timestamp)
}
