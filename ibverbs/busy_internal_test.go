package ibverbs

import (
	"errors"
	"syscall"
	"testing"
)

// A Close refused for one dependant names it in the singular ("1 QPs
// using the CQ ..., close them first" before), for several in the
// plural, and either way matches EBUSY.
func TestBusyErrorNumber(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{1, "ibv_destroy_cq: 1 QP using the CQ still open, close it first: ibv_destroy_cq: device or resource busy"},
		{3, "ibv_destroy_cq: 3 QPs using the CQ still open, close them first: ibv_destroy_cq: device or resource busy"},
	} {
		err := busyError("ibv_destroy_cq", tc.n, "QP using the CQ", "QPs using the CQ")
		if err.Error() != tc.want || !errors.Is(err, syscall.EBUSY) {
			t.Errorf("busyError for %d: %v (EBUSY %v), want %q", tc.n, err, errors.Is(err, syscall.EBUSY), tc.want)
		}
	}
}
