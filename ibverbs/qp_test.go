//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

func TestRCSend(t *testing.T) { bothPostPaths(t, testRCSend) }

func testRCSend(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	const n = 3000 // more than one 1024-byte MTU
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 7, SGL: []ibverbs.SGE{p.b.mr.SGE(0, n)}}}); err != nil {
		t.Fatal(err)
	}
	fill(p.a.buf.Bytes()[:n], 1)
	err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, n)}}})
	if err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCSend); wc.WRID != 1 {
		t.Errorf("send wr_id %d", wc.WRID)
	}
	wc := pollOK(t, p.b.cq, ibverbs.WCRecv)
	if wc.WRID != 7 || wc.ByteLen != n || wc.QPN != p.b.qp.Num() || wc.Flags&ibverbs.WCWithImm != 0 {
		t.Errorf("receive completion %+v", wc)
	}
	if !bytes.Equal(p.a.buf.Bytes()[:n], p.b.buf.Bytes()[:n]) {
		t.Error("received bytes differ from those sent")
	}
}

func TestRCSendWithImm(t *testing.T) { bothPostPaths(t, testRCSendWithImm) }

func testRCSendWithImm(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	fill(p.a.buf.Bytes()[:64], 9)
	err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSendWithImm, Flags: ibverbs.SendSignaled,
		Imm: 0xdeadbeef, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	wc := pollOK(t, p.b.cq, ibverbs.WCRecv)
	if wc.Flags&ibverbs.WCWithImm == 0 || wc.Imm != 0xdeadbeef {
		t.Errorf("imm: flags %v imm %#x, want WITH_IMM 0xdeadbeef", wc.Flags, wc.Imm)
	}
	if !bytes.Equal(p.a.buf.Bytes()[:64], p.b.buf.Bytes()[:64]) {
		t.Error("payload differs")
	}
}

func TestRCWrite(t *testing.T) { bothPostPaths(t, testRCWrite) }

func testRCWrite(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	src := p.a.buf.Bytes()[100:4196]
	fill(src, 3)
	err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 5, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(100, len(src))}, RemoteAddr: p.b.mr.Addr() + 8192, RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	if !bytes.Equal(src, p.b.buf.Bytes()[8192:8192+len(src)]) {
		t.Error("written bytes differ")
	}
	if k, _ := p.b.cq.Poll(make([]ibverbs.WC, 1)); k != 0 {
		t.Error("an RDMA write without immediate completed on the target")
	}
}

func TestRCWriteWithImm(t *testing.T) { bothPostPaths(t, testRCWriteWithImm) }

func testRCWriteWithImm(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 3}}); err != nil {
		t.Fatal(err)
	}
	fill(p.a.buf.Bytes()[:512], 5)
	err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWriteWithImm, Flags: ibverbs.SendSignaled,
		Imm: 42, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 512)}, RemoteAddr: p.b.mr.Addr() + 1024, RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	wc := pollOK(t, p.b.cq, ibverbs.WCRecvRDMAWithImm)
	if wc.Imm != 42 || wc.WRID != 3 || wc.ByteLen != 512 {
		t.Errorf("target completion %+v", wc)
	}
	if !bytes.Equal(p.a.buf.Bytes()[:512], p.b.buf.Bytes()[1024:1536]) {
		t.Error("written bytes differ")
	}
}

func TestRCRead(t *testing.T) { bothPostPaths(t, testRCRead) }

func testRCRead(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	fill(p.b.buf.Bytes()[:5000], 11)
	err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 5000)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMARead); wc.ByteLen != 5000 {
		t.Errorf("read byte_len %d", wc.ByteLen)
	}
	if !bytes.Equal(p.a.buf.Bytes()[:5000], p.b.buf.Bytes()[:5000]) {
		t.Error("read bytes differ")
	}
}

func TestRCAtomics(t *testing.T) { bothPostPaths(t, testRCAtomics) }

