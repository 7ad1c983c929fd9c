//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// mwOps are the opcodes of an RC QP with memory windows on the ibv_wr_*
// API.
var mwOps = []ibverbs.Opcode{ibverbs.OpSend, ibverbs.OpRDMAWrite, ibverbs.OpRDMARead,
	ibverbs.OpBindMW, ibverbs.OpLocalInv, ibverbs.OpSendWithInv}

// mwPair is an RC pair, a window of type typ on its PD, and an MR over
// b's buffer that windows can bind to.
type mwPair struct {
	*pair
	mr *ibverbs.MR
	mw *ibverbs.MW
}

const mwOff, mwLen = 4096, 256 // the part of b's buffer a window covers

func newMWPair(t *testing.T, typ ibverbs.MWType, wrapi bool) *mwPair {
	t.Helper()
	o := pairOpts{typ: ibverbs.QPTypeRC, wrapi: wrapi}
	if wrapi {
		o.wrOps = mwOps
	}
	p := &mwPair{pair: newPair(t, o)}
	var err error
	access := ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead | ibverbs.AccessMWBind
	if p.mr, err = p.b.pd.RegMR(p.b.buf, access); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, p.mr) })
	if p.mw, err = p.b.pd.AllocMW(typ); err != nil {
		rdmatest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, p.mw) })
	if p.mw.Type() != typ || p.mw.PD() != p.b.pd {
		t.Fatalf("window of %v on %p, want %v on %p", p.mw.Type(), p.mw.PD(), typ, p.b.pd)
	}
	return p
}

// bind is what the tests bind a window to: mwLen bytes at mwOff.
func (p *mwPair) bind(access ibverbs.Access) ibverbs.MWBind {
	return ibverbs.MWBind{MW: p.mw, MR: p.mr, Addr: p.mr.Addr() + mwOff, Length: mwLen, Access: access}
}

// bind2 binds the type 2 window on b's QP with the given key.
func (p *mwPair) bind2(t *testing.T, id uint64, rkey uint32) {
	t.Helper()
	b := p.bind(ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead)
	if err := p.b.qp.PostSend([]ibverbs.SendWR{{ID: id, Opcode: ibverbs.OpBindMW, Flags: ibverbs.SendSignaled,
		RKey: rkey, Bind: &b}}); err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.b.cq, ibverbs.WCBindMW); wc.WRID != id {
		t.Fatalf("bind completion for wr_id %d, want %d", wc.WRID, id)
	}
}

// access has a run an RDMA op of n bytes at off in the window through
// rkey, from a's buffer at aOff, and returns its completion.
func (p *mwPair) access(t *testing.T, op ibverbs.Opcode, rkey uint32, off, n, aOff int) ibverbs.WC {
	t.Helper()
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 100, Opcode: op, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(aOff, n)}, RemoteAddr: p.mr.Addr() + uint64(off), RKey: rkey}}); err != nil {
		t.Fatal(err)
	}
	return pollN(t, p.a.cq, 1)[0]
}

// writeOK writes seeded bytes through rkey to the whole window and checks
// they landed there.
func (p *mwPair) writeOK(t *testing.T, rkey uint32, seed byte) {
	t.Helper()
	fill(p.a.buf.Bytes()[:mwLen], seed)
	if wc := p.access(t, ibverbs.OpRDMAWrite, rkey, mwOff, mwLen, 0); wc.Err() != nil {
		t.Fatalf("write through rkey %#x: %v", rkey, wc.Err())
	}
	if !bytes.Equal(p.a.buf.Bytes()[:mwLen], p.b.buf.Bytes()[mwOff:mwOff+mwLen]) {
		t.Fatalf("the window does not hold the bytes written through rkey %#x", rkey)
	}
}

// refused checks that an access failed with a remote access error.
func refused(t *testing.T, wc ibverbs.WC, what string) {
	t.Helper()
	var we *ibverbs.WCError
	if !errors.As(wc.Err(), &we) || we.Status != ibverbs.WCRemAccessErr {
		t.Fatalf("%s: completion %v (%v), want REM_ACCESS_ERR", what, wc.Status, wc.Err())
	}
}

