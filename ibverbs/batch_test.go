//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/ibverbs/internal/cverbs"
)

func TestSendBatch(t *testing.T) { bothPostPaths(t, testSendBatch) }

func testSendBatch(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	src, dst := p.a.buf.Bytes(), p.b.buf.Bytes()
	fill(src[:1024], 9)
	const at = 8192 // where the writes land in the peer's buffer
	wrs := make([]ibverbs.SendWR, 4)
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: uint64(10 + i), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(i*64, 64)}, RemoteAddr: p.b.mr.Addr() + uint64(at+i*64), RKey: p.b.mr.RKey()}
	}
	b, err := p.a.qp.NewSendBatch(wrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	if b.Len() != 4 {
		t.Fatalf("Len() = %d, want 4", b.Len())
	}
	wrs[0].ID = 99 // the batch holds its own copy

	// All four, a doorbell each.
	if err := b.Post(0, 4, 1); err != nil {
		t.Fatal(err)
	}
	for i, wc := range pollN(t, p.a.cq, 4) {
		if wc.Status != ibverbs.WCSuccess || wc.Opcode != ibverbs.WCRDMAWrite || wc.WRID != uint64(10+i) {
			t.Errorf("completion %d: %+v, want a successful write with wr_id %d", i, wc, 10+i)
		}
	}
	if !bytes.Equal(src[:256], dst[at:at+256]) {
		t.Error("remote bytes differ after the first post")
	}

	// Requests 1 and 2 again, as one list, with new IDs, a new source for
	// request 1 and a new place in the peer for both.
	b.SetID(1, 21)
	b.SetID(2, 22)
	b.SetSGE(1, 0, p.a.mr.SGE(512, 64))
	b.SetRemoteAddr(1, p.b.mr.Addr()+at+4096)
	b.SetRemoteAddr(2, p.b.mr.Addr()+at+4096+64)
	if err := b.Post(1, 2, 0); err != nil {
		t.Fatal(err)
	}
	for i, wc := range pollN(t, p.a.cq, 2) {
		if wc.Status != ibverbs.WCSuccess || wc.WRID != uint64(21+i) {
			t.Errorf("completion %d of the second post: %+v, want wr_id %d", i, wc, 21+i)
		}
	}
	if !bytes.Equal(src[512:576], dst[at+4096:at+4096+64]) || !bytes.Equal(src[128:192], dst[at+4096+64:at+4096+128]) {
		t.Error("remote bytes differ after the second post")
	}

	// Unsignalled, then signalled: one completion.
	b.SetFlags(3, 0)
	if err := b.Post(3, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != 10 {
		t.Errorf("completion for wr_id %d, want 10 (request 3 was unsignalled)", wc.WRID)
	}
	time.Sleep(50 * time.Millisecond)
	if k, _ := p.a.cq.Poll(make([]ibverbs.WC, 4)); k != 0 {
		t.Errorf("%d completions beyond the signalled request", k)
	}

	// A request replaced whole: a send with immediate data.
	if err := b.Set(2, ibverbs.SendWR{ID: 30, Opcode: ibverbs.OpSendWithImm, Flags: ibverbs.SendSignaled,
		Imm: 0xdeadbeef, SGL: []ibverbs.SGE{p.a.mr.SGE(256, 64)}}); err != nil {
		t.Fatal(err)
	}
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 70, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(2, 1, 0); err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCSend); wc.WRID != 30 {
		t.Errorf("send completion for wr_id %d, want 30", wc.WRID)
	}
	wc := pollOK(t, p.b.cq, ibverbs.WCRecv)
	if wc.WRID != 70 || wc.Imm != 0xdeadbeef || wc.Flags&ibverbs.WCWithImm == 0 {
		t.Errorf("receive completion %+v, want wr_id 70 with immediate 0xdeadbeef", wc)
	}
	if !bytes.Equal(src[256:320], dst[:64]) {
		t.Error("received bytes differ")
	}

	// Its immediate data changed in place, for the next message.
	b.SetImm(2, 0x0badf00d)
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 71, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(2, 1, 0); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 71 || wc.Imm != 0x0badf00d || wc.Flags&ibverbs.WCWithImm == 0 {
		t.Errorf("receive completion after SetImm %+v, want wr_id 71 with immediate 0xbadf00d", wc)
	}

	// Bad ranges and requests.
	// From 1, math.MaxInt requests end past math.MaxInt: a sum that wraps
	// must not pass for a range inside the batch.
	for _, r := range [][3]int{{3, 2, 0}, {-1, 1, 0}, {0, -1, 0}, {0, 1, -1}, {1, math.MaxInt, 0}, {2, math.MaxInt - 1, 0}} {
		if err := b.Post(r[0], r[1], r[2]); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Post(%d, %d, %d) = %v, want EINVAL", r[0], r[1], r[2], err)
		}
	}
	if err := b.Set(0, ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: make([]ibverbs.SGE, 9)}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Set with 9 SGEs = %v, want EINVAL", err)
	}
	mustPanic(t, "SetRemoteAddr on a send", func() { b.SetRemoteAddr(2, 0) })
	mustPanic(t, "SetSGE past the request's SGEs", func() { b.SetSGE(0, 1, ibverbs.SGE{}) })
	mustPanic(t, "SetID past the batch", func() { b.SetID(4, 0) })

	// The QP waits for its batches.
	if err := p.a.qp.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("QP.Close with a batch open = %v, want EBUSY", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(0, 1, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Post after Close = %v, want ErrClosed", err)
	}
	if err := p.a.qp.Close(); err != nil {
		t.Fatalf("QP.Close after the batch's = %v", err)
	}
	if _, err := p.a.qp.NewSendBatch(wrs); !errors.Is(err, os.ErrClosed) {
		t.Errorf("NewSendBatch on a closed QP = %v, want ErrClosed", err)
	}
}

