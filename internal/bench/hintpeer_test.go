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
// ports betw", without the server's "-m 512".
func TestIdleHintReachesPeer(t *testing.T) {
	grown := ethSession1024(exchange.TestSpec{Test: exchange.SendBW, AllSizes: true, ConnType: ibverbs.QPTypeUC})
	grown.size, grown.passed = 1024, 512
	none := roceSession("198.18.0.2", "198.18.10.1")
	none.portAttr.ActiveMTU = ibverbs.MTU1024
	none.remote[0].Endpoint.MTU = ibverbs.MTU1024
	none.spec = exchange.TestSpec{Test: exchange.SendBW, Size: 1024, ConnType: ibverbs.QPTypeUD}
	for _, tc := range []struct {
		name string
		err  error
		flag string
	}{
		// A long run's count and a long wait.
		{"sweep", grown.idleAfter("message", 90*time.Second, 123456789012), "try -m 512"},
		{"nothing came, UD", none.idleAfter("message", 10*time.Second, 0), "try -s 512"},
	} {
		full := tc.err.Error()
		if !strings.Contains(full, tc.flag) {
			t.Fatalf("%s: %q lacks %q", tc.name, full, tc.flag)
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
			if !strings.Contains(text, tc.flag) {
				t.Errorf("%s: the peer's %T says %q (%d of %d bytes), without %q", tc.name, got, text, len(text), len(full), tc.flag)
			}
		}
	}
}
