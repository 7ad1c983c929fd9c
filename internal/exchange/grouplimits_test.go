package exchange

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestLeastTest: the least test a connection can be part of is the least
// of the totals whose share out gives its thread its share, and it is
// exact where that is the one total; found here by trying every total.
func TestLeastTest(t *testing.T) {
	for threads := uint16(2); threads <= 12; threads++ {
		for share := uint16(1); share <= 20; share++ {
			for thread := range threads {
				var least, most uint64
				// A share n is of a total of at most n×threads+threads-1.
				for total := threads; total < (share+1)*threads; total++ {
					s := shareOut(threadsSpec(total, threads))[thread]
					if s.NumQPs != share {
						continue
					}
					if least == 0 {
						least = uint64(total)
					}
					most = uint64(total)
				}
				s := threadsSpec(share, threads)
				s.Thread = thread
				qps, full, exact := s.leastTest()
				if qps != least || exact != (least == most) {
					t.Fatalf("thread %d of %d with %d QPs: least test %d QPs, exact %v; want %d, of %d to %d", thread, threads, share, qps, exact, least, least, most)
				}
				if got := shareOut(threadsSpec(uint16(least), threads)); int(got[full-1].NumQPs) != int(share) || full < int(threads) && got[full].NumQPs != share-1 {
					t.Fatalf("thread %d of %d with %d QPs: %d full threads of a test of %d: %+v", thread, threads, share, full, least, got)
				}
			}
		}
	}
	one := threadsSpec(5, 0)
	one.Group = 0
	if qps, full, exact := one.leastTest(); qps != 5 || full != 1 || !exact {
		t.Errorf("one connection: %d QPs, %d full, exact %v", qps, full, exact)
	}
}

// TestCheckGroupLimits: once a test's connections have all come, their
// QPs and memory together are judged: -q 65 --threads 5, whose thread 0
// passes alone, is refused as the 65 QPs it is; the sum refuses exactly
// the tests over the limits, and no connection of a test it takes is
// refused alone, whatever the memory a QP (here rounded up to pages,
// both ways or one).
func TestCheckGroupLimits(t *testing.T) {
	lim := DefaultLimits()
	if err := CheckGroupLimits(shareOut(threadsSpec(63, 5)), lim); err != nil {
		t.Errorf("-q 63 --threads 5: %v", err)
	}
	want := "a test of 5 threads of 65 QPs in all exceeds this server's maximum of 64 QPs"
	if err := CheckGroupLimits(shareOut(threadsSpec(65, 5)), lim); !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Errorf("-q 65 --threads 5: %v; want %q", err, want)
	}
	mem := lim
	mem.MaxQPs, mem.MaxMemory = 1024, 63*8<<20
	if err := CheckGroupLimits(shareOut(threadsSpec(63, 5)), mem); err != nil {
		t.Errorf("63 QPs of 8 MiB in 504 MiB: %v", err)
	}
	want = fmt.Sprintf("a test of 5 threads of 65 QPs in all needs 520 MiB of registered memory (thread 0 the most, 104 MiB: size %d × depth 128 × 13 QPs), more than this server's maximum of 504 MiB", 64<<10)
	if err := CheckGroupLimits(shareOut(threadsSpec(65, 5)), mem); !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Errorf("65 QPs of 8 MiB in 504 MiB: %v; want %q", err, want)
	}

	for _, size := range []uint32{100, 64 << 10} {
		for _, bidi := range []bool{false, true} {
			for threads := uint16(2); threads <= 9; threads++ {
				for total := threads; total <= 70; total++ {
					spec := threadsSpec(total, threads)
					spec.Size, spec.Bidirectional = size, bidi
					specs := shareOut(spec)
					need := groupMemory(specs)
					for _, l := range []Limits{
						{MaxMsgSize: size, MaxQPs: total - 1, MaxDepth: 128, MaxMemory: need},
						{MaxMsgSize: size, MaxQPs: total, MaxDepth: 128, MaxMemory: need},
						{MaxMsgSize: size, MaxQPs: total, MaxDepth: 128, MaxMemory: need - 1},
						{MaxMsgSize: size, MaxQPs: total + 1, MaxDepth: 128, MaxMemory: need + 4096},
					} {
						err := CheckGroupLimits(specs, l)
						if over := total > l.MaxQPs || need > l.MaxMemory; over != (err != nil) || over && !errors.Is(err, ErrOverLimit) {
							t.Fatalf("size %d, bidi %v, -q %d --threads %d, %+v: %v", size, bidi, total, threads, l, err)
						}
						if err != nil {
							continue
						}
						for _, s := range specs {
							if err := s.CheckLimits(l); err != nil {
								t.Fatalf("size %d, bidi %v, -q %d --threads %d, %+v: thread %d refused, the test taken: %v", size, bidi, total, threads, l, s.Thread, err)
							}
						}
					}
				}
			}
		}
	}
}

