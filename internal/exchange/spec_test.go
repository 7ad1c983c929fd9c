package exchange

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

func TestParseTest(t *testing.T) {
	for tt := WriteBW; tt <= AtomicLat; tt++ {
		for _, s := range []string{tt.String(), "ib_" + tt.String()} {
			got, err := ParseTest(s)
			if err != nil || got != tt {
				t.Errorf("ParseTest(%q) = %v, %v; want %v", s, got, err, tt)
			}
		}
	}
	if _, err := ParseTest("write"); err == nil || !strings.Contains(err.Error(), "write_bw") {
		t.Errorf("ParseTest(write) error %v does not list the tests", err)
	}
	if s := Test(0).String(); s != "Test(0)" {
		t.Errorf("Test(0) = %s", s)
	}
	for _, a := range []AtomicOp{FetchAdd, CmpSwap} {
		if got, err := ParseAtomicOp(a.String()); err != nil || got != a {
			t.Errorf("ParseAtomicOp(%v) = %v, %v", a, got, err)
		}
	}
	if _, err := ParseAtomicOp("SWAP"); err == nil {
		t.Error("ParseAtomicOp(SWAP) succeeded")
	}
}

func TestValidate(t *testing.T) {
	ok := []struct {
		name string
		edit func(*TestSpec)
	}{
		{"write_bw", func(*TestSpec) {}},
		{"duration only", func(s *TestSpec) { s.Iterations, s.Duration = 0, 5 }},
		{"all sizes ignores size", func(s *TestSpec) { s.AllSizes, s.Size = true, 0 }},
		{"atomic", func(s *TestSpec) { s.Test, s.Size, s.Atomic = AtomicBW, 8, CmpSwap }},
		{"send UD", func(s *TestSpec) { s.Test, s.ConnType, s.Size = SendBW, ibverbs.QPTypeUD, 1024 }},
		{"send UD all sizes", func(s *TestSpec) {
			s.Test, s.ConnType, s.AllSizes = SendLat, ibverbs.QPTypeUD, true
			s.Bidirectional = false
		}},
		{"write UC", func(s *TestSpec) { s.ConnType = ibverbs.QPTypeUC }},
		{"read RC no RX depth", func(s *TestSpec) { s.Test, s.RXDepth, s.Bidirectional = ReadBW, 0, false }},
		{"infinitely", func(s *TestSpec) { s.RunInfinitely, s.Duration, s.ValidateData = true, 2, false }},
		{"MTU auto", func(s *TestSpec) { s.MTU = 0 }},
		{"events", func(s *TestSpec) { s.Events = true }},
		{"send_lat events", func(s *TestSpec) { s.Test, s.Bidirectional, s.Events = SendLat, false, true }},
		{"write_bw immediate", func(s *TestSpec) { s.Immediate = true }},
		{"post list of moderations", func(s *TestSpec) { s.PostList, s.CQModeration = 16, 4 }},
		{"margin", func(s *TestSpec) { s.Iterations, s.Duration, s.Margin = 0, 3, 1 }},
		{"read_bw warm-up", func(s *TestSpec) { s.Test, s.WarmUp, s.Bidirectional = ReadBW, true, false }},
		// --validate (testSpec's) checks every latency test, and atomics
		// but FETCH_AND_ADD bandwidth for a duration.
		{"validate write_lat", func(s *TestSpec) { s.Test, s.Bidirectional = WriteLat, false }},
		{"validate read_lat", func(s *TestSpec) { s.Test, s.Bidirectional = ReadLat, false }},
		{"validate send_lat", func(s *TestSpec) { s.Test, s.Bidirectional, s.SRQ = SendLat, false, true }},
		{"validate atomic_lat duration", func(s *TestSpec) {
			s.Test, s.Size, s.Bidirectional, s.Iterations, s.Duration = AtomicLat, 8, false, 0, 2
		}},
		{"validate atomic_lat CMP_AND_SWAP", func(s *TestSpec) { s.Test, s.Size, s.Bidirectional, s.Atomic = AtomicLat, 8, false, CmpSwap }},
		{"validate atomic_bw bidirectional", func(s *TestSpec) { s.Test, s.Size = AtomicBW, 8 }},
		{"validate atomic_bw CMP_AND_SWAP duration", func(s *TestSpec) {
			s.Test, s.Size, s.Atomic, s.Iterations, s.Duration = AtomicBW, 8, CmpSwap, 0, 2
		}},
		{"validate read_bw duration", func(s *TestSpec) { s.Test, s.Bidirectional, s.Iterations, s.Duration = ReadBW, false, 0, 2 }},
		{"send_bw MR per QP", func(s *TestSpec) { s.Test, s.MRPerQP = SendBW, true }},
		{"atomic_bw warm-up", func(s *TestSpec) { s.Test, s.Size, s.WarmUp = AtomicBW, 8, true }},
		{"write_lat immediate events", func(s *TestSpec) { s.Test, s.Bidirectional, s.Events, s.Immediate = WriteLat, false, true, true }},
		{"send UD immediate", func(s *TestSpec) { s.Test, s.ConnType, s.Size, s.Immediate = SendBW, ibverbs.QPTypeUD, 1024, true }},
		{"send_bw multicast", func(s *TestSpec) {
			s.Test, s.ConnType, s.Size, s.NumQPs, s.Bidirectional, s.Multicast = SendBW, ibverbs.QPTypeUD, 64, 1, false, true
		}},
		{"send_bw multicast rdma_cm", func(s *TestSpec) {
			s.Test, s.ConnType, s.Size, s.NumQPs, s.Bidirectional, s.RdmaCM, s.Multicast = SendBW, ibverbs.QPTypeUD, 64, 1, false, true, true
		}},
		{"send_lat multicast", func(s *TestSpec) {
			s.Test, s.ConnType, s.Size, s.NumQPs, s.Bidirectional, s.Multicast = SendLat, ibverbs.QPTypeUD, 64, 1, false, true
		}},
		{"threads", func(s *TestSpec) { s.Threads, s.Thread, s.Group = 4, 3, 7 }},
		{"send_bw threads", func(s *TestSpec) { s.Test, s.Threads, s.Group = SendBW, MaxThreads, 1 }},
		{"one thread", func(s *TestSpec) { s.Threads = 1 }},
		{"threads before their group", func(s *TestSpec) { s.Threads = 2 }},
	}
	for _, tc := range ok {
		s := testSpec()
		tc.edit(&s)
		if s.Test.IsLatency() {
			s.NumQPs = 1 // testSpec's 2 QPs are for the bandwidth tests
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	bad := []struct {
		name, want string
		edit       func(*TestSpec)
	}{
		{"zero", "unknown test 0", func(s *TestSpec) { *s = TestSpec{} }},
		{"unknown test", "unknown test 9", func(s *TestSpec) { s.Test = 9 }},
		{"conn type", "want RC, UC or UD", func(s *TestSpec) { s.ConnType = ibverbs.QPTypeRawPacket }},
		{"read UC", "read_bw takes RC, not UC", func(s *TestSpec) { s.Test, s.ConnType = ReadBW, ibverbs.QPTypeUC }},
		{"write UD", "write_bw takes RC or UC, not UD", func(s *TestSpec) { s.ConnType = ibverbs.QPTypeUD }},
		{"atomic op", "unknown atomic operation", func(s *TestSpec) { s.Atomic = 2 }},
		{"atomic size", "atomic_bw moves 8 bytes: -s must be 8 or left out, and -a has no sizes to sweep", func(s *TestSpec) { s.Test = AtomicBW }},
		{"size 0", "message size 0", func(s *TestSpec) { s.Size = 0 }},
		{"MTU", "MTU 6", func(s *TestSpec) { s.MTU = 6 }},
		{"UD over MTU", "at most the MTU, 1024 bytes", func(s *TestSpec) { s.Test, s.ConnType, s.Size = SendBW, ibverbs.QPTypeUD, 2048 }},
		{"no iterations", "neither iterations nor a duration", func(s *TestSpec) { s.Iterations = 0 }},
		{"too many iterations", "at most 281474976710655 messages in all", func(s *TestSpec) { s.Iterations, s.NumQPs = 1<<47, 2 }},
		{"lat one iteration", "send_lat of 1 iteration: a latency sample is the time from one post to the next, so at least 2", func(s *TestSpec) {
			s.Test, s.Bidirectional, s.NumQPs, s.Iterations, s.Duration = SendLat, false, 1, 1, 0
		}},
		{"lat bidirectional", "write_lat cannot be bidirectional", func(s *TestSpec) { s.Test = WriteLat }},
		{"lat QPs", "send_lat measures one message at a time, on one QP: 2 QPs (-q) are for the bandwidth tests", func(s *TestSpec) {
			s.Test, s.Bidirectional = SendLat, false
		}},
		{"read_lat QPs", "read_lat measures one message at a time, on one QP: 8 QPs", func(s *TestSpec) {
			s.Test, s.Bidirectional, s.NumQPs = ReadLat, false, 8
		}},
		{"write_lat events", "write_lat cannot wait on completion events", func(s *TestSpec) { s.Test, s.Bidirectional, s.Events = WriteLat, false, true }},
		{"lat infinitely", "cannot run infinitely", func(s *TestSpec) { s.Test, s.Bidirectional, s.RunInfinitely = SendLat, false, true }},
		{"infinitely no duration", "needs a duration", func(s *TestSpec) { s.RunInfinitely = true }},
		{"no QPs", "0 QPs", func(s *TestSpec) { s.NumQPs = 0 }},
		{"too many QPs", "1025 QPs", func(s *TestSpec) { s.NumQPs = MaxSetupQPs + 1 }},
		{"TX depth", "TX depth 0", func(s *TestSpec) { s.TXDepth, s.CQModeration, s.PostList = 0, 0, 0 }},
		{"RX depth", "RX depth 0 for send_bw", func(s *TestSpec) { s.Test, s.RXDepth = SendBW, 0 }},
		{"CQ moderation", "CQ moderation 200", func(s *TestSpec) { s.CQModeration = 200 }},
		{"post list", "post list 129", func(s *TestSpec) { s.PostList = 129 }},
		{"post list latency", "a post list is for the bandwidth tests, not send_lat", func(s *TestSpec) {
			s.Test, s.Bidirectional, s.TXDepth, s.CQModeration, s.PostList = SendLat, false, 4, 1, 4
		}},
		{"post list and moderation", "post list 4 must be a multiple of the CQ moderation 8", func(s *TestSpec) { s.PostList, s.CQModeration = 4, 8 }},
		{"receive post list write", "not write_bw without immediate data", func(s *TestSpec) { s.RecvPostList = 8 }},
		{"receive post list latency", "not send_lat", func(s *TestSpec) { s.Test, s.Bidirectional, s.RecvPostList = SendLat, false, 8 }},
		{"receive post list depth", "receive post list 600 exceeds the RX depth 512", func(s *TestSpec) { s.Test, s.RXDepth, s.RecvPostList = SendBW, 512, 600 }},
		{"inline", "inline size 4097", func(s *TestSpec) { s.Inline = MaxInline + 1 }},
		{"inline read", "read_lat cannot send inline", func(s *TestSpec) { s.Test, s.Bidirectional, s.Inline = ReadLat, false, 64 }},
		{"SL", "service level 16", func(s *TestSpec) { s.SL = 16 }},
		{"read immediate", "read_bw carries no immediate data", func(s *TestSpec) { s.Test, s.Immediate = ReadBW, true }},
		{"margin without duration", "this run has none", func(s *TestSpec) { s.Margin = 1 }},
		{"send warm-up", "not send_bw", func(s *TestSpec) { s.Test, s.WarmUp = SendBW, true }},
		{"multicast RC", "multicast is for the send tests over UD", func(s *TestSpec) { s.Test, s.NumQPs, s.Multicast = SendBW, 1, true }},
		{"multicast both ways", "(not bidirectional)", func(s *TestSpec) {
			s.Test, s.ConnType, s.Size, s.NumQPs, s.Bidirectional, s.Multicast = SendBW, ibverbs.QPTypeUD, 64, 1, true, true
		}},
		{"multicast QPs", "(not 2 QPs)", func(s *TestSpec) {
			s.Test, s.ConnType, s.Size, s.NumQPs, s.Bidirectional, s.Multicast = SendBW, ibverbs.QPTypeUD, 64, 2, false, true
		}},
		{"latency MR per QP", "read_lat runs on one QP", func(s *TestSpec) { s.Test, s.Bidirectional, s.MRPerQP = ReadLat, false, true }},
		{"write_lat warm-up", "not write_lat", func(s *TestSpec) { s.Test, s.Bidirectional, s.WarmUp = WriteLat, false, true }},
		{"immediate warm-up", "writes with immediate data", func(s *TestSpec) { s.Immediate, s.WarmUp = true, true }},
		{"validate infinitely", "a run that reports forever has none", func(s *TestSpec) { s.RunInfinitely, s.Duration = true, 2 }},
		{"validate read_bw bidirectional", "in a bidirectional read_bw each side's reads land in the region the peer reads", func(s *TestSpec) {
			s.Test = ReadBW
		}},
		{"validate FETCH_AND_ADD duration", "a run of fixed duration does not know it", func(s *TestSpec) {
			s.Test, s.Size, s.Iterations, s.Duration = AtomicBW, 8, 0, 2
		}},
		{"margin infinitely", "this run has none", func(s *TestSpec) { s.Duration, s.Margin, s.RunInfinitely = 10, 1, true }},
		{"margin too long", "leaves nothing of 4 s to measure", func(s *TestSpec) { s.Duration, s.Margin = 4, 2 }},
		{"atomic immediate", "atomic_lat carries no immediate data", func(s *TestSpec) {
			s.Test, s.Size, s.Bidirectional, s.Immediate = AtomicLat, 8, false, true
		}},
		{"write immediate RX depth", "RX depth 0 for write_bw", func(s *TestSpec) { s.RXDepth, s.Immediate = 0, true }},
		{"write immediate SRQ", "write_bw receives nothing", func(s *TestSpec) { s.SRQ, s.Immediate = true, true }},
		{"flags", "unknown option flags 0x4", func(s *TestSpec) { s.Flags = 4 }},
		{"thread of none", "connection 1 of group 0x0", func(s *TestSpec) { s.Thread = 1 }},
		{"group of one", "of group 0x5, in a test of one connection", func(s *TestSpec) { s.Threads, s.Group = 1, 5 }},
		{"too many threads", "257 threads: at most 256", func(s *TestSpec) { s.Threads, s.Group = MaxThreads+1, 1 }},
		{"thread out of range", "connection 2 of a test of 2 threads", func(s *TestSpec) { s.Threads, s.Thread, s.Group = 2, 2, 1 }},
		{"latency threads", "write_lat measures one message at a time", func(s *TestSpec) {
			s.Test, s.Bidirectional, s.Threads, s.Group = WriteLat, false, 2, 1
		}},
		{"multicast threads", "multicast runs on one QP", func(s *TestSpec) {
			s.Test, s.ConnType, s.Size, s.NumQPs, s.Bidirectional, s.Multicast = SendBW, ibverbs.QPTypeUD, 64, 1, false, true
			s.Threads, s.Group = 2, 1
		}},
	}
	for _, tc := range bad {
		s := testSpec()
		tc.edit(&s)
		err := s.Validate()
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v; want ErrInvalidSpec with %q", tc.name, err, tc.want)
		}
		if err2 := s.CheckLimits(DefaultLimits()); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: CheckLimits = %v, Validate %v", tc.name, err2, err)
		}
	}
}

