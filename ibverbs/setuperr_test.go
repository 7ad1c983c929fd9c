//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// refusedWith checks that err matches EINVAL and says each of want.
func refusedWith(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("%s: %v; want EINVAL", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(fmt.Sprint(err), w) {
			t.Errorf("%s: %v; want it to say %q", what, err, w)
		}
	}
	t.Logf("%s: %v", what, err)
}

// A legal move that the verb refuses for its mask names, for the QP's
// type, the required attributes the mask lacks and the bits the move does
// not take (the kernel's ib_modify_qp_is_ok), where it said only that "an
// attribute or the mask is wrong".
func TestModifyNamesMaskBits(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	rc := p.spareRCQP(t)
	refusedWith(t, "RC RESET to INIT with the state alone", rc.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateInit}, ibverbs.QPAttrState),
		"the QP is in RESET, from which INIT may be reached",
		"an RC QP's move from RESET to INIT: it lacks QPAttrAccessFlags, QPAttrPKeyIndex and QPAttrPort, which the move requires")
	cp := ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}
	if err := rc.ToInit(cp); err != nil {
		t.Fatal(err)
	}
	rtr := ibverbs.QPAttr{State: ibverbs.QPStateRTR, PathMTU: p.b.ep.MTU, DestQPN: p.b.ep.QPN, RQPSN: p.b.ep.PSN,
		MaxDestRdAtomic: 1, MinRNRTimer: ibverbs.DefaultMinRNRTimer}
	refusedWith(t, "RC INIT to RTR without an address vector", rc.Modify(&rtr, ibverbs.QPAttrState|ibverbs.QPAttrPathMTU|
		ibverbs.QPAttrDestQPN|ibverbs.QPAttrRQPSN|ibverbs.QPAttrMaxDestRdAtomic|ibverbs.QPAttrMinRNRTimer),
		"it lacks QPAttrAV, which the move requires")
	if s, err := rc.State(); err != nil || s != ibverbs.QPStateInit {
		t.Errorf("state after the refused moves: %v, %v; want INIT", s, err)
	}

	ud := newSide(t, p.ctx, p.a.pd, pairOpts{typ: ibverbs.QPTypeUD}, nil, p.port, p.gid).qp
	init := ibverbs.QPAttr{State: ibverbs.QPStateInit, Port: uint8(p.port), QKey: 0x11111111}
	refusedWith(t, "UD RESET to INIT without a Q_Key", ud.Modify(&init, ibverbs.QPAttrState|ibverbs.QPAttrPKeyIndex|ibverbs.QPAttrPort),
		"a UD QP's move from RESET to INIT: it lacks QPAttrQKey, which the move requires")
	refusedWith(t, "UD RESET to INIT with access flags", ud.Modify(&init, ibverbs.QPAttrState|ibverbs.QPAttrPKeyIndex|
		ibverbs.QPAttrPort|ibverbs.QPAttrQKey|ibverbs.QPAttrAccessFlags),
		"a UD QP's move from RESET to INIT: it has QPAttrAccessFlags, which the move does not take")
	refusedWith(t, "UD RESET to INIT with access flags and no Q_Key", ud.Modify(&init, ibverbs.QPAttrState|ibverbs.QPAttrPKeyIndex|
		ibverbs.QPAttrPort|ibverbs.QPAttrAccessFlags),
		"it lacks QPAttrQKey, which the move requires, and has QPAttrAccessFlags, which the move does not take")

	// p.a's QP is in RTS, where the path MTU is not to be changed.
	refusedWith(t, "RC RTS to RTS with a path MTU", p.a.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS, PathMTU: p.b.ep.MTU},
		ibverbs.QPAttrState|ibverbs.QPAttrPathMTU),
		"the QP is in RTS, from which RTS may be reached",
		"an RC QP's move from RTS to RTS: it has QPAttrPathMTU, which the move does not take")
	// With QPAttrCurState the kernel judges the move from CurState,
	// SQE here, not from the QP's RTS, and an RC QP's move from SQE takes
	// no CurState: the error says so, where it judged RTS to RTS.
	refusedWith(t, "RC RTS to RTS with CurState SQE", p.a.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS, CurState: ibverbs.QPStateSQE},
		ibverbs.QPAttrState|ibverbs.QPAttrCurState),
		"the QP is in RTS, and the mask's CurState says SQE, from which RTS may be reached",
		"an RC QP's move from SQE to RTS: it has QPAttrCurState, which the move does not take")
	if s, err := p.a.qp.State(); err != nil || s != ibverbs.QPStateRTS {
		t.Errorf("state after the refused CurState: %v, %v; want RTS", s, err)
	}
}

// ethernetPort skips the test where the pair's port is not RoCE.
func ethernetPort(t *testing.T, p *pair) {
	t.Helper()
	pa, err := p.ctx.QueryPort(p.port)
	if err != nil {
		t.Fatal(err)
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		t.Skipf("port %d of %s is not RoCE (Ethernet)", p.port, p.ctx.Name())
	}
}

// On RoCE, ToRTR and Connect to an Endpoint without a GID say that the
// address vector needs a global route, as CreateAH does, where they said
// that "an attribute or the mask is wrong".
func TestToRTRWithoutGIDOnRoCE(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	ethernetPort(t, p)
	cp := ibverbs.ConnParams{Port: p.port, GIDIndex: p.gid}
	noGID := p.b.ep
	noGID.GID = ibverbs.GID{}
	qp := p.spareRCQP(t)
	if err := qp.ToInit(cp); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the address vector on %s port %d, which is RoCE (Ethernet), has no global route", p.ctx.Name(), p.port)
	refusedWith(t, "ToRTR", qp.ToRTR(noGID, cp), want)
	refusedWith(t, "Connect", p.spareRCQP(t).Connect(noGID, cp), want)
}

// On RoCE, ToRTR from a local GID of one IP family to a peer's of the
// other says that the two are of different families, where the kernel
// (rdma_resolve_ip) refuses them with EINVAL.
func TestToRTRGIDFamilies(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	ethernetPort(t, p)
	gid := func(family int) ibverbs.GIDEntry {
		ch, err := p.ctx.SelectGID(p.port, ibverbs.GIDRule{Family: family})
		if none := (*ibverbs.NoGIDError)(nil); errors.As(err, &none) {
			rdmatest.Lacking(t, fmt.Sprintf("ipv%d-gid", family), "no IPv%d RoCE v2 GID: %v", family, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return ch.Entry
	}
	v4, v6 := gid(4), gid(6)
	for _, tc := range []struct {
		name     string
		src, dst ibverbs.GIDEntry
		want     string
	}{
		{"IPv4 to IPv6", v4, v6, "(IPv4 and IPv6): RoCE v2 cannot route between them"},
		{"IPv6 to IPv4", v6, v4, "(IPv6 and IPv4): RoCE v2 cannot route between them"},
	} {
		cp := ibverbs.ConnParams{Port: p.port, GIDIndex: tc.src.Index}
		qp := p.spareRCQP(t)
		if err := qp.ToInit(cp); err != nil {
			t.Fatal(err)
		}
		remote := p.b.ep
		remote.GID = tc.dst.GID
		refusedWith(t, tc.name, qp.ToRTR(remote, cp),
			fmt.Sprintf("the source GID %s (index %d of %s port %d) and the destination GID %s are of different IP families",
				tc.src.GID, tc.src.Index, p.ctx.Name(), p.port, tc.dst.GID), tc.want)
	}
}
