//go:build linux && cgo

package rdmatest

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// RoutedID makes an RC rdma_cm ID on an event channel of its own and
// resolves its address and route from src to dst, as a Dial does before it
// connects, for a test that drives the connection itself; next takes the
// channel's next event, which must be want and the ID's. The ID and the
// channel close when the test ends.
func RoutedID(t testing.TB, ctx context.Context, src netip.Addr, dst netip.AddrPort) (ch *rdmacm.EventChannel, id *rdmacm.ID, next func(want rdmacm.EventType) *rdmacm.Event) {
	t.Helper()
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ch.Close(); err != nil {
			t.Errorf("closing the event channel: %v", err)
		}
	})
	if id, err = ch.CreateID(rdmacm.PortSpaceTCP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := id.Close(); err != nil {
			t.Errorf("closing the ID: %v", err)
		}
	})
	next = func(want rdmacm.EventType) *rdmacm.Event {
		t.Helper()
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != want || ev.ID != id {
			t.Fatalf("event %s for %p, want %s for %p", ev, ev.ID, want, id)
		}
		return ev
	}
	if err := id.ResolveAddr(netip.AddrPortFrom(src, 0), dst, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventAddrResolved)
	if err := id.ResolveRoute(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventRouteResolved)
	return ch, id, next
}
