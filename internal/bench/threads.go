//go:build linux && cgo

package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorperf/gorperf/internal/affinity"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// A test of several threads (TestSpec.Threads, gorperf's --threads) is
// that many connections between the two sides, each a whole test of its
// share of the QPs, with its own control connection, device context,
// CQs, buffer and loop, and its own OS thread on its own CPU on each
// side. What perftest users do by hand with one ib_write_bw per core and
// port, added up in a spreadsheet, one gorperf does and adds up itself:
// the connections start each size together (a barrier among a side's
// threads before the barrier with the peer) and the side's result is
// their sum.

// ThreadResult is one thread's part of a test of several threads.
type ThreadResult struct {
	Thread int
	QPs    int
	// CPU is the CPU the thread was pinned to, or -1.
	CPU int
	// Sizes is the thread's connection's own bandwidth at each size (on a
	// passive side, what the peer's thread measured).
	Sizes []stats.Bandwidth
	// Err is the thread's failure, if it failed.
	Err error
}

// threadGroup is one side's threads of a test: their barrier, and the
// callbacks that add up what each reports.
type threadGroup struct {
	n int

	mu      sync.Mutex
	running int           // threads not yet returned
	waiting int           // threads at the barrier
	round   chan struct{} // closed when the barrier's round is complete
	headers []*report.Header

	done, total []atomic.Uint64 // each thread's last progress report

	ivMu      sync.Mutex
	intervals [][]stats.Bandwidth // each thread's intervals not yet reported

	sizeMu sync.Mutex
	sizes  [][]SizeResult // each thread's sizes not yet reported
}

func newThreadGroup(n int) *threadGroup {
	return &threadGroup{n: n, running: n, round: make(chan struct{}),
		headers: make([]*report.Header, n), done: make([]atomic.Uint64, n),
		total: make([]atomic.Uint64, n), intervals: make([][]stats.Bandwidth, n),
		sizes: make([][]SizeResult, n)}
}

// wait returns once every thread still running has called it: the
// threads' steps (each size's start and end) go together. A thread that
// returns leaves the group, so a failed thread stops none.
func (g *threadGroup) wait() {
	g.mu.Lock()
	ch := g.round
	g.waiting++
	if g.waiting >= g.running {
		g.next()
	}
	g.mu.Unlock()
	<-ch
}

// next completes the barrier's round; g.mu is held.
func (g *threadGroup) next() {
	close(g.round)
	g.round = make(chan struct{})
	g.waiting = 0
}

// leave takes a returning thread out of the barrier.
func (g *threadGroup) leave() {
	g.mu.Lock()
	g.running--
	if g.waiting > 0 && g.waiting >= g.running {
		g.next()
	}
	g.mu.Unlock()
}