func TestCheckLimits(t *testing.T) {
	if err := testSpec().CheckLimits(DefaultLimits()); err != nil {
		t.Fatalf("default spec refused: %v", err)
	}
	// perftest -a with its default TX depth of 128, bidirectional, 2 QPs.
	sweep := testSpec()
	sweep.AllSizes, sweep.NumQPs, sweep.TXDepth, sweep.RXDepth = true, 2, 128, 128
	if err := sweep.CheckLimits(DefaultLimits()); err != nil {
		t.Fatalf("-a sweep refused: %v", err)
	}
	if got := sweep.Memory(); got != 4<<30 {
		t.Fatalf("sweep Memory = %d, want 4 GiB", got)
	}

	// At depth 1 the buffer, two regions of the size and a GRH rounded
	// to 64 bytes, outweighs size × depth; pages round it up, and huge
	// pages to whole 2 MiB pages.
	small := testSpec()
	small.Size, small.TXDepth, small.NumQPs, small.Bidirectional = 4096, 1, 1, false
	page := uint64(os.Getpagesize())
	if got, want := small.Memory(), (2*4160+page-1)/page*page; got != want {
		t.Fatalf("Memory = %d, want %d", got, want)
	}
	if small.HugePages = true; small.Memory() != 2<<20 {
		t.Fatalf("Memory with huge pages = %d, want 2 MiB", small.Memory())
	}

	tib := testSpec() // 8 MiB × 8192 × 16 QPs = 1 TiB
	tib.Bidirectional, tib.Size, tib.TXDepth, tib.NumQPs = false, 8<<20, 8192, 16
	if got := tib.Memory(); got != 1<<40 {
		t.Fatalf("Memory = %d, want 1 TiB", got)
	}
	err := tib.CheckLimits(DefaultLimits())
	if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "1 TiB of registered memory") ||
		!strings.Contains(err.Error(), "maximum of 4 GiB") {
		t.Fatalf("1 TiB spec: %v", err)
	}
	t.Log(err)

	l := DefaultLimits()
	for _, tc := range []struct {
		name, want string
		edit       func(*TestSpec)
	}{
		{"size", "message size 16 MiB exceeds this server's maximum of 8 MiB", func(s *TestSpec) { s.Size = 16 << 20 }},
		{"QPs", "65 QPs exceed", func(s *TestSpec) { s.NumQPs = 65 }},
		{"depth", "queue depth 8193 exceeds", func(s *TestSpec) { s.RXDepth = 8193 }},
		{"latency iterations", "16777217 iterations of write_lat", func(s *TestSpec) {
			s.Test, s.Bidirectional, s.NumQPs, s.Iterations = WriteLat, false, 1, l.MaxIterations+1
		}},
		{"bidirectional doubles", "× 2 directions", func(s *TestSpec) { s.Size, s.TXDepth, s.NumQPs = 8<<20, 128, 3 }},
		{"threads' least QPs", "a test of 8 threads of at least 65 QPs (thread 0 has 9) exceeds this server's maximum of 64 QPs", func(s *TestSpec) {
			s.NumQPs, s.Threads, s.Group = 9, 8, 1 // 65 QPs: 9 on thread 0, 8 on the others
		}},
		{"threads' memory", "a test of 3 threads of 3 QPs (thread 0 has 1) needs 6 GiB of registered memory (size 8388608 × depth 128 × 3 QPs × 2 directions)", func(s *TestSpec) {
			s.Size, s.TXDepth, s.NumQPs, s.Threads, s.Group = 8<<20, 128, 1, 3, 1
		}},
	} {
		s := testSpec()
		tc.edit(&s)
		err := s.CheckLimits(l)
		if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckLimits = %v; want ErrOverLimit with %q", tc.name, err, tc.want)
		}
	}
	// A connection of a test of several threads names its group.
	s := testSpec()
	s.Threads = 2
	if err := s.CheckLimits(l); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "test of 2 threads without a group number") {
		t.Errorf("no group: CheckLimits = %v", err)
	}
	// Bandwidth tests count iterations; they keep no samples, and only
	// the messages' IDs bound them.
	s = testSpec()
	s.Iterations = MaxMessages / uint64(s.NumQPs)
	if err := s.CheckLimits(l); err != nil {
		t.Errorf("bandwidth iterations bounded: %v", err)
	}
	if err := testSpec().CheckLimits(Limits{}); !errors.Is(err, ErrOverLimit) {
		t.Errorf("zero Limits allowed a test: %v", err)
	}
}

