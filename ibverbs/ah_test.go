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

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// A UD receiver answers a sender it knows only from the datagram: the
// address handle made from the completion and the GRH area leads back to
// the sender's GID and QP, over IPv4 and IPv6 GIDs.
func TestAHFromWC(t *testing.T) {
	for _, fam := range []int{4, 6} {
		t.Run(fmt.Sprintf("IPv%d", fam), func(t *testing.T) { testAHFromWC(t, fam) })
	}
}

func testAHFromWC(t *testing.T, family int) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeUD, gidFamily: family})
	const grhLen, n = ibverbs.GRHLen, 256
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{p.b.mr.SGE(0, grhLen+n)}}}); err != nil {
		t.Fatal(err)
	}
	ah, err := p.a.pd.CreateAHTo(p.b.ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ah)
	fill(p.a.buf.Bytes()[grhLen:grhLen+n], 3)
	err = p.a.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(grhLen, n)}, AH: ah, RemoteQPN: p.b.ep.QPN, RemoteQKey: p.b.ep.QKey}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	wc := pollOK(t, p.b.cq, ibverbs.WCRecv)
	if wc.Flags&ibverbs.WCWithGRH == 0 {
		t.Fatalf("RoCE UD receive %+v without a GRH", wc)
	}
	grh := p.b.buf.Bytes()[:grhLen]

	g, err := ibverbs.ParseGRH(grh)
	if err != nil {
		t.Fatal(err)
	}
	if g.Src != p.a.ep.GID || g.Dst != p.b.ep.GID || g.IPv4 != (family == 4) || g.NextHeader != 17 || g.HopLimit == 0 {
		t.Errorf("ParseGRH(%x) = %+v: want IPv%d, UDP, %s to %s, a hop limit", grh, g, family, p.a.ep.GID, p.b.ep.GID)
	}

	attr, err := p.ctx.AHAttrFromWC(p.port, &wc, grh)
	if err != nil {
		t.Fatal(err)
	}
	if !attr.IsGlobal || attr.GRH.DGID != p.a.ep.GID || int(attr.GRH.SGIDIndex) != p.gid ||
		int(attr.Port) != p.port || attr.GRH.HopLimit != g.HopLimit {
		t.Errorf("AHAttrFromWC = %+v: want a global route to %s from GID index %d on port %d, hop limit %d",
			attr, p.a.ep.GID, p.gid, p.port, g.HopLimit)
	}

	// The answer, to the QP the completion names, with the AH made from it.
	back, err := p.b.pd.CreateAHFromWC(&wc, grh, p.port)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, back)
	if err := p.a.qp.PostRecv([]ibverbs.RecvWR{{ID: 2, SGL: []ibverbs.SGE{p.a.mr.SGE(0, grhLen+n)}}}); err != nil {
		t.Fatal(err)
	}
	fill(p.b.buf.Bytes()[grhLen+n:grhLen+2*n], 77)
	err = p.b.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.b.mr.SGE(grhLen+n, n)}, AH: back, RemoteQPN: wc.SrcQP, RemoteQKey: p.a.ep.QKey}})
	if err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.b.cq, ibverbs.WCSend)
	reply := pollOK(t, p.a.cq, ibverbs.WCRecv)
	if reply.SrcQP != p.b.qp.Num() || reply.ByteLen != grhLen+n {
		t.Errorf("reply %+v: want %d bytes from QP %#x", reply, grhLen+n, p.b.qp.Num())
	}
	if !bytes.Equal(p.a.buf.Bytes()[grhLen:grhLen+n], p.b.buf.Bytes()[grhLen+n:grhLen+2*n]) {
		t.Error("the reply's payload differs from what was sent")
	}
	if rg, err := ibverbs.ParseGRH(p.a.buf.Bytes()[:grhLen]); err != nil || rg.Src != p.b.ep.GID || rg.Dst != p.a.ep.GID {
		t.Errorf("reply's GRH %+v (%v): want %s to %s", rg, err, p.b.ep.GID, p.a.ep.GID)
	}

	// Bad GRH areas get errors, never a crash or a wrong AH.
	if _, err := p.ctx.AHAttrFromWC(p.port, &wc, grh[:20]); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("20-byte GRH: %v, want EINVAL", err)
	}
	if _, err := p.ctx.AHAttrFromWC(p.port, &wc, make([]byte, grhLen)); !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Errorf("GRH of zeros: %v, want EPROTONOSUPPORT", err)
	}
	if _, err := p.ctx.AHAttrFromWC(0, &wc, grh); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("port 0: %v, want EINVAL", err)
	}
	mcast, gone := withDst(t, grh, family, true), withDst(t, grh, family, false)
	if _, err := p.ctx.AHAttrFromWC(p.port, &wc, mcast); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("packet to a multicast group: %v, want EINVAL", err)
	} else {
		t.Logf("to a multicast group: %v", err)
	}
	_, err = p.ctx.AHAttrFromWC(p.port, &wc, gone)
	t.Logf("to an address the port lacks: %v", err)
	g2, _ := ibverbs.ParseGRH(gone)
	if err == nil || !strings.Contains(err.Error(), g2.Dst.Addr().String()) || !strings.Contains(err.Error(), "ibv_init_ah_from_wc") {
		t.Errorf("packet to an address the port lacks (%s): %v, want an ibv_init_ah_from_wc error naming it", g2.Dst, err)
	}
	if _, err := p.b.pd.CreateAHFromWC(&wc, gone, p.port); err == nil {
		t.Error("CreateAHFromWC made an AH for an address the port lacks")
	}
}

