//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestRegMRIOVARemoteWriteRead has a peer write to and read from a region
// registered at a high iova and one registered zero-based, naming its
// bytes by their addresses in iova space and the region's rkey.
func TestRegMRIOVARemoteWriteRead(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	access := ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead
	const iova = 0x5a5a00000000
	for _, r := range []struct {
		name string
		off  int    // of the region in b's buffer
		iova uint64 // the region's
	}{{"high iova", 16384, iova}, {"zero-based", 32768, 0}} {
		mr, err := p.b.pd.RegMRIOVA(p.b.buf, r.off, 8192, r.iova, access)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if mr.Addr() != r.iova || mr.Remote().Addr != r.iova {
			t.Errorf("%s: Addr %#x, Remote().Addr %#x, want %#x", r.name, mr.Addr(), mr.Remote().Addr, r.iova)
		}
		region := p.b.buf.Bytes()[r.off : r.off+8192]

		// A write to iova+300 lands 300 bytes into the region.
		fill(p.a.buf.Bytes()[:256], byte(r.off>>10))
		wr := ibverbs.SendWR{ID: 1, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 256)}}
		if err := wr.SetRemote(mr.Remote(), 300); err != nil {
			t.Fatal(err)
		}
		if wr.RemoteAddr != r.iova+300 {
			t.Fatalf("%s: SetRemote's address %#x, want %#x", r.name, wr.RemoteAddr, r.iova+300)
		}
		if err := p.a.qp.PostSend([]ibverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
		if !bytes.Equal(region[300:556], p.a.buf.Bytes()[:256]) {
			t.Errorf("%s: a write to iova %#x did not land 300 bytes into the region", r.name, r.iova+300)
		}

		// A read from iova+5000 brings the bytes 5000 into the region.
		fill(region[5000:5200], byte(r.off>>10)+7)
		err = p.a.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(4096, 200)}, RemoteAddr: r.iova + 5000, RKey: mr.RKey()}})
		if err != nil {
			t.Fatal(err)
		}
		pollOK(t, p.a.cq, ibverbs.WCRDMARead)
		if !bytes.Equal(p.a.buf.Bytes()[4096:4296], region[5000:5200]) {
			t.Errorf("%s: a read from iova %#x brought other bytes than the region's at 5000", r.name, r.iova+5000)
		}
		closeOK(t, mr)
	}
}
