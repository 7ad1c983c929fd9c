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

// TestListenerCloseChannelRefused: the rdmacm listener's channel under a
// Listener refuses an ID of the caller's (CreateID, EINVAL), whose events
// the rdmacm listener's GetRequest would drop, and the Listener's Close
// frees the channel at once; Accept then returns ErrClosed, and a second
// Close does nothing. Before, CreateID put the ID there, and Close failed
// (EBUSY) until it was closed. (That was the one way to make the Close
// fail, for the retry of TestListenerCloseRetry: the rdmacm listener is
// RC, whose listening ID rdma_create_qp refuses a QP, with EINVAL; the
// rdmacm Listener's retry is rdmacm's TestListenerCloseRetry, with a QP
// on a UD listener's ID.)
func TestListenerCloseChannelRefused(t *testing.T) {
	srvNet, _ := ends(t)
	l, err := rdmamsg.Listen(context.Background(), netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ch := l.CM().ID().Channel()
	other, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if other != nil {
		defer other.Close()
	}
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CreateID on the listener's channel: %v, want EINVAL", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ch.Fd() != -1 {
		t.Error("the listener's channel is still open after Close")
	}
	if _, err := l.Accept(timeout(t, 5*time.Second)); !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("Accept after Close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
