//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestPostBindBesideClose closes the window ("MW") or the MR ("MR") that
// a PostSend's OpBindMW names while the post is between its check of the
// request and the post itself (SetPostBindHook), through ibv_post_send
// and the ibv_wr_* API. The Close must wait for the post, as it waits
// for a QP.BindMW: the post checked the window and MR holding none of
// their locks, and the Close returned, having freed the struct ibv_mw or
// ibv_mr, before the post handed it to the provider. The bind then
// completes, and the Close returns after it: nil for the window, the
// device's refusal of a region with a window bound for the MR.
func TestPostBindBesideClose(t *testing.T) {
	for _, what := range []string{"MW", "MR"} {
		for _, wrapi := range []bool{false, true} {
			name := what + "/post_send"
			if wrapi {
				name = what + "/wr_api"
			}
			t.Run(name, func(t *testing.T) {
				p := newMWPair(t, ibverbs.MWType2, wrapi)
				var c interface{ Close() error } = p.mw
				if what == "MR" {
					c = p.mr
				}
				closed := make(chan error, 1)
				var early error // the Close's, if it returned within the hook
				hooked := false
				defer ibverbs.SetPostBindHook(func() {
					if hooked {
						return
					}
					hooked = true
					go func() { closed <- c.Close() }()
					select {
					case err := <-closed:
						early = fmt.Errorf("returned (error %v) while the post of an OpBindMW naming it was between its check and the post", err)
					case <-time.After(200 * time.Millisecond):
					}
				})()
				b := p.bind(ibverbs.AccessRemoteWrite)
				err := p.b.qp.PostSend([]ibverbs.SendWR{{ID: 7, Opcode: ibverbs.OpBindMW, Flags: ibverbs.SendSignaled,
					RKey: ibverbs.NextRKey(p.mw.RKey()), Bind: &b}})
				if early != nil {
					t.Fatalf("%s.Close %v; the post then returned %v", what, early, err)
				}
				if !hooked {
					t.Fatalf("the post (%v) ran no hook", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				pollOK(t, p.b.cq, ibverbs.WCBindMW)
				select {
				case err = <-closed:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s.Close still running 10 s after the post", what)
				}
				switch {
				case what == "MW" && err != nil:
					t.Errorf("MW.Close after the bind: %v", err)
				case what == "MR" && !errors.Is(err, syscall.EINVAL):
					t.Errorf("MR.Close after the bind = %v, want the device's refusal (EINVAL) of a region with a window bound", err)
				case what == "MR":
					closeOK(t, p.mw) // then the cleanup's Close of the MR
				}
			})
		}
	}
}