// TestCheckLimitsDuration: a server's MaxDuration refuses a test whose
// run by the clock is longer, -D on each size of an -a sweep added up,
// and an infinite run, which has no end; 0 refuses none, and a test of
// so many iterations is not judged by it.
func TestCheckLimitsDuration(t *testing.T) {
	for _, tc := range []struct {
		name string
		most uint32
		edit func(*TestSpec)
		want string // "" for allowed
	}{
		{"no limit", 0, func(s *TestSpec) { s.Duration, s.RunInfinitely = 1, true }, ""},
		{"iterations", 5, func(s *TestSpec) { s.Iterations = 1 << 20 }, ""},
		{"within", 60, func(s *TestSpec) { s.Duration = 60 }, ""},
		{"over", 60, func(s *TestSpec) { s.Duration = 61 }, "-D 61 exceeds this server's maximum duration of 60 s"},
		{"infinite", 60, func(s *TestSpec) { s.Duration, s.RunInfinitely = 5, true },
			"a run without end (--run_infinitely) exceeds this server's maximum duration of 60 s"},
		{"sweep within", 46, func(s *TestSpec) { s.Duration, s.AllSizes = 2, true }, ""},
		{"sweep over", 45, func(s *TestSpec) { s.Duration, s.AllSizes = 2, true },
			"-D 2 on each of 23 sizes (-a), 46 s in all, exceeds this server's maximum duration of 45 s"},
		{"atomic", 5, func(s *TestSpec) {
			s.Test, s.Size, s.Bidirectional, s.Duration = AtomicBW, 8, false, 5
		}, ""},
	} {
		s := testSpec()
		s.Iterations, s.ValidateData = 0, false
		tc.edit(&s)
		l := DefaultLimits()
		l.MaxDuration = tc.most
		err := s.CheckLimits(l)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: CheckLimits = %v; want %q", tc.name, err, tc.want)
		}
	}
}

