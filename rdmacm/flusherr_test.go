//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestFlushFindsErr: a receive flushed because the peer disconnected
// finds Conn.Err already set, matching ErrDisconnected, however soon it
// is polled: the Conn sets Err before it moves the QP to the error state.
// A poller spinning on the CQ saw the flush before Err was set when the
// Conn set it after (nil in some of the rounds).
func TestFlushFindsErr(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			srv, cli := connect(t, l, n.IP, &rdmacm.Config{})
			m := register(t, srv.PD(), 64, 0)
			postRecv(t, srv, m, 0, 64)
			type seen struct{ wc, conn error }
			got := make(chan seen, 1)
			go func() {
				wcs := make([]ibverbs.WC, 1)
				deadline := time.Now().Add(20 * time.Second)
				for time.Now().Before(deadline) {
					k, err := srv.RecvCQ().Poll(wcs)
					if err != nil {
						got <- seen{err, nil}
						return
					}
					if k == 1 {
						got <- seen{wcs[0].Err(), srv.Err()}
						return
					}
				}
				got <- seen{errors.New("no completion within 20 s"), nil}
			}()
			closeOK(t, cli)
			s := <-got
			if !errors.Is(s.wc, ibverbs.WCWRFlushErr) {
				t.Fatalf("the server's receive once the client closed: %v, want WCWRFlushErr", s.wc)
			}
			if !errors.Is(s.conn, rdmacm.ErrDisconnected) {
				t.Errorf("Err as the flush was polled: %v, want ErrDisconnected", s.conn)
			}
			select {
			case <-srv.Done():
			case <-time.After(5 * time.Second):
				t.Error("Done still open 5 s after the flush")
			}
		})
	}
}
