//go:build linux && cgo

package rdmamsg

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/gorperf/gorperf/ibverbs"
)

// wait sleeps until kick wakes it (nil), ctx ends (its error), the
// deadline dl, if any, passes (os.ErrDeadlineExceeded) or closed is
// closed (ErrClosed): how PacketConn callers sleep, and Conn callers
// while another sleeps on the CQ.
func wait(ctx context.Context, kick <-chan struct{}, dl *deadline, closed <-chan struct{}) error {
	var dlc <-chan struct{}
	if dl != nil {
		dlc = dl.done()
	}
	select {
	case <-kick:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-dlc:
		return os.ErrDeadlineExceeded
	case <-closed:
		return ErrClosed
	}
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// A cqLoop takes a CQ's completions as they come, sleeping on the CQ's
// channel between them. poll takes the completions there are and deals
// with them, with mu held, and returns how many it took; callers that
// spin poll the same way, so that every completion is dealt with in order
// whoever takes it.
type cqLoop struct {
	mu   *sync.Mutex
	cq   *ibverbs.CQ
	poll func() int
	end  func()      // with mu held, after the last poll; may be nil
	fail func(error) // with mu held
	wake func()      // after completions were taken
}

// run runs the loop until ctx ends; then it takes what came before, calls
// end and wg.Done.
func (l cqLoop) run(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	ch := l.cq.Channel()
	locked := func(f func() int) int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return f()
	}
	for {
		if locked(l.poll) > 0 {
			l.wake()
			// Let the caller just woken run now, on this thread,
			// before the loop re-arms the CQ: its message is what
			// someone waits for, the arming is not. It took a
			// fifth off a sleeping round trip (BenchmarkRoundTrip)
			// in the soft-RoCE VM, where arming is a system call.
			runtime.Gosched()
			continue
		}
		if err := l.cq.ReqNotify(false); err != nil {
			locked(func() int { l.fail(fmt.Errorf("rdmamsg: %w", err)); return 0 })
			l.wake()
			return
		}
		if locked(l.poll) > 0 {
			l.wake()
			continue
		}
		if _, err := ch.Wait(ctx); err != nil {
			locked(func() int {
				if ctx.Err() == nil {
					l.fail(fmt.Errorf("rdmamsg: %w", err))
				}
				for l.poll() > 0 {
				}
				if l.end != nil {
					l.end()
				}
				return 0
			})
			l.wake()
			return
		}
	}
}
