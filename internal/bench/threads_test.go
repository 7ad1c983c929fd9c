//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"net"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestThreadSpecs: the QPs are shared out with the first threads taking
// the remainder, each connection's flow labels continue where the one
// before stopped, and fewer QPs than threads is refused.
func TestThreadSpecs(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100, TXDepth: 16,
		NumQPs: 5, Threads: 3, FlowLabels: []uint32{10, 20, 30, 40}}
	specs, err := threadSpecs(spec, 77)
	if err != nil {
		t.Fatal(err)
	}
	wantQPs := []uint16{2, 2, 1}
	wantLabels := [][]uint32{{10, 20, 30, 40}, {30, 40, 10, 20}, {10, 20, 30, 40}}
	for i, s := range specs {
		if s.NumQPs != wantQPs[i] || s.Thread != uint16(i) || s.Threads != 3 || s.Group != 77 {
			t.Errorf("connection %d: %d QPs, thread %d of %d, group %d; want %d QPs, thread %d of 3, group 77",
				i, s.NumQPs, s.Thread, s.Threads, s.Group, wantQPs[i], i)
		}
		if !slices.Equal(s.FlowLabels, wantLabels[i]) {
			t.Errorf("connection %d: flow labels %v, want %v", i, s.FlowLabels, wantLabels[i])
		}
		if err := s.CheckLimits(exchange.DefaultLimits()); err != nil {
			t.Errorf("connection %d refused: %v", i, err)
		}
	}
	spec.NumQPs = 2
	if _, err := threadSpecs(spec, 1); err == nil || !strings.Contains(err.Error(), "3 threads need at least 3 QPs") {
		t.Errorf("2 QPs for 3 threads: %v", err)
	}
}

