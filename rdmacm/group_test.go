//go:build linux && cgo

package rdmacm_test

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestGroupDuringClose: Conn.Group may be read while Close runs (under
// -race: no race with the teardown, which leaves the group) and after
// it, and it stays the group joined, as LocalAddr does. Before, Close
// cleared it, unlocked, and it read as the zero Addr after.
func TestGroupDuringClose(t *testing.T) {
	n := device(t)
	g := netip.MustParseAddr("239.1.2.5")
	c, err := rdmacm.JoinMulticast(timeout(t, 10*time.Second), g.String(), &rdmacm.Config{SrcAddr: n.IP.String()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wrong atomic.Int64
	started := make(chan struct{})
	go func() {
		defer close(done)
		close(started)
		for range 100000 {
			if c.Group() != g {
				wrong.Add(1)
			}
		}
	}()
	<-started
	closeOK(t, c)
	<-done
	if got := c.Group(); got != g || wrong.Load() != 0 {
		t.Errorf("Group after Close: %v (%d reads during it not %v), want %v", got, wrong.Load(), g, g)
	}
}
