//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestRequestChannelBusyAtIDClose: where the caller has put an ID of its
// own on the event channel made for a request's ID, that ID's Close
// destroys the ID and reports the channel's refusal (EBUSY, from
// rdma_destroy_event_channel), where it dropped it and left the channel
// open without a word. The ID's next Close, once the caller's ID is
// closed, closes the channel; or the caller closes the channel itself,
// and the ID's next Close is a no-op.
func TestRequestChannelBusyAtIDClose(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	for _, channelFirst := range []bool{false, true} {
		_, r := pendingRequest(t, ctx, n, l)
		ch := r.ID().Channel()
		mine, err := ch.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.ID().Reject(nil); err != nil {
			t.Fatal(err)
		}
		err = r.ID().Close()
		if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "rdma_destroy_event_channel") {
			t.Errorf("Close of a request's ID whose channel carries an ID of the caller's: %v; "+
				"want EBUSY from rdma_destroy_event_channel", err)
		}
		if !rdmacm.IDClosing(r.ID()) {
			t.Error("the request's ID is open after its Close")
		}
		// The channel is still open: the caller's ID is on it.
		if id, err := ch.CreateID(rdmacm.PortSpaceTCP); err != nil {
			t.Errorf("CreateID on the request's channel after the ID's Close: %v", err)
		} else {
			closeOK(t, id)
		}
		closeOK(t, mine)
		if channelFirst {
			closeOK(t, ch)
		}
		if err := r.ID().Close(); err != nil {
			t.Errorf("channel closed first %v: the ID's second Close: %v", channelFirst, err)
		}
		if id, err := ch.CreateID(rdmacm.PortSpaceTCP); !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("channel closed first %v: CreateID on the request's channel after the ID's second Close: %v, "+
				"want ErrClosed (the channel closed)", channelFirst, err)
			if id != nil {
				id.Close()
			}
		}
		closeOK(t, r.ID())
	}
}

// TestRequestChannelBusyAtMigrate: where the caller has put an ID of its
// own on the event channel made for a request's ID, a Migrate of that ID
// to a channel of the caller's moves it and reports the old channel's
// refusal to close (EBUSY, from rdma_destroy_event_channel), as the ID's
// Close does; it returned nil and forgot the channel, which then stayed
// open after the ID's Close (its fd leaked). The ID keeps it: its Close,
// once the caller's ID is closed, closes it; or the caller closes the
// channel itself, and the ID's Close is a no-op for it.
func TestRequestChannelBusyAtMigrate(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	for _, channelFirst := range []bool{false, true} {
		_, r := pendingRequest(t, ctx, n, l)
		ch := r.ID().Channel()
		mine, err := ch.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		dest, openOK := callerChannel(t, false)
		err = r.ID().Migrate(dest)
		if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "rdma_destroy_event_channel") {
			t.Errorf("Migrate of a request's ID whose channel carries an ID of the caller's: %v; "+
				"want EBUSY from rdma_destroy_event_channel", err)
		}
		if got := r.ID().Channel(); got != dest {
			t.Errorf("the ID's channel after the Migrate: %p, want the caller's %p", got, dest)
		}
		// The channel is still open: the caller's ID is on it.
		if id, err := ch.CreateID(rdmacm.PortSpaceTCP); err != nil {
			t.Errorf("CreateID on the request's channel after the Migrate: %v", err)
		} else {
			closeOK(t, id)
		}
		if err := r.ID().Reject(nil); err != nil {
			t.Errorf("Reject after the Migrate: %v", err)
		}
		closeOK(t, mine)
		if channelFirst {
			closeOK(t, ch)
		}
		if err := r.ID().Close(); err != nil {
			t.Errorf("channel closed first %v: the ID's Close: %v", channelFirst, err)
		}
		if id, err := ch.CreateID(rdmacm.PortSpaceTCP); !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("channel closed first %v: CreateID on the request's channel after the ID's Close: %v, "+
				"want ErrClosed (the channel closed)", channelFirst, err)
			if id != nil {
				id.Close()
			}
			if !channelFirst {
				closeOK(t, ch)
			}
		}
		openOK("the ID's Close")
	}
}
