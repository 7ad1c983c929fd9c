//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestAllocNullMR: AllocNullMR (ibv_alloc_null_mr) on a device with null
// MRs gives one whose SGEs carry its lkey at address 0, which keeps its PD
// open (the PD's Close fails with EBUSY until it closes), closes twice
// without error and then panics in SGE; on a device without them,
// soft-RoCE among them, it fails with an error naming the verb that
// matches errors.ErrUnsupported, and the PD, which counts no child, closes.
// A closed PD gives ErrClosed.
func TestAllocNullMR(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	m, err := pd.AllocNullMR()
	if err != nil && (!errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "ibv_alloc_null_mr: ")) {
		t.Errorf("AllocNullMR() = %v, want nil or an error of ibv_alloc_null_mr matching errors.ErrUnsupported", err)
	}
	t.Logf("AllocNullMR on %s: %v", ctx.Name(), err)
	if err == nil {
		if m.PD() != pd || m.Raw() == nil {
			t.Errorf("null MR: PD %p, Raw %p; want %p and a pointer", m.PD(), m.Raw(), pd)
		}
		if s := m.SGE(100); s != (ibverbs.SGE{Length: 100, LKey: m.LKey()}) {
			t.Errorf("SGE(100) = %+v, want 100 bytes at 0 with lkey %#x", s, m.LKey())
		}
		if err := pd.Close(); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("PD Close with a null MR open = %v, want EBUSY", err)
		}
		closeOK(t, m)
		closeOK(t, m)
		if m.Raw() != nil || m.LKey() != 0 {
			t.Errorf("closed null MR: Raw %p, LKey %#x; want nil and 0", m.Raw(), m.LKey())
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("SGE of a closed null MR did not panic")
				}
			}()
			m.SGE(1)
		}()
	}
	closeOK(t, pd)
	if _, err := pd.AllocNullMR(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("AllocNullMR on a closed PD = %v, want ErrClosed", err)
	}
}