// udThreads is send_bw -c UC -s size with perftest's deep default RX depth,
// as a client asks for it with --threads, and a server may lower it.
func ucThreads(size uint32, qps, threads uint16) TestSpec {
	return TestSpec{Test: SendBW, ConnType: ibverbs.QPTypeUC, Size: size, Iterations: 20000, NumQPs: qps,
		TXDepth: 128, RXDepth: 8000, CQModeration: 100, PostList: 1, RecvPostList: 1, RXDepthDefault: true,
		MTU: ibverbs.MTU1024, Threads: threads, Group: 3}
}

// TestFitGroupRXDepth: connections fitted each to its part of the memory
// (FitRXDepth) fit together; where one with the larger share does not
// fit its part even at perftest's 512, and the others, fitted deeper,
// take what it needs, the depths come down together to what fits.
// -q 3 --threads 2 of 64 KiB messages in 100 MiB: thread 0's 2 QPs need
// 64 MiB at 512, more than its half; thread 1's one QP fits its half at
// 800, and the two, 114 MiB, were over, where at 512 and 576 they fit.
func TestFitGroupRXDepth(t *testing.T) {
	l := DefaultLimits()
	l.MaxMemory = 100 << 20
	specs := shareOut(ucThreads(64<<10, 3, 2))
	for k := range specs {
		specs[k].FitRXDepth(l)
		if err := specs[k].CheckLimits(l); err != nil {
			t.Errorf("thread %d at RX depth %d: %v", k, specs[k].RXDepth, err)
		}
	}
	if specs[0].RXDepth != 512 || specs[1].RXDepth != 800 {
		t.Fatalf("fitted each on its own: RX depths %d and %d; want 512 and 800", specs[0].RXDepth, specs[1].RXDepth)
	}
	if err := CheckGroupLimits(specs, l); !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "needs 114 MiB") {
		t.Fatalf("before FitGroupRXDepth: %v; want 114 MiB refused", err)
	}
	FitGroupRXDepth(specs, l)
	if specs[0].RXDepth != 512 || specs[1].RXDepth != 576 {
		t.Errorf("fitted together: RX depths %d and %d; want 512 and 576", specs[0].RXDepth, specs[1].RXDepth)
	}
	if err := CheckGroupLimits(specs, l); err != nil {
		t.Errorf("fitted together: %v", err)
	}
	asked := shareOut(ucThreads(64<<10, 3, 2))
	asked[0].RXDepthDefault, asked[1].RXDepthDefault = false, false
	FitGroupRXDepth(asked, l)
	if asked[0].RXDepth != 8000 || asked[1].RXDepth != 8000 {
		t.Errorf("depths asked for lowered: %d and %d", asked[0].RXDepth, asked[1].RXDepth)
	}
}

// TestThreadsFitAndLimits: a server's whole course for a test of several
// threads, each connection fitted (FitRXDepth) and judged (CheckLimits)
// as it asks, then all fitted (FitGroupRXDepth) and judged together
// (CheckGroupLimits), takes exactly the tests whose memory, at the depths
// a server may lower the default to, is within the limit. A connection
// fitted alone is refused alone only where no depth it could be lowered
// to would pass.
func TestThreadsFitAndLimits(t *testing.T) {
	for _, size := range []uint32{100, 4096, 64 << 10} {
		for _, threads := range []uint16{2, 3, 5, 7} {
			for _, total := range []uint16{threads, threads + 1, 2*threads - 1, 13, 63} {
				if total < threads {
					continue
				}
				least := shareOut(ucThreads(size, total, threads))
				for k := range least {
					least[k].RXDepth = DefaultRXDepth
				}
				floor := groupMemory(least)
				for _, memory := range []uint64{floor - 1, floor, floor + floor/7, 3 * floor, 50 * floor} {
					l := DefaultLimits()
					l.MaxMemory = memory
					specs := shareOut(ucThreads(size, total, threads))
					var refused error
					for k := range specs {
						specs[k].FitRXDepth(l)
						err := specs[k].CheckLimits(l)
						lowest := specs[k]
						lowest.RXDepth = DefaultRXDepth
						if err != nil && lowest.CheckLimits(l) == nil {
							t.Fatalf("size %d, -q %d --threads %d, %d bytes: thread %d refused at RX depth %d, not at %d: %v", size, total, threads, memory, k, specs[k].RXDepth, DefaultRXDepth, err)
						}
						if refused == nil {
							refused = err
						}
					}
					if refused == nil {
						FitGroupRXDepth(specs, l)
						refused = CheckGroupLimits(specs, l)
					}
					if fits := floor <= memory; fits != (refused == nil) {
						t.Fatalf("size %d, -q %d --threads %d, %d bytes, %d at RX depth 512: %v", size, total, threads, memory, floor, refused)
					}
					if refused != nil {
						continue
					}
					for _, s := range specs {
						if s.RXDepth < DefaultRXDepth || s.RXDepth > 8000 || uint64(s.RXDepth)*uint64(s.NumQPs) > MaxRecvCQ || s.CheckLimits(l) != nil {
							t.Fatalf("size %d, -q %d --threads %d, %d bytes: thread %d at RX depth %d: %v", size, total, threads, memory, s.Thread, s.RXDepth, s.CheckLimits(l))
						}
					}
				}
			}
		}
	}
}
