//go:build linux && cgo

package ibverbs_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// closeTwiceAtOnce calls c.Close from two goroutines at once and fails t
// unless both return nil.
func closeTwiceAtOnce(t *testing.T, round int, c closer) {
	t.Helper()
	var wg sync.WaitGroup
	var errs [2]error
	var start sync.WaitGroup
	start.Add(1)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			errs[i] = c.Close()
		}()
	}
	start.Done()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("round %d: Close %T %d of 2 at once: %v", round, c, i+1, err)
		}
	}
}

// TestCloseMRAHMWTwiceAtOnce closes each MR, AH and MW from two goroutines
// at once, round after round: one Close must destroy it and the other
// return nil, and the PD, whose count of children each Close lowers, must
// then close. Before MR, AH and MW Close took a lock, both Closes
// handed the verb the same pointer: ibv_dereg_mr crashed the process
// (SIGSEGV), and the AH's second destroy failed (EBUSY, ENOENT).
func TestCloseMRAHMWTwiceAtOnce(t *testing.T) {
	e := newSRQEnv(t)
	dst := newSide(t, e.ctx, e.pd, pairOpts{typ: ibverbs.QPTypeUD}, nil, e.port, e.gid)
	pd := newPD(t, e.ctx)
	buf := newBuffer(t, 4096)
	closeRounds(t, 2000, 5*time.Second, func(i int) {
		mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		closeTwiceAtOnce(t, i, mr)
		if mr.LKey() != 0 {
			t.Errorf("round %d: a closed MR's LKey is %#x", i, mr.LKey())
		}
		ah, err := pd.CreateAHTo(dst.ep, e.port, e.gid)
		if err != nil {
			t.Fatal(err)
		}
		closeTwiceAtOnce(t, i, ah)
	})
	mw, err := pd.AllocMW(ibverbs.MWType1)
	if err != nil {
		rdmatest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	closeTwiceAtOnce(t, 0, mw)
	closeRounds(t, 2000, 3*time.Second, func(i int) {
		mw, err := pd.AllocMW(ibverbs.MWType1 + ibverbs.MWType(i%2))
		if err != nil {
			t.Fatal(err)
		}
		closeTwiceAtOnce(t, i, mw)
	})
	if err := pd.Close(); err != nil {
		t.Errorf("closing the PD after its MRs, AHs and MWs: %v", err)
	}
}
