//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestRequestChannelClosesWithID: the event channel that GetRequest
// made for a request's ID closes with the ID, or when the ID moves to a
// channel of the caller's, so that a server answering requests through
// their IDs (a QP of its own) does not keep an rdma_cm fd per request.
// Only ConnRequest's Accept and Reject closed it.
func TestRequestChannelClosesWithID(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	closed := func(what string, ch *rdmacm.EventChannel) {
		t.Helper()
		id, err := ch.CreateID(rdmacm.PortSpaceTCP)
		if id != nil {
			id.Close()
		}
		if !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("%s: CreateID on the request's channel: %v, want ErrClosed (the channel closed)", what, err)
		}
	}

	_, r := pendingRequest(t, ctx, n, l)
	ch := r.ID().Channel()
	if err := r.ID().Reject(nil); err != nil {
		t.Fatal(err)
	}
	if err := r.ID().Close(); err != nil {
		t.Fatal(err)
	}
	closed("after the ID's Close", ch)

	_, r = pendingRequest(t, ctx, n, l)
	ch = r.ID().Channel()
	mine, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mine)
	if err := r.ID().Migrate(mine); err != nil {
		t.Fatal(err)
	}
	closed("after a Migrate to the caller's channel", ch)
	if err := r.ID().Reject(nil); err != nil {
		t.Error(err)
	}
	closeOK(t, r.ID())
	// The caller's channel is the caller's: still open.
	id, err := mine.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Errorf("CreateID on the caller's channel after the ID's Close: %v", err)
	} else {
		closeOK(t, id)
	}
}

// TestRequestRejectAfterMigrate: ConnRequest.Reject of a request whose
// ID moved to a channel of the caller's leaves that channel open, and
// succeeds where other IDs use it. It closed the ID's channel whatever
// it was: a caller's channel that the ID had alone closed under it, and
// one that other IDs used made Reject fail with EBUSY after the peer
// had been rejected and the ID freed.
func TestRequestRejectAfterMigrate(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	for _, shared := range []bool{false, true} {
		_, r := pendingRequest(t, ctx, n, l)
		mine, openOK := callerChannel(t, shared)
		if err := r.ID().Migrate(mine); err != nil {
			t.Fatal(err)
		}
		if err := r.Reject(nil); err != nil {
			t.Errorf("shared %v: Reject after a Migrate to the caller's channel: %v", shared, err)
		}
		openOK("Reject")
	}
}
