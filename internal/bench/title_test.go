//go:build linux && cgo

package bench_test

import (
	"testing"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestSpecTitle checks the header titles against perftest 4.5's: as
// ib_send_bw -b and ib_atomic_bw -A FETCH_AND_ADD print them on rxe, and
// as its perftest_parameters.c builds the others (the operation, the
// atomic one, then for bandwidth "Bidirectional" and "Post List").
func TestSpecTitle(t *testing.T) {
	for _, c := range []struct {
		spec exchange.TestSpec
		want string
	}{
		{exchange.TestSpec{Test: exchange.WriteBW}, "RDMA_Write BW Test"},
		{exchange.TestSpec{Test: exchange.SendBW, Bidirectional: true}, "Send Bidirectional BW Test"},
		{exchange.TestSpec{Test: exchange.WriteBW, PostList: 4}, "RDMA_Write Post List BW Test"},
		{exchange.TestSpec{Test: exchange.WriteBW, PostList: 1}, "RDMA_Write BW Test"},
		{exchange.TestSpec{Test: exchange.AtomicBW}, "Atomic FETCH_AND_ADD BW Test"},
		{exchange.TestSpec{Test: exchange.AtomicBW, Atomic: exchange.CmpSwap, Bidirectional: true, PostList: 2},
			"Atomic CMP_AND_SWAP Bidirectional Post List BW Test"},
		{exchange.TestSpec{Test: exchange.ReadLat}, "RDMA_Read Latency Test"},
		{exchange.TestSpec{Test: exchange.AtomicLat, Atomic: exchange.CmpSwap}, "Atomic CMP_AND_SWAP Latency Test"},
		{exchange.TestSpec{Test: exchange.SendLat, Bidirectional: true}, "Send Latency Test"},
		{exchange.TestSpec{Test: exchange.WriteBW, Immediate: true, Bidirectional: true}, "RDMA_Write_imm Bidirectional BW Test"},
		{exchange.TestSpec{Test: exchange.SendLat, Immediate: true}, "Send_imm Latency Test"},
	} {
		if got := bench.SpecTitle(c.spec); got != c.want {
			t.Errorf("%+v: %q, want %q", c.spec, got, c.want)
		}
	}
}
