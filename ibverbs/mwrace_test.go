//go:build linux && cgo

package ibverbs_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestMWGettersBesideClose runs a memory window's RKey and Raw in a
// goroutine while the window is closed: under -race, neither may race
// with the Close, which set the struct ibv_mw pointer they read to nil
// (as a PostSend's check of an OpBindMW read it too). Once closed, RKey
// returns 0 and Raw nil.
func TestMWGettersBesideClose(t *testing.T) {
	p := newMWPair(t, ibverbs.MWType1, false) // its cleanup's Close of the window is then a no-op
	var calls atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p.mw.Raw() != nil {
			_ = p.mw.RKey()
			calls.Add(1)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in 10 s", calls.Load())
		}
	}
	closeOK(t, p.mw)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Raw still answered 10 s after the window's Close")
	}
	if k, r := p.mw.RKey(), p.mw.Raw(); k != 0 || r != nil {
		t.Errorf("closed window: RKey %#x, Raw %p; want 0 and nil", k, r)
	}
}