// withDst returns a copy of grh, a received GRH area of the family, sent
// to a multicast group (mcast) or to an address in 198.18.0.0/15 or
// 2001:2::/48 that no port has; an IPv4 header's checksum is made right.
func withDst(t *testing.T, grh []byte, family int, mcast bool) []byte {
	t.Helper()
	b := bytes.Clone(grh)
	if family == 6 {
		dst := b[24:40]
		clear(dst)
		if mcast {
			copy(dst, []byte{0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x77})
		} else {
			copy(dst, []byte{0x20, 0x01, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xef})
		}
		return b
	}
	ip := b[20:40]
	if mcast {
		copy(ip[16:], []byte{239, 1, 2, 3})
	} else {
		copy(ip[16:], []byte{198, 19, 255, 254})
	}
	binary.BigEndian.PutUint16(ip[10:], 0)
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	return b
}

// TestUDSendChecks: on a UD QP, PostSend and a send batch refuse what the
// provider would read a bad pointer from (another opcode, whose fields
// share the AH's place; no AH; a closed AH), and a batch holds its AH
// open, so that the AH refuses to close under it.
func TestUDSendChecks(t *testing.T) {
	for _, wrapi := range []bool{false, true} {
		t.Run(fmt.Sprintf("WRAPI=%v", wrapi), func(t *testing.T) { testUDSendChecks(t, wrapi) })
	}
}

func testUDSendChecks(t *testing.T, wrapi bool) {
	o := pairOpts{typ: ibverbs.QPTypeUD, wrapi: wrapi}
	if wrapi {
		o.wrOps = []ibverbs.Opcode{ibverbs.OpSend, ibverbs.OpSendWithImm}
	}
	p := newPair(t, o)
	const grhLen, n = ibverbs.GRHLen, 64
	ah, err := p.a.pd.CreateAHTo(p.b.ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	send := ibverbs.SendWR{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(grhLen, n)}, AH: ah, RemoteQPN: p.b.ep.QPN, RemoteQKey: p.b.ep.QKey}
	write := send
	write.Opcode, write.RemoteAddr, write.RKey = ibverbs.OpRDMAWrite, 0x1234, 1
	noAH := send
	noAH.AH = nil
	// An AH of another PD (same device): posted, the device dropped it
	// with LOC_QP_OP_ERR and the QP went to the error state.
	otherPD, err := p.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, otherPD) })
	otherAH, err := otherPD.CreateAHTo(p.b.ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, otherAH) })
	foreign := send
	foreign.AH = otherAH
	for _, c := range []struct {
		name string
		wr   ibverbs.SendWR
		want error
	}{
		{"RDMA write", write, syscall.EINVAL},
		{"no AH", noAH, syscall.EINVAL},
		{"AH of another PD", foreign, syscall.EINVAL},
	} {
		if err := p.a.qp.PostSend([]ibverbs.SendWR{c.wr}); !errors.Is(err, c.want) {
			t.Errorf("PostSend, %s: %v, want %v", c.name, err, c.want)
		}
		if b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{c.wr}); !errors.Is(err, c.want) {
			t.Errorf("NewSendBatch, %s: %v, want %v", c.name, err, c.want)
			if b != nil {
				b.Close()
			}
		}
	}

	// A batch holds its AH open; Set lets go of the one it replaces.
	b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{send})
	if err != nil {
		t.Fatal(err)
	}
	if err := ah.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("closing the AH of an open batch: %v, want EBUSY", err)
	}
	if err := b.Set(0, foreign); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "another PD") {
		t.Errorf("Set with an AH of another PD: %v, want EINVAL saying so", err)
	}
	ah2, err := p.a.pd.CreateAHTo(p.b.ep, p.port, p.gid)
	if err != nil {
		t.Fatal(err)
	}
	other := send
	other.AH = ah2
	if err := b.Set(0, other); err != nil {
		t.Fatal(err)
	}
	if err := ah.Close(); err != nil {
		t.Fatalf("closing the AH a batch no longer uses: %v", err)
	}
	if err := ah2.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("closing the AH a batch took by Set: %v, want EBUSY", err)
	}
	// The batch still sends, through ah2.
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{p.b.mr.SGE(0, grhLen+n)}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	pollOK(t, p.a.cq, ibverbs.WCSend)
	pollOK(t, p.b.cq, ibverbs.WCRecv)
	closeOK(t, b)
	closeOK(t, ah2)

	// A closed AH is refused, not handed to the provider.
	if err := p.a.qp.PostSend([]ibverbs.SendWR{other}); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("PostSend with a closed AH: %v, want ErrClosed", err)
	}
	if _, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{other}); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("NewSendBatch with a closed AH: %v, want ErrClosed", err)
	}
}

