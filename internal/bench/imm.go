//go:build linux && cgo

package bench

import "github.com/gorperf/gorperf/ibverbs"

// immCheck checks, with --validate and immediate data, each message a
// receiving loop takes: its completion must carry immediate data, and on
// RC, which neither drops nor reorders, each QP's must number the QP's
// messages in turn, as the sender does (immValue). What fails counts as
// mismatches of the size, with the bytes' checks.
type immCheck struct {
	s       *session
	op      ibverbs.WCOpcode // the receive's opcode: a send's or a write's
	inOrder bool
	next    []uint64       // each QP's next message number
	qp      map[uint32]int // a QP number's index in s.qps
}

// newImmCheck returns the check for messages numbered from first, or nil
// when the test carries no immediate data or does not validate.
func (s *session) newImmCheck(first uint64) *immCheck {
	if !s.spec.Immediate || !s.spec.ValidateData {
		return nil
	}
	c := &immCheck{s: s, op: ibverbs.WCRecv, inOrder: s.spec.ConnType == ibverbs.QPTypeRC,
		next: make([]uint64, len(s.qps)), qp: make(map[uint32]int, len(s.qps))}
	if s.spec.Test.IsWrite() {
		c.op = ibverbs.WCRecvRDMAWithImm
	}
	for i, qp := range s.qps {
		c.qp[qp.Num()] = i
		c.next[i] = first
	}
	return c
}

// take checks the completion of the next message on its QP.
func (c *immCheck) take(wc *ibverbs.WC) {
	i, ok := c.qp[wc.QPN]
	if !ok {
		c.s.immBad++
		return
	}
	if !c.is(wc, c.next[i]) {
		c.s.immBad++
	}
	c.next[i]++
}

// is reports whether wc is message n's, as far as the connection type
// lets it tell: without order, only that it carries immediate data.
func (c *immCheck) is(wc *ibverbs.WC, n uint64) bool {
	if wc.Opcode != c.op || wc.Flags&ibverbs.WCWithImm == 0 {
		return false
	}
	return !c.inOrder || wc.Imm == immValue(n)
}
