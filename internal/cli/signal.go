package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// stopSignal is the cause (context.Cause) of the root context that a
// signal ended: bench names it to the peer by its Signal method ("stopped
// (SIGTERM)"), so that the peer does not call a SIGTERM a Ctrl-C.
type stopSignal struct{ sig os.Signal }

func (s *stopSignal) Error() string     { return fmt.Sprintf("stopped by %v", s.sig) }
func (s *stopSignal) Signal() os.Signal { return s.sig }

// notifyContext is signal.NotifyContext for SIGINT and SIGTERM, whose
// context's cause is the signal that ended it (a *stopSignal). stop ends
// the context, if no signal has, and catches no more signals, so that a
// later one has its default action.
func notifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(&stopSignal{sig})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(context.Canceled)
		})
	}
}
