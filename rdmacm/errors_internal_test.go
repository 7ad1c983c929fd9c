//go:build linux && cgo

package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

// TestPortTakenError: the EADDRNOTAVAIL of a bind whose port clashes
// keeps its errno and also matches EADDRINUSE, with words.
func TestPortTakenError(t *testing.T) {
	err := error(&OpError{Op: "listen", Addr: "198.18.0.1:7471", Err: &portTakenError{port: 7471, err: errnoError("rdma_bind_addr", int(syscall.EADDRNOTAVAIL))}})
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EINVAL) {
		t.Errorf("%v: want EADDRINUSE and EADDRNOTAVAIL only", err)
	}
	const want = "rdmacm: listen 198.18.0.1:7471: rdma_bind_addr: cannot assign requested address (port 7471 is in use: another ID holds it on the wildcard or a specific address)"
	if err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
}

// TestNotSupportedError: rdma_join_multicast_ex's ENOTSUPP (524) matches
// errors.ErrUnsupported and EOPNOTSUPP and says why.
func TestNotSupportedError(t *testing.T) {
	err := notSupported(netip.MustParseAddr("ff0e::1"))
	const want = "the kernel does not join IPv6 multicast groups over RoCE v2 (join an IPv4 group, or use InfiniBand or RoCE v1): rdma_join_multicast_ex (errno 524, ENOTSUPP): operation not supported"
	if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EOPNOTSUPP) || err.Error() != want {
		t.Errorf("%q: want ErrUnsupported, EOPNOTSUPP and %q", err, want)
	}
}

// TestWithAddr: an address the caller gave as it is is not repeated.
func TestWithAddr(t *testing.T) {
	ap := netip.MustParseAddrPort("198.18.0.1:7471")
	e := context.Canceled
	for _, tc := range []struct{ given, want string }{
		{"198.18.0.1:7471", "context canceled"},
		{"198.18.0.1", "context canceled"},
		{"host:7471", "198.18.0.1:7471: context canceled"},
	} {
		if got := withAddr(ap, tc.given, e).Error(); got != tc.want {
			t.Errorf("given %q: %q, want %q", tc.given, got, tc.want)
		}
	}
}

// TestClosingError: a handshake's failure that an Accept returns once the
// listener's Close has begun matches ErrClosed and keeps its own chain
// (a peer's reject is still a *RejectedError), where it kept only its
// words; one that Close's cancellation ended matches ErrClosed alone,
// not the context.Canceled that the caller's ctx did not cause
// (TestListenerCloseEndsAccept sees that one in the VM).
func TestClosingError(t *testing.T) {
	rej := &RejectedError{Status: 28}
	err := error(&OpError{Op: "accept", Addr: "198.18.0.1:7471", Err: &closingError{err: fmt.Errorf("accepting: %w", rej)}})
	var got *RejectedError
	if !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) || !errors.As(err, &got) || got != rej ||
		!errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, context.Canceled) {
		t.Errorf("%v: want ErrClosed and the *RejectedError, ECONNREFUSED", err)
	}
	if want := "rdmacm: accept 198.18.0.1:7471: rdmacm: object is closed (accepting: " + rej.Error() + ")"; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}

	prep := errors.New("prepare failed")
	err = &closingError{err: errors.Join(prep, syscall.EIO)}
	if !errors.Is(err, ErrClosed) || !errors.Is(err, prep) || !errors.Is(err, syscall.EIO) {
		t.Errorf("%v: want ErrClosed, Prepare's error and EIO", err)
	}

	err = &closingError{err: fmt.Errorf("accepting: %w", context.Canceled), cancelled: true}
	if !errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) {
		t.Errorf("%v: want ErrClosed, not context.Canceled", err)
	}
	if want := "rdmacm: object is closed (accepting: context canceled)"; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
}
