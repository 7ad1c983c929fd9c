package rdmamsg

import (
	"testing"
	"time"
)

// closedWithin says whether ch is closed now or within d. A channel
// closed already counts however late the check runs: a select on it and
// on a timer that has fired too would pick either.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestDeadline(t *testing.T) {
	var d deadline
	if closedWithin(d.done(), 20*time.Millisecond) {
		t.Fatal("no deadline, yet done")
	}
	// A wait that began before a deadline is set sees it, at its time
	// and not before.
	waiting := d.done()
	at := time.Now().Add(30 * time.Millisecond)
	d.set(at)
	if !closedWithin(waiting, 2*time.Second) {
		t.Fatal("a deadline 30 ms on did not end a wait begun before it")
	}
	if early := time.Until(at); early > 0 {
		t.Fatalf("a deadline 30 ms on ended a wait begun before it %v early", early)
	}
	// A time past ends waits at once; clearing it opens a new channel.
	d.set(time.Now().Add(-time.Second))
	if !closedWithin(d.done(), time.Millisecond) {
		t.Fatal("a time past did not end the wait at once")
	}
	d.set(time.Time{})
	if closedWithin(d.done(), 20*time.Millisecond) {
		t.Fatal("a cleared deadline still ends waits")
	}
	// A deadline moved later before it passes does not fire at the
	// earlier time.
	d.set(time.Now().Add(20 * time.Millisecond))
	d.set(time.Now().Add(time.Hour))
	if closedWithin(d.done(), 60*time.Millisecond) {
		t.Fatal("a deadline moved an hour on fired at the old time")
	}
	d.set(time.Time{})
}

// TestDeadlineMovedAsItFires: a deadline moved later just as its timer
// fires, while the timer waits for the lock, does not end waits at the
// old time.
func TestDeadlineMovedAsItFires(t *testing.T) {
	var d deadline
	d.set(time.Now().Add(time.Millisecond))
	d.mu.Lock()
	time.Sleep(20 * time.Millisecond) // the timer fires, and waits for mu
	d.resetLocked(time.Now().Add(time.Hour))
	d.mu.Unlock()
	if closedWithin(d.done(), 50*time.Millisecond) {
		t.Fatal("a deadline moved an hour on, as its timer fired, ended waits at the old time")
	}
	d.set(time.Time{})
}

// TestDeadlineStop: a deadline stopped (its connection's Close) stops its
// timer, which no longer holds the connection until it fires, and takes
// no deadline after.
func TestDeadlineStop(t *testing.T) {
	var d deadline
	fired := make(chan struct{}, 1)
	d.onChange = func() {
		select {
		case fired <- struct{}{}:
		default:
		}
	}
	// Far enough on that the stop comes first, under load too.
	if !d.set(time.Now().Add(300 * time.Millisecond)) {
		t.Fatal("set refused before stop")
	}
	<-fired // the set's own call
	waiting := d.done()
	d.stop()
	if d.timer != nil {
		t.Error("the timer is still there after stop")
	}
	if closedWithin(waiting, 400*time.Millisecond) {
		t.Error("a deadline stopped fired at its time")
	}
	select {
	case <-fired:
		t.Error("a deadline stopped called onChange")
	default:
	}
	if d.set(time.Now().Add(-time.Second)) || d.passed() {
		t.Error("set took a deadline after stop")
	}
}