// threadLocal is thread i's Local: its rdma_cm port (each thread's
// connection listens on its own), its share of the rate limit, and
// callbacks that report the group's sum. Only thread 0 reads the port
// counters and the process's CPU time, which cover all the threads.
func (g *threadGroup) threadLocal(l Local, i int) Local {
	l.group = g
	l.CMPort += i
	l.Rate.Rate /= float64(g.n)
	if i > 0 {
		l.Counters, l.CPUUtil = nil, false
	}
	if p := l.Progress; p != nil {
		l.Progress = func(size int, done, total uint64) {
			g.done[i].Store(done)
			g.total[i].Store(total)
			if i == 0 {
				var d, t uint64
				for j := range g.n {
					d += g.done[j].Load()
					t += g.total[j].Load()
				}
				p(size, d, t)
			}
		}
	}
	if iv := l.Interval; iv != nil {
		// Each thread reports every period from the same start; the
		// last to report an interval reports the sum of everyone's
		// messages, over the longest of their times (each measures its
		// own, a little over the period).
		l.Interval = func(elapsed time.Duration, b stats.Bandwidth) {
			g.ivMu.Lock()
			defer g.ivMu.Unlock()
			g.intervals[i] = append(g.intervals[i], b)
			for {
				var n uint64
				var el time.Duration
				for _, q := range g.intervals {
					if len(q) == 0 {
						return
					}
					n += q[0].Iterations
					el = max(el, q[0].Elapsed)
				}
				for j := range g.intervals {
					g.intervals[j] = g.intervals[j][1:]
				}
				iv(elapsed, stats.ComputeBandwidth(b.Bytes, n, el, 0))
			}
		}
	}
	if sd := l.SizeDone; sd != nil {
		// Size k is reported once every thread has reported its k-th,
		// by the last to, added up as combine does: every thread then
		// has a result with that size, so the side's result has it
		// too, the same sum. A thread that fails holds back the size
		// it was at and those after, which the result leaves out
		// (combine keeps the sizes every thread's result has), but for
		// a thread that failed before it had a result at all, without
		// which the result adds up the others' sizes, at the end.
		l.SizeDone = func(s SizeResult) {
			g.sizeMu.Lock()
			defer g.sizeMu.Unlock()
			g.sizes[i] = append(g.sizes[i], s)
			for {
				parts := make([]SizeResult, 0, g.n)
				for _, q := range g.sizes {
					if len(q) == 0 {
						return
					}
					parts = append(parts, q[0])
				}
				for j := range g.sizes {
					g.sizes[j] = g.sizes[j][1:]
				}
				sd(addSizes(parts))
			}
		}
	}
	return l
}

// header collects thread i's header and, once every thread's is in,
// passes on their sum (addHeaders); cpus is each thread's CPU, or nil.
func (g *threadGroup) header(i int, cpus []int, onHeader func(report.Header)) func(report.Header) {
	return func(h report.Header) {
		g.mu.Lock()
		g.headers[i] = &h
		if slices.Contains(g.headers, nil) {
			g.mu.Unlock()
			return
		}
		all := addHeaders(g.headers, cpus)
		g.mu.Unlock()
		if onHeader != nil {
			onHeader(all)
		}
	}
}

// addHeaders is the header of a side's threads, whose own headers are hs
// (nil for a thread that has none): the first one's settings, with every
// thread's QPs and endpoints, the number of threads, and cpus, each
// thread's CPU or nil.
func addHeaders(hs []*report.Header, cpus []int) report.Header {
	var all report.Header
	first := true
	for _, h := range hs {
		if h == nil {
			continue
		}
		if first {
			all, first = *h, false
			all.NumQPs, all.Local, all.Remote = 0, nil, nil
		}
		all.NumQPs += h.NumQPs
		all.Local = append(all.Local, h.Local...)
		all.Remote = append(all.Remote, h.Remote...)
	}
	all.Threads, all.ThreadCPUs = len(hs), cpus
	return all
}

// threadCPUs is the CPU of each of n threads, given the CPUs they take
// in turn; nil when they are not pinned.
func threadCPUs(n int, cpus []int) []int {
	if len(cpus) == 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = cpus[i%len(cpus)]
	}
	return out
}

// threadSpecs splits spec, a test of spec.Threads threads over
// spec.NumQPs QPs, into each connection's: its share of the QPs (the
// first threads take one more where they do not divide evenly), the
// flow labels in turn from its first QP on, and group, the number that
// ties them together.
func threadSpecs(spec exchange.TestSpec, group uint64) ([]exchange.TestSpec, error) {
	n := int(spec.Threads)
	if int(spec.NumQPs) < n {
		return nil, fmt.Errorf("%d threads need at least %d QPs, one a thread, not %d (-q)", n, n, spec.NumQPs)
	}
	specs := make([]exchange.TestSpec, n)
	first := 0
	for i := range specs {
		s := spec
		qps := int(spec.NumQPs) / n
		if i < int(spec.NumQPs)%n {
			qps++
		}
		s.NumQPs, s.Thread, s.Group = uint16(qps), uint16(i), group
		if k := len(spec.FlowLabels); k > 0 {
			s.FlowLabels = make([]uint32, k)
			for j := range s.FlowLabels {
				s.FlowLabels[j] = spec.FlowLabels[(first+j)%k]
			}
		}
		first += qps
		specs[i] = s
	}
	return specs, nil
}

