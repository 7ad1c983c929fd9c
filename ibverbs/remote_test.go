//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// The encoding is RemoteMRSize bytes, Addr, Len and RKey big-endian, and
// decodes to what was encoded, from the front of longer input too.
func TestRemoteMRRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		r    ibverbs.RemoteMR
		want string // hex
	}{
		{ibverbs.RemoteMR{Addr: 0x0102030405060708, Len: 0x1112131415161718, RKey: 0x21222324},
			"0102030405060708" + "1112131415161718" + "21222324"},
		{ibverbs.RemoteMR{Addr: 0, Len: 1, RKey: 0}, // zero-based, one byte
			"0000000000000000" + "0000000000000001" + "00000000"},
		{ibverbs.RemoteMR{Addr: 0, Len: math.MaxUint64, RKey: math.MaxUint32}, // all but the last byte of the space
			"0000000000000000" + "ffffffffffffffff" + "ffffffff"},
		{ibverbs.RemoteMR{Addr: math.MaxUint64, Len: 1, RKey: 7}, // the space's last byte
			"ffffffffffffffff" + "0000000000000001" + "00000007"},
	} {
		prefix := []byte("prefix")
		b, err := tc.r.AppendBinary(prefix)
		if err != nil {
			t.Errorf("AppendBinary(%+v): %v", tc.r, err)
			continue
		}
		if !bytes.Equal(b[:len(prefix)], prefix) || hex.EncodeToString(b[len(prefix):]) != tc.want {
			t.Errorf("AppendBinary(%+v) = %x, want prefix then %s", tc.r, b, tc.want)
		}
		if len(b)-len(prefix) != ibverbs.RemoteMRSize {
			t.Errorf("AppendBinary(%+v) appended %d bytes, want RemoteMRSize (%d)", tc.r, len(b)-len(prefix), ibverbs.RemoteMRSize)
		}
		m, err := tc.r.MarshalBinary()
		if err != nil || !bytes.Equal(m, b[len(prefix):]) {
			t.Errorf("MarshalBinary(%+v) = %x, %v; want AppendBinary's %x", tc.r, m, err, b[len(prefix):])
		}
		var got ibverbs.RemoteMR
		if err := got.UnmarshalBinary(m); err != nil || got != tc.r {
			t.Errorf("UnmarshalBinary(%x) = %+v, %v; want %+v", m, got, err, tc.r)
		}
	}
}

// The CM pads private data with zeros to a fixed size (56 bytes in a
// request, 196 in a reply): the decoder reads its RemoteMRSize bytes from
// the front and ignores what follows, zeros or a caller's own bytes.
func TestRemoteMRPadding(t *testing.T) {
	r := ibverbs.RemoteMR{Addr: 0x7f0000001000, Len: 4096, RKey: 0x1234}
	enc, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"request", append(bytes.Clone(enc), make([]byte, 56-ibverbs.RemoteMRSize)...)},
		{"reply", append(bytes.Clone(enc), make([]byte, 196-ibverbs.RemoteMRSize)...)},
		{"more data", append(bytes.Clone(enc), "and then the caller's own bytes"...)},
		{"two", append(bytes.Clone(enc), enc...)},
	} {
		var got ibverbs.RemoteMR
		if err := got.UnmarshalBinary(tc.data); err != nil || got != r {
			t.Errorf("%s (%d bytes): %+v, %v; want %+v", tc.name, len(tc.data), got, err, r)
		}
	}
}

