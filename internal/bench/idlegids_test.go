//go:build linux && cgo

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// roceSession is a session on a RoCE port whose GID is mine's, on
// rxeveth1, with a peer whose GID is peer's: what the idle errors read.
func roceSession(mine, peer string) *session {
	m, _ := ibverbs.ParseGID("::ffff:" + mine)
	p, _ := ibverbs.ParseGID("::ffff:" + peer)
	s := &session{gid: ibverbs.GIDChoice{Entry: ibverbs.GIDEntry{GID: m, Netdev: "rxeveth1"}},
		remote: []exchange.QPInfo{{Endpoint: ibverbs.Endpoint{GID: p}}}}
	s.portAttr.LinkLayer = ibverbs.LinkLayerEthernet
	return s
}

// TestIdleErrNamesGIDs: on an Ethernet port the peer-stopped-answering
// error names both sides' GIDs and that they may not reach each other,
// where it blamed only the peer (is it still running?); on InfiniBand
// it is as it was.
func TestIdleErrNamesGIDs(t *testing.T) {
	s := roceSession("198.18.0.2", "198.18.10.1")
	got := s.idleErr("completion", 10*time.Second).Error()
	for _, w := range []string{"the peer stopped answering: no completion for 10s (is it still running?",
		"the two sides' GIDs may not reach each other: different VLANs or subnets? --source_ip or -x picks a GID. The GIDs are this side's GID 198.18.0.2 on rxeveth1 and the peer's 198.18.10.1)"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
	s.portAttr.LinkLayer = ibverbs.LinkLayerInfiniBand
	if got, want := s.idleErr("message", time.Second).Error(), "the peer stopped answering: no message for 1s (is it still running?)"; got != want {
		t.Errorf("InfiniBand: %q, want %q", got, want)
	}
}
