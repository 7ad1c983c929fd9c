//go:build linux && cgo

package ibverbs

// #include <infiniband/verbs.h>
import "C"

// DataInOrder reports whether the data that op's requests place in this
// side's memory through this QP lands in order, first byte to last,
// within each request (ibv_query_qp_data_in_order; the verbs promise
// nothing about the order of two requests). For an RDMA write or a send
// (OpRDMAWrite, OpSend) the requests are the peer's, writing into this
// side; for OpRDMARead they are this side's own reads, whose responses
// land here; for other opcodes the answer means nothing. Where the data
// lands in order, a receiver that polls the last byte of an RDMA write, as
// a write latency test does, may take its arrival to mean the bytes
// before it arrived too, where the CPU reads them from memory registered
// without relaxed ordering (AccessRelaxedOrdering). false means the
// provider promises nothing, which is also the answer of a provider that
// does not implement the query, and of every provider on a CPU other than
// x86, where libibverbs does not ask. The answer is this side's: the peer
// that posts the writes learns it only if this side sends it. It may be
// called from any goroutine, and fails only with ErrClosed.
func (qp *QP) DataInOrder(op Opcode) (bool, error) {
	if !qp.use.Enter() {
		return false, ErrClosed
	}
	defer qp.use.Leave()
	return C.ibv_query_qp_data_in_order(qp.c, C.enum_ibv_wr_opcode(op), 0) == 1, nil
}