// A type 1 window gives a peer exactly its part of the MR, with the access
// bound, and a rebind takes the old key away.
func TestMWType1(t *testing.T) {
	p := newMWPair(t, ibverbs.MWType1, false)
	old := p.mw.RKey()
	k, err := p.b.qp.BindMW(p.mw, 9, ibverbs.SendSignaled, p.bind(ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead))
	if err != nil {
		t.Fatal(err)
	}
	if k == old || k != p.mw.RKey() || k == p.mr.RKey() {
		t.Fatalf("BindMW gave rkey %#x; the window had %#x and now reports %#x, the MR has %#x", k, old, p.mw.RKey(), p.mr.RKey())
	}
	if k&^0xff != old&^0xff {
		t.Errorf("the new rkey %#x changed more than the old %#x's key byte", k, old)
	}
	if wc := pollOK(t, p.b.cq, ibverbs.WCBindMW); wc.WRID != 9 {
		t.Fatalf("bind completion for wr_id %d, want 9", wc.WRID)
	}
	p.writeOK(t, k, 3)
	if wc := p.access(t, ibverbs.OpRDMARead, k, mwOff, mwLen, mwLen); wc.Err() != nil {
		t.Fatal(wc.Err())
	}
	if !bytes.Equal(p.a.buf.Bytes()[mwLen:2*mwLen], p.b.buf.Bytes()[mwOff:mwOff+mwLen]) {
		t.Fatal("the bytes read through the window differ from the window's")
	}
	// Unbind: length 0. The key the peer had stops working.
	k2, err := p.b.qp.BindMW(p.mw, 10, ibverbs.SendSignaled, ibverbs.MWBind{MR: p.mr})
	if err != nil {
		t.Fatal(err)
	}
	if k2 == k {
		t.Errorf("the unbind left the rkey at %#x", k)
	}
	pollOK(t, p.b.cq, ibverbs.WCBindMW)
	before := bytes.Clone(p.b.buf.Bytes()[mwOff : mwOff+mwLen])
	fill(p.a.buf.Bytes()[:mwLen], 4)
	refused(t, p.access(t, ibverbs.OpRDMAWrite, k, mwOff, mwLen, 0), "a write through the unbound window's old key")
	if !bytes.Equal(before, p.b.buf.Bytes()[mwOff:mwOff+mwLen]) {
		t.Error("a refused write changed the memory")
	}
}

// TestMWBindWithoutAccess: a bind of a window to an MR registered
// without AccessMWBind completes with MW_BIND_ERR, whose error says what
// the MR lacks, where it read "(error)".
func TestMWBindWithoutAccess(t *testing.T) {
	p := newMWPair(t, ibverbs.MWType1, false)
	mr, err := p.b.pd.RegMR(p.b.buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mr)
	if _, err := p.b.qp.BindMW(p.mw, 3, ibverbs.SendSignaled, ibverbs.MWBind{MR: mr, Addr: mr.Addr() + mwOff,
		Length: mwLen, Access: ibverbs.AccessRemoteWrite}); err != nil {
		t.Fatal(err)
	}
	we := pollErr(t, p.b.cq)
	if we.Status != ibverbs.WCMWBindErr || we.WRID != 3 || !strings.Contains(we.Error(), "the MR lacks AccessMWBind") {
		t.Fatalf("bind to an MR without AccessMWBind: %v, want MW_BIND_ERR saying so", we)
	}
}

// isRXE reports whether ctx is soft-RoCE, whose vendor ID is 0xffffff.
func isRXE(t *testing.T, ctx *ibverbs.Context) bool {
	t.Helper()
	a, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	return a.VendorID == 0xffffff
}

// A window refuses what it was not bound for: bytes past its end, or an
// access it does not grant, though the MR under it grants both.
func TestMWBounds(t *testing.T) {
	for _, c := range []struct {
		name    string
		access  ibverbs.Access
		op      ibverbs.Opcode
		off, n  int
		refused bool
		outside bool // of the window's range, inside the MR's
	}{
		{"inside", ibverbs.AccessRemoteWrite, ibverbs.OpRDMAWrite, mwOff + 64, 64, false, false},
		{"past its end", ibverbs.AccessRemoteWrite, ibverbs.OpRDMAWrite, mwOff + mwLen - 32, 64, true, true},
		{"before its start", ibverbs.AccessRemoteWrite, ibverbs.OpRDMAWrite, mwOff - 8, 64, true, true},
		{"a read of a write-only window", ibverbs.AccessRemoteWrite, ibverbs.OpRDMARead, mwOff, 64, true, false},
		{"a write of a read-only window", ibverbs.AccessRemoteRead, ibverbs.OpRDMAWrite, mwOff, 64, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newMWPair(t, ibverbs.MWType1, false)
			if c.outside && isRXE(t, p.ctx) {
				// rxe_resp.c's check_rkey (Linux 6.1) looks the window up
				// and then checks the access against its MR's range only.
				t.Skip("rxe checks an access through a window against the MR's range, not the window's")
			}
			k, err := p.b.qp.BindMW(p.mw, 1, ibverbs.SendSignaled, p.bind(c.access))
			if err != nil {
				t.Fatal(err)
			}
			pollOK(t, p.b.cq, ibverbs.WCBindMW)
			wc := p.access(t, c.op, k, c.off, c.n, 0)
			if c.refused {
				refused(t, wc, c.name)
			} else if wc.Err() != nil {
				t.Fatal(wc.Err())
			}
		})
	}
}