// TestThreadGroupWait: no thread passes a round of the barrier before
// every running thread has reached it, and a thread that leaves, even
// while the others wait, holds none of them up.
func TestThreadGroupWait(t *testing.T) {
	const n, rounds = 4, 50
	g := newThreadGroup(n)
	var arrived [rounds]atomic.Int32
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range n {
		wg.Go(func() {
			defer g.leave()
			last := rounds
			if i == n-1 {
				last = rounds / 2 // this one fails halfway
			}
			for r := range last {
				arrived[r].Add(1)
				g.wait()
				if want := int32(n); r < rounds/2 && arrived[r].Load() != want {
					bad.Add(1)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the barrier held the threads after one left")
	}
	if bad.Load() != 0 {
		t.Errorf("%d passes of the barrier before every thread arrived", bad.Load())
	}
}

// TestThreadCallbacks: the progress and interval callbacks carry the sum
// of every thread's latest report, once, from thread 0; the rate limit
// is shared out and the rdma_cm ports are the threads' own.
func TestThreadCallbacks(t *testing.T) {
	g := newThreadGroup(3)
	var progress [][2]uint64
	var intervals []uint64
	var times []time.Duration
	l := Local{CMPort: 5000, Rate: RateLimit{Rate: 30}, Counters: []string{"all"}, CPUUtil: true,
		Progress: func(_ int, done, total uint64) { progress = append(progress, [2]uint64{done, total}) },
		Interval: func(_ time.Duration, b stats.Bandwidth) {
			intervals, times = append(intervals, b.Iterations), append(times, b.Elapsed)
		}}
	ls := []Local{g.threadLocal(l, 0), g.threadLocal(l, 1), g.threadLocal(l, 2)}
	for i, tl := range ls {
		if tl.CMPort != 5000+i || tl.Rate.Rate != 10 || (tl.CPUUtil || tl.Counters != nil) != (i == 0) {
			t.Errorf("thread %d: rdma_cm port %d, rate %v, CPU %v, counters %v", i, tl.CMPort, tl.Rate.Rate, tl.CPUUtil, tl.Counters)
		}
	}
	ls[1].Progress(64, 10, 100)
	ls[2].Progress(64, 20, 100)
	ls[0].Progress(64, 5, 100)
	// Interval k is reported once every thread has reported its k-th,
	// whichever comes last, over the longest of their times.
	for _, r := range []struct {
		thread, msgs int
		ms           time.Duration
	}{{1, 7, 1001}, {0, 1, 1003}, {1, 70, 1000}, {2, 100, 1002}, {0, 10, 1000}, {2, 1000, 1004}} {
		ls[r.thread].Interval(time.Second, stats.Bandwidth{Bytes: 64, Iterations: uint64(r.msgs), Elapsed: r.ms * time.Millisecond})
	}
	if !slices.Equal(progress, [][2]uint64{{35, 300}}) || !slices.Equal(intervals, []uint64{108, 1080}) ||
		!slices.Equal(times, []time.Duration{1003 * time.Millisecond, 1004 * time.Millisecond}) {
		t.Errorf("progress %v, intervals %v over %v; want [[35 300]], [108 1080] over [1.003s 1.004s]", progress, intervals, times)
	}
	var headers []report.Header
	for i := range 3 {
		g.header(i, threadCPUs(3, []int{4, 5}), func(h report.Header) { headers = append(headers, h) })(
			report.Header{NumQPs: i + 1, Local: make([]report.Endpoint, i+1)})
	}
	if len(headers) != 1 || headers[0].NumQPs != 6 || len(headers[0].Local) != 6 ||
		headers[0].Threads != 3 || !slices.Equal(headers[0].ThreadCPUs, []int{4, 5, 4}) {
		t.Errorf("headers %+v; want one, of 6 QPs and 3 threads on CPUs 4,5,4", headers)
	}
}

// TestCombine: a side's result is its threads' messages over the longest
// thread's time, with the sum of their peaks, in a bidirectional test
// each direction's so and the two added as one thread's are (bothWays):
// this side's messages, both rates; thread 0's CPU time counts every
// message, both ways; the error is the thread's that failed, not the
// others' that stopped for it.
func TestCombine(t *testing.T) {
	bw := func(iters uint64, el time.Duration, peak time.Duration) stats.Bandwidth {
		return stats.ComputeBandwidth(1000, iters, el, peak)
	}
	size := func(b stats.Bandwidth, bidir bool) SizeResult {
		s := SizeResult{Size: 1000, BW: b}
		if bidir {
			l, r := b, b
			s.Local, s.Remote, s.BW = &l, &r, bothWays(l, r)
		}
		return s
	}
	cpu := &stats.CPU{User: time.Second, Messages: 100}
	r0 := &Result{Role: "client", Header: report.Header{NumQPs: 2, Local: make([]report.Endpoint, 2)},
		Sizes: []SizeResult{size(bw(100, time.Second, 5*time.Millisecond), true)}}
	r0.Sizes[0].CPU = cpu
	r1 := &Result{Role: "client", Header: report.Header{NumQPs: 1, Local: make([]report.Endpoint, 1)}, Mismatches: 1,
		Sizes: []SizeResult{size(bw(300, 2*time.Second, 5*time.Millisecond), true)}}
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	r0.Start, r1.Start = t0.Add(time.Millisecond), t0 // the first to begin is the test's start
	spec := exchange.TestSpec{Threads: 2, Thread: 1, Group: 9, NumQPs: 3}
	out, err := combine(context.Background(), spec, []*Result{r0, r1}, []error{nil, nil}, []int{3, 7})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Sizes[0]
	if s.BW.Iterations != 400 || s.BW.Elapsed != 2*time.Second || s.BW.MsgRateMpps != 0.0004 {
		t.Errorf("sum: %d messages in %v, %g Mpps; want 400 in 2s, 0.0004 both ways", s.BW.Iterations, s.BW.Elapsed, s.BW.MsgRateMpps)
	}
	if peak := 2 * 2 * 1000 / 0.005 / stats.BytesPerMB; s.BW.PeakMBps != peak {
		t.Errorf("peak %g MB/s, want the two threads' both ways, %g", s.BW.PeakMBps, peak)
	}
	if s.Local == nil || s.Local.Iterations != 400 || s.Remote.Iterations != 400 || s.Local.MsgRateMpps != 0.0002 {
		t.Errorf("each direction: %+v, %+v; want 400 messages, 0.0002 Mpps", s.Local, s.Remote)
	}
	if s.CPU.Messages != 800 || cpu.Messages != 100 {
		t.Errorf("CPU time over %d messages (thread 0's own: %d); want 800 (100)", s.CPU.Messages, cpu.Messages)
	}
	if out.Header.NumQPs != 3 || len(out.Header.Local) != 3 || out.Header.Threads != 2 || out.Mismatches != 1 ||
		out.Spec.Thread != 0 || out.Spec.Group != 0 || out.Spec.NumQPs != 3 {
		t.Errorf("header %d QPs, %d endpoints, %d threads; %d mismatches; spec %+v", out.Header.NumQPs,
			len(out.Header.Local), out.Header.Threads, out.Mismatches, out.Spec)
	}
	if !out.Start.Equal(t0) {
		t.Errorf("start %v, want the first thread's to begin, %v", out.Start, t0)
	}
	if len(out.Threads) != 2 || out.Threads[1].CPU != 7 || out.Threads[1].QPs != 1 || out.Threads[1].Sizes[0].Iterations != 300 {
		t.Errorf("threads %+v", out.Threads)
	}

	boom := errors.New("the peer failed: boom")
	r1.Sizes = nil // it failed before its first size ended
	out, err = combine(context.Background(), spec, []*Result{r0, r1, nil}, []error{context.Canceled, boom, context.Canceled}, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "thread 1 of 3") {
		t.Errorf("error %v, want thread 1's", err)
	}
	if len(out.Sizes) != 0 || out.Threads[0].CPU != -1 || out.Threads[2].Err != context.Canceled {
		t.Errorf("after a failure: %d sizes, threads %+v", len(out.Sizes), out.Threads)
	}
}

// TestThreadSizeDone: SizeDone gets each size's sum of the threads, once,
// as soon as every thread has ended the size, whichever ends it last,
// and the same as the side's result has (combine): a bidirectional
// test's with thread 0's CPU time. A thread that fails holds back the
// sizes it did not end, which the result leaves out too.
func TestThreadSizeDone(t *testing.T) {
	size := func(bytes int, iters uint64, el time.Duration, cpu bool) SizeResult {
		l := stats.ComputeBandwidth(bytes, iters, el, el/100)
		r := stats.ComputeBandwidth(bytes, iters/2, el, el/50)
		s := SizeResult{Size: bytes, Local: &l, Remote: &r, BW: bothWays(l, r)}
		if cpu {
			s.CPU = &stats.CPU{User: el / 2, Wall: el, Messages: iters}
		}
		return s
	}
	results := func(n int) []*Result {
		rs := make([]*Result, 3)
		for i := range rs {
			rs[i] = &Result{Role: "client"}
			for k := range n {
				rs[i].Sizes = append(rs[i].Sizes, size(2<<k, uint64(100*(i+1)*(k+1)), time.Duration(i+k+1)*time.Millisecond, i == 0))
			}
		}
		return rs
	}
	spec := exchange.TestSpec{Test: exchange.SendBW, Bidirectional: true, Threads: 3, NumQPs: 3}
	for _, tc := range []struct {
		name  string
		order [][2]int // thread, size: the order they end in
		ends  []int    // how many sizes the side has reported after each
		fail  int      // the sizes thread 2 ends before it fails; -1 none
	}{
		{"all end", [][2]int{{1, 0}, {0, 0}, {0, 1}, {2, 0}, {1, 1}, {2, 1}}, []int{0, 0, 0, 1, 1, 2}, -1},
		{"thread 2 fails", [][2]int{{2, 0}, {0, 0}, {0, 1}, {1, 0}, {1, 1}}, []int{0, 0, 0, 1, 1}, 1},
	} {
		g := newThreadGroup(3)
		var got []SizeResult
		l := Local{SizeDone: func(s SizeResult) { got = append(got, s) }}
		ls := []Local{g.threadLocal(l, 0), g.threadLocal(l, 1), g.threadLocal(l, 2)}
		rs := results(2)
		for j, e := range tc.order {
			ls[e[0]].SizeDone(rs[e[0]].Sizes[e[1]])
			if len(got) != tc.ends[j] {
				t.Errorf("%s: after thread %d's size %d, %d sizes reported, want %d", tc.name, e[0], e[1], len(got), tc.ends[j])
			}
		}
		errs := []error{nil, nil, nil}
		if tc.fail >= 0 {
			rs[2].Sizes = rs[2].Sizes[:tc.fail]
			errs[2] = errors.New("boom")
		}
		out, _ := combine(context.Background(), spec, rs, errs, nil)
		if !reflect.DeepEqual(got, out.Sizes) {
			t.Errorf("%s: reported\n%+v\nthe result has\n%+v", tc.name, got, out.Sizes)
		}
		if len(got) > 0 && (got[0].CPU == nil || got[0].CPU.Messages != got[0].messages()) {
			t.Errorf("%s: CPU %+v, want thread 0's over the sum's %d messages", tc.name, got[0].CPU, got[0].messages())
		}
	}
}

// TestReserveProcs: tests of several threads running at once (both sides
// of a loopback test) get a P each and one spare, and GOMAXPROCS returns
// to what it was when the last ends.
func TestReserveProcs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set: gorperf leaves it")
	}
	before := runtime.GOMAXPROCS(0)
	client := reserveProcs(before + 2)
	server := reserveProcs(3)
	if got, want := runtime.GOMAXPROCS(0), before+2+3+1; got != want {
		t.Errorf("GOMAXPROCS %d with %d loops, want %d", got, before+5, want)
	}
	client()
	if got := runtime.GOMAXPROCS(0); got != before+2+3+1 {
		t.Errorf("GOMAXPROCS %d while loops still run, want it kept", got)
	}
	server()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after the loops, want %d back", got, before)
	}
}

// TestMapOneThread: --mmap, one buffer, is refused for a test of several
// threads, each of which has its own, on the client before it connects
// and on the server, which tells the client why.
func TestMapOneThread(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.AtomicBW, Size: 8, NumQPs: 2, Threads: 2, Group: 5}
	l := Local{MapFile: "/dev/shm/x"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := clientThreads(ctx, "127.0.0.1:1", spec, l, nil); err == nil || !strings.Contains(err.Error(), "--mmap /dev/shm/x") {
		t.Errorf("client: %v; want --mmap refused", err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	got := make(chan error, 1)
	go func() {
		_, err := exchange.NewConn(b).Recv(ctx)
		got <- err
	}()
	if _, err := serveThreads(ctx, asked{exchange.NewConn(a), spec}, nil, l, Limits{}, nil); err == nil || !strings.Contains(err.Error(), "--mmap") {
		t.Errorf("server: %v; want --mmap refused", err)
	}
	var pe *exchange.PeerError
	if err := <-got; !errors.As(err, &pe) || !strings.Contains(pe.Text, "--mmap") {
		t.Errorf("the client was told %v; want why", err)
	}
}