func testRCAtomics(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	remote := p.b.buf.Bytes()[64:72]
	local := p.a.buf.Bytes()[0:8]
	ne := binary.NativeEndian
	ne.PutUint64(remote, 100)

	post := func(wr ibverbs.SendWR) {
		t.Helper()
		wr.Flags = ibverbs.SendSignaled
		wr.SGL = []ibverbs.SGE{p.a.mr.SGE(0, 8)}
		wr.RemoteAddr, wr.RKey = p.b.mr.Addr()+64, p.b.mr.RKey()
		if err := p.a.qp.PostSend([]ibverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
	}
	post(ibverbs.SendWR{Opcode: ibverbs.OpAtomicFetchAdd, CompareAdd: 5})
	pollOK(t, p.a.cq, ibverbs.WCFetchAdd)
	if got, now := ne.Uint64(local), ne.Uint64(remote); got != 100 || now != 105 {
		t.Errorf("fetch-and-add: fetched %d, remote now %d; want 100, 105", got, now)
	}
	post(ibverbs.SendWR{Opcode: ibverbs.OpAtomicCmpAndSwp, CompareAdd: 105, Swap: 7})
	pollOK(t, p.a.cq, ibverbs.WCCompSwap)
	if got, now := ne.Uint64(local), ne.Uint64(remote); got != 105 || now != 7 {
		t.Errorf("compare-and-swap hit: fetched %d, remote now %d; want 105, 7", got, now)
	}
	post(ibverbs.SendWR{Opcode: ibverbs.OpAtomicCmpAndSwp, CompareAdd: 999, Swap: 1})
	pollOK(t, p.a.cq, ibverbs.WCCompSwap)
	if got, now := ne.Uint64(local), ne.Uint64(remote); got != 7 || now != 7 {
		t.Errorf("compare-and-swap miss: fetched %d, remote now %d; want 7, 7", got, now)
	}
}

// TestPostListSGEsInline posts, in one call, a list of writes mixing
// several SGEs, inline data and unsignalled requests, and checks every byte.
func TestPostListSGEsInline(t *testing.T) { bothPostPaths(t, testPostListSGEsInline) }

func testPostListSGEsInline(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC, cap: ibverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 16, MaxSendSGE: 3, MaxRecvSGE: 1, MaxInline: 128}})
	// rxe's ibv_wr_set_sge_list in rdma-core before commit 406cd2ad0
	// (Debian 12 has 44.0) counts the first SGE's length once per SGE: a
	// provider bug that no caller can work around, so on rxe the ibv_wr_*
	// run gathers only inline data (which the binding gathers itself).
	da, err := p.ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	buggyWRSGEList := da.VendorID == 0xffffff // soft-RoCE
	if wrapi && buggyWRSGEList {
		t.Log("rxe: requests with several SGEs left out of the ibv_wr_* run (rdma-core bug fixed in 406cd2ad0)")
	}
	if p.a.qp.Cap().MaxInline < 128 || p.a.qp.Cap().MaxSendSGE < 3 {
		t.Fatalf("granted %+v", p.a.qp.Cap())
	}
	src := p.a.buf.Bytes()
	fill(src[:8192], 21)
	const n = 32
	wrs := make([]ibverbs.SendWR, n)
	for i := range wrs {
		off := i * 100
		wrs[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite,
			RemoteAddr: p.b.mr.Addr() + uint64(off), RKey: p.b.mr.RKey()}
		switch i % 3 {
		case 0: // three SGEs gathered into 100 contiguous remote bytes
			wrs[i].SGL = []ibverbs.SGE{p.a.mr.SGE(off, 30), p.a.mr.SGE(off+30, 30), p.a.mr.SGE(off+60, 40)}
			if wrapi && buggyWRSGEList {
				wrs[i].SGL = []ibverbs.SGE{p.a.mr.SGE(off, 100)}
			}
		case 1: // inline
			wrs[i].SGL = []ibverbs.SGE{p.a.mr.SGE(off, 60), p.a.mr.SGE(off+60, 40)}
			wrs[i].Flags = ibverbs.SendInline
		default:
			wrs[i].SGL = []ibverbs.SGE{p.a.mr.SGE(off, 100)}
		}
	}
	wrs[n-1].Flags |= ibverbs.SendSignaled // one completion covers the list
	if err := p.a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != n-1 {
		t.Errorf("completion for wr_id %d, want %d (only the last is signalled)", wc.WRID, n-1)
	}
	for i := range n {
		if got, want := p.b.buf.Bytes()[i*100:i*100+100], src[i*100:i*100+100]; !bytes.Equal(got, want) {
			t.Errorf("request %d (%v, %d SGEs): the remote bytes differ", i, wrs[i].Flags, len(wrs[i].SGL))
		}
	}
	// Too many SGEs for the QP: refused before anything reaches the device.
	bad := []ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWrite, SGL: make([]ibverbs.SGE, 9)}}
	var pe *ibverbs.PostError
	if err := p.a.qp.PostSend(bad); !errors.As(err, &pe) || pe.Index != 0 {
		t.Errorf("PostSend with 9 SGEs = %v, want a PostError at 0", err)
	}
}