// runThreads runs one side's threads, thread i as run(ctx, i, l_i,
// onHeader_i) on its own locked OS thread, pinned to its CPU, and adds
// up their results. The first thread to fail stops the others; its
// error is the group's. A thread that cannot be pinned does not run:
// refuse, if set, tells its peer why.
func runThreads(ctx context.Context, spec exchange.TestSpec, l Local, onHeader func(report.Header),
	run func(ctx context.Context, i int, l Local, onHeader func(report.Header)) (*Result, error),
	refuse func(i int, err error)) (*Result, error) {
	n := int(spec.Threads)
	defer reserveProcs(n)()
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g := newThreadGroup(n)
	cpus := threadCPUs(n, l.ThreadCPUs)
	results := make([]*Result, n)
	errs := make([]error, n)
	var first atomic.Int32 // the first thread to fail, plus one
	fail := func(i int) {
		first.CompareAndSwap(0, int32(i+1))
		cancel(&threadFailure{i, n, errs[i]})
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer g.leave()
			// Never unlocked: the thread, narrowed to one CPU, ends with
			// the goroutine instead of serving others.
			runtime.LockOSThread()
			if cpus != nil {
				if err := affinity.PinThread(cpus[i]); err != nil {
					errs[i] = fmt.Errorf("thread %d on CPU %d: %w", i, cpus[i], err)
					fail(i)
					if refuse != nil {
						refuse(i, errs[i])
					}
					return
				}
			}
			results[i], errs[i] = run(gctx, i, g.threadLocal(l, i), g.header(i, cpus, onHeader))
			if errs[i] != nil {
				fail(i)
			}
		})
	}
	wg.Wait()
	res, err := combine(ctx, spec, results, errs, cpus)
	if i := int(first.Load()) - 1; i >= 0 && err != nil && !errors.Is(errs[i], context.Canceled) {
		// The first to fail, ahead of the failures it caused: a peer
		// that gave up for it closes the others' connections.
		err = fmt.Errorf("thread %d of %d: %w", i, n, errs[i])
	}
	return res, err
}

// threadFailure is the cause of the context of a test of several
// threads that one thread's failure ended, which the others' peers are
// told where they are told why (a server's thread that had not begun:
// unready), rather than that the server was stopped.
type threadFailure struct {
	i, n int
	err  error
}

func (e *threadFailure) Error() string {
	return fmt.Sprintf("thread %d of %d failed: %v", e.i, e.n, e.err)
}
func (e *threadFailure) Unwrap() error { return e.err }

// procs counts the measuring loops of the tests of several threads
// running in this process (a loopback test runs both sides' here), and
// procsBefore is GOMAXPROCS from before the first of them.
var (
	procsMu     sync.Mutex
	procs       int
	procsBefore int
)

// reserveProcs makes room in the Go scheduler for n more loops, each
// holding its P through its cgo calls: GOMAXPROCS becomes at least one
// more than the loops, unless the environment sets it, so that a P stays
// idle for the runtime's other goroutines. With none idle the runtime's
// monitor takes a loop's P away from any cgo call past its 20 µs tick
// (docs/performance.md, item 20). The returned function gives them back,
// and with the last of them restores GOMAXPROCS.
func reserveProcs(n int) (release func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	procsMu.Lock()
	defer procsMu.Unlock()
	if procs == 0 {
		procsBefore = runtime.GOMAXPROCS(0)
	}
	procs += n
	if cur := runtime.GOMAXPROCS(0); cur < procs+1 {
		runtime.GOMAXPROCS(procs + 1)
	}
	return func() {
		procsMu.Lock()
		defer procsMu.Unlock()
		if procs -= n; procs == 0 {
			runtime.GOMAXPROCS(procsBefore)
		}
	}
}

