//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// The check counts each message whose completion lacks immediate data,
// has another receive's opcode, comes from an unknown QP or, on RC, breaks
// its QP's numbering; on UC it cannot ask for the numbering.
func TestImmCheck(t *testing.T) {
	msg := func(qpn, imm uint32) ibverbs.WC {
		return ibverbs.WC{Opcode: ibverbs.WCRecvRDMAWithImm, Flags: ibverbs.WCWithImm, QPN: qpn, Imm: imm}
	}
	noImm := msg(7, 3)
	noImm.Flags = 0
	asSend := msg(7, 3)
	asSend.Opcode = ibverbs.WCRecv
	for _, c := range []struct {
		name    string
		inOrder bool
		wcs     []ibverbs.WC
		bad     uint64
	}{
		{"in order, two QPs", true, []ibverbs.WC{msg(7, 1), msg(9, 1), msg(7, 2), msg(9, 2), msg(7, 3)}, 0},
		{"one lost", true, []ibverbs.WC{msg(7, 1), msg(7, 3), msg(7, 4)}, 2},
		{"another QP's number", true, []ibverbs.WC{msg(7, 1), msg(9, 1), msg(9, 2), msg(7, 3)}, 1},
		{"no immediate", true, []ibverbs.WC{msg(7, 1), msg(7, 2), noImm}, 1},
		{"a send's receive", true, []ibverbs.WC{msg(7, 1), msg(7, 2), asSend}, 1},
		{"unknown QP", true, []ibverbs.WC{msg(8, 1)}, 1},
		{"UC: a loss is no error", false, []ibverbs.WC{msg(7, 1), msg(7, 3)}, 0},
		{"UC: no immediate still is", false, []ibverbs.WC{noImm}, 1},
	} {
		s := &session{}
		ch := &immCheck{s: s, op: ibverbs.WCRecvRDMAWithImm, inOrder: c.inOrder,
			next: []uint64{1, 1}, qp: map[uint32]int{7: 0, 9: 1}}
		for i := range c.wcs {
			ch.take(&c.wcs[i])
		}
		if s.immBad != c.bad {
			t.Errorf("%s: %d bad, want %d", c.name, s.immBad, c.bad)
		}
	}
}
