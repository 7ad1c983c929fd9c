//go:build linux && cgo

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestMTUCap: the cap of the GID's netdev (capNetdevMTU) lowers what
// this side offers and the path MTU, as -m does, and the header's GID
// reason says why.
func TestMTUCap(t *testing.T) {
	s := &session{mtuCap: ibverbs.MTU512, capWhy: "path MTU at most 512: rxeveth0.10's MTU 700 carries RDMA MTU 512 (+80 bytes of headers), not the port's active 1024"}
	s.portAttr.ActiveMTU = ibverbs.MTU1024
	if got := s.mtu(); got != ibverbs.MTU512 {
		t.Errorf("path MTU %v, want 512", got)
	}
	s.spec.MTU = ibverbs.MTU4096 // -m over the cap
	s.remote = []exchange.QPInfo{{Endpoint: ibverbs.Endpoint{MTU: ibverbs.MTU4096}}}
	if got := s.mtu(); got != ibverbs.MTU512 {
		t.Errorf("-m 4096: path MTU %v, want 512", got)
	}
	s.spec.MTU = ibverbs.MTU256
	if got := s.ownMTU(); got != ibverbs.MTU256 {
		t.Errorf("-m 256: %v, want 256", got)
	}
	g, _ := ibverbs.ParseGID("::ffff:198.18.10.1")
	c := ibverbs.GIDChoice{Entry: ibverbs.GIDEntry{GID: g, Type: ibverbs.GIDTypeRoCEv2, Netdev: "rxeveth0.10"}, Reason: "given with -x"}
	if got, want := gidReason(c, s.capWhy), "198.18.10.1 on rxeveth0.10: given with -x; path MTU at most 512: rxeveth0.10's MTU 700 carries RDMA MTU 512"; !strings.Contains(got, want) {
		t.Errorf("%q lacks %q", got, want)
	}
	s.mtuCap, s.spec.MTU, s.remote = 0, 0, nil
	if got := s.mtu(); got != ibverbs.MTU1024 {
		t.Errorf("no cap: %v, want 1024", got)
	}
}

// TestIdleErrNamesMTU: where nothing came and the packets carry more
// than 256 bytes, the idle error names a link whose MTU is too small as
// the other cause, with a smaller -m (-s over UD) to try; it blamed
// VLANs or subnets alone, which a VLAN netdev of MTU 700 under a port
// active at 1024 was not.
func TestIdleErrNamesMTU(t *testing.T) {
	s := roceSession("198.18.10.2", "198.18.10.1")
	s.portAttr.ActiveMTU = ibverbs.MTU1024
	s.remote[0].Endpoint.MTU = ibverbs.MTU4096
	s.spec = exchange.TestSpec{Test: exchange.WriteBW, Size: 4096, ConnType: ibverbs.QPTypeRC}
	got := s.idleErr("completion", 10*time.Second).Error()
	for _, w := range []string{"may not reach each other: different VLANs or subnets?",
		"Or try -m 512: a link between them may drop packets of 1024 bytes and headers, over its MTU", "`ip link`"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
	s.portAttr.ActiveMTU = ibverbs.MTU4096
	if got := s.idleErr("completion", time.Second).Error(); !strings.Contains(got, "packets of 4096 bytes") || !strings.Contains(got, "try -m 1024") {
		t.Errorf("4096: %q", got)
	}
	s.spec = exchange.TestSpec{Test: exchange.SendBW, Size: 700, ConnType: ibverbs.QPTypeUD}
	if got := s.idleErr("message", time.Second).Error(); !strings.Contains(got, "packets of 700 bytes") || !strings.Contains(got, "try -s 512") {
		t.Errorf("UD: %q", got)
	}
	s.spec = exchange.TestSpec{Test: exchange.WriteBW, Size: 64, ConnType: ibverbs.QPTypeRC}
	if got := s.idleErr("completion", time.Second).Error(); strings.Contains(got, "MTU") {
		t.Errorf("64-byte messages: %q names the MTU", got)
	}
}
