//go:build linux && cgo

package rdmamsg

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestWatchContextStop: once stop has returned, nc has no deadline, even
// when ctx was cancelled as stop ran and its watch began just before.
func TestWatchContextStop(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { // the peer: a byte for every read
		one := []byte{1}
		for {
			if _, err := b.Write(one); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 1)
	for i := range 300 {
		ctx, cancel := context.WithCancel(context.Background())
		stop := watchContext(ctx, a)
		cancel() // its watch starts, in a goroutine of its own
		if err := stop(nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond) // for a watch that ran late
		if _, err := a.Read(buf); err != nil {
			t.Fatalf("round %d: a read after stop: %v", i, err)
		}
	}
}
