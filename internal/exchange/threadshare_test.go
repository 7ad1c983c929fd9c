package exchange

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// threadsSpec is a write_bw of 8 MiB of registered memory a QP (64 KiB
// messages, 128 deep, one way), as a test of several threads asks for
// it, before a client shares its QPs out.
func threadsSpec(qps, threads uint16) TestSpec {
	return TestSpec{Test: WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64 << 10, Iterations: 1000,
		NumQPs: qps, TXDepth: 128, RXDepth: 128, CQModeration: 100, PostList: 1, MTU: ibverbs.MTU1024,
		Threads: threads, Group: 7}
}

// shareOut is spec's connections, as internal/bench's threadSpecs makes
// them: of its NumQPs QPs each thread takes NumQPs/Threads, the first
// NumQPs%Threads one more.
func shareOut(spec TestSpec) []TestSpec {
	n := int(spec.Threads)
	specs := make([]TestSpec, n)
	for i := range specs {
		s := spec
		s.NumQPs = spec.NumQPs / spec.Threads
		if i < int(spec.NumQPs%spec.Threads) {
			s.NumQPs++
		}
		s.Thread = uint16(i)
		specs[i] = s
	}
	return specs
}

// TestThreadShareLimits: a connection of a test of several threads is
// judged by the least test it can be part of, not its share times the
// threads. -q 63 --threads 5 shares 13, 13, 13, 12 and 12 QPs: every
// connection passes a server's 64 QPs, as does -q 64; they counted
// thread 0's 13 QPs five times, 65, and refused the test, though it
// needs 63. The same for the memory: every connection of a test whose
// memory is within the limit passes, whatever the shares.
func TestThreadShareLimits(t *testing.T) {
	lim := DefaultLimits() // 64 QPs
	for _, q := range []uint16{63, 64} {
		for _, s := range shareOut(threadsSpec(q, 5)) {
			if err := s.CheckLimits(lim); err != nil {
				t.Errorf("-q %d --threads 5, thread %d of %d QPs: %v", q, s.Thread, s.NumQPs, err)
			}
		}
	}
	// -q 65 --threads 5 shares 13 QPs to each: thread 0 can be part of
	// a test of 61 QPs (13, 12, 12, 12, 12), so it passes; only the
	// last thread's 13 means 65 at least.
	over := shareOut(threadsSpec(65, 5))
	if err := over[0].CheckLimits(lim); err != nil {
		t.Errorf("-q 65 --threads 5, thread 0: %v", err)
	}
	want := "a test of 5 threads of at least 65 QPs (thread 4 has 13) exceeds this server's maximum of 64 QPs"
	if err := over[4].CheckLimits(lim); !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Errorf("-q 65 --threads 5, thread 4: %v; want %q", err, want)
	}

	// Every connection of a test within the limits passes, QPs or
	// memory, whatever the shares; so none of a test over them may pass
	// where it tells the test is over (its least test is).
	const mib = 1 << 20
	for threads := uint16(2); threads <= 9; threads++ {
		for total := threads; total <= 70; total++ {
			specs := shareOut(threadsSpec(total, threads))
			for _, limit := range []uint16{total - 1, total, total + 1} {
				if limit < 1 {
					continue
				}
				qps := lim
				qps.MaxQPs = limit
				mem := lim
				mem.MaxQPs, mem.MaxMemory = 1024, uint64(limit)*8*mib
				for _, l := range []Limits{qps, mem} {
					for _, s := range specs {
						if err := s.CheckLimits(l); total <= limit && err != nil {
							t.Fatalf("-q %d --threads %d, limit %d: thread %d of %d QPs refused: %v", total, threads, limit, s.Thread, s.NumQPs, err)
						}
					}
				}
			}
		}
	}

	// The memory analogue of -q 63 and 65: 8 MiB a QP, 504 MiB the limit.
	mem := lim
	mem.MaxQPs, mem.MaxMemory = 1024, 63*8*mib
	for _, s := range shareOut(threadsSpec(63, 5)) {
		if err := s.CheckLimits(mem); err != nil {
			t.Errorf("63 QPs of 8 MiB in 504 MiB, thread %d: %v", s.Thread, err)
		}
	}
	if err := over[0].CheckLimits(mem); err != nil {
		t.Errorf("65 QPs of 8 MiB in 504 MiB, thread 0, 61 QPs at least: %v", err)
	}
	want = fmt.Sprintf("a test of 5 threads of at least 65 QPs (thread 4 has 13) needs at least 520 MiB of registered memory (size %d × depth 128 × 65 QPs), more than this server's maximum of 504 MiB", 64<<10)
	if err := over[4].CheckLimits(mem); !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Errorf("65 QPs of 8 MiB in 504 MiB, thread 4: %v; want %q", err, want)
	}
}