// engineBuffer is the buffer gorperf's engine maps for spec, as
// internal/bench's openSession makes it: per QP two regions of the
// largest message and a UD GRH (40 bytes), each rounded up to 64 bytes,
// whatever the depths or directions, in whole pages or huge pages.
func engineBuffer(spec TestSpec) uint64 {
	region := (uint64(spec.MaxSize()) + 40 + 63) &^ 63
	n := 2 * uint64(spec.NumQPs) * region
	page := uint64(os.Getpagesize())
	if spec.HugePages {
		page = 2 << 20
	}
	return (n + page - 1) / page * page
}

// TestMemoryCoversBuffer: Memory, which --max-memory bounds, is never
// less than the buffer the engine registers, at depth 1 (every latency
// test by default) as at any other, with huge pages, several QPs, both
// directions and the -a sweep.
func TestMemoryCoversBuffer(t *testing.T) {
	for _, test := range []Test{WriteBW, WriteLat, ReadBW, ReadLat, SendBW, SendLat, AtomicBW, AtomicLat} {
		for _, size := range []uint32{1, 2, 24, 64, 4096, 65536, 1 << 20} {
			for _, depth := range []uint32{1, 2, 16, 128} {
				for _, qps := range []uint16{1, 3, 64} {
					for _, opt := range []struct{ bidi, huge, all bool }{{}, {bidi: true}, {huge: true}, {all: true}} {
						s := TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: size, AllSizes: opt.all,
							TXDepth: depth, RXDepth: depth, NumQPs: qps, Bidirectional: opt.bidi && !test.IsLatency(), HugePages: opt.huge}
						if test.IsAtomic() {
							s.Size, s.AllSizes = 8, false
						}
						if got, want := s.Memory(), engineBuffer(s); got < want {
							t.Fatalf("%v size %d depth %d %d QPs %+v: Memory %d, the engine registers %d", test, s.Size, depth, qps, opt, got, want)
						}
						if s.BufferLen() != 2*uint64(qps)*s.RegionLen() || s.RegionLen()%64 != 0 || s.RegionLen() < uint64(s.MaxSize())+GRHLen {
							t.Fatalf("%v size %d: BufferLen %d, RegionLen %d", test, s.Size, s.BufferLen(), s.RegionLen())
						}
					}
				}
			}
		}
	}
	// A latency test of 1 MiB messages at depth 1 needs two regions of
	// just over 1 MiB: over a 2 MiB limit, though size × depth is 1 MiB.
	lat := TestSpec{Test: SendLat, ConnType: ibverbs.QPTypeRC, Size: 1 << 20, Iterations: 1000, NumQPs: 1, TXDepth: 1, RXDepth: 1}
	l := DefaultLimits()
	l.MaxMemory = 2 << 20
	if err := lat.CheckLimits(l); !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "2 regions of 1048640 bytes × 1 QPs") {
		t.Errorf("1 MiB send_lat under a 2 MiB limit: %v", err)
	}
}

