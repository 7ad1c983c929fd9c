//go:build linux && cgo

package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestIdleHintReachesPeer: the idle error's MTU hints reach the peer
// with their flag to try. The peer gets this side's error in its Result
// or ErrorMsg, whose text the protocol cuts to exchange.MaxString bytes;
// the hints ended with their flag, which was cut: a client of a UC sweep
// that stalled at 1024 bytes said "... where those of 512 got through:
// check the MTUs of both sides' netdevs (`ip link`) and of the switch
// ports betw", without the server's "-m 512". The GIDs that the error
// names where nothing came now follow both flags, its -m or -s and the
// GIDs' --source_ip or -x: with two IPv6 GIDs and a VLAN netdev's name
// they came first and pushed both past the cut.
func TestIdleHintReachesPeer(t *testing.T) {
	grown := ethSession1024(exchange.TestSpec{Test: exchange.SendBW, AllSizes: true, ConnType: ibverbs.QPTypeUC})
	grown.size, grown.passed = 1024, 512
	none := roceSession("198.18.0.2", "198.18.10.1")
	none.portAttr.ActiveMTU = ibverbs.MTU1024
	none.remote[0].Endpoint.MTU = ibverbs.MTU1024
	none.spec = exchange.TestSpec{Test: exchange.SendBW, Size: 1024, ConnType: ibverbs.QPTypeUD}
	// The longest GIDs' text: two IPv6 GIDs of 39 characters and a
	// netdev's name of 15 (IFNAMSIZ less its NUL), a VLAN's; a long wait.
	long := func(spec exchange.TestSpec, active ibverbs.MTU) error {
		s := &session{gid: ibverbs.GIDChoice{Entry: ibverbs.GIDEntry{GID: mustGID("fd00:1234:5678:9abc:def0:1234:5678:9abc"), Netdev: "enp129s0f1.4094"}},
			remote: []exchange.QPInfo{{Endpoint: ibverbs.Endpoint{GID: mustGID("fd00:1234:5678:9abc:def0:1234:5678:9abd"), MTU: ibverbs.MTU4096}}}, spec: spec}
		s.portAttr.LinkLayer, s.portAttr.ActiveMTU = ibverbs.LinkLayerEthernet, active
		return s.idleAfter("completion", 90*time.Second, 0)
	}
	udLong := long(exchange.TestSpec{Test: exchange.SendBW, Size: 1024, ConnType: ibverbs.QPTypeUD}, ibverbs.MTU1024)
	rcLong := long(exchange.TestSpec{Test: exchange.WriteBW, Size: 65536, ConnType: ibverbs.QPTypeRC}, ibverbs.MTU4096)
	smallLong := long(exchange.TestSpec{Test: exchange.WriteBW, Size: 64, ConnType: ibverbs.QPTypeRC}, ibverbs.MTU4096)
	const gidFlag = "--source_ip or -x picks a GID"
	for _, tc := range []struct {
		name  string
		err   error
		flags []string
	}{
		// A long run's count and a long wait.
		{"sweep", grown.idleAfter("message", 90*time.Second, 123456789012), []string{"try -m 512"}},
		{"nothing came, UD", none.idleAfter("message", 10*time.Second, 0), []string{"try -s 512", gidFlag}},
		// The GIDs came before both flags: the peer's copy of UD's
		// lost "try -s 512", the RC's "try -m 1024", at ~300 bytes.
		{"nothing came, UD, IPv6 GIDs on a VLAN", udLong, []string{"try -s 512", gidFlag}},
		{"nothing came, RC, IPv6 GIDs on a VLAN", rcLong, []string{"try -m 1024", gidFlag}},
		{"nothing came, small messages, IPv6 GIDs on a VLAN", smallLong, []string{gidFlag}},
	} {
		full := tc.err.Error()
		for _, f := range tc.flags {
			if !strings.Contains(full, f) {
				t.Fatalf("%s: %q lacks %q", tc.name, full, f)
			}
		}
		for _, m := range []exchange.Message{exchange.Result{Error: full}, exchange.NewErrorMsg(tc.err)} {
			b, err := exchange.AppendFrame(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := exchange.DecodeFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			var text string
			switch g := got.(type) {
			case exchange.Result:
				text = g.Error
			case exchange.ErrorMsg:
				text = g.Text
			}
			for _, f := range tc.flags {
				if !strings.Contains(text, f) {
					t.Errorf("%s: the peer's %T says %q (%d of %d bytes), without %q", tc.name, got, text, len(text), len(full), f)
				}
			}
		}
	}
}