// TestPostSendLists posts ten writes as lists of three (3, 3, 3, 1), each
// list its own ibv_post_send in one cgo call, and checks every completion
// and byte; then lists of sends and of receives with a request the QP must
// refuse, whose requests before it are still posted.
func TestPostSendLists(t *testing.T) { bothPostPaths(t, testPostSendLists) }

func testPostSendLists(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	src := p.a.buf.Bytes()
	fill(src[:640], 5)
	wrs := make([]ibverbs.SendWR, 10)
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(i*64, 64)}, RemoteAddr: p.b.mr.Addr() + uint64(4096+i*64), RKey: p.b.mr.RKey()}
	}
	if err := p.a.qp.PostSendLists(wrs, 3); err != nil {
		t.Fatal(err)
	}
	for i, wc := range pollN(t, p.a.cq, len(wrs)) {
		if wc.Status != ibverbs.WCSuccess || wc.Opcode != ibverbs.WCRDMAWrite || wc.WRID != uint64(i) {
			t.Errorf("completion %d: %+v, want a successful write with wr_id %d", i, wc, i)
		}
	}
	if !bytes.Equal(src[:640], p.b.buf.Bytes()[4096:4096+640]) {
		t.Error("remote bytes differ")
	}
	if err := p.a.qp.PostSendLists(wrs, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostSendLists with lists of 0 = %v, want EINVAL", err)
	}

	bad := append([]ibverbs.SendWR(nil), wrs[:4]...)
	bad[2].SGL = make([]ibverbs.SGE, 9)
	var pe *ibverbs.PostError
	if err := p.a.qp.PostSendLists(bad, 1); !errors.As(err, &pe) || pe.Index != 2 || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("PostSendLists with 9 SGEs in the third request = %v, want a PostError at 2 wrapping EINVAL", err)
	}
	for i, wc := range pollN(t, p.a.cq, 2) {
		if wc.Status != ibverbs.WCSuccess || wc.WRID != uint64(i) {
			t.Errorf("completion %d after the refusal: %+v, want wr_id %d", i, wc, i)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if k, _ := p.a.cq.Poll(make([]ibverbs.WC, 4)); k != 0 {
		t.Errorf("%d completions beyond the two requests before the refused one", k)
	}

	// The same rule for receives: the one before the refused one is posted,
	// and a send lands in it.
	recvs := []ibverbs.RecvWR{{ID: 70, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}, {ID: 71, SGL: make([]ibverbs.SGE, 9)}}
	if err := p.b.qp.PostRecv(recvs); !errors.As(err, &pe) || pe.Index != 1 {
		t.Fatalf("PostRecv with 9 SGEs in the second request = %v, want a PostError at 1", err)
	}
	send := []ibverbs.SendWR{{ID: 80, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}}
	if err := p.a.qp.PostSend(send); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 70 {
		t.Errorf("the send landed in receive %d, want 70", wc.WRID)
	}
}

func TestUC(t *testing.T) { bothPostPaths(t, testUC) }

func testUC(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeUC})
	fill(p.a.buf.Bytes()[:2048], 31)
	err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 2048)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	// UC has no acknowledgements: the send side completes when the data is
	// on the wire, so wait for the bytes, bounded.
	waitFor(t, func() bool { return bytes.Equal(p.a.buf.Bytes()[:2048], p.b.buf.Bytes()[:2048]) })
}