func TestMemorySaturates(t *testing.T) {
	s := TestSpec{Test: WriteBW, Size: math.MaxUint32, TXDepth: math.MaxUint32, NumQPs: math.MaxUint16, Bidirectional: true}
	if got := s.Memory(); got != math.MaxUint64 {
		t.Errorf("Memory = %d, want saturation", got)
	}
	s.NumQPs = 1 // 2^64 - 2^33 + 1, doubled overflows
	if got := s.Memory(); got != math.MaxUint64 {
		t.Errorf("Memory = %d, want saturation", got)
	}
	if got := formatBytes(math.MaxUint64); !strings.Contains(got, "more than") {
		t.Errorf("formatBytes(max) = %s", got)
	}
}

func TestSizes(t *testing.T) {
	s := testSpec()
	if got := s.Sizes(); !slices.Equal(got, []uint32{65536}) {
		t.Errorf("Sizes = %v", got)
	}
	s.AllSizes = true
	got := s.Sizes()
	if len(got) != 23 || got[0] != 2 || got[22] != 1<<23 {
		t.Errorf("-a Sizes = %v", got)
	}
	s.Test, s.ConnType = SendBW, ibverbs.QPTypeUD
	if got := s.Sizes(); got[len(got)-1] != 1024 {
		t.Errorf("UD -a Sizes = %v, want up to the MTU", got)
	}
	s.Test = AtomicBW
	if got := s.Sizes(); !slices.Equal(got, []uint32{8}) {
		t.Errorf("atomic Sizes = %v", got)
	}
}

