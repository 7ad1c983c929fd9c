//go:build linux && cgo

package rdmacm

import (
	"context"
	"errors"
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
