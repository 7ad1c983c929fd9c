//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestWatchRetriesRead: a Conn whose read of its events fails for want of
// memory (ENOMEM, injected three times, before each read takes an event)
// reads again and stays up, and still learns that its peer disconnected;
// before, the first failed read ended it with that error.
func TestWatchRetriesRead(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	var mu sync.Mutex
	var target *rdmacm.EventChannel // the channel of the first side connected
	failed := 0
	restoreHook := rdmacm.SetGetEventHook(func(ch *rdmacm.EventChannel, ev *rdmacm.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Type == rdmacm.EventEstablished && target == nil {
			target = ch // its next read is its Conn's watch
		}
	})
	defer restoreHook()
	restoreFault := rdmacm.SetGetEventFault(func(ch *rdmacm.EventChannel) syscall.Errno {
		mu.Lock()
		defer mu.Unlock()
		if ch == target && failed < 3 {
			failed++
			return syscall.ENOMEM
		}
		return 0
	})
	defer restoreFault()
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{})
	mu.Lock()
	watched, other := srv, cli
	if target == cli.ID().Channel() {
		watched, other = cli, srv
	} else if target != srv.ID().Channel() {
		mu.Unlock()
		t.Fatal("neither side's channel had ESTABLISHED")
	}
	mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		f := failed
		mu.Unlock()
		if f == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reads failed in 10 s, want 3: the watch does not read again", f)
		}
	}
	select {
	case <-watched.Done():
		t.Fatalf("the Conn ended after reads that failed with ENOMEM: %v", watched.Err())
	case <-time.After(100 * time.Millisecond):
	}
	closeOK(t, other)
	select {
	case <-watched.Done():
		if err := watched.Err(); !errors.Is(err, rdmacm.ErrDisconnected) {
			t.Errorf("the Conn whose peer closed: %v, want ErrDisconnected", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Conn has not seen its peer close after 10 s")
	}
}