// combine adds up the threads' results into the side's: at each size the
// messages of all threads over the longest thread's time, and their peak
// (addBandwidth). The error is the first thread's failure that was not the group stopping
// for it.
func combine(ctx context.Context, spec exchange.TestSpec, results []*Result, errs []error, cpus []int) (*Result, error) {
	var err error
	for i, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			err = fmt.Errorf("thread %d of %d: %w", i, len(errs), e)
			break
		}
	}
	if err == nil {
		for _, e := range errs {
			if e != nil {
				err = e
				break
			}
		}
	}
	var first *Result
	nsizes := -1
	for _, r := range results {
		if r == nil {
			continue
		}
		if first == nil {
			first = r
		}
		if nsizes < 0 || len(r.Sizes) < nsizes {
			nsizes = len(r.Sizes)
		}
	}
	if first == nil {
		return nil, err
	}
	headers := make([]*report.Header, len(results))
	for i, r := range results {
		if r != nil {
			headers[i] = &r.Header
		}
	}
	out := &Result{Spec: spec, Role: first.Role, Header: addHeaders(headers, cpus), WarmedUp: first.WarmedUp}
	out.Spec.Thread, out.Spec.Group = 0, 0
	out.Spec.Size = first.Spec.Size // as Local.FitMTU left it
	for i, r := range results {
		tr := ThreadResult{Thread: i, CPU: -1, Err: errs[i]}
		if cpus != nil {
			tr.CPU = cpus[i]
		}
		if r != nil {
			tr.QPs = r.Header.NumQPs
			if out.Start.IsZero() || r.Start.Before(out.Start) {
				out.Start = r.Start
			}
			out.Mismatches += r.Mismatches
			out.Interrupted = out.Interrupted || r.Interrupted
			out.PeerInterrupted = out.PeerInterrupted || r.PeerInterrupted
			out.PeerStop = cmp.Or(out.PeerStop, r.PeerStop)
			for _, s := range r.Sizes[:nsizes] {
				tr.Sizes = append(tr.Sizes, s.BW)
			}
		}
		out.Threads = append(out.Threads, tr)
	}
	for k := range max(nsizes, 0) {
		var parts []SizeResult
		for _, r := range results {
			if r != nil {
				parts = append(parts, r.Sizes[k])
			}
		}
		out.Sizes = append(out.Sizes, addSizes(parts))
	}
	if err == nil && ctx.Err() != nil {
		out.Interrupted = true
	}
	return out, err
}

// addSizes adds up parts, the threads' results of one size, in the
// threads' order: their bandwidth (addBandwidth), in a bidirectional
// test each direction's and the two as one thread's are (bothWays); the
// first one's port counters and CPU time, which cover all the threads
// (thread 0's), the CPU time over every thread's messages.
func addSizes(parts []SizeResult) SizeResult {
	sum := parts[0]
	var bws, locals, remotes []stats.Bandwidth
	for _, s := range parts {
		bws = append(bws, s.BW)
		if s.Local != nil && s.Remote != nil {
			locals, remotes = append(locals, *s.Local), append(remotes, *s.Remote)
		}
	}
	if len(locals) == len(bws) {
		l, r := addBandwidth(locals), addBandwidth(remotes)
		sum.Local, sum.Remote = &l, &r
		sum.BW = bothWays(l, r)
	} else {
		sum.BW = addBandwidth(bws)
	}
	if sum.CPU != nil {
		c := *sum.CPU
		c.Messages = sum.messages()
		sum.CPU = &c
	}
	return sum
}

