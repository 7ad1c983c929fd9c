//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestAcceptHandshakeCap: a Listener's Accepts have at most
// MaxHandshakes (64) handshakes under way; a request beyond them waits,
// untaken, on the listener's channel until one ends. 65 Dials, each
// handshake held in the listener's Prepare: 64 enter it, the 65th's
// request waits (the channel readable) while they are held, and enters
// once one of them is let go; then all 65 connect.
func TestAcceptHandshakeCap(t *testing.T) {
	n := device(t)
	const total = rdmacm.MaxHandshakes + 1
	var now, most, entered atomic.Int64 // in Prepare now, at most, in all
	one := make(chan struct{}, total)   // a token lets one handshake go
	all := make(chan struct{})          // closed: all go
	var letAll sync.Once
	small := rdmacm.Config{Cap: ibverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}, CQSize: 2}
	scfg := small
	scfg.Prepare = func(*rdmacm.Conn) (func() error, error) {
		raise(&most, now.Add(1))
		entered.Add(1)
		select {
		case <-one:
		case <-all:
		}
		now.Add(-1)
		return nil, nil
	}
	l := listen(t, n.IP, &scfg)
	t.Cleanup(func() { letAll.Do(func() { close(all) }) }) // before the Listener's Close, which waits for Prepare
	ctx := timeout(t, 150*time.Second)

	accepted := make(chan error, total)
	var conns []*rdmacm.Conn
	var connsMu sync.Mutex
	keep := func(c *rdmacm.Conn) {
		connsMu.Lock()
		conns = append(conns, c)
		connsMu.Unlock()
	}
	t.Cleanup(func() {
		connsMu.Lock()
		defer connsMu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for range total {
			c, err := l.Accept(ctx)
			if c != nil {
				keep(c)
			}
			accepted <- err
		}
	}()
	dialed := make(chan error, total)
	ccfg := small
	ccfg.SrcAddr = n.IP.String()
	for range total {
		go func() {
			c, err := rdmacm.Dial(ctx, l.Addr().String(), &ccfg)
			if c != nil {
				keep(c)
			}
			dialed <- err
		}()
	}

	waitFor := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v (%d handshakes in Prepare, %d entered)", what, d, now.Load(), entered.Load())
			}
		}
	}
	waiting := func() bool { // a request waits untaken on the listener's channel
		fds := []unix.PollFd{{Fd: int32(rdmacm.ListenerFd(l)), Events: unix.POLLIN}}
		k, err := unix.Poll(fds, 0)
		return err == nil && k == 1 && fds[0].Revents&unix.POLLIN != 0
	}
	waitFor("64 handshakes in Prepare", 100*time.Second, func() bool { return entered.Load() >= rdmacm.MaxHandshakes })
	waitFor("the 65th request on the listener's channel, or in Prepare", 100*time.Second, func() bool {
		return waiting() || entered.Load() > rdmacm.MaxHandshakes
	})
	time.Sleep(300 * time.Millisecond) // time for a 65th handshake to begin, were there no cap
	if e, m := entered.Load(), most.Load(); e != rdmacm.MaxHandshakes || m != rdmacm.MaxHandshakes {
		t.Fatalf("with %d handshakes held: %d entered Prepare, at most %d at once; want %d (MaxHandshakes)",
			rdmacm.MaxHandshakes, e, m, rdmacm.MaxHandshakes)
	}
	if !waiting() {
		t.Fatal("the 65th request was taken from the listener's channel while 64 handshakes were held")
	}
	one <- struct{}{}
	waitFor("the 65th handshake in Prepare once one ended", 30*time.Second, func() bool { return entered.Load() == total })
	if m := most.Load(); m != rdmacm.MaxHandshakes {
		t.Errorf("at most %d handshakes in Prepare at once, want %d", m, rdmacm.MaxHandshakes)
	}
	letAll.Do(func() { close(all) })
	for i := range 2 * total {
		var err error
		select {
		case err = <-accepted:
		case err = <-dialed:
		case <-ctx.Done():
			t.Fatalf("%d of %d Accepts and Dials returned: %v", i, 2*total, context.Cause(ctx))
		}
		if err != nil {
			t.Errorf("Accept or Dial: %v", err)
		}
	}
}

// raise makes m at least k.
func raise(m *atomic.Int64, k int64) {
	for {
		old := m.Load()
		if k <= old || m.CompareAndSwap(old, k) {
			return
		}
	}
}