// Input shorter than RemoteMRSize, and encodings of a RemoteMR that names
// no bytes or passes the end of the address space, fail and leave the
// destination alone; such RemoteMRs do not encode either.
func TestRemoteMRInvalid(t *testing.T) {
	orig := ibverbs.RemoteMR{Addr: 1, Len: 2, RKey: 3}
	enc, _ := ibverbs.RemoteMR{Addr: 0x1000, Len: 64, RKey: 9}.MarshalBinary()
	for n := range ibverbs.RemoteMRSize {
		got := orig
		if err := got.UnmarshalBinary(enc[:n]); !errors.Is(err, io.ErrUnexpectedEOF) || got != orig {
			t.Errorf("UnmarshalBinary of %d bytes: %v, %+v; want io.ErrUnexpectedEOF and %+v unchanged", n, err, got, orig)
		}
	}
	over := binary.BigEndian.AppendUint64(nil, math.MaxUint64)
	over = binary.BigEndian.AppendUint64(over, 2)
	over = binary.BigEndian.AppendUint32(over, 5)
	for name, data := range map[string][]byte{
		"all zeros (no private data sent)": make([]byte, 56),
		"0 bytes at an address":            append(binary.BigEndian.AppendUint64(nil, 0x1000), make([]byte, 12)...),
		"past the end of the space":        over,
	} {
		got := orig
		if err := got.UnmarshalBinary(data); !errors.Is(err, syscall.EINVAL) || got != orig {
			t.Errorf("UnmarshalBinary(%s): %v, %+v; want EINVAL and %+v unchanged", name, err, got, orig)
		}
	}
	for _, r := range []ibverbs.RemoteMR{{}, {Addr: 0x1000, RKey: 1}, {Addr: math.MaxUint64, Len: 2}, {Addr: 2, Len: math.MaxUint64}} {
		b, err := r.AppendBinary([]byte("x"))
		if !errors.Is(err, syscall.EINVAL) || string(b) != "x" {
			t.Errorf("AppendBinary(%+v) = %q, %v; want EINVAL and nothing appended", r, b, err)
		}
		if _, err := r.MarshalBinary(); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("MarshalBinary(%+v): %v, want EINVAL", r, err)
		}
	}
}

