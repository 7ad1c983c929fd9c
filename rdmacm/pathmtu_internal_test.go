//go:build linux && cgo

package rdmacm

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestMovesQPTransport: a Conn makes and moves its own QP (movesQP) for
// an RC connection with a PathMTU on an InfiniBand or RoCE device only.
// On an iWARP device it keeps librdmacm's QP, as for UD or PathMTU 0: the
// kernel's iw_cm_init_qp_attr answers RTR with INIT's attributes, which
// InitQPAttr refused (no address vector, no peer QP number), so Accept
// rejected every request and Dial failed with "connection refused";
// and the active side gets ESTABLISHED there, never the
// CONNECT_RESPONSE that Dial waited for. No iWARP device is at hand:
// this tests the decision, not a connection.
func TestMovesQPTransport(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		t    ibverbs.TransportType
		want bool
	}{
		{"RC, PathMTU, InfiniBand or RoCE", Config{PathMTU: ibverbs.MTU512}, ibverbs.TransportIB, true},
		{"RC, PathMTU, iWARP", Config{PathMTU: ibverbs.MTU512}, ibverbs.TransportIWARP, false},
		{"RC, no PathMTU, InfiniBand or RoCE", Config{}, ibverbs.TransportIB, false},
		{"RC, no PathMTU, iWARP", Config{}, ibverbs.TransportIWARP, false},
		{"UD, PathMTU, InfiniBand or RoCE", Config{UD: true, PathMTU: ibverbs.MTU512}, ibverbs.TransportIB, false},
		{"UD, PathMTU, iWARP", Config{UD: true, PathMTU: ibverbs.MTU512}, ibverbs.TransportIWARP, false},
		// An ID on no device, or closed; no other transport has rdma_cm.
		{"RC, PathMTU, unknown", Config{PathMTU: ibverbs.MTU512}, ibverbs.TransportUnknown, false},
		{"RC, PathMTU, usNIC", Config{PathMTU: ibverbs.MTU512}, ibverbs.TransportUSNIC, false},
	} {
		if got := tc.cfg.movesQP(tc.t); got != tc.want {
			t.Errorf("%s: movesQP %v, want %v", tc.name, got, tc.want)
		}
	}
}
