//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// callerChannel makes a channel of the caller's, with another ID on it
// where shared; openOK then checks that the channel is still open,
// closes the other ID and the channel. Both close when the test ends too.
func callerChannel(t *testing.T, shared bool) (mine *rdmacm.EventChannel, openOK func(what string)) {
	t.Helper()
	mine, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	var other *rdmacm.ID
	if shared {
		if other, err = mine.CreateID(rdmacm.PortSpaceTCP); err != nil {
			mine.Close()
			t.Fatal(err)
		}
	}
	done := false
	t.Cleanup(func() {
		if !done {
			if other != nil {
				other.Close()
			}
			mine.Close()
		}
	})
	return mine, func(what string) {
		t.Helper()
		done = true
		if other != nil {
			closeOK(t, other)
		}
		id, err := mine.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Errorf("shared %v: CreateID on the caller's channel after %s: %v, want it open", shared, what, err)
		} else {
			closeOK(t, id)
		}
		closeOK(t, mine)
	}
}

// TestAcceptAfterMigrateRefused: ConnRequest.Accept refuses a request
// whose ID moved to a channel of the caller's (EINVAL, before it makes
// anything or runs Config.Prepare), rejects it and leaves the caller's
// channel open, shared with another ID or not. It accepted: a Conn's
// handshake and watch then read every event of the caller's channel, and
// its teardown (a failed Prepare's, or Close's) closed that channel, under
// the caller where the ID had it alone, or failed with EBUSY where other
// IDs used it.
func TestAcceptAfterMigrateRefused(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	for _, failPrepare := range []bool{true, false} {
		for _, shared := range []bool{false, true} {
			dialed := dialAndClose(ctx, l.Addr().String(), n.IP)
			r, err := l.GetRequest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mine, openOK := callerChannel(t, shared)
			if err := r.ID().Migrate(mine); err != nil {
				t.Fatal(err)
			}
			prepared := false
			cfg := &rdmacm.Config{Prepare: func(*rdmacm.Conn) (func() error, error) {
				prepared = true
				if failPrepare {
					return nil, errors.New("prepare fails")
				}
				return nil, nil
			}}
			c, err := r.Accept(ctx, cfg)
			if c != nil {
				t.Errorf("prepare fails %v, shared %v: Accept after a Migrate to the caller's channel succeeded", failPrepare, shared)
				if err := c.Close(); err != nil {
					t.Errorf("prepare fails %v, shared %v: Close: %v", failPrepare, shared, err)
				}
			} else if !errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EBUSY) {
				t.Errorf("prepare fails %v, shared %v: Accept after a Migrate to the caller's channel: %v, want EINVAL alone", failPrepare, shared, err)
			}
			if prepared {
				t.Errorf("prepare fails %v, shared %v: Config.Prepare ran", failPrepare, shared)
			}
			if err := <-dialed; c == nil && !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("prepare fails %v, shared %v: Dial: %v, want a *RejectedError", failPrepare, shared, err)
			}
			openOK("Accept")
		}
	}
}

// TestConnIDMigrateRefused: Migrate refuses (EINVAL) the ID of a Conn,
// from Dial or Accept, whose watch reads the ID's events from its
// channel, and the connection stays up on its own channel. It moved the
// ID: an accepted Conn's watch lost its channel, which the Migrate
// closed, and ended the connection; a dialed one's waited on a channel
// no event came to; and Close closed the caller's channel.
func TestConnIDMigrateRefused(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{})
	mine, openOK := callerChannel(t, false)
	for _, x := range []struct {
		name string
		c    *rdmacm.Conn
	}{{"accepted", srv}, {"dialed", cli}} {
		ch := x.c.ID().Channel()
		if err := x.c.ID().Migrate(mine); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: Migrate of the Conn's ID: %v, want EINVAL", x.name, err)
		}
		if x.c.ID().Channel() != ch {
			t.Errorf("%s: the Conn's ID moved", x.name)
		}
	}
	for _, x := range []struct {
		name string
		c    *rdmacm.Conn
	}{{"accepted", srv}, {"dialed", cli}} {
		select {
		case <-x.c.Done():
			t.Errorf("%s: the connection ended after the Migrate: %v", x.name, x.c.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	closeOK(t, cli)
	closeOK(t, srv)
	openOK("the Conns' Close")
}

// TestConnCloseLeavesCallersChannel: a Conn whose ID is on a channel it
// did not make (moved behind Migrate's back: ForceMigrate) closes, and
// leaves that channel open, shared with another ID or not; a dialed
// Conn's Close closes the channel Dial made. Its teardown closed the
// channel the ID was on, whatever it was: the caller's channel closed
// under it, or Close failed with EBUSY where other IDs used it, and
// Dial's leaked.
func TestConnCloseLeavesCallersChannel(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	for _, shared := range []bool{false, true} {
		srv, cli := connect(t, l, n.IP, &rdmacm.Config{})
		for _, x := range []struct {
			name string
			c    *rdmacm.Conn
		}{{"dialed", cli}, {"accepted", srv}} {
			mine, openOK := callerChannel(t, shared)
			own := x.c.ID().Channel()
			if err := rdmacm.ForceMigrate(x.c.ID(), mine); err != nil {
				t.Fatal(err)
			}
			if err := x.c.Close(); err != nil {
				t.Errorf("%s, shared %v: Close of a Conn whose ID is on the caller's channel: %v", x.name, shared, err)
			}
			openOK(x.name + " Conn's Close")
			id, err := own.CreateID(rdmacm.PortSpaceTCP)
			if id != nil {
				id.Close()
			}
			if !errors.Is(err, rdmacm.ErrClosed) {
				t.Errorf("%s, shared %v: CreateID on the channel made for the Conn: %v, want ErrClosed (closed with the Conn)", x.name, shared, err)
			}
		}
	}
}