func TestUD(t *testing.T) { bothPostPaths(t, testUD) }

func testUD(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeUD})
	const grh, n = 40, 512
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 9, SGL: []ibverbs.SGE{p.b.mr.SGE(0, grh+n)}}}); err != nil {
		t.Fatal(err)
	}
	ah, err := p.a.pd.CreateAHTo(p.b.ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ah)
	fill(p.a.buf.Bytes()[:n], 41)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, n)}, AH: ah, RemoteQPN: p.b.ep.QPN, RemoteQKey: p.b.ep.QKey}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	wc := pollOK(t, p.b.cq, ibverbs.WCRecv)
	if wc.Flags&ibverbs.WCWithGRH == 0 || wc.ByteLen != grh+n || wc.SrcQP != p.a.qp.Num() {
		t.Errorf("UD receive %+v: want GRH, %d bytes, source QP %#x", wc, grh+n, p.a.qp.Num())
	}
	got := p.b.buf.Bytes()
	if !bytes.Equal(got[grh:grh+n], p.a.buf.Bytes()[:n]) {
		t.Error("UD payload differs")
	}
	// On RoCE v2 over IPv4 the last 20 bytes of the 40-byte GRH area hold
	// the IPv4 header; its source address is the sender's.
	if p.a.ep.GID.Addr().Is4() {
		src := p.a.ep.GID.Addr().As4()
		if !bytes.Equal(got[20+12:20+16], src[:]) {
			t.Errorf("GRH area %x: IPv4 source is not %v", got[:grh], p.a.ep.GID.Addr())
		}
	}
}

// TestUDEndpointQKey connects a UD pair with a Q_Key of its own: each
// QP's Endpoint reports the default while the QP is in RESET, and the
// Q_Key ToInit gave it after, which a peer addresses sends with.
func TestUDEndpointQKey(t *testing.T) {
	const qkey = 0x1234
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeUD, params: ibverbs.ConnParams{QKey: qkey}})
	if p.b.ep.QKey != 0x11111111 {
		t.Errorf("Endpoint of a UD QP in RESET: Q_Key %#x, want the default 0x11111111", p.b.ep.QKey)
	}
	ep, err := p.b.qp.Endpoint(p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	if ep.QKey != qkey {
		t.Errorf("Endpoint of a UD QP connected with Q_Key %#x: %#x", qkey, ep.QKey)
	}
	const grh, n = 40, 64
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 9, SGL: []ibverbs.SGE{p.b.mr.SGE(0, grh+n)}}}); err != nil {
		t.Fatal(err)
	}
	ah, err := p.a.pd.CreateAHTo(ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ah)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, n)}, AH: ah, RemoteQPN: ep.QPN, RemoteQKey: ep.QKey}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	// A send with the wrong Q_Key is dropped: this waits in vain for it.
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.ByteLen != grh+n {
		t.Errorf("receive of %d bytes, want %d", wc.ByteLen, grh+n)
	}
}

