//go:build linux && cgo

package bench_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestRdmaCMThreads: a test of two threads through rdma_cm (-R
// --threads 2), four QPs, with -m 512 over a port active at 1024: each
// thread's connection gets its own rdma_cm port and IDs, every QP of
// both sides runs at path MTU 512, both sides count every message, each
// thread its share, the headers say 512, four QPs, two threads and
// rdma_cm, and the tests leave no file descriptor, RDMA object (cm_id
// among them) or goroutine behind. A write and a send test (RC), whose
// receivers replace receives on both threads' QPs.
func TestRdmaCMThreads(t *testing.T) {
	const n = 50 // a QP's messages
	for _, test := range []exchange.Test{exchange.WriteBW, exchange.SendBW} {
		t.Run(test.String(), func(t *testing.T) {
			spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 1024, Iterations: n,
				NumQPs: 4, Threads: 2, TXDepth: 16, RXDepth: 32, CQModeration: 4, MTU: ibverbs.MTU512,
				RdmaCM: true, ValidateData: true}
			cm := cmClient(t, true)
			// The first test opens what librdmacm keeps for the process
			// (each device's context, once): the leak check is the
			// second's.
			loopback(t, spec, cm)
			time.Sleep(100 * time.Millisecond)
			u0, g0 := rdmatest.Measure(t), runtime.NumGoroutine()
			mtus := recordQPAttrs(t, func(a ibverbs.QPAttr) ibverbs.MTU { return a.PathMTU })
			cr, sr := loopback(t, spec, cm)
			got := mtus.get()
			for _, client := range []bool{true, false} {
				if want := slices.Repeat([]ibverbs.MTU{ibverbs.MTU512}, 4); !slices.Equal(got[client], want) {
					t.Errorf("client %v: the QPs' path MTUs %v, want %v", client, got[client], want)
				}
			}
			for _, r := range []*bench.Result{cr, sr} {
				h := r.Header
				if h.Mtu != 512 || h.NumQPs != 4 || h.Threads != 2 || !h.RdmaCM || len(h.Local) != 4 || len(h.Remote) != 4 {
					t.Errorf("%s's header: MTU %d, %d QPs, %d threads, rdma_cm %v, %d local and %d remote endpoints; want 512, 4, 2, true, 4, 4",
						r.Role, h.Mtu, h.NumQPs, h.Threads, h.RdmaCM, len(h.Local), len(h.Remote))
				}
				if len(r.Sizes) != 1 || r.Sizes[0].BW.Iterations != 4*n || r.Mismatches != 0 {
					t.Fatalf("%s: %d sizes, %+v, %d mismatches; want %d messages", r.Role, len(r.Sizes), r.Sizes, r.Mismatches, 4*n)
				}
				if len(r.Threads) != 2 {
					t.Fatalf("%s: %d threads' parts, want 2", r.Role, len(r.Threads))
				}
				for i, th := range r.Threads {
					if th.Thread != i || th.QPs != 2 || th.Err != nil || len(th.Sizes) != 1 || th.Sizes[0].Iterations != 2*n || th.Sizes[0].RateUnknown() {
						t.Errorf("%s's thread %d: %+v; want thread %d, 2 QPs, %d messages at a rate", r.Role, i, th, i, 2*n)
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
			u1 := rdmatest.Measure(t)
			g1 := runtime.NumGoroutine()
			for end := time.Now().Add(5 * time.Second); g1 > g0 && time.Now().Before(end); g1 = runtime.NumGoroutine() {
				time.Sleep(10 * time.Millisecond)
			}
			if u1.FDs != u0.FDs || u1.RDMA != u0.RDMA || u1.RDMAErr != nil || g1 > g0 {
				t.Errorf("left behind: fds %d -> %d, goroutines %d -> %d, RDMA objects (%v)\n%sthen\n%s",
					u0.FDs, u1.FDs, g0, g1, u1.RDMAErr, u0.RDMA, u1.RDMA)
			}
		})
	}
}
