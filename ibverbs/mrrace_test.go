//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestMRGettersBesideRereg runs the MR's getters, those a post uses, in
// two goroutines while a third changes the region's access back and forth
// (Rereg) and then closes it: under -race, no getter may race with either
// (Close's zeroing of the keys did, as Rereg's new keys would have). A
// provider that cannot re-register (soft-RoCE's on Linux 6.1) leaves only
// the Close to race with.
func TestMRGettersBesideRereg(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd := newPD(t, ctx)
	buf := newBuffer(t, 8192)
	mr, err := pd.RegMRRange(buf, 0, 4096, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg, going sync.WaitGroup
	going.Add(2)
	for range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if i == 100 {
					going.Done()
				}
				select {
				case <-stop:
					return
				default:
				}
				_, _, _, _ = mr.LKey(), mr.RKey(), mr.Addr(), mr.Len()
				_, _, _ = mr.Bytes(), mr.Buffer(), mr.Remote()
				func() {
					defer func() { _ = recover() }() // SGE panics once the MR is closed
					_ = mr.SGE(0, 64)
				}()
			}
		})
	}
	going.Wait()
	reregs := flipAccess(t, mr, 200, ibverbs.AccessLocalWrite, ibverbs.AccessRemoteWrite)
	t.Logf("%d changes of access made", reregs)
	closeOK(t, mr)
	close(stop)
	wg.Wait()
}

// flipAccess changes mr's access n times (Rereg), to base, then base
// with extra, in turn, and returns how many changes it made: none where
// the device cannot re-register (errors.ErrUnsupported).
func flipAccess(t *testing.T, mr *ibverbs.MR, n int, base, extra ibverbs.Access) int {
	t.Helper()
	for i := range n {
		a := base
		if i%2 == 1 {
			a |= extra
		}
		err := mr.Rereg(ibverbs.MRChange{Access: a, SetAccess: true})
		if errors.Is(err, errors.ErrUnsupported) {
			return i
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}
