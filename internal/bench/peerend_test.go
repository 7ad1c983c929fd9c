//go:build linux && cgo

package bench

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestStopWaitsOnce: a side stopped by Ctrl-C that waits twice for its
// peer (--validate's barrier, then the result) gives up interruptWait
// after the stop, not after each wait: here the peer answers the first
// wait late and never the second. It tells the peer once.
func TestStopWaitsOnce(t *testing.T) {
	restoreAtEnd(t, &interruptWait)
	// The peer answers the first wait 1.5 s after the stop, a second
	// before interruptWait; the second wait, never answered, ends
	// interruptWait (2.5 s) after the stop, where a bound of each wait's
	// own would end it 1.5 s later at least: 4 s after, as the first
	// wait's answer cannot come before its sleep. The bound, 3.7 s,
	// leaves a stalled VM 1.2 s, and that wrong end 300 ms.
	interruptWait = 2500 * time.Millisecond
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	mine, peer := exchange.NewConn(a), exchange.NewConn(b)
	go func() {
		// The peer reads the abort, and answers the barrier late.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		peer.Recv(ctx)
		time.Sleep(1500 * time.Millisecond)
		peer.Send(ctx, exchange.Sync{Seq: 1})
		peer.Recv(ctx) // this side's Result; the peer's never comes
	}()
	told := 0
	abort := stopOnce(func() {
		told++
		mine.Send(context.Background(), exchange.ErrorMsg{Code: exchange.CodeAborted, Text: interruptedText})
	})
	ctx, stop := context.WithCancel(context.Background())
	stop()
	start := time.Now()
	w := watchPeer(ctx, mine, func(error) {}, false)
	w.finish()
	if m, err := w.await(ctx, abort); err != nil || m.Type() != (exchange.Sync{}).Type() {
		t.Fatalf("the first wait: %v, %v; want the peer's Sync", m, err)
	}
	mine.Send(context.Background(), exchange.Result{})
	w = watchPeer(ctx, mine, func(error) {}, false)
	w.finish()
	m, err := w.await(ctx, abort)
	took := time.Since(start)
	if err == nil {
		t.Errorf("the second wait returned %v, want a failure", m)
	}
	if took < interruptWait || took > interruptWait+1200*time.Millisecond {
		t.Errorf("gave up %v after the stop, want %v", took, interruptWait)
	}
	if told != 1 {
		t.Errorf("told the peer %d times, want once", told)
	}
}
