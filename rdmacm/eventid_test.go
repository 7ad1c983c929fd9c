//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestEventNamesItsID: an ID closed in another goroutine while a GetEvent
// takes its event (held there by a hook, which then makes a new ID on the
// channel) is the event's ID: its Close waits until GetEvent has named
// it, so that the new ID, made after, cannot be at its address when the
// event is looked up. (GetEvent acknowledged the event before it looked
// its ID up: the Close returned at once, freeing the ID, and the event
// named no ID, or the new one where it got the freed address.)
func TestEventNamesItsID(t *testing.T) {
	n := device(t)
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	for round := range 3 {
		x, err := ch.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		xc := x.Raw()
		var y *rdmacm.ID
		var closeErr, createErr error
		done := make(chan struct{})
		early := false
		restore := rdmacm.SetGetEventHook(func(c *rdmacm.EventChannel, ev *rdmacm.Event) {
			if c != ch {
				return
			}
			go func() {
				defer close(done)
				if closeErr = x.Close(); closeErr == nil {
					y, createErr = ch.CreateID(rdmacm.PortSpaceTCP)
				}
			}()
			select {
			case <-done:
				early = true
			case <-time.After(100 * time.Millisecond):
			}
		})
		if err := x.ResolveAddr(netip.AddrPortFrom(n.IP, 0), netip.AddrPortFrom(n.IP, 7471), 2*time.Second); err != nil {
			restore()
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ev, err := ch.GetEvent(ctx)
		cancel()
		restore()
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the ID's Close still runs 10 s after GetEvent returned its event")
		}
		if closeErr != nil || createErr != nil {
			t.Fatalf("round %d: closing the ID: %v; making another: %v", round, closeErr, createErr)
		}
		if ev.ID != x {
			what := "no ID"
			if ev.ID != nil && ev.ID == y {
				what = "the ID made since"
				if y.Raw() == xc {
					what += ", at its address"
				}
			}
			t.Errorf("round %d: the %s of an ID closed while GetEvent took it names %s, want that ID (its Close returned before GetEvent named it: %v)",
				round, ev.Type, what, early)
		}
		closeOK(t, y)
	}
}

// TestMigrateWhileGetEventTakesEvent: an ID's Migrate to its own channel
// while a GetEvent takes the ID's event (held there by a hook) waits for
// GetEvent to name the event, as rdma_migrate_id waits for the acks of
// the ID's events, and neither holds the other up for good: Migrate
// leaves the channel's lock alone while it waits, which GetEvent needs to
// name the event before it acknowledges it.
func TestMigrateWhileGetEventTakesEvent(t *testing.T) {
	n := device(t)
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	x, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, x) })
	migrated := make(chan error, 1)
	restore := rdmacm.SetGetEventHook(func(c *rdmacm.EventChannel, ev *rdmacm.Event) {
		if c != ch {
			return
		}
		go func() { migrated <- x.Migrate(ch) }()
		time.Sleep(100 * time.Millisecond) // Migrate waits in rdma_migrate_id
	})
	defer restore()
	if err := x.ResolveAddr(netip.AddrPortFrom(n.IP, 0), netip.AddrPortFrom(n.IP, 7471), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ev  *rdmacm.Event
		err error
	}
	got := make(chan result, 1)
	go func() {
		ev, err := ch.GetEvent(timeout(t, 20*time.Second))
		got <- result{ev, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			t.Errorf("GetEvent: %v", r.err)
		} else if r.ev.ID != x {
			t.Errorf("GetEvent: %s for %p, want the ID's (%p)", r.ev.Type, r.ev.ID, x)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("GetEvent still runs 10 s after it took an event of an ID that Migrate moves: they hold each other up")
	}
	select {
	case err := <-migrated:
		if err != nil {
			t.Errorf("Migrate: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Migrate still runs 10 s after GetEvent returned")
	}
}
