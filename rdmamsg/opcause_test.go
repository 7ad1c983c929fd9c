//go:build linux && cgo

package rdmamsg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestOpCause: the net adapters' *net.OpError says Timeout where a
// timeout lies anywhere in its error's chain (a stalled connection's
// ETIMEDOUT, a lookup's context.DeadlineExceeded), as errors.As to a
// net.Error found before the OpError wrapped it; OpError's Timeout asks
// its Err only, and said false. Errors that say Timeout themselves, or
// hold no timeout, are its Err as they are, and still match what they
// wrap.
func TestOpCause(t *testing.T) {
	stalled := fmt.Errorf("rdmamsg: connection to 198.18.0.1:1 lost: no send completed in 3s: %w", syscall.ETIMEDOUT)
	lookup := fmt.Errorf("rdmamsg: looking up 198.18.0.2:1: no answer within PacketConfig.LookupTimeout (1s): %w", context.DeadlineExceeded)
	own := timeoutError{fmt.Errorf("x: %w", os.ErrDeadlineExceeded)}
	for _, tc := range []struct {
		err     error
		timeout bool
		same    bool // Err is the error itself
	}{
		{stalled, true, false},
		{lookup, true, false},
		{os.ErrDeadlineExceeded, true, true},
		{own, true, true},
		{ErrClosed, false, true},
		{fmt.Errorf("x: %w", syscall.ECONNREFUSED), false, true},
	} {
		cause := opCause(tc.err)
		err := error(&net.OpError{Op: "write", Net: "rdma", Err: cause})
		var ne net.Error
		if !errors.As(err, &ne) || ne.Timeout() != tc.timeout {
			t.Errorf("%v: a net.Error %v whose Timeout is %v; want %v", tc.err, ne != nil, ne != nil && ne.Timeout(), tc.timeout)
		}
		if !errors.Is(err, tc.err) || (cause == tc.err) != tc.same {
			t.Errorf("%v: Err %v (%T), the error itself %v; want %v, matching it", tc.err, cause, cause, cause == tc.err, tc.same)
		}
	}
}
