package ibverbs_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// ErrClosed says that the object is closed, without os.ErrClosed's "file
// already closed", and matches os.ErrClosed and net.ErrClosed, through
// wrapping too, as rdmacm.ErrClosed does.
func TestErrClosed(t *testing.T) {
	if s := ibverbs.ErrClosed.Error(); s != "ibverbs: object is closed" {
		t.Errorf("ErrClosed says %q", s)
	}
	for _, err := range []error{ibverbs.ErrClosed, fmt.Errorf("poll: %w", ibverbs.ErrClosed)} {
		for _, target := range []error{ibverbs.ErrClosed, os.ErrClosed, net.ErrClosed} {
			if !errors.Is(err, target) {
				t.Errorf("errors.Is(%v, %v) = false", err, target)
			}
		}
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v matches unrelated errors", err)
		}
	}
}
