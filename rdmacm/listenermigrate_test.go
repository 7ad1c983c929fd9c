//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
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