// TestRunInfinitelyOverridesAll: as perftest's --run_infinitely overrides
// -a, a test that runs infinitely runs Size alone, where it ran 2-byte
// messages, the sweep's first size, forever; with no Size it is refused.
func TestRunInfinitelyOverridesAll(t *testing.T) {
	s := testSpec()
	s.AllSizes, s.RunInfinitely, s.Duration, s.ValidateData = true, true, 5, false
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, m := s.Sizes(), s.MaxSize(); !slices.Equal(got, []uint32{65536}) || m != 65536 {
		t.Errorf("-a --run_infinitely: Sizes %v, MaxSize %d; want 65536 alone", got, m)
	}
	if s.BufferLen() != 2*uint64(s.NumQPs)*s.RegionLen() || s.RegionLen() < 65536 || s.RegionLen() >= 1<<23 {
		t.Errorf("-a --run_infinitely: region of %d bytes", s.RegionLen())
	}
	s.Size = 0
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "message size 0") {
		t.Errorf("-a --run_infinitely, size 0: %v", err)
	}
}

// flagsAt is the offset of the flags word in a TestSpec payload: after
// it come the threads, thread and group, then the flow labels.
const flagsAt = specLen - 18

// labelsAt is the offset of the flow labels' count.
const labelsAt = specLen - 2

