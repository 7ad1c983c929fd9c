//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"errors"
	"math"
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
	// A length whose end overflows int is refused too, not sliced.
	if _, err := p.b.pd.RegMRRange(p.b.buf, 1, math.MaxInt, access); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("range of MaxInt bytes: %v, want EINVAL", err)
	}
	// An SGE outside the region panics, as slicing does.
	for _, r := range [][2]int{{4000, 97}, {-1, 10}, {0, -1}, {1, math.MaxInt}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SGE(%d, %d) of a region of 4096 bytes did not panic", r[0], r[1])
				}
			}()
			hi.SGE(r[0], r[1])
		}()
	}
	if sge := hi.SGE(4000, 96); sge.Addr != hi.Addr()+4000 || sge.Length != 96 || sge.LKey != hi.LKey() {
		t.Errorf("SGE(4000, 96) = %+v", sge)
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

// TestMapFile registers a file's pages, mapped at an offset, and moves
// data through them with RDMA: what the peer writes is in the file, and
// what the file holds the peer reads.
func TestMapFile(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	pg := os.Getpagesize()
	f, err := os.CreateTemp(t.TempDir(), "mapped")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(4 * pg)); err != nil {
		t.Fatal(err)
	}
	if _, err := ibverbs.MapFile(f, int64(pg), 3*pg+1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("mapping past the file's end: %v, want EINVAL", err)
	}
	if _, err := ibverbs.MapFile(f, 100, pg); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("mapping at an unaligned offset: %v, want EINVAL", err)
	}
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ibverbs.MapFile(ro, 0, pg); !errors.Is(err, syscall.EACCES) {
		t.Errorf("mapping a read-only file for writing: %v, want EACCES", err)
	}

	b, err := ibverbs.MapFile(f, int64(pg), 2*pg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, b)
	if b.Len() != 2*pg {
		t.Errorf("Len() = %d, want %d", b.Len(), 2*pg)
	}
	mr, err := p.b.pd.RegMR(b, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mr)

	// The peer writes 300 bytes across the mapping's page boundary.
	fill(p.a.buf.Bytes()[:300], 41)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 300)}, RemoteAddr: mr.Addr() + uint64(pg) - 100, RKey: mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	got := make([]byte, 300)
	if _, err := f.ReadAt(got, int64(2*pg-100)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p.a.buf.Bytes()[:300]) {
		t.Error("the file does not hold the bytes written into its mapping")
	}

	// What the file holds, the peer reads.
	want := make([]byte, 200)
	fill(want, 97)
	if _, err := f.WriteAt(want, int64(pg)+8); err != nil {
		t.Fatal(err)
	}
	err = p.a.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(4096, 200)}, RemoteAddr: mr.Addr() + 8, RKey: mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMARead)
	if !bytes.Equal(p.a.buf.Bytes()[4096:4296], want) {
		t.Error("the peer read other bytes than the file's")
	}
	if err := b.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("closing a mapped buffer under an MR: %v, want EBUSY", err)
	}
}

// TestRegMRIOVA registers a zero-based region and one at a high iova:
// peers' requests and local SGEs name its bytes in that space, and the
// region's bounds hold there.
func TestRegMRIOVA(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	access := ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead
	if _, err := p.b.pd.RegMRIOVA(p.b.buf, 0, 4096, 100, access); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("iova 100 for page-aligned memory: %v, want EINVAL", err)
	}
	if _, err := p.b.pd.RegMRIOVA(p.b.buf, 0, 8192, 1<<64-4096, access); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a region past the end of the iova space: %v, want EINVAL", err)
	}
	zero, err := p.b.pd.RegMRIOVA(p.b.buf, 8192, 8192, 0, access)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, zero)
	if zero.Addr() != 0 || zero.Len() != 8192 {
		t.Errorf("zero-based region: Addr %#x Len %d, want 0 and 8192", zero.Addr(), zero.Len())
	}
	fill(p.a.buf.Bytes()[:256], 13)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 256)}, RemoteAddr: 100, RKey: zero.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	if !bytes.Equal(p.b.buf.Bytes()[8192+100:8192+356], p.a.buf.Bytes()[:256]) {
		t.Error("a write to offset 100 of the zero-based region did not land 100 bytes into it")
	}

	// A local SGE names the region's bytes by iova too: b writes from it.
	const iova = 0x7f0000000000
	high, err := p.b.pd.RegMRIOVA(p.b.buf, 0, 4096, iova, access)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, high)
	fill(p.b.buf.Bytes()[64:192], 29)
	err = p.b.qp.PostSend([]ibverbs.SendWR{{ID: 3, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{high.SGE(64, 128)}, RemoteAddr: p.a.mr.Addr() + 1024, RKey: p.a.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.b.cq, ibverbs.WCRDMAWrite)
	if !bytes.Equal(p.a.buf.Bytes()[1024:1152], p.b.buf.Bytes()[64:192]) {
		t.Error("a write from an SGE at the iova sent other bytes")
	}

	// Past the zero-based region's end, its rkey is refused (the QP
	// breaks: this is the last request).
	err = p.a.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 256)}, RemoteAddr: 8192 - 100, RKey: zero.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	if we := pollErr(t, p.a.cq); we.Status != ibverbs.WCRemAccessErr {
		t.Errorf("write past the zero-based region: %v, want REM_ACCESS_ERR", we)
	}
}
