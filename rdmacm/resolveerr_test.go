//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// noRoute is an address in the test range that the soft-RoCE VM has no
// route to: rdma_resolve_addr fails on it at once, with ENETUNREACH.
const noRoute = "198.18.5.5:7471"

// TestDialNoRouteErrAddrResolve: a Dial or LookupUD to an address with no
// route to it, where rdma_resolve_addr itself fails with ENETUNREACH,
// fails at once with an error matching ErrAddrResolve, as Dial's doc
// promises for a peer that cannot be reached, and the errno, and naming
// the verb. Before, the error was the bare *os.SyscallError, which did
// not match ErrAddrResolve.
func TestDialNoRouteErrAddrResolve(t *testing.T) {
	device(t)
	// A UDP socket's connect looks the route up and sends nothing.
	if c, err := net.Dial("udp4", noRoute); err == nil {
		c.Close()
		t.Skipf("this host has a route to %s (the soft-RoCE VM has none)", noRoute)
	} else if !errors.Is(err, syscall.ENETUNREACH) {
		t.Skipf("a UDP connect to %s: %v, where the soft-RoCE VM says ENETUNREACH", noRoute, err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, rdmacm.ErrAddrResolve) || !errors.Is(err, syscall.ENETUNREACH) ||
			!strings.Contains(err.Error(), "rdma_resolve_addr") {
			t.Errorf("%s to %s, to which there is no route: %v, want ErrAddrResolve and ENETUNREACH, naming rdma_resolve_addr", what, noRoute, err)
		}
		var op *rdmacm.OpError
		if !errors.As(err, &op) {
			t.Errorf("%s: %v is not an *OpError", what, err)
		}
	}
	for _, ud := range []bool{false, true} {
		start := time.Now()
		c, err := rdmacm.Dial(timeout(t, 10*time.Second), noRoute, &rdmacm.Config{UD: ud})
		if c != nil {
			c.Close()
		}
		t.Logf("UD %v: %v", ud, err)
		check("Dial", err)
		if d := time.Since(start); d > time.Second {
			t.Errorf("Dial, UD %v, took %v to fail, want at once", ud, d)
		}
	}
	_, err := rdmacm.LookupUD(timeout(t, 10*time.Second), noRoute, nil)
	check("LookupUD", err)
}
