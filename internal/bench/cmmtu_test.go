//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestCMPathMTU: where rdma_cm connected the QPs, the path MTU is the
// one they got (cmMTU), not the two sides' offers, and the header's GID
// line says so where they differ; the header showed the offers. Here
// the peer offered 512, which rdma_cm, setting the passive side's from
// the active side's request, does not see.
func TestCMPathMTU(t *testing.T) {
	s := &session{}
	s.portAttr.ActiveMTU = ibverbs.MTU1024
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
	if got, want := s.mtuWhy(), "path MTU 1024, as rdma_cm set it from the route, where the two sides offered 512"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.capWhy = "path MTU at most 512: x"
	if got, want := s.mtuWhy(), "path MTU at most 512: x; path MTU 1024, as rdma_cm set it from the route, where the two sides offered 512"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s.cmMTU = ibverbs.MTU512
	if got := s.mtuWhy(); got != s.capWhy {
		t.Errorf("the same as offered: %q", got)
	}
}

// TestCMConfigPathMTU: with -R on RC, the most path MTU of the QPs that
// rdma_cm connects (rdmacm.Config.PathMTU) is the least of the two
// sides' offers (each side's port's active MTU within -m and what its
// GID's netdev carries), as a test without -R takes, where -m is given
// or that is less than the client's offer, which rdma_cm's route gives
// both sides' QPs; else none, and librdmacm's QPs. The server's QPs
// copied the client's route: a server whose netdev carries 512 and its
// client 1024 got 1024, and only -m reached rdma_cm; -R -m 512 over
// ports active at 1024 ran at 1024 before that.
func TestCMConfigPathMTU(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conn       ibverbs.QPType
		client     bool
		m, capped  ibverbs.MTU // -m, this side's netdev's
		peer, want ibverbs.MTU
	}{
		{"client, no -m", ibverbs.QPTypeRC, true, 0, 0, ibverbs.MTU1024, 0},
		{"server, no -m", ibverbs.QPTypeRC, false, 0, 0, ibverbs.MTU1024, 0},
		// The reviewer's case: the server's VLAN of MTU 700 carries 512,
		// the client's 1024.
		{"server whose netdev carries 512", ibverbs.QPTypeRC, false, 0, ibverbs.MTU512, ibverbs.MTU1024, ibverbs.MTU512},
		{"client of a server that offers 512", ibverbs.QPTypeRC, true, 0, 0, ibverbs.MTU512, ibverbs.MTU512},
		// The client's route gives both sides its 512.
		{"client whose netdev carries 512", ibverbs.QPTypeRC, true, 0, ibverbs.MTU512, ibverbs.MTU1024, 0},
		{"server of a client that offers 512", ibverbs.QPTypeRC, false, 0, 0, ibverbs.MTU512, 0},
		{"-m 512", ibverbs.QPTypeRC, true, ibverbs.MTU512, 0, ibverbs.MTU512, ibverbs.MTU512},
		{"-m 512, server", ibverbs.QPTypeRC, false, ibverbs.MTU512, 0, ibverbs.MTU512, ibverbs.MTU512},
		{"-m 4096 over a port active at 1024", ibverbs.QPTypeRC, true, ibverbs.MTU4096, 0, ibverbs.MTU1024, ibverbs.MTU1024},
		{"-m 1024 over a netdev that carries 512", ibverbs.QPTypeRC, true, ibverbs.MTU1024, ibverbs.MTU512, ibverbs.MTU1024, ibverbs.MTU512},
		{"UD", ibverbs.QPTypeUD, true, ibverbs.MTU512, 0, ibverbs.MTU512, 0},
	} {
		s := &session{}
		s.spec.ConnType, s.spec.MTU, s.spec.RdmaCM = tc.conn, tc.m, true
		s.portAttr.ActiveMTU, s.mtuCap = ibverbs.MTU1024, tc.capped
		s.capCM(tc.peer, tc.client)
		if got := s.cmConfig().PathMTU; got != tc.want {
			t.Errorf("%s: Config.PathMTU %v, want %v", tc.name, got, tc.want)
		}
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
