//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// Once an MR is closed, its keys are the device's to give again, so
// nothing a program builds from the Go MR names them: LKey, RKey and Addr
// are 0, Remote is the zero RemoteMR, which does not encode (a stale key
// never reaches a peer), and SGE panics. Len goes on answering.
func TestMRCloseForgetsKeys(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd := newPD(t, ctx)
	buf := newBuffer(t, 4096)
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	if mr.Addr() == 0 || mr.SGE(0, 64).LKey != mr.LKey() {
		t.Fatalf("an open MR: Addr %#x, SGE %+v, LKey %#x", mr.Addr(), mr.SGE(0, 64), mr.LKey())
	}
	lkey, rkey := mr.LKey(), mr.RKey()
	closeOK(t, mr)
	if mr.LKey() != 0 || mr.RKey() != 0 || mr.Addr() != 0 {
		t.Errorf("a closed MR (lkey was %#x, rkey %#x): LKey %#x, RKey %#x, Addr %#x; want 0s",
			lkey, rkey, mr.LKey(), mr.RKey(), mr.Addr())
	}
	if mr.Len() != 4096 {
		t.Errorf("Len of a closed MR: %d, want 4096", mr.Len())
	}
	if r := mr.Remote(); r != (ibverbs.RemoteMR{}) {
		t.Errorf("Remote of a closed MR: %+v, want the zero RemoteMR", r)
	}
	if b, err := mr.Remote().AppendBinary(nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a closed MR's Remote encodes to %x, %v; want EINVAL", b, err)
	}
	mustPanic(t, "SGE of a closed MR", func() { _ = mr.SGE(0, 64) })
	mustPanic(t, "SGE of no bytes of a closed MR", func() { _ = mr.SGE(0, 0) })
	closeOK(t, mr)
}