func TestSendBatchPostPoll(t *testing.T) { bothPostPaths(t, testSendBatchPostPoll) }

// PostPoll posts and polls in one call: the completion of an RDMA read,
// with a spin and without, and a failed completion as it is.
func testSendBatchPostPoll(t *testing.T, wrapi bool) {
	p := newPair(t, pairOpts{wrapi: wrapi, typ: ibverbs.QPTypeRC})
	src, dst := p.b.buf.Bytes(), p.a.buf.Bytes()
	fill(src[:256], 5)
	const at = 4096 // where the reads land in this side's buffer
	b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{{ID: 40, Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(at, 64)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	wcs := make([]ibverbs.WC, 4)

	// With a spin long enough for any device, the completion comes back
	// with the post.
	k, err := b.PostPoll(0, 1, 0, p.a.cq, wcs, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if k != 1 || wcs[0].Status != ibverbs.WCSuccess || wcs[0].Opcode != ibverbs.WCRDMARead || wcs[0].WRID != 40 {
		t.Fatalf("PostPoll took %d completions, the first %+v; want one successful read with wr_id 40", k, wcs[0])
	}
	if !bytes.Equal(src[:64], dst[at:at+64]) {
		t.Error("the bytes read differ from the peer's")
	}

	// Without a spin it polls once: the completion is there or comes later.
	b.SetID(0, 41)
	b.SetSGE(0, 0, p.a.mr.SGE(at+64, 64))
	b.SetRemoteAddr(0, p.b.mr.Addr()+64)
	if k, err = b.PostPoll(0, 1, 0, p.a.cq, wcs, 0); err != nil {
		t.Fatal(err)
	}
	if k == 0 {
		wcs[0] = pollOK(t, p.a.cq, ibverbs.WCRDMARead)
	}
	if wcs[0].WRID != 41 || wcs[0].Status != ibverbs.WCSuccess {
		t.Errorf("completion %+v, want a successful read with wr_id 41", wcs[0])
	}
	time.Sleep(50 * time.Millisecond)
	if k, _ := p.a.cq.Poll(wcs); k != 0 {
		t.Errorf("%d completions beyond the one request's", k)
	}
	if !bytes.Equal(src[64:128], dst[at+64:at+128]) {
		t.Error("the bytes of the second read differ from the peer's")
	}

	// Bad arguments, and a closed CQ.
	for _, c := range []struct {
		name          string
		from, n, list int
		wcs           []ibverbs.WC
	}{
		{"no request", 0, 0, 0, wcs}, {"past the batch", 0, 2, 0, wcs}, {"no room for a completion", 0, 1, 0, nil},
		{"a count whose end wraps", 1, math.MaxInt, 0, wcs},
	} {
		if _, err := b.PostPoll(c.from, c.n, c.list, p.a.cq, c.wcs, 0); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("PostPoll with %s = %v, want EINVAL", c.name, err)
		}
	}

	// A slice of 2^31 completions, more than the verb's int counts, takes
	// as many as math.MaxInt32 would: here the one there is, which lands
	// in its first element. (Its memory, an mmap'd Buffer of one page, is
	// all that the CQ can fill: it holds one completion at a time.)
	huge := hugeWCs(t)
	b.SetID(0, 43)
	if k, err = b.PostPoll(0, 1, 0, p.a.cq, huge, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if k != 1 || huge[0].WRID != 43 || huge[0].Err() != nil {
		t.Errorf("PostPoll into 2^31 completions took %d, the first %+v; want the read's, wr_id 43", k, huge[0])
	}
	b.SetID(0, 44)
	if err := b.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if wc := pollUntil(t, 1, func(w []ibverbs.WC) (int, error) {
		// pollUntil's slice is its own: poll into the huge one.
		k, err := p.a.cq.Poll(huge)
		copy(w, huge[:k])
		return k, err
	}); wc[0].WRID != 44 || wc[0].Err() != nil {
		t.Errorf("Poll into 2^31 completions: %+v, want the read's, wr_id 44", wc[0])
	}

	cq, err := p.ctx.CreateCQ(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, cq)
	if _, err := b.PostPoll(0, 1, 0, cq, wcs, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostPoll on a closed CQ = %v, want ErrClosed", err)
	}

	// A read into memory the key does not cover fails in its completion,
	// which PostPoll returns as it is.
	bad := p.a.mr.SGE(at, 64)
	bad.LKey++
	b.SetID(0, 42)
	b.SetSGE(0, 0, bad)
	if k, err = b.PostPoll(0, 1, 0, p.a.cq, wcs, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var we *ibverbs.WCError
	if k != 1 || wcs[0].WRID != 42 || !errors.As(wcs[0].Err(), &we) {
		t.Errorf("PostPoll of a read with a bad lkey took %d completions, the first %+v; want a failed one with wr_id 42", k, wcs[0])
	}
	closeOK(t, b)
	if _, err := b.PostPoll(0, 1, 0, p.a.cq, wcs, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("PostPoll after Close = %v, want ErrClosed", err)
	}
}

// Immediate data reaches the provider in network order; the rkey to
// invalidate, which lies in the same place, in host order.
func TestSendWRImmByteOrder(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{
		{Opcode: ibverbs.OpSendWithImm, Imm: 0x01020304},
		{Opcode: ibverbs.OpSendWithInv, Imm: 0x01020304},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	off := cverbs.SendWRImm
	if got := b.WRBytes(0)[off : off+4]; !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Errorf("imm_data bytes % x, want 01 02 03 04", got)
	}
	if got := binary.NativeEndian.Uint32(b.WRBytes(1)[off:]); got != 0x01020304 {
		t.Errorf("invalidate_rkey %#x, want 0x01020304", got)
	}
	b.SetImm(0, 0x0a0b0c0d)
	b.SetImm(1, 0x0a0b0c0d)
	if got := b.WRBytes(0)[off : off+4]; !bytes.Equal(got, []byte{0xa, 0xb, 0xc, 0xd}) {
		t.Errorf("imm_data bytes after SetImm % x, want 0a 0b 0c 0d", got)
	}
	if got := binary.NativeEndian.Uint32(b.WRBytes(1)[off:]); got != 0x0a0b0c0d {
		t.Errorf("invalidate_rkey after SetImm %#x, want 0x0a0b0c0d", got)
	}
}

// NewSendBatch checks each request as PostSend does, and names the first
// it refuses.
func TestSendBatchRefuses(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, wrapi: true})
	ok := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)},
		RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	tooMany := ok
	tooMany.SGL = make([]ibverbs.SGE, 9)
	var pe *ibverbs.PostError
	for _, c := range []struct {
		name string
		wrs  []ibverbs.SendWR
		at   int
	}{
		{"9 SGEs", []ibverbs.SendWR{ok, tooMany}, 1},
		{"an opcode the QP was not made with", []ibverbs.SendWR{ok, ok, {Opcode: ibverbs.OpLocalInv}}, 2},
	} {
		if _, err := p.a.qp.NewSendBatch(c.wrs); !errors.As(err, &pe) || pe.Index != c.at || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("NewSendBatch with %s = %v, want a PostError at %d wrapping EINVAL", c.name, err, c.at)
		}
	}
	if _, err := p.a.qp.NewSendBatch(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("NewSendBatch(nil) = %v, want EINVAL", err)
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestRecvBatch(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	src, dst := p.a.buf.Bytes(), p.b.buf.Bytes()
	fill(src[:1024], 17)
	recvs := make([]ibverbs.RecvWR, 4)
	for i := range recvs {
		recvs[i] = ibverbs.RecvWR{ID: uint64(40 + i), SGL: []ibverbs.SGE{p.b.mr.SGE(i*256, 64)}}
	}
	b, err := p.b.qp.NewRecvBatch(recvs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	send := func(off, n int) {
		t.Helper()
		if err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(off, n)}}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.a.cq, ibverbs.WCSend)
	}

	if err := b.Post(0, 4); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		send(i*64, 64)
	}
	for i, wc := range pollN(t, p.b.cq, 4) {
		if wc.Status != ibverbs.WCSuccess || wc.Opcode != ibverbs.WCRecv || wc.WRID != uint64(40+i) || wc.ByteLen != 64 {
			t.Errorf("receive %d: %+v, want 64 bytes in wr_id %d", i, wc, 40+i)
		}
		if !bytes.Equal(src[i*64:i*64+64], dst[i*256:i*256+64]) {
			t.Errorf("message %d landed wrong", i)
		}
	}

	// Request 1 again, with a new ID and a new place.
	b.SetID(1, 51)
	b.SetSGE(1, 0, p.b.mr.SGE(2048, 64))
	if err := b.Post(1, 1); err != nil {
		t.Fatal(err)
	}
	send(512, 64)
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 51 || !bytes.Equal(src[512:576], dst[2048:2112]) {
		t.Errorf("receive %+v, want wr_id 51 with the message at 2048", wc)
	}

	// Request 2 replaced whole: two SGEs, which a 128-byte message fills in
	// turn.
	if err := b.Set(2, ibverbs.RecvWR{ID: 60, SGL: []ibverbs.SGE{p.b.mr.SGE(4096, 64), p.b.mr.SGE(8192, 64)}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(2, 1); err != nil {
		t.Fatal(err)
	}
	send(0, 128)
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 60 || wc.ByteLen != 128 {
		t.Errorf("receive %+v, want 128 bytes in wr_id 60", wc)
	}
	if !bytes.Equal(src[:64], dst[4096:4160]) || !bytes.Equal(src[64:128], dst[8192:8256]) {
		t.Error("the message was not scattered over the two SGEs")
	}

	for _, r := range [][2]int{{3, 2}, {-1, 1}, {0, -1}, {1, math.MaxInt}} {
		if err := b.Post(r[0], r[1]); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Post(%d, %d) = %v, want EINVAL", r[0], r[1], err)
		}
	}
	if err := b.Set(0, ibverbs.RecvWR{SGL: make([]ibverbs.SGE, 9)}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Set with 9 SGEs = %v, want EINVAL", err)
	}
	mustPanic(t, "SetSGE past the request's SGEs", func() { b.SetSGE(0, 1, ibverbs.SGE{}) })
	var pe *ibverbs.PostError
	if _, err := p.b.qp.NewRecvBatch([]ibverbs.RecvWR{recvs[0], {SGL: make([]ibverbs.SGE, 9)}}); !errors.As(err, &pe) || pe.Index != 1 {
		t.Errorf("NewRecvBatch with 9 SGEs in the second = %v, want a PostError at 1", err)
	}

	if err := p.b.qp.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("QP.Close with a receive batch open = %v, want EBUSY", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(0, 1); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Post after Close = %v, want ErrClosed", err)
	}
}

