//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestMRRawAndBindBesideClose runs MR.Raw ("Raw"), or a QP.BindMW of a
// type 1 window to the MR ("BindMW": unbinds, length 0, each polled), in
// a goroutine while the MR's access is changed (Rereg) and the MR is then
// closed: under -race, neither may race with them. Raw read the struct
// ibv_mr pointer that Close set to nil, and BindMW's check read it, and
// the MR's PD that Rereg moves, holding no lock of the MR's, and then
// handed the verbs a struct ibv_mr that the Close could free meanwhile.
// Once the MR is closed, Raw returns nil and a bind to it is refused
// with EINVAL. A provider that cannot re-register (soft-RoCE's on Linux
// 6.1) leaves only the Close to race with.
func TestMRRawAndBindBesideClose(t *testing.T) {
	t.Run("Raw", func(t *testing.T) {
		p := newMWPair(t, ibverbs.MWType1, false) // its cleanup's Close of the MR is then a no-op
		besideRereg(t, p.mr, func(calls *atomic.Int64) error {
			for {
				if p.mr.Raw() == nil {
					return nil
				}
				calls.Add(1)
			}
		})
		if r := p.mr.Raw(); r != nil {
			t.Errorf("Raw of a closed MR = %p, want nil", r)
		}
	})
	t.Run("BindMW", func(t *testing.T) {
		p := newMWPair(t, ibverbs.MWType1, false)
		err := besideRereg(t, p.mr, func(calls *atomic.Int64) error {
			wcs := make([]ibverbs.WC, 1)
			for i := uint64(1); ; i++ {
				if _, err := p.b.qp.BindMW(p.mw, i, ibverbs.SendSignaled, ibverbs.MWBind{MR: p.mr}); err != nil {
					return err
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					n, err := p.b.cq.Poll(wcs)
					if err != nil {
						return err
					}
					if n == 1 {
						break
					}
					if time.Now().After(deadline) {
						return errors.New("no completion for the unbind in 10 s")
					}
				}
				if err := wcs[0].Err(); err != nil {
					return err
				}
				calls.Add(1)
			}
		})
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("BindMW to a closed MR: %v, want EINVAL", err)
		}
	})
}

// besideRereg runs use in a goroutine, and once it has counted 20 calls,
// changes mr's access back and forth (Rereg) and closes mr; use, which
// must return once mr is closed, then returns its error.
func besideRereg(t *testing.T, mr *ibverbs.MR, use func(calls *atomic.Int64) error) error {
	t.Helper()
	var calls atomic.Int64
	done := make(chan error, 1)
	go func() { done <- use(&calls) }()
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 20; time.Sleep(time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("ended after %d calls with the MR open: %v", calls.Load(), err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in 10 s", calls.Load())
		}
	}
	reregs := flipAccess(t, mr, 20, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite|ibverbs.AccessMWBind, ibverbs.AccessRemoteRead)
	closeOK(t, mr)
	select {
	case err := <-done:
		t.Logf("%d calls, %d changes of access before the Close", calls.Load(), reregs)
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after the MR's Close")
		return nil
	}
}
