//go:build linux && cgo

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestIdleErrGrownPackets: in a sweep (-a) whose smaller sizes got
// through, a size whose packets are larger than theirs and than 256
// bytes that stalls names a link of a smaller MTU, with the -m of the
// largest that passed to try; the error asked only whether the peer
// still ran. A stall at the size that passed before, or at 256 bytes,
// or of a peer silent on the control connection too, is as it was.
func TestIdleErrGrownPackets(t *testing.T) {
	s := ethSession1024(exchange.TestSpec{Test: exchange.WriteBW, AllSizes: true, ConnType: ibverbs.QPTypeRC})
	for _, tc := range []struct {
		size, passed int
		want         string // "" for no hint
	}{
		{1024, 512, "try -m 512: a link between them may drop packets of 1024 bytes and headers, over its MTU, where those of 512 got through; check the MTUs of both sides' netdevs (`ip link`) and of the switch ports between them)"},
		{65536, 512, "try -m 512: a link between them may drop packets of 1024 bytes and headers, over its MTU, where those of 512 got through"},
		{512, 128, "try -m 256: a link between them may drop packets of 512 bytes and headers, over its MTU, where those of 128 got through; check the MTUs of both sides' netdevs (`ip link`) and of the switch ports between them)"},
		{2048, 1024, ""}, // the same packets as before: the peer, not the MTU
		{256, 128, ""},   // the least MTU
		{1024, 0, ""},    // the first size
	} {
		s.size, s.passed = tc.size, tc.passed
		got := s.idleAfter("completion", 10*time.Second, 40).Error()
		if !strings.HasPrefix(got, "the peer stopped answering, after 40 completions and messages from it in the run: no completion for 10s (is it still running?") {
			t.Errorf("%d after %d: %q", tc.size, tc.passed, got)
		}
		if tc.want == "" && strings.Contains(got, "MTU") || tc.want != "" && !strings.Contains(got, "(is it still running? if it is, "+tc.want) {
			t.Errorf("%d after %d: %q, want %q", tc.size, tc.passed, got, tc.want)
		}
	}
	// A peer silent on the control connection too is stopped or hung.
	s.size, s.passed = 1024, 512
	s.heard = func() time.Time { return time.Now().Add(-time.Hour) }
	if got := s.idleAfter("completion", 10*time.Second, 40).Error(); strings.Contains(got, "MTU") {
		t.Errorf("silent peer: %q", got)
	}
}

// ethSession1024 is a session for spec on an Ethernet port active at
// 1024 bytes, whose peer's QP offers 1024.
func ethSession1024(spec exchange.TestSpec) *session {
	s := &session{remote: []exchange.QPInfo{{Endpoint: ibverbs.Endpoint{MTU: ibverbs.MTU1024}}}, spec: spec}
	s.portAttr.ActiveMTU = ibverbs.MTU1024
	s.portAttr.LinkLayer = ibverbs.LinkLayerEthernet
	return s
}