// addBandwidth is the bandwidth of connections that ran at once: their
// messages over the longest one's time, and a peak. Where each that
// completed messages timed a window faster than its own run (its peak
// above its average), that peak is the sum of theirs: the most they
// reached together, each at its fastest, an upper bound rather than a
// figure measured at once, as their fastest windows need not have come
// at the same time. Where one timed none, its peak is only its average,
// over a time of its own, and the sum would add up averages over
// different times, above the average of them all where one thread
// took longer than another: the peak is then the average, as a
// connection's is where it timed no window. It is never below the
// average, and none (0) where none has one (a one-way test's receivers).
func addBandwidth(bs []stats.Bandwidth) stats.Bandwidth {
	if len(bs) == 0 {
		return stats.Bandwidth{}
	}
	var iters uint64
	var el time.Duration
	var peak float64
	windows := true // each that completed messages timed a window of its own
	for _, b := range bs {
		iters += b.Iterations
		el = max(el, b.Elapsed)
		peak += b.PeakMBps
		if b.Iterations > 0 && b.PeakMBps <= b.AvgMBps {
			windows = false
		}
	}
	sum := stats.ComputeBandwidth(bs[0].Bytes, iters, el, 0)
	switch {
	case peak <= 0:
		sum.PeakMBps = 0
	case windows:
		sum.PeakMBps = max(sum.AvgMBps, peak)
	} // else ComputeBandwidth's, the average
	return sum
}