// PostLists posts a batch's receives in lists, in order; a queue that
// fills part way fails at the first request it could not take, with the
// ones before it posted.
func TestRecvBatchPostLists(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, cap: ibverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	room := p.b.qp.Cap().MaxRecvWR
	src, dst := p.a.buf.Bytes(), p.b.buf.Bytes()
	fill(src[:64*(room+8)], 3)
	recvs := make([]ibverbs.RecvWR, room+8)
	for i := range recvs {
		recvs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{p.b.mr.SGE(i*64, 64)}}
	}
	b, err := p.b.qp.NewRecvBatch(recvs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	for _, r := range [][3]int{{0, 1, -1}, {room + 7, 2, 1}, {1, math.MaxInt, 1}} {
		if err := b.PostLists(r[0], r[1], r[2]); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("PostLists(%d, %d, %d) = %v, want EINVAL", r[0], r[1], r[2], err)
		}
	}
	// One more than the queue holds, in lists of 3.
	err = b.PostLists(0, room+8, 3)
	var pe *ibverbs.PostError
	if !errors.As(err, &pe) || pe.Index < room || pe.Index >= room+8 {
		t.Fatalf("PostLists of %d into a queue of %d = %v, want a PostError at %d or later", room+8, room, err, room)
	}
	posted := pe.Index
	for i := range posted {
		if err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(i*64, 64)}}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.a.cq, ibverbs.WCSend)
	}
	for i, wc := range pollN(t, p.b.cq, posted) {
		if wc.Status != ibverbs.WCSuccess || wc.WRID != uint64(i) || !bytes.Equal(src[i*64:i*64+64], dst[i*64:i*64+64]) {
			t.Errorf("receive %d of %d: %+v, want wr_id %d holding message %d", i, posted, wc, i, i)
		}
	}
	// The queue is empty again: lists of 3 over 5 requests post 3 and 2.
	if err := b.PostLists(0, 5, 3); err != nil {
		t.Fatal(err)
	}
	fill(src[:5*64], 9)
	for i := range 5 {
		if err := p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(i*64, 64)}}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.a.cq, ibverbs.WCSend)
	}
	for i, wc := range pollN(t, p.b.cq, 5) {
		if wc.WRID != uint64(i) || !bytes.Equal(src[i*64:i*64+64], dst[i*64:i*64+64]) {
			t.Errorf("second round, receive %d: %+v", i, wc)
		}
	}
}

