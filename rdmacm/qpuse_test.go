//go:build linux && cgo

package rdmacm_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// blockQPUse makes the first use of an ID's QP at where (see
// rdmacm.SetQPUseHook) wait, with its locks held, until release is
// closed; entered receives once it waits. The hook is unset when the test
// ends, and release closed if the test has not.
func blockQPUse(t *testing.T, where string) (entered <-chan struct{}, release chan struct{}) {
	t.Helper()
	in := make(chan struct{}, 1)
	release = make(chan struct{})
	restore := rdmacm.SetQPUseHook(func(w string) {
		if w != where {
			return
		}
		select {
		case in <- struct{}{}:
			<-release
		default:
		}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		restore()
	})
	return in, release
}

// checkQPCloseWaits closes qp in another goroutine, which must not return
// while the QP is in use, then ends the use (closes release): the Close
// must then succeed.
func checkQPCloseWaits(t *testing.T, qp interface{ Close() error }, release chan struct{}, user string) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- qp.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("the QP's Close returned (%v) while %s used the QP", err, user)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("the QP's Close after %s: %v", user, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the QP's Close did not return within 10 s of %s's end", user)
	}
}

// A verb of an ID uses the QP that CreateQP made in librdmacm
// (rdma_disconnect moves it to ERR): the QP's Close waits for the verb.
func TestQPCloseWaitsForVerb(t *testing.T) {
	n := device(t)
	_, id := newID(t, rdmacm.PortSpaceTCP)
	if err := id.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
		t.Fatal(err)
	}
	qp := idQP(t, id)
	entered, release := blockQPUse(t, "verb")
	done := make(chan error, 1)
	go func() { done <- id.Disconnect() }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("Disconnect did not begin within 10 s")
	}
	checkQPCloseWaits(t, qp, release, "Disconnect")
	// Not connected: the kernel refuses, which does not matter here.
	t.Logf("Disconnect: %v", <-done)
}

// GetEvent's rdma_get_cm_event uses the QP of the event's ID (it moves
// it on CONNECT_RESPONSE): the Close of a QP of an ID on the channel waits
// for the read.
func TestQPCloseWaitsForEvent(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 30*time.Second)
	ch, id := newID(t, rdmacm.PortSpaceTCP)
	if err := id.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
		t.Fatal(err)
	}
	qp := idQP(t, id)
	// Another ID on the channel makes the event.
	other, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, other) })
	entered, release := blockQPUse(t, "event")
	if err := other.ResolveAddr(netip.AddrPortFrom(n.IP, 0), netip.AddrPortFrom(n.IP, 9), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ev  *rdmacm.Event
		err error
	}
	got := make(chan result, 1)
	go func() {
		ev, err := ch.GetEvent(ctx)
		got <- result{ev, err}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("GetEvent read no event within 10 s")
	}
	checkQPCloseWaits(t, qp, release, "GetEvent")
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.ev.Type != rdmacm.EventAddrResolved || r.ev.ID != other {
		t.Fatalf("event %s for %p, want %s for %p", r.ev, r.ev.ID, rdmacm.EventAddrResolved, other)
	}
}