// clientThreads runs a client's test of several threads: one connection
// to the server at addr per thread, each asking for its share.
func clientThreads(ctx context.Context, addr string, spec exchange.TestSpec, l Local, onHeader func(report.Header)) (*Result, error) {
	if err := mapOneThread(l); err != nil {
		return nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	group := binary.BigEndian.Uint64(b[:]) | 1 // never 0
	specs, err := threadSpecs(spec, group)
	if err != nil {
		return nil, err
	}
	return runThreads(ctx, spec, l, onHeader, func(ctx context.Context, i int, l Local, onHeader func(report.Header)) (*Result, error) {
		return client(ctx, addr, specs[i], l, onHeader)
	}, nil)
}

// mapOneThread refuses --mmap (Local.MapFile) for a test of several
// threads: each thread's connection has a buffer of its own, and all
// would map the same range of the file, where an atomic test's threads
// would add to one target and its --validate fail.
func mapOneThread(l Local) error {
	if l.MapFile != "" {
		return fmt.Errorf("--mmap %s maps one buffer, and a test of several threads (--threads) has one a thread: leave out one of them", l.MapFile)
	}
	return nil
}

// groupWait bounds how long a server waits for the rest of a test's
// connections once the first has come to the head of its lobby.
var groupWait = 10 * time.Second

// serveThreads runs the test of several threads whose first connection
// the server's lobby took is first, with the others it took with it,
// more (gatherThreads).
func serveThreads(ctx context.Context, first asked, more []asked, l Local, lim Limits, onHeader func(report.Header)) (*Result, error) {
	n := int(first.spec.Threads)
	conns := make([]*exchange.Conn, n)
	specs := make([]exchange.TestSpec, n)
	conns[first.spec.Thread], specs[first.spec.Thread] = first.c, first.spec
	defer func() {
		for _, c := range conns {
			if c != nil && c.NetConn() != nil {
				c.Close()
			}
		}
	}()
	// tell sends a connection's client why its test cannot run.
	tell := func(c *exchange.Conn, err error) {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		c.SendError(hctx, err)
		cancel()
	}
	fail := func(err error) (*Result, error) {
		for _, c := range conns {
			if c != nil {
				tell(c, err)
			}
		}
		return nil, err
	}
	if err := mapOneThread(l); err != nil {
		for _, o := range more {
			tell(o.c, err)
		}
		return fail(err)
	}
	if err := gatherThreads(ctx, conns, specs, more, l, lim); err != nil {
		return fail(err)
	}
	user := specs[0]
	user.NumQPs = 0
	for _, s := range specs {
		user.NumQPs += s.NumQPs
	}
	return runThreads(ctx, user, l, onHeader, func(ctx context.Context, i int, l Local, onHeader func(report.Header)) (*Result, error) {
		return run(ctx, conns[i], specs[i], l, "server", "", onHeader)
	}, func(i int, err error) { tell(conns[i], err) })
}

// gatherThreads puts in conns the connections of a test of len(conns)
// threads from more, those the server's lobby took with the first, each
// with its spec in specs. Each is admitted as the first was (admit), and
// must ask for the first one's test, but for what is each connection's
// own (sameTest); a test over the limits is refused: each connection
// as it comes, and once all have, the whole test, their default RX
// depths fitted together (exchange.FitGroupRXDepth and
// CheckGroupLimits). One that asks for a thread the test has no place
// for, or has already, is told the server is busy and closed. It fails where a thread has no connection:
// the lobby gave up on them at groupWait.
func gatherThreads(ctx context.Context, conns []*exchange.Conn, specs []exchange.TestSpec, more []asked, l Local, lim Limits) error {
	n := len(conns)
	var spec exchange.TestSpec // the first connection's
	got := 0
	for i, c := range conns {
		if c != nil {
			spec = specs[i]
			got++
		}
	}
	var refused error
	for _, o := range more {
		ts := o.spec
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		err := refused
		if err == nil && (ts.Group != spec.Group || ts.Threads != spec.Threads || ts.Thread >= ts.Threads || conns[ts.Thread] != nil) {
			o.c.SendError(hctx, fmt.Errorf("this server is busy: it is gathering the %d connections of another client's test", n))
			cancel()
			o.c.Close()
			continue
		}
		if err == nil {
			err = admit(&ts, l, lim)
		}
		if err == nil {
			err = sameTest(spec, ts)
		}
		if err != nil {
			o.c.SendError(hctx, err)
			cancel()
			o.c.Close()
			if refused == nil {
				refused = &RefusedError{Spec: ts, Err: err}
			}
			continue
		}
		cancel()
		conns[ts.Thread], specs[ts.Thread] = o.c, ts
		got++
	}
	if refused != nil {
		return refused
	}
	if got < n {
		return fmt.Errorf("a test of %d threads: %d of its connections came in %v", n, got, groupWait)
	}
	// Each connection alone was judged by the least test it could be
	// part of; all together they are the test.
	exchange.FitGroupRXDepth(specs, lim)
	if err := exchange.CheckGroupLimits(specs, lim); err != nil {
		return &RefusedError{Spec: spec, Err: err}
	}
	return nil
}

// sameTest checks that b, a later connection's part of a test of several
// threads, asks for the test of a, its first connection's, as
// threadSpecs splits it: what may differ is each connection's own, its
// share of the QPs, its thread, its flow labels from its first QP on,
// and a default RX depth as fitted to its share (TestSpec.FitRXDepth).
func sameTest(a, b exchange.TestSpec) error {
	norm := func(s exchange.TestSpec) exchange.TestSpec {
		s.NumQPs, s.Thread = 0, 0
		if s.RXDepthDefault {
			s.RXDepth = 0
		}
		if len(s.FlowLabels) == 0 {
			s.FlowLabels = nil
		} else {
			s.FlowLabels = slices.Sorted(slices.Values(s.FlowLabels))
		}
		return s
	}
	va, vb := reflect.ValueOf(norm(a)), reflect.ValueOf(norm(b))
	for i := range va.NumField() {
		fa, fb := va.Field(i), vb.Field(i)
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			f := va.Type().Field(i).Name
			return fmt.Errorf("thread %d's connection asks for another test than thread %d's: %s %v, not %v", b.Thread, a.Thread, f, reflect.ValueOf(b).Field(i), reflect.ValueOf(a).Field(i))
		}
	}
	return nil
}
