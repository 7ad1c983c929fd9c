package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestNotifyContextNamesTheSignal: the root context that SIGTERM ends
// has a cause that names it, by the Signal method that bench reads to
// tell the peer "stopped (SIGTERM)", not "interrupted (Ctrl-C)"; stop
// ends it without a signal.
func TestNotifyContextNamesTheSignal(t *testing.T) {
	ctx, stop := notifyContext(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not end the context")
	}
	sig, ok := context.Cause(ctx).(interface{ Signal() os.Signal })
	if !ok || sig.Signal() != syscall.SIGTERM {
		t.Errorf("the cause is %v, want one whose Signal is SIGTERM", context.Cause(ctx))
	}
	stop()

	ctx, stop = notifyContext(context.Background())
	stop()
	if ctx.Err() == nil || context.Cause(ctx) != context.Canceled {
		t.Errorf("stopped: err %v, cause %v; want both context.Canceled", ctx.Err(), context.Cause(ctx))
	}
}

// TestStoppedStatus: a run that a signal stopped exits 128 and the
// signal's number, as a shell reports a process the signal killed: 143
// for SIGTERM, as perftest's, where gorperf exited 130, Ctrl-C's; 130 for
// Ctrl-C, and for a context ended by no signal.
func TestStoppedStatus(t *testing.T) {
	for _, tc := range []struct {
		cause error
		want  int
	}{
		{&stopSignal{syscall.SIGTERM}, 143},
		{&stopSignal{os.Interrupt}, 130},
		{&stopSignal{syscall.SIGHUP}, 129},
		{context.Canceled, 130},
		{nil, 130}, // not ended
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		if tc.cause != nil {
			cancel(tc.cause)
		}
		if got := stoppedStatus(ctx); got != tc.want {
			t.Errorf("stopped by %v: exit %d, want %d", tc.cause, got, tc.want)
		}
		cancel(nil)
	}
}