// A batch of an SRQ posts to it; a QP that takes its receives from an SRQ
// has no batch of its own.
func TestRecvBatchSRQ(t *testing.T) {
	e := newSRQEnv(t)
	srq := e.srq
	r, s := e.side(t, true), e.side(t, false)
	e.connect(t, r, s)
	if _, err := r.qp.NewRecvBatch([]ibverbs.RecvWR{{ID: 1}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("NewRecvBatch on a QP with an SRQ = %v, want EINVAL", err)
	}
	b, err := srq.NewRecvBatch([]ibverbs.RecvWR{{ID: 7, SGL: []ibverbs.SGE{r.mr.SGE(0, 64)}}, {ID: 8, SGL: []ibverbs.SGE{r.mr.SGE(64, 64)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	if err := b.Post(0, 2); err != nil {
		t.Fatal(err)
	}
	copy(s.buf.Bytes(), "srq batch")
	for range 2 {
		if err := s.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{s.mr.SGE(0, 9)}}}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, s.cq, ibverbs.WCSend)
	}
	for i, wc := range pollN(t, r.cq, 2) {
		if wc.Status != ibverbs.WCSuccess || wc.WRID != uint64(7+i) || wc.ByteLen != 9 {
			t.Errorf("receive %d: %+v, want 9 bytes in wr_id %d", i, wc, 7+i)
		}
	}
	if got := string(r.buf.Bytes()[64:73]); got != "srq batch" {
		t.Errorf("the second receive holds %q", got)
	}
	closeOK(t, r.qp) // the batch is now all that holds the SRQ
	if err := srq.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("SRQ.Close with a batch open = %v, want EBUSY", err)
	}
	closeOK(t, b)
	if err := srq.Close(); err != nil {
		t.Errorf("SRQ.Close after its batch's = %v", err)
	}
}

// hugeWCs returns a slice of 1<<31 completions over a page of mmap'd
// memory, closed when t ends: for a CQ with a completion or two at most,
// to show that a length past the verb's int is not cut to a negative one.
// It is not Go memory, which the race detector's checks would refuse to
// see a slice run past.
func hugeWCs(t *testing.T) []ibverbs.WC {
	t.Helper()
	buf := newBuffer(t, 4096)
	return unsafe.Slice((*ibverbs.WC)(unsafe.Pointer(&buf.Bytes()[0])), 1<<31)
}