// Range narrows a RemoteMR to a non-empty part within it, or fails.
func TestRemoteMRRange(t *testing.T) {
	r := ibverbs.RemoteMR{Addr: 0x10000, Len: 4096, RKey: 0xabc}
	for _, tc := range []struct {
		off, n uint64
		want   ibverbs.RemoteMR // zero: an error
	}{
		{0, 4096, r},
		{0, 1, ibverbs.RemoteMR{Addr: 0x10000, Len: 1, RKey: 0xabc}},
		{4095, 1, ibverbs.RemoteMR{Addr: 0x10fff, Len: 1, RKey: 0xabc}},
		{1024, 2048, ibverbs.RemoteMR{Addr: 0x10400, Len: 2048, RKey: 0xabc}},
		{0, 0, ibverbs.RemoteMR{}},
		{4096, 0, ibverbs.RemoteMR{}},
		{4096, 1, ibverbs.RemoteMR{}},
		{4000, 97, ibverbs.RemoteMR{}},
		{1, math.MaxUint64, ibverbs.RemoteMR{}}, // off+n wraps to 0
		{math.MaxUint64, 2, ibverbs.RemoteMR{}},
	} {
		got, err := r.Range(tc.off, tc.n)
		if tc.want == (ibverbs.RemoteMR{}) {
			if !errors.Is(err, syscall.EINVAL) || got != tc.want {
				t.Errorf("Range(%d, %d) = %+v, %v; want EINVAL", tc.off, tc.n, got, err)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("Range(%d, %d) = %+v, %v; want %+v", tc.off, tc.n, got, err, tc.want)
		}
	}
	if got, err := (ibverbs.RemoteMR{}).Range(0, 1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Range of the zero RemoteMR: %+v, %v; want EINVAL", got, err)
	}
}

// SetRemote sets a request's RemoteAddr and RKey at an offset of a
// RemoteMR where the request's bytes (its SGL's, or an atomic's 8) fit
// there, aligned for atomics, and otherwise fails leaving the request as
// it was; it does not allocate when it succeeds.
func TestSendWRSetRemote(t *testing.T) {
	r := ibverbs.RemoteMR{Addr: 0x10000, Len: 4096, RKey: 0xabc}
	sgl := func(ns ...uint32) []ibverbs.SGE {
		s := make([]ibverbs.SGE, len(ns))
		for i, n := range ns {
			s[i] = ibverbs.SGE{Addr: 0x9000, Length: n, LKey: 1}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		op   ibverbs.Opcode
		sgl  []ibverbs.SGE
		r    ibverbs.RemoteMR
		off  uint64
		ok   bool
	}{
		{"write all", ibverbs.OpRDMAWrite, sgl(4096), r, 0, true},
		{"write two SGEs to the end", ibverbs.OpRDMAWrite, sgl(96, 4), r, 3996, true},
		{"write one past the end", ibverbs.OpRDMAWrite, sgl(96, 5), r, 3996, false},
		{"write with imm past the end", ibverbs.OpRDMAWriteWithImm, sgl(2), r, 4095, false},
		{"write with imm", ibverbs.OpRDMAWriteWithImm, sgl(1), r, 4095, true},
		{"read", ibverbs.OpRDMARead, sgl(64), r, 64, true},
		{"read too much", ibverbs.OpRDMARead, sgl(4097), r, 0, false},
		{"empty write at the end", ibverbs.OpRDMAWrite, nil, r, 4096, true},
		{"offset past the end", ibverbs.OpRDMAWrite, nil, r, 4097, false},
		{"offset wraps", ibverbs.OpRDMAWrite, sgl(16), r, math.MaxUint64 - 7, false},
		{"fetch-add", ibverbs.OpAtomicFetchAdd, sgl(8), r, 8, true},
		{"fetch-add at the last word", ibverbs.OpAtomicFetchAdd, sgl(8), r, 4088, true},
		{"fetch-add past the end", ibverbs.OpAtomicFetchAdd, sgl(8), r, 4092, false},
		{"compare-swap misaligned", ibverbs.OpAtomicCmpAndSwp, sgl(8), r, 4, false},
		{"compare-swap on a misaligned region", ibverbs.OpAtomicCmpAndSwp, sgl(8), ibverbs.RemoteMR{Addr: 0x10004, Len: 64, RKey: 1}, 4, true},
		{"fetch-add into 4 bytes", ibverbs.OpAtomicFetchAdd, sgl(4), r, 8, false},
		{"fetch-add into 16 bytes", ibverbs.OpAtomicFetchAdd, sgl(16), r, 8, false},
		{"compare-swap into two SGEs", ibverbs.OpAtomicCmpAndSwp, sgl(4, 4), r, 8, false},
		{"compare-swap with no SGE", ibverbs.OpAtomicCmpAndSwp, nil, r, 8, false},
		{"send", ibverbs.OpSend, sgl(8), r, 0, false},
		{"bind", ibverbs.OpBindMW, nil, r, 0, false},
		{"zero RemoteMR", ibverbs.OpRDMAWrite, nil, ibverbs.RemoteMR{}, 0, false},
		{"past the space's end", ibverbs.OpRDMAWrite, sgl(1), ibverbs.RemoteMR{Addr: math.MaxUint64, Len: 2, RKey: 1}, 0, false},
	} {
		wr := ibverbs.SendWR{Opcode: tc.op, SGL: tc.sgl, RemoteAddr: 1, RKey: 2}
		err := wr.SetRemote(tc.r, tc.off)
		if !tc.ok {
			if !errors.Is(err, syscall.EINVAL) || wr.RemoteAddr != 1 || wr.RKey != 2 {
				t.Errorf("%s: %v, RemoteAddr %#x, RKey %#x; want EINVAL and the request unchanged", tc.name, err, wr.RemoteAddr, wr.RKey)
			}
			continue
		}
		if err != nil || wr.RemoteAddr != tc.r.Addr+tc.off || wr.RKey != tc.r.RKey {
			t.Errorf("%s: %v, RemoteAddr %#x, RKey %#x; want %#x, %#x", tc.name, err, wr.RemoteAddr, wr.RKey, tc.r.Addr+tc.off, tc.r.RKey)
		}
	}
	wr := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: sgl(64, 64)}
	if n := testing.AllocsPerRun(100, func() {
		if err := wr.SetRemote(r, 128); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SetRemote allocates %v times", n)
	}
}

// FuzzRemoteMR: any input decodes or fails without panicking; what
// decodes names bytes within the address space and encodes back to the
// input's first RemoteMRSize bytes.
func FuzzRemoteMR(f *testing.F) {
	enc, _ := ibverbs.RemoteMR{Addr: 0x7f0000001000, Len: 4096, RKey: 0x1234}.MarshalBinary()
	f.Add(enc)
	f.Add(append(bytes.Clone(enc), make([]byte, 36)...))
	f.Add(make([]byte, 56))
	f.Add(enc[:19])
	f.Fuzz(func(t *testing.T, data []byte) {
		var r ibverbs.RemoteMR
		if err := r.UnmarshalBinary(data); err != nil {
			if r != (ibverbs.RemoteMR{}) {
				t.Fatalf("failed (%v) but set %+v", err, r)
			}
			return
		}
		if r.Len == 0 || r.Addr+(r.Len-1) < r.Addr {
			t.Fatalf("decoded %+v, which names no bytes or wraps", r)
		}
		b, err := r.MarshalBinary()
		if err != nil || !bytes.Equal(b, data[:ibverbs.RemoteMRSize]) {
			t.Fatalf("%+v encodes to %x, %v; decoded from %x", r, b, err, data[:ibverbs.RemoteMRSize])
		}
	})
}

// A side tells its peer where its memory is; the peer, having decoded it
// from its private data (padded by the CM), writes 64 bytes at offset 128
// of it.
func ExampleRemoteMR() {
	// On the side that owns the memory: mine := mr.Remote()
	mine := ibverbs.RemoteMR{Addr: 0x7f3a5c000000, Len: 1 << 20, RKey: 0x1f02}
	adv, err := mine.AppendBinary(nil) // rdmacm.Config.PrivateData
	if err != nil {
		panic(err)
	}
	fmt.Println(len(adv), "bytes:", hex.EncodeToString(adv))

	// On the peer: what arrived is padded to 56 bytes by the CM.
	arrived := append(adv, make([]byte, 56-len(adv))...) // rdmacm.Conn.PrivateData()
	var peer ibverbs.RemoteMR
	if err := peer.UnmarshalBinary(arrived); err != nil {
		panic(err)
	}
	wr := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{{Addr: 0x1000, Length: 64, LKey: 1}}} // mr.SGE(0, 64)
	if err := wr.SetRemote(peer, 128); err != nil {
		panic(err)
	}
	fmt.Printf("RemoteAddr %#x RKey %#x\n", wr.RemoteAddr, wr.RKey)
	fmt.Println(wr.SetRemote(peer, 1<<20-32))
	// Output:
	// 20 bytes: 00007f3a5c000000000000000010000000001f02
	// RemoteAddr 0x7f3a5c000080 RKey 0x1f02
	// ibverbs: RDMA_WRITE of 64 bytes at offset 1048544 of a RemoteMR of 1048576 bytes: invalid argument
}

// MR.Remote names the region as RDMA does: a peer that decoded it writes,
// reads and adds at offsets of it through SetRemote, and a Range of it
// lends no more than that range.
func TestMRRemote(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	mine := p.b.mr.Remote()
	if want := (ibverbs.RemoteMR{Addr: p.b.mr.Addr(), Len: uint64(p.b.mr.Len()), RKey: p.b.mr.RKey()}); mine != want {
		t.Fatalf("Remote() = %+v, want %+v", mine, want)
	}
	adv, err := mine.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var peer ibverbs.RemoteMR
	if err := peer.UnmarshalBinary(append(adv, make([]byte, 36)...)); err != nil || peer != mine {
		t.Fatalf("decoded %+v, %v; want %+v", peer, err, mine)
	}
	src, dst := p.a.buf.Bytes(), p.b.buf.Bytes()
	copy(src, "written through a RemoteMR")
	const at = 1000
	post := func(wr ibverbs.SendWR, off uint64, r ibverbs.RemoteMR) {
		t.Helper()
		wr.Flags = ibverbs.SendSignaled
		if err := wr.SetRemote(r, off); err != nil {
			t.Fatal(err)
		}
		if err := p.a.qp.PostSend([]ibverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
	}
	post(ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 26)}}, at, peer)
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	if got := string(dst[at : at+26]); got != "written through a RemoteMR" {
		t.Errorf("the peer's memory at %d holds %q", at, got)
	}
	copy(dst[8192:], "read back")
	post(ibverbs.SendWR{Opcode: ibverbs.OpRDMARead, SGL: []ibverbs.SGE{p.a.mr.SGE(4096, 9)}}, 8192, peer)
	pollOK(t, p.a.cq, ibverbs.WCRDMARead)
	if got := string(src[4096 : 4096+9]); got != "read back" {
		t.Errorf("read %q", got)
	}
	binary.NativeEndian.PutUint64(dst[64:], 40)
	post(ibverbs.SendWR{Opcode: ibverbs.OpAtomicFetchAdd, SGL: []ibverbs.SGE{p.a.mr.SGE(512, 8)}, CompareAdd: 2}, 64, peer)
	pollOK(t, p.a.cq, ibverbs.WCFetchAdd)
	if old, now := binary.NativeEndian.Uint64(src[512:]), binary.NativeEndian.Uint64(dst[64:]); old != 40 || now != 42 {
		t.Errorf("fetch-add: fetched %d, now %d; want 40, 42", old, now)
	}

	lent, err := mine.Range(4096, 64)
	if err != nil {
		t.Fatal(err)
	}
	post(ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 7)}}, 57, lent)
	pollOK(t, p.a.cq, ibverbs.WCRDMAWrite)
	if got := string(dst[4096+57 : 4096+64]); got != "written" {
		t.Errorf("the lent range's last 7 bytes hold %q", got)
	}
	wr := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}
	if err := wr.SetRemote(lent, 57); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a write of 8 bytes at 57 of a range of 64: %v, want EINVAL", err)
	}
}
