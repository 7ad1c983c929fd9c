package inuse

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestInUseDrainsWhileTurnedAway: callers that go on calling after their
// object's Close has begun, turned away each time, do not hold off the
// Close's drain, which waits for the count of calls under way to reach 0.
// With an add and a subtraction for each call turned away, a caller
// preempted between the two held the count up, and with 8 such callers
// on 2 CPUs a drain had not ended after 5 s. An enter after the shut
// counts nothing, and an enter before it is waited for.
func TestInUseDrainsWhileTurnedAway(t *testing.T) {
	var u Guard
	u.Open()
	if !u.Enter() {
		t.Fatal("enter of an open object failed")
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if u.Enter() {
					u.Leave()
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }() // on a failure
	time.Sleep(10 * time.Millisecond)
	u.Shut()
	if u.Enter() {
		t.Fatal("enter after shut succeeded")
	}
	drained := make(chan struct{})
	go func() { u.Drain(); close(drained) }()
	select {
	case <-drained:
		t.Fatal("drain ended with a call under way")
	case <-time.After(20 * time.Millisecond):
	}
	u.Leave()
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatalf("drain did not end within 5 s of the last call's leave: count %d", u.n.Load())
	}
	stop.Store(true)
	wg.Wait()
	if n := u.n.Load(); n != 0 {
		t.Errorf("count once the callers stopped = %d; want 0", n)
	}
}
