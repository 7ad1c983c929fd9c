//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestListenerCloseRetry: a Listener's Close that fails is tried again by
// the next, where the first's error was kept and returned for good and
// the rdmacm listener's channel stayed open: an ID of the test's own on
// that channel makes its destruction fail (EBUSY); once it is closed,
// the next Close frees the channel, and a third does nothing.
func TestListenerCloseRetry(t *testing.T) {
	srvNet, _ := ends(t)
	l, err := rdmamsg.Listen(context.Background(), netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ch := l.CM().ID().Channel()
	other, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := l.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("Close with another ID on the listener's channel: %v, want EBUSY", err)
	}
	if _, err := l.Accept(timeout(t, 5*time.Second)); !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("Accept after the Close that failed: %v, want ErrClosed", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close again once the other ID is closed: %v", err)
	}
	if ch.Fd() != -1 {
		t.Error("the listener's channel is still open after the second Close")
	}
	if err := l.Close(); err != nil {
		t.Errorf("a third Close: %v", err)
	}
}
