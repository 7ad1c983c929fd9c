//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// postRefused fails t unless err is a *PostError at index that matches
// errno and says want.
func postRefused(t *testing.T, what string, err error, index int, errno syscall.Errno, want string) {
	t.Helper()
	var pe *ibverbs.PostError
	if !errors.As(err, &pe) || pe.Index != index || !errors.Is(err, errno) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v; want a PostError at %d matching %v that says %q", what, err, index, errno, want)
	}
}

// An inline send copies its bytes with the CPU at the post: an SGE that
// lies in no live MR of the QP's PD under its LKey is refused, with
// EINVAL, where the provider copied from it (SIGSEGV for an unmapped
// address: the first case crashed the process on the old code). Through
// PostSend, a SendBatch's Set, SetSGE and SetFlags, and after the MR's
// Close; a good inline write still goes, and the QP stays usable.
func TestInlineSGEOutsideMRs(t *testing.T) { bothPostPaths(t, testInlineSGEOutsideMRs) }

func testInlineSGEOutsideMRs(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, wrapi: wrapi,
		cap: ibverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInline: 64}})
	mr := p.a.mr
	write := func(id uint64, sgl ...ibverbs.SGE) ibverbs.SendWR {
		return ibverbs.SendWR{ID: id, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendInline | ibverbs.SendSignaled,
			SGL: sgl, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	}
	access := ibverbs.AccessLocalWrite
	// An MR since closed, over a buffer since unmapped.
	buf2 := newBuffer(t, 4096)
	mr2, err := p.a.pd.RegMR(buf2, access)
	if err != nil {
		t.Fatal(err)
	}
	closed := mr2.SGE(0, 16)
	closeOK(t, mr2)
	closeOK(t, buf2)
	// An MR of another PD.
	pd2 := newPD(t, p.ctx)
	other, err := pd2.RegMR(p.a.buf, access)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, other)
	// A zero-based MR: its SGEs name the iova, not this process's memory.
	iova, err := p.a.pd.RegMRIOVA(p.a.buf, 0, 4096, 0, access)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, iova)
	for _, c := range []struct {
		name string
		sge  ibverbs.SGE
		want string
	}{
		{"an unmapped address, no lkey", ibverbs.SGE{Addr: 0x10, Length: 16}, "inline SGE 1 (16 bytes at 0x10, lkey 0x0): no live MR of the QP's PD has that LKey"},
		{"an unmapped address, the MR's lkey", ibverbs.SGE{Addr: 0x10, Length: 16, LKey: mr.LKey()}, "outside the process memory of its MR"},
		{"past the MR's end", ibverbs.SGE{Addr: mr.Addr() + uint64(mr.Len()) - 8, Length: 16, LKey: mr.LKey()}, "outside the process memory of its MR"},
		{"a closed MR's, its buffer unmapped", closed, "no live MR of the QP's PD has that LKey"},
		{"another PD's MR", other.SGE(0, 16), "no live MR of the QP's PD has that LKey"},
		{"a zero-based MR", iova.SGE(0, 16), "cannot be sent inline"},
	} {
		wrs := []ibverbs.SendWR{write(1, mr.SGE(0, 8)), write(2, mr.SGE(0, 8), c.sge)}
		err := p.a.qp.PostSend(wrs)
		postRefused(t, "PostSend with "+c.name, err, 1, syscall.EINVAL, c.want)
		postRefused(t, "PostSend with "+c.name, err, 1, syscall.EINVAL, "inline SGE 1")
		if err != nil && pollOK(t, p.a.cq, ibverbs.WCRDMAWrite).WRID != 1 {
			t.Errorf("%s: the request before the refused one did not complete", c.name)
		}
		if _, err := p.a.qp.NewSendBatch(wrs); err == nil {
			t.Errorf("NewSendBatch with %s took it", c.name)
		} else {
			postRefused(t, "NewSendBatch with "+c.name, err, 1, syscall.EINVAL, c.want)
		}
	}

	// A batch: an SGE set by SetSGE, a request made inline by SetFlags,
	// and an MR closed after the batch was built are refused at the post,
	// before any of the range goes.
	buf3 := newBuffer(t, 4096)
	mr3, err := p.a.pd.RegMR(buf3, access)
	if err != nil {
		t.Fatal(err)
	}
	plain := write(4, ibverbs.SGE{Addr: 0x10, Length: 16})
	plain.Flags = ibverbs.SendSignaled
	b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{write(3, mr.SGE(0, 8)), plain, write(5, mr3.SGE(0, 16))})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, b)
	wcs := make([]ibverbs.WC, 4)
	b.SetFlags(1, ibverbs.SendInline|ibverbs.SendSignaled)
	postRefused(t, "batch Post of a request made inline by SetFlags", b.Post(0, 2, 0), 1, syscall.EINVAL, "inline SGE 0 (16 bytes at 0x10")
	b.SetSGE(1, 0, mr.SGE(0, 16))
	b.SetSGE(0, 0, ibverbs.SGE{Addr: 0x20, Length: 8, LKey: mr.LKey()})
	_, err = b.PostPoll(0, 2, 0, p.a.cq, wcs, 0)
	postRefused(t, "batch PostPoll after SetSGE", err, 0, syscall.EINVAL, "inline SGE 0 (8 bytes at 0x20")
	b.SetSGE(0, 0, mr.SGE(0, 8))
	closeOK(t, mr3)
	closeOK(t, buf3)
	postRefused(t, "batch Post after the MR's Close", b.Post(1, 2, 1), 2, syscall.EINVAL, "no live MR of the QP's PD has that LKey")
	// Good SGEs again: the batch posts.
	b.SetFlags(1, ibverbs.SendSignaled)
	if err := b.Post(0, 2, 0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{3, 4} {
		if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != id {
			t.Errorf("batch completion wr_id %d, want %d", wc.WRID, id)
		}
	}

	// Good inline writes, two SGEs of one MR, land.
	src := p.a.buf.Bytes()
	copy(src[100:], "inline, checked")
	w := write(9, mr.SGE(100, 7), mr.SGE(107, 8))
	if err := p.a.qp.PostSend([]ibverbs.SendWR{w}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	if got := p.b.buf.Bytes()[:15]; !bytes.Equal(got, src[100:115]) {
		t.Errorf("remote bytes %q, want %q", got, src[100:115])
	}
}

// PostSend refuses before the device what the device would refuse or
// fail: an opcode no verb has (Opcode 99 was posted, and its completion
// killed the QP), an atomic whose local SGE is not one of 8 bytes. Where
// the provider refuses a request and the QP's state is fine, the error
// says so and what it refused, where it blamed the state.
func TestPostSendRefusesUpFront(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	ok := ibverbs.SendWR{ID: 1, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	bad := ok
	bad.ID, bad.Opcode = 2, 99
	postRefused(t, "opcode 99", p.a.qp.PostSend([]ibverbs.SendWR{ok, bad}), 1, syscall.EINVAL,
		"ibv_post_send: unknown opcode 99 (Opcode(99)): invalid argument (at work request 1)")
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	faa := ibverbs.SendWR{ID: 3, Opcode: ibverbs.OpAtomicFetchAdd, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 4)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey(), CompareAdd: 1}
	postRefused(t, "fetch-add into 4 bytes", p.a.qp.PostSend([]ibverbs.SendWR{faa}), 0, syscall.EINVAL,
		"ATOMIC_FETCH_AND_ADD with 1 SGE, 4 bytes: an atomic takes one SGE of 8 bytes")
	faa.SGL = []ibverbs.SGE{p.a.mr.SGE(0, 4), p.a.mr.SGE(4, 4)}
	postRefused(t, "fetch-add into two SGEs", p.a.qp.PostSend([]ibverbs.SendWR{faa}), 0, syscall.EINVAL,
		"with 2 SGEs, 8 bytes: an atomic takes one SGE of 8 bytes")
	// A misaligned remote address, set by hand (SetRemote refuses it), is
	// refused in SetRemote's words (the provider refused it, in RTS).
	faa.SGL = []ibverbs.SGE{p.a.mr.SGE(0, 8)}
	faa.RemoteAddr += 4
	postRefused(t, "fetch-add at a misaligned address", p.a.qp.PostSend([]ibverbs.SendWR{faa}), 0, syscall.EINVAL,
		fmt.Sprintf("ATOMIC_FETCH_AND_ADD at %#x: atomics need an 8-byte aligned address", faa.RemoteAddr))
	// The QP is still good.
	if err := p.a.qp.PostSend([]ibverbs.SendWR{ok}); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
}

// A full queue's ENOMEM says the queue is full and how many it holds;
// CreateQP over the device's limits names the limit; RegMR of no buffer
// is refused (it panicked).
func TestQueueFullAndLimits(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	qp, err := p.a.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.a.cq,
		Cap: ibverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, qp)
	if err := qp.ToInit(ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}); err != nil {
		t.Fatal(err)
	}
	a, err := qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	wrs := make([]ibverbs.RecvWR, 1000)
	for i := range wrs {
		wrs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}
	}
	err = qp.PostRecv(wrs)
	var pe *ibverbs.PostError
	if !errors.As(err, &pe) || pe.Index < qp.Cap().MaxRecvWR {
		t.Fatalf("PostRecv of 1000 to a queue of %d: %v; want a PostError past %d", qp.Cap().MaxRecvWR, err, qp.Cap().MaxRecvWR)
	}
	postRefused(t, "PostRecv of 1000", err, pe.Index, syscall.ENOMEM,
		fmt.Sprintf("ibv_post_recv: the receive queue of QP %#x is full: it holds %d requests", qp.Num(), a.Cap.MaxRecvWR))

	attr, err := p.ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	big := attr.MaxQPWR + 1
	_, err = p.a.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: p.a.cq, Cap: ibverbs.QPCap{MaxSendWR: big}})
	if want := fmt.Sprintf("QPCap.MaxSendWR %d is over the device's max_qp_wr, %d", big, attr.MaxQPWR); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), want) {
		t.Errorf("CreateQP with MaxSendWR %d: %v; want EINVAL saying %q", big, err, want)
	}

	if _, err := p.a.pd.RegMR(nil, ibverbs.AccessLocalWrite); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegMR(nil) = %v, want EINVAL", err)
	}
	if _, err := p.a.pd.RegMRRange(nil, 0, 8, ibverbs.AccessLocalWrite); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RegMRRange(nil) = %v, want EINVAL", err)
	}
}
