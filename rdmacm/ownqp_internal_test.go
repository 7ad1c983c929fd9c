//go:build linux && cgo

package rdmacm

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestLacksPeerTransport: InitQPAttr's refusal of RTR and RTS without the
// attributes they need (lacksPeer) says, on InfiniBand and RoCE, that the
// CM has no peer for the ID yet, to be taken on the CONNECT_REQUEST or
// CONNECT_RESPONSE; on iWARP, whose CM gives RTR INIT's attributes and RTS
// none whatever the connection's state, and whose provider moves the QP
// to RTS itself, that the QP goes to INIT only: it said the CM had no
// peer yet there too, which no later event changes. No iWARP device is
// at hand: this tests the decision on the kernel's masks.
func TestLacksPeerTransport(t *testing.T) {
	initMask := ibverbs.QPAttrState | ibverbs.QPAttrAccessFlags | ibverbs.QPAttrPKeyIndex | ibverbs.QPAttrPort
	iwInit := ibverbs.QPAttrState | ibverbs.QPAttrAccessFlags // iw_cm_init_qp_attr's for INIT and RTR
	rtr := ibverbs.QPAttrState | ibverbs.QPAttrAV | ibverbs.QPAttrPathMTU | ibverbs.QPAttrDestQPN | ibverbs.QPAttrRQPSN
	rts := ibverbs.QPAttrState | ibverbs.QPAttrSQPSN | ibverbs.QPAttrTimeout
	const iwarp, noPeer = "iWARP CM gives attributes for INIT only", "the CM has no peer for the ID yet"
	for _, tc := range []struct {
		name  string
		t     ibverbs.TransportType
		state ibverbs.QPState
		m     ibverbs.QPAttrMask
		want  string // in the error; "" for none
	}{
		{"InfiniBand or RoCE, INIT", ibverbs.TransportIB, ibverbs.QPStateInit, initMask, ""},
		{"InfiniBand or RoCE, RTR with a peer", ibverbs.TransportIB, ibverbs.QPStateRTR, rtr, ""},
		{"InfiniBand or RoCE, RTS with a peer", ibverbs.TransportIB, ibverbs.QPStateRTS, rts, ""},
		{"InfiniBand or RoCE, RTR before the peer", ibverbs.TransportIB, ibverbs.QPStateRTR, initMask, noPeer},
		{"InfiniBand or RoCE, RTS before the peer", ibverbs.TransportIB, ibverbs.QPStateRTS, initMask, noPeer},
		{"iWARP, INIT", ibverbs.TransportIWARP, ibverbs.QPStateInit, iwInit, ""},
		{"iWARP, RTR", ibverbs.TransportIWARP, ibverbs.QPStateRTR, iwInit, iwarp},
		{"iWARP, RTS", ibverbs.TransportIWARP, ibverbs.QPStateRTS, 0, iwarp},
		{"unknown, RTR", ibverbs.TransportUnknown, ibverbs.QPStateRTR, initMask, noPeer},
	} {
		err := lacksPeer(tc.t, tc.state, tc.m)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want == "":
		case err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, syscall.EINVAL):
			t.Errorf("%s: %v, want EINVAL saying %q", tc.name, err, tc.want)
		case tc.t == ibverbs.TransportIWARP && strings.Contains(err.Error(), "no peer"):
			t.Errorf("%s: %v: says the CM has no peer yet", tc.name, err)
		}
	}
}
