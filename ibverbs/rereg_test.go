//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestReregMR changes a region's access from remote write to local only
// (ibv_rereg_mr): a peer's write that landed before is refused after.
// Where the provider cannot re-register (soft-RoCE's), it asserts that
// the error says so (errors.ErrUnsupported), and that the region is as
// it was: its keys, and a peer's write that lands.
func TestReregMR(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	mr, err := p.b.pd.RegMRRange(p.b.buf, 16384, 8192, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mr)
	if err := mr.Rereg(ibverbs.MRChange{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a change of nothing: %v, want EINVAL", err)
	}
	if err := mr.Rereg(ibverbs.MRChange{Buf: p.b.buf, Off: 4096, Len: bufSize}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a range past the buffer's end: %v, want EINVAL", err)
	}
	write := func(id uint64, seed byte) {
		t.Helper()
		fill(p.a.buf.Bytes()[:512], seed)
		wr := ibverbs.SendWR{ID: id, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 512)}}
		if err := wr.SetRemote(mr.Remote(), 1000); err != nil {
			t.Fatal(err)
		}
		if err := p.a.qp.PostSend([]ibverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
	}
	landed := func(what string) {
		t.Helper()
		pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
		if !bytes.Equal(p.b.buf.Bytes()[16384+1000:16384+1512], p.a.buf.Bytes()[:512]) {
			t.Errorf("%s: the write did not land", what)
		}
	}
	write(1, 3)
	landed("before ibv_rereg_mr")

	lkey, rkey, addr := mr.LKey(), mr.RKey(), mr.Addr()
	err = mr.Rereg(ibverbs.MRChange{SetAccess: true, Access: ibverbs.AccessLocalWrite})
	if errors.Is(err, errors.ErrUnsupported) {
		t.Logf("%s: %v", p.ctx.Name(), err)
		if !strings.Contains(err.Error(), "ibv_rereg_mr") || !strings.Contains(err.Error(), "unchanged") {
			t.Errorf("the error %q names neither the verb nor the region's state", err)
		}
		if mr.LKey() != lkey || mr.RKey() != rkey || mr.Addr() != addr {
			t.Errorf("keys and address after a refused rereg: %#x %#x %#x, want %#x %#x %#x",
				mr.LKey(), mr.RKey(), mr.Addr(), lkey, rkey, addr)
		}
		write(2, 5)
		landed("after a refused ibv_rereg_mr")
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	write(3, 7)
	if we := pollErr(t, p.a.cq); we.Status != ibverbs.WCRemAccessErr {
		t.Errorf("a write once remote write was taken away: %v, want REM_ACCESS_ERR", we)
	}
}

// TestReregMRClosed: a closed MR, or a closed PD or Buffer to move it to,
// is ErrClosed.
func TestReregMRClosed(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	mr, err := p.b.pd.RegMRRange(p.b.buf, 0, 4096, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	pd2, err := p.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, pd2)
	if err := mr.Rereg(ibverbs.MRChange{PD: pd2}); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("to a closed PD: %v, want ErrClosed", err)
	}
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, buf)
	if err := mr.Rereg(ibverbs.MRChange{Buf: buf, Len: 4096}); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("to a closed Buffer: %v, want ErrClosed", err)
	}
	closeOK(t, mr)
	if err := mr.Rereg(ibverbs.MRChange{SetAccess: true}); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("a closed MR: %v, want ErrClosed", err)
	}
}