// TestRdAtomicNegotiation checks the read/atomic depths Connect sets by
// default: each QP serves as many as its device allows, and offers that
// in its Endpoint; each issues at most what the peer offered.
func TestRdAtomicNegotiation(t *testing.T) {
	o := pairOpts{typ: ibverbs.QPTypeRC}
	p := newPair(t, o)
	da, err := p.ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	serve := uint8(min(max(da.MaxQPRdAtom, 1), 255))
	if p.a.ep.RdAtomic != serve {
		t.Errorf("Endpoint offers %d reads, the device serves %d", p.a.ep.RdAtomic, serve)
	}
	a, err := p.a.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	issue := uint8(min(da.MaxQPInitRdAtom, int(serve)))
	if a.MaxDestRdAtomic != serve || a.MaxRdAtomic != issue {
		t.Errorf("max_dest_rd_atomic %d, max_rd_atomic %d; want %d and %d", a.MaxDestRdAtomic, a.MaxRdAtomic, serve, issue)
	}
	// A peer that offers fewer caps the depth; the reads still work.
	q := newPair(t, o)
	for _, s := range []*side{q.a, q.b} {
		if err := s.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateReset}, ibverbs.QPAttrState); err != nil {
			t.Fatal(err)
		}
	}
	small := q.b.ep
	small.RdAtomic = 2
	params := ibverbs.ConnParams{Port: q.port, GIDIndex: q.gid}
	if err := q.a.qp.Connect(small, params); err != nil {
		t.Fatal(err)
	}
	bp := params
	bp.MaxDestRdAtomic = 2
	if err := q.b.qp.Connect(q.a.ep, bp); err != nil {
		t.Fatal(err)
	}
	a, err = q.a.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.b.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	if a.MaxRdAtomic != 2 || b.MaxDestRdAtomic != 2 {
		t.Errorf("after an offer of 2: requester max_rd_atomic %d, responder max_dest_rd_atomic %d", a.MaxRdAtomic, b.MaxDestRdAtomic)
	}
	var wrs []ibverbs.SendWR
	for i := range 8 {
		wrs = append(wrs, ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{q.a.mr.SGE(i*64, 64)}, RemoteAddr: q.b.mr.Addr() + uint64(i*64), RKey: q.b.mr.RKey()})
	}
	fill(q.b.buf.Bytes()[:512], 5)
	if err := q.a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	for _, wc := range pollN(t, q.a.cq, 8) {
		if err := wc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(q.a.buf.Bytes()[:512], q.b.buf.Bytes()[:512]) {
		t.Error("read bytes differ")
	}
}

// bothPostPaths runs a test once with ibv_post_send and once with the
// ibv_wr_* API (QPInit.WRAPI). The second is skipped where the provider
// does not have the API.
func bothPostPaths(t *testing.T, test func(t *testing.T, wrapi bool)) {
	t.Run("post_send", func(t *testing.T) { test(t, false) })
	t.Run("wr_api", func(t *testing.T) { test(t, true) })
}

// A QP made for the ibv_wr_* API refuses, before the device sees it, an
// opcode it was not created with; the requests before it are posted.
func TestWRAPIRefusesOtherOpcodes(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, wrapi: true})
	copy(p.a.buf.Bytes(), "wr api")
	ok := ibverbs.SendWR{ID: 1, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 6)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	inv := ibverbs.SendWR{ID: 2, Opcode: ibverbs.OpLocalInv}
	var pe *ibverbs.PostError
	err := p.a.qp.PostSend([]ibverbs.SendWR{ok, inv})
	if !errors.As(err, &pe) || pe.Index != 1 || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("PostSend(write, local invalidate) = %v, want a PostError at 1 with EINVAL", err)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != 1 {
		t.Errorf("completion for request %d, want 1", wc.WRID)
	}
	if got := string(p.b.buf.Bytes()[:6]); got != "wr api" {
		t.Errorf("the peer holds %q, want %q", got, "wr api")
	}
	if err := p.a.qp.PostSendLists([]ibverbs.SendWR{ok, ok, inv}, 1); !errors.As(err, &pe) || pe.Index != 2 {
		t.Fatalf("PostSendLists(write, write, local invalidate) = %v, want a PostError at 2", err)
	}
	if n := len(pollN(t, p.a.cq, 2)); n != 2 {
		t.Errorf("%d completions, want 2", n)
	}
}

// ConnParams' retry counts: zero is 7, a negative value none, as the QP
// reports them once connected.
func TestConnParamsRetries(t *testing.T) {
	for _, c := range []struct {
		retry, rnr         int
		wantRetry, wantRNR uint8
	}{{0, 0, 7, 7}, {-1, -1, 0, 0}, {3, 9, 3, 7}} {
		p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, params: ibverbs.ConnParams{RetryCnt: c.retry, RNRRetry: c.rnr}})
		a, err := p.a.qp.Query()
		if err != nil {
			t.Fatal(err)
		}
		if a.RetryCnt != c.wantRetry || a.RNRRetry != c.wantRNR {
			t.Errorf("RetryCnt %d, RNRRetry %d: the QP has %d and %d, want %d and %d", c.retry, c.rnr, a.RetryCnt, a.RNRRetry, c.wantRetry, c.wantRNR)
		}
	}
}

