//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestBufferCloseWhileRegistering: a Buffer's Close while a RegMR of it is
// under way (held by a hook just before it registers the memory) waits
// for the registration, then fails with EBUSY for the MR it made, whose
// memory is still mapped. (The old Close did not wait: it unmapped the
// buffer under the registration, which then failed with EFAULT, or made
// an MR over unmapped memory where it had pinned the pages first.)
func TestBufferCloseWhileRegistering(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd := newPD(t, ctx)
	buf := newBuffer(t, 4096)
	var once sync.Once
	inside, release := make(chan struct{}), make(chan struct{})
	restore := ibverbs.SetRegMRHook(func() {
		once.Do(func() {
			close(inside)
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		})
	})
	defer restore()

	type result struct {
		mr  *ibverbs.MR
		err error
	}
	reg := make(chan result, 1)
	go func() {
		mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
		reg <- result{mr, err}
	}()
	select {
	case <-inside:
	case r := <-reg:
		t.Fatalf("RegMR returned (%v) before its hook ran", r.err)
	}
	closed := make(chan error, 1)
	go func() { closed <- buf.Close() }()
	early := false
	select {
	case err := <-closed:
		early = true
		closed <- err
		t.Errorf("Buffer.Close returned (%v) while a RegMR of the buffer was under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-reg
	closeErr := <-closed
	switch {
	case r.err == nil && errors.Is(closeErr, syscall.EBUSY):
		r.mr.Bytes()[0] = 1 // mapped: a write to unmapped memory would crash the test
	case r.err == nil:
		t.Errorf("RegMR made an MR and Buffer.Close returned %v, want EBUSY: the MR is over unmapped memory", closeErr)
	default:
		t.Errorf("RegMR: %v; Buffer.Close: %v (before RegMR returned: %v); want an MR, and EBUSY", r.err, closeErr, early)
	}
	if r.mr != nil {
		closeOK(t, r.mr)
	}
	closeOK(t, buf)
	if _, err := pd.RegMR(buf, ibverbs.AccessLocalWrite); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("RegMR of a closed Buffer: %v, want ErrClosed", err)
	}
}
