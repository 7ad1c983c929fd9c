//go:build linux && cgo

package bench

import (
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestEventHint: each async event that ends a test names its own cause;
// all of them blamed a netdev that might be down, DEVICE_FATAL and a
// CQ's overrun too.
func TestEventHint(t *testing.T) {
	for ev, want := range map[ibverbs.EventType]string{
		ibverbs.EventPortErr:     "netdev down",
		ibverbs.EventDeviceFatal: "reset or removed",
		ibverbs.EventCQErr:       "completion queue overran",
		ibverbs.EventQPReqErr:    "transport's rules",
		ibverbs.EventQPAccessErr: "access its memory grants",
		ibverbs.EventQPFatal:     "no completion reports",
	} {
		got := eventHint(ev)
		if !strings.Contains(got, want) || (ev != ibverbs.EventPortErr && strings.Contains(got, "netdev")) {
			t.Errorf("%v: %q, want %q and no netdev", ev, got, want)
		}
	}
}
