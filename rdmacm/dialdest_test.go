//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestDialNoListenerThere: a Dial or LookupUD to a multicast, the
// unspecified or the broadcast address, where no listener can be, fails
// at once with EINVAL, as net.Dial does for a multicast one. Before, a
// multicast destination waited out the whole timeout ("connecting:
// context deadline exceeded") and the others failed with ENODEV or
// ENETUNREACH from the resolution.
func TestDialNoListenerThere(t *testing.T) {
	n := device(t)
	for _, dst := range []string{"224.0.0.1:7471", "239.1.2.3:7471", "0.0.0.0:7471", "[::]:7471", "[ff02::1]:7471", "255.255.255.255:7471"} {
		for _, ud := range []bool{false, true} {
			start := time.Now()
			cfg := &rdmacm.Config{SrcAddr: n.IP.String(), UD: ud}
			c, err := rdmacm.Dial(timeout(t, 5*time.Second), dst, cfg)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "no listener can be") {
				t.Errorf("Dial(%s), UD %v: %v, want EINVAL saying no listener can be there", dst, ud, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Dial(%s), UD %v, took %v to fail, want at once", dst, ud, d)
			}
		}
		if _, err := rdmacm.LookupUD(timeout(t, 5*time.Second), dst, &rdmacm.Config{SrcAddr: n.IP.String()}); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("LookupUD(%s): %v, want EINVAL", dst, err)
		}
	}
}
