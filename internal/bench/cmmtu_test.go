//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestCMPathMTU: where rdma_cm connected the QPs, the path MTU is the
// one they got (cmMTU), not the two sides' offers, and the header's GID
// line says so where they differ; the header showed the offers.
func TestCMPathMTU(t *testing.T) {
	s := &session{}
	s.portAttr.ActiveMTU = ibverbs.MTU1024
	s.spec.MTU = ibverbs.MTU512 // -m, which rdma_cm leaves out
	s.remote = []exchange.QPInfo{{Endpoint: ibverbs.Endpoint{MTU: ibverbs.MTU512}}}
	if got := s.mtu(); got != ibverbs.MTU512 {
		t.Fatalf("offers: %v, want 512", got)
	}
	if got := s.mtuWhy(); got != "" {
		t.Errorf("no rdma_cm: %q", got)
	}
	s.cmMTU = ibverbs.MTU1024
	if got := s.mtu(); got != ibverbs.MTU1024 {
		t.Errorf("rdma_cm's 1024: %v", got)
	}
	if got, want := s.mtuWhy(), "path MTU 1024, as rdma_cm set it, where the two sides offered 512"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.capWhy = "path MTU at most 512: x"
	if got, want := s.mtuWhy(), "path MTU at most 512: x; path MTU 1024, as rdma_cm set it, where the two sides offered 512"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.cmMTU = ibverbs.MTU512
	if got := s.mtuWhy(); got != s.capWhy {
		t.Errorf("the same as offered: %q", got)
	}
}

// TestMTULimit: LocalMTU's limit names the GID's netdev where it caps
// the port's active MTU, and only there.
func TestMTULimit(t *testing.T) {
	s := &session{}
	s.portAttr.ActiveMTU = ibverbs.MTU1024
	if got := s.mtuLimit(); got != (MTULimit{MTU: ibverbs.MTU1024, Active: ibverbs.MTU1024}) {
		t.Errorf("no cap: %+v", got)
	}
	s.mtuCap, s.capNetdev, s.netdevMTU = ibverbs.MTU512, "rxeveth0.10", 700
	want := MTULimit{MTU: ibverbs.MTU512, Active: ibverbs.MTU1024, Netdev: "rxeveth0.10", NetdevMTU: 700}
	if got := s.mtuLimit(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