// TestSpecHugePagesFlag: HugePages travels as bit 0 of the flags word,
// which an older server, knowing no flags, refuses as an unknown option.
func TestSpecHugePagesFlag(t *testing.T) {
	p := TestSpec{HugePages: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 1 {
		t.Fatalf("flags word %#x, want 0x1", got)
	}
	s, err := decodeSpec(p)
	if err != nil || !s.HugePages || s.Flags != 0 {
		t.Fatalf("decoded HugePages %v, unknown flags %#x, %v; want true, 0", s.HugePages, s.Flags, err)
	}
	binary.BigEndian.PutUint32(p[flagsAt:], 0x401)
	if s, _ := decodeSpec(p); !s.HugePages || s.SRQ || s.Reversed || s.Immediate || s.WarmUp || s.Multicast || s.InlineDefault || s.RXDepthDefault || s.Flags != 0x400 {
		t.Errorf("flags 0x401 decoded as HugePages %v, SRQ %v, Reversed %v, Immediate %v, WarmUp %v, Multicast %v, InlineDefault %v, RXDepthDefault %v, unknown %#x; want true, false, false, false, false, false, false, false, 0x400",
			s.HugePages, s.SRQ, s.Reversed, s.Immediate, s.WarmUp, s.Multicast, s.InlineDefault, s.RXDepthDefault, s.Flags)
	}
	p = TestSpec{RXDepthDefault: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 0x100 {
		t.Fatalf("RXDepthDefault's flags word %#x, want 0x100", got)
	}
	if s, err := decodeSpec(p); err != nil || !s.RXDepthDefault || s.InlineDefault || s.Flags != 0 {
		t.Errorf("RXDepthDefault decoded as %v, InlineDefault %v, unknown %#x, %v", s.RXDepthDefault, s.InlineDefault, s.Flags, err)
	}
	p = TestSpec{InlineDefault: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 0x80 {
		t.Fatalf("InlineDefault's flags word %#x, want 0x80", got)
	}
	if s, err := decodeSpec(p); err != nil || !s.InlineDefault || s.Multicast || s.Flags != 0 {
		t.Errorf("InlineDefault decoded as %v, Multicast %v, unknown %#x, %v", s.InlineDefault, s.Multicast, s.Flags, err)
	}
	if s, _ := decodeSpec(TestSpec{Multicast: true}.AppendPayload(nil)); !s.Multicast || s.MRPerQP || s.Flags != 0 {
		t.Errorf("Multicast decoded as %v, MRPerQP %v, unknown %#x", s.Multicast, s.MRPerQP, s.Flags)
	}
	if s, _ := decodeSpec(TestSpec{MRPerQP: true}.AppendPayload(nil)); !s.MRPerQP || s.WarmUp || s.Flags != 0 {
		t.Errorf("MRPerQP decoded as %v, WarmUp %v, unknown %#x", s.MRPerQP, s.WarmUp, s.Flags)
	}
	p = TestSpec{WarmUp: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 0x10 {
		t.Fatalf("WarmUp's flags word %#x, want 0x10", got)
	}
	if s, err := decodeSpec(p); err != nil || !s.WarmUp || s.Flags != 0 {
		t.Errorf("decoded WarmUp %v, unknown flags %#x, %v", s.WarmUp, s.Flags, err)
	}
}

// TestSpecImmediate: Immediate travels as bit 3 of the flags word, and
// makes the write tests post receives, which count in their memory.
func TestSpecImmediate(t *testing.T) {
	p := TestSpec{Immediate: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 8 {
		t.Fatalf("flags word %#x, want 0x8", got)
	}
	if s, err := decodeSpec(p); err != nil || !s.Immediate || s.Reversed || s.Flags != 0 {
		t.Fatalf("decoded Immediate %v, Reversed %v, unknown flags %#x, %v", s.Immediate, s.Reversed, s.Flags, err)
	}
	s := testSpec()
	s.Bidirectional, s.NumQPs, s.Size, s.TXDepth, s.RXDepth, s.CQModeration = false, 1, 1000, 10, 100, 1
	for _, c := range []struct {
		test     Test
		imm      bool
		receives bool
		memory   uint64
	}{
		{WriteBW, false, false, 10 * 1000},
		{WriteBW, true, true, 100 * 1000},
		{WriteLat, true, true, 100 * 1000},
		{SendBW, false, true, 100 * 1000},
		{SendLat, true, true, 100 * 1000},
		{ReadBW, false, false, 10 * 1000},
	} {
		s.Test, s.Immediate = c.test, c.imm
		page := uint64(os.Getpagesize()) // Memory counts whole pages
		c.memory = (c.memory + page - 1) / page * page
		if s.Receives() != c.receives || s.Memory() != c.memory {
			t.Errorf("%v, immediate %v: Receives %v, Memory %d; want %v, %d", c.test, c.imm, s.Receives(), s.Memory(), c.receives, c.memory)
		}
	}
}

// TestRelaxedOrdering: every test asks for PCIe relaxed ordering unless
// told not to, but write_lat never does, as ib_write_lat does not.
func TestRelaxedOrdering(t *testing.T) {
	for _, test := range []Test{WriteBW, WriteLat, ReadBW, ReadLat, SendBW, SendLat, AtomicBW, AtomicLat} {
		for _, off := range []bool{false, true} {
			s := testSpec()
			s.Test, s.NoRelaxedOrdering = test, off
			if want := !off && test != WriteLat; s.RelaxedOrdering() != want {
				t.Errorf("%v, NoRelaxedOrdering %v: RelaxedOrdering %v; want %v", test, off, s.RelaxedOrdering(), want)
			}
		}
	}
}

// TestSpecReversed: Reversed travels as bit 2 of the flags word, for a
// one-way bandwidth test only.
func TestSpecReversed(t *testing.T) {
	p := TestSpec{Reversed: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 4 {
		t.Fatalf("flags word %#x, want 0x4", got)
	}
	if s, err := decodeSpec(p); err != nil || !s.Reversed || s.SRQ || s.Flags != 0 {
		t.Fatalf("decoded Reversed %v, SRQ %v, unknown flags %#x, %v", s.Reversed, s.SRQ, s.Flags, err)
	}
	s := testSpec()
	s.Reversed, s.Bidirectional = true, false
	if err := s.Validate(); err != nil {
		t.Errorf("reversed write_bw: %v", err)
	}
	// The message names the test only where the test is the reason.
	for _, bad := range []struct {
		edit func(*TestSpec)
		want string
	}{
		{func(s *TestSpec) { s.Bidirectional = true }, "--reversed is for a one-way bandwidth test of fixed length, not a bidirectional or infinite one"},
		{func(s *TestSpec) { s.Test = ReadLat }, "--reversed is for a bandwidth test, not read_lat"},
		{func(s *TestSpec) { s.RunInfinitely, s.Duration = true, 5 }, "--reversed is for a one-way bandwidth test of fixed length, not a bidirectional or infinite one"},
	} {
		b := s
		bad.edit(&b)
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "write_bw") {
			t.Errorf("%+v: %v, want %q", b, err, bad.want)
		}
	}
}

// TestSpecSRQ: SRQ travels as bit 1 of the flags word, and only a send
// test may ask for it.
func TestSpecSRQ(t *testing.T) {
	p := TestSpec{SRQ: true}.AppendPayload(nil)
	if got := binary.BigEndian.Uint32(p[flagsAt:]); got != 2 {
		t.Fatalf("flags word %#x, want 0x2", got)
	}
	if s, err := decodeSpec(p); err != nil || !s.SRQ || s.HugePages || s.Flags != 0 {
		t.Fatalf("decoded SRQ %v, HugePages %v, unknown flags %#x, %v", s.SRQ, s.HugePages, s.Flags, err)
	}
	s := testSpec()
	s.SRQ, s.Bidirectional, s.NumQPs = true, false, 1
	for _, tc := range []struct {
		test Test
		ok   bool
	}{{SendBW, true}, {SendLat, true}, {WriteBW, false}, {ReadLat, false}, {AtomicBW, false}} {
		s.Test = tc.test
		if s.Test.IsAtomic() {
			s.Size = 8
		}
		err := s.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "shared receive queue is for the send tests")) {
			t.Errorf("%v with SRQ: %v", tc.test, err)
		}
	}
}

// TestSpecFlowLabels: the flow labels follow the flags word; the decoder takes exactly the count's labels, and Validate
// refuses labels over 20 bits and paths that rdma_cm resolves.
func TestSpecFlowLabels(t *testing.T) {
	s := testSpec()
	s.FlowLabels = []uint32{1, 0xabcde}
	p := s.AppendPayload(nil)
	if len(p) != specLen+8 || binary.BigEndian.Uint16(p[labelsAt:]) != 2 ||
		binary.BigEndian.Uint32(p[specLen+4:]) != 0xabcde {
		t.Fatalf("payload tail % x", p[flagsAt:])
	}
	got, err := decodeSpec(p)
	if err != nil || !slices.Equal(got.FlowLabels, s.FlowLabels) {
		t.Fatalf("decoded labels %#x, %v", got.FlowLabels, err)
	}
	for _, tc := range []struct {
		name string
		p    []byte
		want string
	}{
		{"label missing", p[:len(p)-4], "4 bytes for 2 flow labels, want 8"},
		{"label extra", append(slices.Clone(p), 0, 0, 0, 0), "12 bytes for 2 flow labels, want 8"},
		{"count over bound", binary.BigEndian.AppendUint16(slices.Clone(p[:labelsAt]), MaxSetupQPs+1), "1025 flow labels, more than 1024"},
	} {
		if _, err := decodeSpec(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for i, want := range []uint32{1, 0xabcde, 1, 0xabcde} {
		if fl := s.FlowLabel(i); fl != want {
			t.Errorf("FlowLabel(%d) = %#x, want %#x", i, fl, want)
		}
	}
	if fl := testSpec().FlowLabel(3); fl != 0 {
		t.Errorf("FlowLabel without labels = %#x", fl)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("valid labels: %v", err)
	}
	for _, tc := range []struct {
		name string
		bad  func(*TestSpec)
		want string
	}{
		{"21 bits", func(s *TestSpec) { s.FlowLabels = []uint32{MaxFlowLabel + 1} }, "flow label 0x100000 has more than 20 bits"},
		{"too many", func(s *TestSpec) { s.FlowLabels = make([]uint32, MaxSetupQPs+1) }, "1025 flow labels"},
		{"rdma_cm RC", func(s *TestSpec) { s.RdmaCM = true }, "rdma_cm resolves the path"},
	} {
		b := s
		tc.bad(&b)
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	ud := s
	ud.Test, ud.ConnType, ud.Size, ud.RdmaCM, ud.Bidirectional = SendBW, ibverbs.QPTypeUD, 1024, true, false
	if err := ud.Validate(); err != nil {
		t.Errorf("UD through rdma_cm makes its own address handles, with the labels: %v", err)
	}
}

// Every option of the flags word has its own known bit, and travels
// alone.
func TestSpecFlagOptions(t *testing.T) {
	var all uint32
	for i, f := range (&TestSpec{}).flagOptions() {
		if f.bit&all != 0 || f.bit&knownFlags != f.bit {
			t.Errorf("option %d: bit %#x taken or unknown", i, f.bit)
		}
		all |= f.bit
		var s TestSpec
		*s.flagOptions()[i].set = true
		p := s.AppendPayload(nil)
		if got := binary.BigEndian.Uint32(p[flagsAt:]); got != f.bit {
			t.Errorf("option %d alone: flags word %#x, want %#x", i, got, f.bit)
		}
		d, err := decodeSpec(p)
		if err != nil {
			t.Fatal(err)
		}
		for j, g := range d.flagOptions() {
			if *g.set != (i == j) {
				t.Errorf("option %d alone decodes with option %d %v", i, j, *g.set)
			}
		}
	}
	if all != knownFlags {
		t.Errorf("the options' bits %#x, knownFlags %#x", all, knownFlags)
	}
}

// TestFitRXDepth: a deep default RX depth comes down to the deepest that
// a server's limits and the receive CQ take, not below DefaultRXDepth or
// the receive post list; one asked for, or one that fits, stays.
func TestFitRXDepth(t *testing.T) {
	ud := func() TestSpec { // perftest's send_bw -c UD -s 64 -n 2000
		return TestSpec{Test: SendBW, ConnType: ibverbs.QPTypeUD, Size: 64, Iterations: 2000, NumQPs: 1,
			TXDepth: 128, RXDepth: 2000, CQModeration: 100, PostList: 1, RecvPostList: 1, RXDepthDefault: true}
	}
	lim := DefaultLimits()
	small := lim
	small.MaxMemory = 64 << 10 // 64 bytes × 1024: whole pages, where 1025 is not
	for _, tc := range []struct {
		name string
		edit func(*TestSpec, *Limits)
		want uint32
	}{
		{"fits", func(*TestSpec, *Limits) {}, 2000},
		{"memory", func(_ *TestSpec, l *Limits) { *l = small }, 1024},
		{"asked for", func(s *TestSpec, l *Limits) { *l, s.RXDepthDefault = small, false }, 2000},
		{"depth", func(_ *TestSpec, l *Limits) { l.MaxDepth = 1000 }, 1000},
		{"receive CQ", func(s *TestSpec, _ *Limits) { s.NumQPs, s.RXDepth = 8, 16000 }, MaxRecvCQ / 8},
		{"threads", func(s *TestSpec, l *Limits) { *l, s.Threads, s.Group = small, 2, 7 }, DefaultRXDepth}, // 64 × 512 × 2 threads
		{"nothing fits", func(_ *TestSpec, l *Limits) { *l = small; l.MaxMemory = 16 << 10 }, DefaultRXDepth},
		{"post list", func(s *TestSpec, l *Limits) { *l, s.RecvPostList = small, 1500 }, 1500},
		{"shallow", func(s *TestSpec, l *Limits) { *l, s.RXDepth = small, 400 }, 400},
	} {
		s, l := ud(), lim
		tc.edit(&s, &l)
		s.FitRXDepth(l)
		if s.RXDepth != tc.want {
			t.Errorf("%s: RX depth %d, want %d", tc.name, s.RXDepth, tc.want)
			continue
		}
		fitted := s.RXDepthDefault && s.RXDepth > max(DefaultRXDepth, s.RecvPostList)
		if fitted && s.CheckLimits(l) != nil {
			t.Errorf("%s: CheckLimits refuses the fitted depth %d: %v", tc.name, s.RXDepth, s.CheckLimits(l))
		}
		if s.RXDepth++; fitted && tc.want < 2000 && s.CheckLimits(l) == nil && uint64(s.RXDepth)*uint64(s.NumQPs) <= MaxRecvCQ {
			t.Errorf("%s: %d, one deeper, fits too", tc.name, s.RXDepth)
		}
	}
}