// CreateAH, CreateAHTo, AHAttrFromWC and CreateAHFromWC name a port the
// device does not have (CreateAH said only "ibv_create_ah: invalid
// argument", AHAttrFromWC blamed the packet's destination); on a RoCE
// port they say that an AH needs a global route, where CreateAH failed
// without a word why and AHAttrFromWC made a useless non-global vector of
// a completion without a GRH; a nil WC is refused, where it panicked.
func TestAHRefusals(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, pd)
	port, gid := info.Port, rdmatest.GIDIndex(t, ctx, info.Port)
	ge, err := ctx.QueryGID(port, gid)
	if err != nil {
		t.Fatal(err)
	}
	ep := ibverbs.Endpoint{GID: ge.GID}
	global := ibverbs.AHAttr{Port: 200, IsGlobal: true, GRH: ibverbs.GlobalRoute{DGID: ge.GID, SGIDIndex: uint8(gid), HopLimit: 64}}
	refused := func(what string, err error, want string) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want EINVAL saying %q", what, err, want)
		}
	}
	refused("CreateAH on port 200", second(pd.CreateAH(global)), "invalid port 200")
	refused("CreateAHTo port 200", second(pd.CreateAHTo(ep, 200, gid)), "invalid port 200")
	refused("AHAttrFromWC on port 200", second(ctx.AHAttrFromWC(200, &ibverbs.WC{}, nil)), "invalid port 200")
	refused("CreateAHFromWC on port 200", second(pd.CreateAHFromWC(&ibverbs.WC{}, nil, 200)), "invalid port 200")

	for name, f := range map[string]func() error{
		"AHAttrFromWC":   func() error { return second(ctx.AHAttrFromWC(port, nil, nil)) },
		"CreateAHFromWC": func() error { return second(pd.CreateAHFromWC(nil, nil, port)) },
	} {
		var err error
		if v := rdmatest.Panic(func() { err = f() }); v != nil {
			t.Errorf("%s(nil WC) panicked: %v", name, v)
			continue
		}
		refused(name+"(nil WC)", err, "nil WC")
	}

	pa, err := ctx.QueryPort(port)
	if err != nil {
		t.Fatal(err)
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		return // the rest is RoCE's
	}
	refused("CreateAH without a global route", second(pd.CreateAH(ibverbs.AHAttr{Port: uint8(port)})), "needs a global route")
	refused("CreateAHTo an Endpoint without a GID", second(pd.CreateAHTo(ibverbs.Endpoint{}, port, gid)), "needs a global route")
	refused("AHAttrFromWC without a GRH", second(ctx.AHAttrFromWC(port, &ibverbs.WC{}, nil)), "no GRH")
	refused("CreateAHFromWC without a GRH", second(pd.CreateAHFromWC(&ibverbs.WC{}, nil, port)), "no GRH")
	global.Port = uint8(port)
	ah, err := pd.CreateAH(global)
	if err != nil {
		t.Fatalf("CreateAH with a global route: %v", err)
	}
	closeOK(t, ah)
}
