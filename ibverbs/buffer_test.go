//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

func TestBufferBasics(t *testing.T) {
	b, err := ibverbs.NewBuffer(5000, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 5000 || b.Addr()%uintptr(os.Getpagesize()) != 0 {
		t.Errorf("len %d addr %#x: want 5000 bytes, page aligned", b.Len(), b.Addr())
	}
	if !bytes.Equal(b.Bytes(), make([]byte, 5000)) {
		t.Error("new buffer is not zeroed")
	}
	closeOK(t, b)
	closeOK(t, b)
	if b.Bytes() != nil || b.Addr() != 0 {
		t.Error("closed buffer still exposes memory")
	}
	if _, err := ibverbs.NewBuffer(0, ibverbs.BufferOptions{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("NewBuffer(0) = %v, want EINVAL", err)
	}
}

// TestMRRanges registers parts of one buffer, with relaxed ordering asked
// for (an optional flag: devices without it ignore it), and moves data
// between the parts with RDMA.
func TestMRRanges(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	access := ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRelaxedOrdering
	lo, err := p.b.pd.RegMRRange(p.b.buf, 0, 4096, access)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, lo)
	hi, err := p.b.pd.RegMRRange(p.b.buf, 4096*4, 4096, access)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, hi)
	if hi.Addr() != lo.Addr()+4096*4 || hi.Len() != 4096 || hi.RKey() == lo.RKey() {
		t.Errorf("ranges: lo %#x+%d, hi %#x+%d", lo.Addr(), lo.Len(), hi.Addr(), hi.Len())
	}
	fill(p.a.buf.Bytes()[:256], 77)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 256)}, RemoteAddr: hi.Addr() + 100, RKey: hi.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	if !bytes.Equal(hi.Bytes()[100:356], p.a.buf.Bytes()[:256]) {
		t.Error("bytes written through the range's rkey differ")
	}
	// Past the end of the range, its rkey is refused.
	err = p.a.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 256)}, RemoteAddr: hi.Addr() + 4000, RKey: hi.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	if we := pollErr(t, p.a.cq); we.Status != ibverbs.WCRemAccessErr {
		t.Errorf("write past the range: %v, want REM_ACCESS_ERR", we)
	}
	if _, err := p.b.pd.RegMRRange(p.b.buf, bufSize-10, 100, access); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("range past the buffer: %v, want EINVAL", err)
	}
}

// TestHugePageBuffer needs huge pages reserved; in the rxe VM (root, a
// throwaway kernel) the test reserves them itself.
func TestHugePageBuffer(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	if os.Getenv("RXE_VM") != "" {
		if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("4"), 0); err != nil {
			t.Fatal(err)
		}
	}
	b, err := ibverbs.NewBuffer(3<<20, ibverbs.BufferOptions{HugePages: true})
	if err != nil {
		if os.Getenv("RXE_VM") == "" {
			t.Skipf("no huge pages here: %v", err)
		}
		t.Fatal(err)
	}
	defer closeOK(t, b)
	if b.Addr()%(2<<20) != 0 {
		t.Errorf("huge page buffer at %#x is not 2 MiB aligned", b.Addr())
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, pd)
	mr, err := pd.RegMR(b, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, mr)
}