// TestPortGIDRange: a port or GID index beyond the verbs' 8 bits is
// refused, where it wrapped (GID 256 became GID 0, port 257 port 1).
func TestPortGIDRange(t *testing.T) {
	e := newSRQEnv(t)
	s := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeRC}, nil, e.port, e.gid)
	for _, c := range []struct{ port, gid int }{{e.port + 256, e.gid}, {e.port, e.gid + 256}, {e.port, -1}, {-1, e.gid}} {
		if err := s.qp.ToInit(ibverbs.ConnParams{Port: c.port, GIDIndex: c.gid}); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("ToInit on port %d, GID %d: %v, want EINVAL", c.port, c.gid, err)
		}
		if ah, err := e.pd.CreateAHTo(s.ep, c.port, c.gid); !errors.Is(err, syscall.EINVAL) {
			if ah != nil {
				closeOK(t, ah)
			}
			t.Errorf("CreateAHTo from port %d, GID %d: %v, want EINVAL", c.port, c.gid, err)
		}
	}
}

// TestConcurrentPosts: goroutines posting to one QP at once each get
// their own requests posted (PostSend and PostRecv fill the QP's one C
// scratch area, one caller at a time): every write lands where its own
// request said, from its own bytes, and every completion comes once.
func TestConcurrentPosts(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	const workers, each, size = 4, 24, 256
	src, dst := p.a.buf.Bytes(), p.b.buf.Bytes()
	for w := range workers {
		for i := range each {
			fill(src[(w*each+i)*size:(w*each+i+1)*size], byte(w*each+i))
		}
	}
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				k := w*each + i
				err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: uint64(k), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
					SGL: []ibverbs.SGE{p.a.mr.SGE(k*size, size)}, RemoteAddr: p.b.mr.Addr() + uint64(k*size), RKey: p.b.mr.RKey()}})
				if err != nil {
					errs <- err
					return
				}
				// PostRecv alongside, on the other QP's receive queue.
				if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: uint64(k), SGL: []ibverbs.SGE{p.b.mr.SGE(32<<10, 64)}}}); err != nil && !errors.Is(err, syscall.ENOMEM) {
					errs <- err
					return
				}
				time.Sleep(time.Duration(k%3) * time.Microsecond)
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]bool, workers*each)
	for _, wc := range pollN(t, p.a.cq, workers*each) {
		if wc.Status != ibverbs.WCSuccess || wc.WRID >= uint64(len(seen)) || seen[wc.WRID] {
			t.Fatalf("completion %+v: a failure, an ID never posted or one seen before", wc)
		}
		seen[wc.WRID] = true
	}
	for k := range workers * each {
		if !bytes.Equal(dst[k*size:(k+1)*size], src[k*size:(k+1)*size]) {
			t.Errorf("write %d landed wrong", k)
		}
	}
}

// TestPostSendSaysWhy: a post the QP refuses says why, as one of too many
// SGEs does ("5 SGEs, the QP allows 4"), where both below read "invalid
// argument" alone. An inline request longer than QPCap.MaxInline, in one
// SGE or several, is refused before it reaches the device, with the
// lengths, and one of MaxInline bytes still goes; a batch's request
// made inline or longer by SetFlags or SetSGE, which the device refuses,
// is named with its length too (Post, PostPoll); a post to a QP in
// RESET or INIT, which the device refuses, says the QP's state, and a
// receive to a QP in RESET too. Each matches syscall.EINVAL and is a
// *PostError at the request refused.
func TestPostSendSaysWhy(t *testing.T) { bothPostPaths(t, testPostSendSaysWhy) }