// A type 2 window is bound by a request on its QP, freed by a local
// invalidation and bound again under a new key, and invalidated by the
// peer's send with invalidate, whose receive reports the key.
func TestMWType2(t *testing.T) { bothPostPaths(t, testMWType2) }

func testMWType2(t *testing.T, wrapi bool) {
	p := newMWPair(t, ibverbs.MWType2, wrapi)
	k1 := ibverbs.NextRKey(p.mw.RKey())
	p.bind2(t, 1, k1)
	p.writeOK(t, k1, 5)

	if err := p.b.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpLocalInv, Flags: ibverbs.SendSignaled, Imm: k1}}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.b.cq, ibverbs.WCLocalInv)
	// A bound type 2 window cannot be bound again: this bind succeeding
	// shows that the invalidation freed it.
	k2 := ibverbs.NextRKey(k1)
	p.bind2(t, 3, k2)
	p.writeOK(t, k2, 6)

	// A plain send, then one that invalidates the window.
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 4, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}},
		{ID: 5, SGL: []ibverbs.SGE{p.b.mr.SGE(64, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 6, Opcode: ibverbs.OpSend, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}},
		{ID: 7, Opcode: ibverbs.OpSendWithInv, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 16)}, Imm: k2}}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	plain := pollOK(t, p.b.cq, ibverbs.WCRecv)
	wc := pollOK(t, p.b.cq, ibverbs.WCRecv)
	if plain.Flags&ibverbs.WCWithInv != 0 || wc.WRID != 5 || wc.ByteLen != 16 || wc.Flags&ibverbs.WCWithImm != 0 {
		t.Fatalf("receives of a send and a send with invalidate: %+v, %+v", plain, wc)
	}
	if isRXE(t, p.ctx) && wc.Flags&^plain.Flags == ibverbs.WCIPCsumOK {
		// rxe writes the kernel's IB_WC_WITH_INVALIDATE (1<<2), which
		// is IBV_WC_IP_CSUM_OK to libibverbs, so the key is not read.
		t.Logf("rxe flags a send's receive %v, a send with invalidate's %v: the kernel's WITH_INVALIDATE", plain.Flags, wc.Flags)
	} else if wc.Flags&ibverbs.WCWithInv == 0 || wc.Imm != k2 {
		t.Fatalf("receive of a send with invalidate: flags %v, rkey %#x, want WITH_INV of rkey %#x", wc.Flags, wc.Imm, k2)
	}
	refused(t, p.access(t, ibverbs.OpRDMAWrite, k2, mwOff, 64, 0), "a write through the invalidated window")
}

// TestMWRebindInOneCall: a type 2 window bound, invalidated and bound
// again in one PostSendLists of lists of one is bound to the last key,
// as with three PostSends. (The second bind named the window by its key
// from before the call, which rxe refused: the bind failed and the QP
// went to the error state.)
func TestMWRebindInOneCall(t *testing.T) { bothPostPaths(t, testMWRebindInOneCall) }

func testMWRebindInOneCall(t *testing.T, wrapi bool) {
	p := newMWPair(t, ibverbs.MWType2, wrapi)
	b := p.bind(ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead)
	k1 := ibverbs.NextRKey(p.mw.RKey())
	k2 := ibverbs.NextRKey(k1)
	if err := p.b.qp.PostSendLists([]ibverbs.SendWR{
		{ID: 1, Opcode: ibverbs.OpBindMW, Flags: ibverbs.SendSignaled, RKey: k1, Bind: &b},
		{ID: 2, Opcode: ibverbs.OpLocalInv, Flags: ibverbs.SendSignaled, Imm: k1},
		{ID: 3, Opcode: ibverbs.OpBindMW, Flags: ibverbs.SendSignaled, RKey: k2, Bind: &b},
	}, 1); err != nil {
		t.Fatal(err)
	}
	for i, want := range []ibverbs.WCOpcode{ibverbs.WCBindMW, ibverbs.WCLocalInv, ibverbs.WCBindMW} {
		if wc := pollOK(t, p.b.cq, want); wc.WRID != uint64(i+1) {
			t.Fatalf("completion %d for wr_id %d, want %d", i, wc.WRID, i+1)
		}
	}
	if got := p.mw.RKey(); got != k2 {
		t.Errorf("MW.RKey after the call = %#x, want the last bind's %#x", got, k2)
	}
	p.writeOK(t, k2, 7)
	refused(t, p.access(t, ibverbs.OpRDMAWrite, k1, mwOff, 64, 0), "a write through the invalidated key")
}

