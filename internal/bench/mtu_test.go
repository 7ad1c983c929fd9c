//go:build linux && cgo

package bench_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestMTUOverActive: an -m over the port's active MTU is lowered to it,
// as perftest's set_mtu does, on both sides' QPs (queried once connected)
// as in the header, and the data of messages of several path MTUs
// arrives intact.
func TestMTUOverActive(t *testing.T) {
	info := rdmatest.Device(t)
	active, err := bench.ActiveMTU(bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1})
	if err != nil {
		t.Fatal(err)
	}
	if active >= ibverbs.MTU4096 {
		t.Skipf("the active MTU is %d bytes: no -m is over it", active.Bytes())
	}
	rec := recordQPAttrs(t, func(a ibverbs.QPAttr) ibverbs.MTU { return a.PathMTU })
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 3*4096 + 5, Iterations: 20,
		NumQPs: 2, TXDepth: 16, CQModeration: 1, MTU: ibverbs.MTU4096, ValidateData: true}
	c, s := loopback(t, spec, func(l *bench.Local, _ bool) { l.IdleTimeout = 5 * time.Second })
	for _, r := range []*bench.Result{c, s} {
		if r.Header.Mtu != active.Bytes() {
			t.Errorf("the header's MTU is %d, want the active %d", r.Header.Mtu, active.Bytes())
		}
	}
	for client, mtus := range rec.get() {
		if len(mtus) != 2 {
			t.Errorf("client %v: %d QPs, want 2", client, len(mtus))
		}
		for i, m := range mtus {
			if m != active {
				t.Errorf("client %v QP %d: path MTU %d bytes, want the active %d", client, i, m.Bytes(), active.Bytes())
			}
		}
	}
	if len(rec.get()) != 2 {
		t.Errorf("QPs of %d sides recorded, want 2", len(rec.get()))
	}
}
