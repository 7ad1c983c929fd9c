//go:build linux && cgo

package ibverbs

import (
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestSGELength: an SGE's length is 32 bits, so MR.SGE panics, as it
// does for a range outside the region, for a length of a region over
// 4 GiB that does not fit, rather than wrapping it (4 GiB + 16 to 16).
// The region is 5 GiB of address space that is never touched, with no
// device: the MR is made by hand.
func TestSGELength(t *testing.T) {
	const size = 5 << 30
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("no %d bytes of address space: %v", size, err)
	}
	defer syscall.Munmap(mem)
	const base = 1 << 40
	m := &MR{}
	m.st.Store(&mrState{b: mem, n: len(mem), addr: base, lkey: 7})
	if s := m.SGE(size-16, 16); s.Addr != base+size-16 || s.Length != 16 || s.LKey != 7 {
		t.Errorf("SGE of the region's last 16 bytes: %+v", s)
	}
	if s := m.SGE(1, math.MaxUint32); s.Length != math.MaxUint32 {
		t.Errorf("SGE of 4 GiB - 1 bytes: %+v", s)
	}
	for _, n := range []int{1 << 32, 1<<32 + 16} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "at most") {
					t.Errorf("SGE of %d bytes: panic %v, want one saying an SGE holds at most 4 GiB - 1", n, r)
				}
			}()
			s := m.SGE(0, n)
			t.Errorf("SGE of %d bytes: %+v, want a panic", n, s)
		}()
	}
}

// fakeMR is an MR made by registerFake, with its address and lkey at
// hand.
type fakeMR struct {
	*MR
	ptr  uint64
	lkey uint32
}

// registerFake enters an MR over buf, with lkey, in the live MRs of the
// nil PD, as regMR would, for tests of the inline check without a device.
func registerFake(buf []byte, lkey uint32) fakeMR {
	p := uint64(uintptr(unsafe.Pointer(&buf[0])))
	m := &MR{}
	m.st.Store(&mrState{b: buf, n: len(buf), lkey: lkey, ptr: p, addr: p})
	liveMRs.Lock()
	if liveMRs.m == nil {
		liveMRs.m = make(map[mrKey]*MR)
	}
	liveMRs.m[mrKey{nil, lkey}] = m
	liveMRs.Unlock()
	return fakeMR{m, p, lkey}
}

// unregisterFake takes m out of the live MRs, as Close would.
func unregisterFake(m fakeMR) {
	s := *m.st.Load()
	m.st.Store(&mrState{buf: s.buf, n: s.n})
	liveMRs.Lock()
	delete(liveMRs.m, mrKey{nil, m.lkey})
	liveMRs.Unlock()
}