// What the binding refuses before the provider sees it, and the errors
// A bind through a QP of another PD than the window's is refused before
// the post (EINVAL), for either type (the verbs want the QP, window and
// MR of one PD): a type 2 bind was posted, completed with MW_BIND_ERR and
// left the QP in the error state; soft-RoCE let a type 1 bind through.
// The QP still binds its own window afterwards.
func TestMWBindOtherPD(t *testing.T) {
	p := newMWPair(t, ibverbs.MWType2, false)
	other, err := p.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, other) })
	mr, err := other.RegMR(p.b.buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite|ibverbs.AccessMWBind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, mr) })
	for _, typ := range []ibverbs.MWType{ibverbs.MWType1, ibverbs.MWType2} {
		mw, err := other.AllocMW(typ)
		if err != nil {
			t.Fatal(err)
		}
		b := ibverbs.MWBind{MW: mw, MR: mr, Addr: mr.Addr() + mwOff, Length: mwLen, Access: ibverbs.AccessRemoteWrite}
		if typ == ibverbs.MWType1 {
			_, err = p.b.qp.BindMW(mw, 1, ibverbs.SendSignaled, b)
		} else {
			err = p.b.qp.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpBindMW, Flags: ibverbs.SendSignaled,
				RKey: ibverbs.NextRKey(mw.RKey()), Bind: &b}})
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "another PD than the QP's") {
			t.Errorf("bind of a %v window of another PD: %v, want EINVAL saying so", typ, err)
		}
		closeOK(t, mw)
	}
	p.bind2(t, 2, ibverbs.NextRKey(p.mw.RKey()))
}

// of the verbs themselves.
func TestMWRefusals(t *testing.T) {
	p := newMWPair(t, ibverbs.MWType2, false)
	b := p.bind(ibverbs.AccessRemoteWrite)
	if _, err := p.b.qp.BindMW(p.mw, 1, 0, b); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("BindMW of a type 2 window = %v, want EINVAL", err)
	}
	w1, err := p.b.pd.AllocMW(ibverbs.MWType1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.b.qp.BindMW(w1, 1, 0, ibverbs.MWBind{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("BindMW without an MR = %v, want EINVAL", err)
	}
	other, err := p.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, other)
	w3, err := other.AllocMW(ibverbs.MWType1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.b.qp.BindMW(w3, 1, 0, b); !errors.Is(err, syscall.EPERM) {
		t.Errorf("BindMW with an MR of another PD = %v, want EPERM", err)
	}
	closeOK(t, w3)
	var pe *ibverbs.PostError
	if err := p.b.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpBindMW}}); !errors.As(err, &pe) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("OpBindMW without Bind = %v, want a PostError with EINVAL", err)
	}
	if err := p.b.pd.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("PD.Close with windows open = %v, want EBUSY", err)
	}
	closeOK(t, w1)
	closeOK(t, w1) // twice is a no-op
	if _, err := p.b.qp.BindMW(w1, 1, 0, b); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("BindMW of a closed window = %v, want EINVAL", err)
	}
	if _, err := p.b.pd.AllocMW(ibverbs.MWType(9)); err == nil {
		t.Error("AllocMW of type 9 succeeded")
	}
	if _, err := p.b.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.b.cq, WROps: mwOps}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateQP with WROps and no WRAPI = %v, want EINVAL", err)
	}
	if _, err := p.b.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.b.cq, WRAPI: true,
		WROps: []ibverbs.Opcode{ibverbs.Opcode(30)}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateQP with WROps of an unknown opcode = %v, want EINVAL", err)
	}
	attr, err := p.ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if attr.MaxMW <= 0 {
		t.Errorf("DeviceAttr.MaxMW = %d on a device that allocated windows", attr.MaxMW)
	}
}

func TestNextRKey(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{{0x1234_5600, 0x1234_5601}, {0x1234_56ff, 0x1234_5600}, {0xffff_fffe, 0xffff_ffff}} {
		if got := ibverbs.NextRKey(c.in); got != c.want {
			t.Errorf("NextRKey(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
}
