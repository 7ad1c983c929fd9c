//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestListenerIDMigrateRefused: Migrate refuses (EINVAL) a Listener's
// listening ID, whose connection requests its Accept and GetRequest read
// from the Listener's channel, and both still take requests afterwards,
// RC and UD. Migrate moved the ID: the requests came to the caller's
// channel, and Accept and GetRequest waited on one no event came to,
// for good with context.Background().
func TestListenerIDMigrateRefused(t *testing.T) {
	n := device(t)
	for _, ud := range []bool{false, true} {
		name := "RC"
		if ud {
			name = "UD"
		}
		t.Run(name, func(t *testing.T) {
			cfg := &rdmacm.Config{UD: ud}
			l := listen(t, n.IP, cfg)
			mine, openOK := callerChannel(t, false)
			ch := l.ID().Channel()
			err := l.ID().Migrate(mine)
			if !errors.Is(err, syscall.EINVAL) {
				t.Errorf("Migrate of the Listener's ID: %v, want EINVAL", err)
			} else {
				t.Logf("Migrate of the Listener's ID: %v", err)
			}
			if l.ID().Channel() != ch {
				t.Error("the Listener's ID moved")
			}

			// Accept takes a request.
			srv, cli, err := tryConnect(timeout(t, 20*time.Second), l, n.IP, cfg)
			if err != nil {
				t.Errorf("Accept after the Migrate: %v", err)
			} else {
				closeOK(t, cli)
				closeOK(t, srv)
			}

			// GetRequest takes one, which it rejects.
			ctx := timeout(t, 20*time.Second)
			dialed := make(chan error, 1)
			go func() {
				c, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{UD: ud, SrcAddr: n.IP.String()})
				if c != nil {
					c.Close()
				}
				dialed <- err
			}()
			if r, err := l.GetRequest(ctx); err != nil {
				t.Errorf("GetRequest after the Migrate: %v", err)
			} else if err := r.Reject(nil); err != nil {
				t.Errorf("Reject: %v", err)
			}
			if err := <-dialed; err == nil {
				t.Error("Dial succeeded where GetRequest's request was rejected")
			}

			// No request came to the caller's channel.
			gctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			ev, err := mine.GetEvent(gctx)
			cancel()
			if err == nil {
				t.Errorf("the caller's channel got %v", ev.Type)
				if ev.Type == rdmacm.EventConnectRequest {
					ev.ID.Reject(nil)
					ev.ID.Close()
				}
			}
			openOK("the refused Migrate")
		})
	}
}

// TestListenerChannelRefusesIDs: a Listener's channel is its own, whose
// Accept and GetRequest read every event on it and drop all but the
// requests: CreateID on it, and the Migrate of another ID onto it (one
// of the caller's, a request's from GetRequest), refuse (EINVAL), the
// IDs staying where they were; GetEvent and Await on it refuse too,
// taking no event, and ErrClosed once the Listener closed; and Accept
// still takes a request; RC and UD. CreateID
// and Migrate put the IDs there, whose events Accept and GetRequest then
// dropped, and GetEvent took the Listener's requests from it.
func TestListenerChannelRefusesIDs(t *testing.T) {
	n := device(t)
	for _, ud := range []bool{false, true} {
		name := "RC"
		if ud {
			name = "UD"
		}
		t.Run(name, func(t *testing.T) {
			cfg := &rdmacm.Config{UD: ud}
			l := listen(t, n.IP, cfg)
			lch := l.ID().Channel()
			refused := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Listener's") {
					t.Errorf("%s onto the Listener's channel: %v, want EINVAL saying the channel is a Listener's", what, err)
				}
			}

			id, err := lch.CreateID(rdmacm.PortSpaceTCP)
			if id != nil {
				t.Cleanup(func() { closeOK(t, id) })
			}
			refused("CreateID", err)

			ch, mine := newID(t, rdmacm.PortSpaceTCP)
			refused("Migrate of an ID of the caller's", mine.Migrate(lch))
			if mine.Channel() != ch {
				t.Error("the caller's ID moved to the Listener's channel")
			}

			if !ud {
				// A request's ID, which GetRequest moved to a
				// channel of its own.
				ctx := timeout(t, 20*time.Second)
				_, r := pendingRequest(t, ctx, n, l)
				own := r.ID().Channel()
				refused("Migrate of a request's ID", r.ID().Migrate(lch))
				if r.ID().Channel() != own {
					t.Error("the request's ID moved to the Listener's channel")
				}
				if err := r.Reject(nil); err != nil {
					t.Errorf("Reject: %v", err)
				}
			}

			// Before, GetEvent waited for the Listener's next event,
			// and took it.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			ev, err := lch.GetEvent(ctx)
			refused("GetEvent", err)
			if ev != nil {
				t.Errorf("GetEvent on the Listener's channel took %v", ev.Type)
			}
			ev, err = lch.Await(ctx, rdmacm.EventConnectRequest)
			refused("Await", err)
			if ev != nil {
				t.Errorf("Await on the Listener's channel took %v", ev.Type)
			}

			srv, cli, err := tryConnect(timeout(t, 20*time.Second), l, n.IP, cfg)
			if err != nil {
				t.Errorf("Accept after the refusals: %v", err)
			} else {
				closeOK(t, cli)
				closeOK(t, srv)
			}

			// Once the Listener closed, its channel says so, as any.
			closeOK(t, l)
			if _, err := lch.GetEvent(context.Background()); !errors.Is(err, rdmacm.ErrClosed) {
				t.Errorf("GetEvent on a closed Listener's channel: %v, want ErrClosed", err)
			}
		})
	}
}