func testPostSendSaysWhy(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC,
		cap: ibverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInline: 64}})
	// refused checks that err is a PostError at index, matching EINVAL,
	// whose text has want.
	refused := func(err error, index int, want string) {
		t.Helper()
		var pe *ibverbs.PostError
		if !errors.As(err, &pe) || pe.Index != index || !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), want) {
			t.Errorf("post: %v; want a PostError at %d matching EINVAL with %q", err, index, want)
		}
	}
	most := p.a.qp.Cap().MaxInline
	if most < 64 {
		t.Fatalf("granted %+v", p.a.qp.Cap())
	}
	write := func(id uint64, sgl ...ibverbs.SGE) ibverbs.SendWR {
		return ibverbs.SendWR{ID: id, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendInline | ibverbs.SendSignaled,
			SGL: sgl, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	}
	fits := write(1, p.a.mr.SGE(0, most))
	refused(p.a.qp.PostSend([]ibverbs.SendWR{fits, write(2, p.a.mr.SGE(0, most+1))}), 1,
		fmt.Sprintf("ibv_post_send: inline %d bytes, the QP allows %d: invalid argument (at work request 1)", most+1, most))
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != 1 {
		t.Errorf("the write of %d inline bytes before the refused one: wr_id %d", most, wc.WRID)
	}
	refused(p.a.qp.PostSend([]ibverbs.SendWR{write(3, p.a.mr.SGE(0, most), p.a.mr.SGE(most, 1))}), 0,
		fmt.Sprintf("inline %d bytes, the QP allows %d", most+1, most))
	if b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{write(4, p.a.mr.SGE(0, most+1))}); err == nil {
		closeOK(t, b)
		t.Error("NewSendBatch took an inline write longer than MaxInline")
	} else {
		refused(err, 0, fmt.Sprintf("inline %d bytes, the QP allows %d", most+1, most))
	}
	// A batch's request made inline, or longer, after the batch's check
	// (SetFlags, SetSGE): the device refuses it, and the error says why,
	// with the device's errno.
	// Through the ibv_wr_* API the list is refused whole, at its first
	// request, and the one too long is named.
	over, at := fmt.Sprintf("inline %d bytes, the QP allows %d: ", most+1, most), 1
	if wrapi {
		over, at = fmt.Sprintf("inline %d bytes in request 1, the QP allows %d: ", most+1, most), 0
	}
	plain := write(7, p.a.mr.SGE(0, most+1))
	plain.Flags = ibverbs.SendSignaled
	b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{fits, plain})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, b)
	b.SetFlags(1, ibverbs.SendInline|ibverbs.SendSignaled)
	var errno syscall.Errno
	batchRefused := func(err error) {
		t.Helper()
		var pe *ibverbs.PostError
		if !errors.As(err, &pe) || pe.Index != at || !errors.As(err, &errno) || !strings.Contains(err.Error(), over) {
			t.Errorf("batch post: %v; want a PostError at %d with an errno and %q", err, at, over)
		}
		if at == 0 {
			return
		}
		if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != 1 {
			t.Errorf("the batch's first write: wr_id %d", wc.WRID)
		}
	}
	batchRefused(b.Post(0, 2, 0))
	b.SetFlags(1, ibverbs.SendSignaled)
	b.SetSGE(1, 0, p.a.mr.SGE(0, most))
	b.SetFlags(1, ibverbs.SendInline|ibverbs.SendSignaled)
	b.SetSGE(1, 0, p.a.mr.SGE(0, most+1))
	wcs := make([]ibverbs.WC, 4)
	_, err = b.PostPoll(0, 2, 0, p.a.cq, wcs, 0)
	batchRefused(err)

	// A QP in RESET, then in INIT.
	qp, err := p.a.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.a.cq, WRAPI: wrapi,
		Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, qp)
	send := []ibverbs.SendWR{{ID: 5, Opcode: ibverbs.OpSend, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}}
	refused(qp.PostSend(send), 0, fmt.Sprintf("QP %#x is in RESET, and takes sends from RTS on: invalid argument", qp.Num()))
	refused(qp.PostRecv([]ibverbs.RecvWR{{ID: 6, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}}), 0,
		fmt.Sprintf("ibv_post_recv: QP %#x is in RESET, and takes receives from INIT on: invalid argument", qp.Num()))
	if err := qp.ToInit(ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}); err != nil {
		t.Fatal(err)
	}
	refused(qp.PostSend(send), 0, fmt.Sprintf("QP %#x is in INIT, and takes sends from RTS on: invalid argument", qp.Num()))
}
