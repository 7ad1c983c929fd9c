//go:build linux && cgo

package bench_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/internal/stats"
)

// String is the outcome, short, for the tests' messages.
func (o sideOutcome) String() string {
	if o.r == nil {
		return fmt.Sprintf("error %v, no result", o.err)
	}
	return fmt.Sprintf("error %v, interrupted %v, %d sizes %v, %d mismatches", o.err, o.r.Interrupted, len(o.r.Sizes), o.r.Sizes, o.r.Mismatches)
}

// short is the outcome without a latency test's samples.
func (o sideOutcome) short() string {
	if o.r == nil {
		return fmt.Sprintf("error %v, no result", o.err)
	}
	var sizes []string
	for _, sz := range o.r.Sizes {
		sizes = append(sizes, fmt.Sprintf("%d B: %d messages, %d samples", sz.Size, sz.BW.Iterations, sz.Lat.N))
	}
	return fmt.Sprintf("error %v, interrupted %v, peer interrupted %v, sizes %v", o.err, o.r.Interrupted, o.r.PeerInterrupted, sizes)
}

// sideOutcome is what one side of stopPair returned, and when.
type sideOutcome struct {
	r   *bench.Result
	err error
	at  time.Time
	ivs []uint64 // the messages of each interval it reported (RunInfinitely)
	// ivAt and ivEl are each interval's end, from the start of the run,
	// and the time its bandwidth is over.
	ivAt, ivEl []time.Duration
	role       string
}

// stopPair runs spec between a one-test server and a client in this
// process, as loopback does, and stops one side (stopClient: the client)
// after stopAfter, as Ctrl-C does, by ending its context. It returns the
// two sides' outcomes and the moment of the stop.
func stopPair(t *testing.T, spec exchange.TestSpec, stopClient bool, stopAfter time.Duration, tweak func(l *bench.Local)) (c, s sideOutcome, stopped time.Time) {
	t.Helper()
	return stopPairWhen(t, spec, stopClient, func(stop func()) func() {
		timer := time.AfterFunc(stopAfter, stop)
		return func() { timer.Stop() }
	}, tweak)
}

// inLoop is a stopPairWhen arm that stops d after both sides have come
// to their measuring loops: set-up, however long it takes on either side,
// is not counted.
func inLoop(d time.Duration) func(stop func()) (disarm func()) {
	return func(stop func()) func() {
		var mu sync.Mutex
		in := map[bool]bool{} // the sides come to their loops, by client
		var timer *time.Timer
		restore := bench.SetBeforeLoop(func(client bool) {
			mu.Lock()
			defer mu.Unlock()
			if !in[client] {
				in[client] = true
				if in[!client] {
					timer = time.AfterFunc(d, stop)
				}
			}
		})
		return func() {
			restore()
			mu.Lock()
			defer mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
		}
	}
}

// stopPairWhen is stopPair, which stops the side when arm calls its stop;
// the returned disarm, called as stopPairWhen returns, must keep it from
// calling stop after.
func stopPairWhen(t *testing.T, spec exchange.TestSpec, stopClient bool, arm func(stop func()) (disarm func()), tweak func(l *bench.Local)) (c, s sideOutcome, stopped time.Time) {
	t.Helper()
	info := rdmatest.Device(t)
	guard, cancelGuard := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelGuard()
	cctx, stopC := context.WithCancel(guard)
	defer stopC()
	sctx, stopS := context.WithCancel(guard)
	defer stopS()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // a one-test Serve hands it back open
	var mu sync.Mutex
	local := func(o *sideOutcome) bench.Local {
		l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}
		if tweak != nil {
			tweak(&l)
		}
		l.Interval = func(at time.Duration, b stats.Bandwidth) {
			mu.Lock()
			o.ivs = append(o.ivs, b.Iterations)
			o.ivAt, o.ivEl = append(o.ivAt, at), append(o.ivEl, b.Elapsed)
			mu.Unlock()
		}
		return l
	}
	c.role, s.role = "client", "server"
	srv := make(chan struct{})
	sl := local(&s)
	go func() {
		defer close(srv)
		err := bench.Serve(sctx, ln, sl, exchange.DefaultLimits(), true, nil, func(r *bench.Result, err error) { s.r, s.err = r, err })
		if s.err == nil {
			s.err = err
		}
		s.at = time.Now()
	}()
	stop := stopS
	if stopClient {
		stop = stopC
	}
	defer arm(func() {
		mu.Lock()
		stopped = time.Now()
		mu.Unlock()
		stop()
	})()
	c.r, c.err = bench.Client(cctx, ln.Addr().String(), spec, local(&c), nil)
	c.at = time.Now()
	if _, late := serverAfter(ln, srv, c.err, serverGrace(sl), stopS); late != nil {
		s.err = fmt.Errorf("%v; its error then: %v", late, s.err)
	}
	mu.Lock()
	defer mu.Unlock()
	return c, s, stopped
}

// TestInfiniteRunStops stops one side of a --run_infinitely test, as
// Ctrl-C does. The stopped side reports an interrupted run; the other
// side's run ends with it, at once and without an error, since an
// infinite run ends only so: it must not go on sending until the stopped
// side gives up waiting for its result (5 s) and closes, and then fail
// because the peer closed the connection. The two sides' intervals of a
// bidirectional test count both directions, as the final figure does
// (perftest doubles its own for write and read): each side sends 2,000
// messages a second here. A one-way send test's receiver reports its
// intervals too, of what it received, as perftest's server does (it
// reported none). Each interval's bandwidth is over its time as
// measured, from the last interval's end to its own, which a loop
// reaches a little after the period, up to a sleep of -e's (10 ms)
// after: not over the nominal period. The cases, each timed by the
// clock at a rate far below what a loop sharing its CPU makes, run side
// by side (t.Parallel).
func TestInfiniteRunStops(t *testing.T) {
	const rate = 2000
	for _, tc := range []struct {
		name       string
		test       exchange.Test
		bidi       bool
		stopClient bool
		events     bool
		imm        bool
	}{
		{"write_bw/bidirectional/client_stops", exchange.WriteBW, true, true, false, false},
		{"send_bw/bidirectional/client_stops", exchange.SendBW, true, true, false, false},
		{"send_bw/server_stops", exchange.SendBW, false, false, false, false},
		{"send_bw/events/client_stops", exchange.SendBW, false, true, true, false},
		{"write_bw/imm/client_stops", exchange.WriteBW, false, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := exchange.TestSpec{Test: tc.test, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 1, RunInfinitely: true,
				NumQPs: 1, TXDepth: 32, RXDepth: 64, CQModeration: 8, Bidirectional: tc.bidi, Events: tc.events, Immediate: tc.imm}
			c, s, stopped := stopPair(t, spec, tc.stopClient, 2500*time.Millisecond, func(l *bench.Local) {
				l.Rate = bench.RateLimit{Rate: rate, Unit: bench.RatePps}
			})
			halt, other := c, s
			if !tc.stopClient {
				halt, other = s, c
			}
			if halt.err != nil || halt.r == nil || !halt.r.Interrupted {
				t.Errorf("the stopped %s: %v; want an interrupted result", halt.role, halt)
			}
			if other.err != nil || other.r == nil || other.r.Interrupted || len(other.r.Sizes) != 1 || other.r.Sizes[0].BW.Iterations == 0 {
				t.Errorf("the %s whose peer stopped: %v; want its result", other.role, other)
			}
			for _, o := range []sideOutcome{c, s} {
				if d := o.at.Sub(stopped); d > 3*time.Second {
					t.Errorf("the %s ended %v after the stop", o.role, d)
				}
				t.Logf("%s: ended %v after the stop; intervals %v", o.role, o.at.Sub(stopped), o.ivs)
			}
			// The sending sides' intervals (the first two, before the stop).
			want := uint64(rate)
			if tc.bidi {
				want *= 2
			}
			for _, o := range []sideOutcome{c, s} {
				if len(o.ivs) < 2 {
					t.Errorf("%s: %d intervals before the stop at 2.5 s, want 2", o.role, len(o.ivs))
					continue
				}
				// Each interval's messages over its time as measured, which
				// a stalled loop reaches late (with more messages): 60% of
				// the rate lets a side pause 400 ms in a second on a loaded
				// VM, where a bidirectional interval that counted one
				// direction would be at half the rate or less. (Counts
				// held to a quarter of the rate either side, over a
				// nominal second, would fail an interval that ended 250 ms
				// late, or a pause of 250 ms.)
				for k, n := range o.ivs[:2] {
					if got := float64(n) / o.ivEl[k].Seconds(); got < float64(want)*6/10 || got > float64(want)*5/4 {
						t.Errorf("%s: an interval of %d messages over %v, %.0f a second; want about %d", o.role, n, o.ivEl[k], got, want)
					}
				}
				var last time.Duration
				for k, at := range o.ivAt {
					if el := o.ivEl[k]; el != at-last || el < time.Second {
						t.Errorf("%s: interval %d, from %v to %v, over %v", o.role, k+1, last, at, el)
					}
					last = at
				}
			}
		})
	}
}

// TestInfiniteRunPauses: an infinite run whose messages pause (a slow
// rate limit, a sender that stalls) goes on until it is stopped, on both
// sides, where a receiver ended after a second without a message and its
// Result ended the sender's run: both printed a last result and exited 0,
// though nobody had stopped them.
func TestInfiniteRunPauses(t *testing.T) {
	for _, bidi := range []bool{false, true} {
		t.Run(fmt.Sprintf("bidirectional=%v", bidi), func(t *testing.T) {
			spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 1, RunInfinitely: true,
				NumQPs: 1, TXDepth: 8, RXDepth: 16, CQModeration: 1, Bidirectional: bidi}
			// Stopped 2.5 s into the loops: a message, a pause of 2 s
			// (longer than the second a receiver waited), another.
			c, s, stopped := stopPairWhen(t, spec, true, inLoop(2500*time.Millisecond), func(l *bench.Local) {
				l.Rate = bench.RateLimit{Rate: 0.5, Unit: bench.RatePps, Burst: 1} // one message every 2 s
			})
			for _, o := range []sideOutcome{c, s} {
				if o.at.Before(stopped) {
					t.Errorf("the %s ended %v before the stop: %v", o.role, stopped.Sub(o.at), o)
				}
			}
			if c.r == nil || !c.r.Interrupted || s.err != nil {
				t.Errorf("client %v, server %v; want the client interrupted and the server's result", c, s)
			}
		})
	}
}

// TestValidateInterrupted stops the client of a write_bw with --validate
// in the middle of its run: the passive server, waiting at the barrier
// before the check, must not fail with "expected Sync, got Result" but
// check what arrived and end with the client's figures.
func TestValidateInterrupted(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Duration: 3,
		NumQPs: 2, TXDepth: 32, CQModeration: 8, ValidateData: true}
	c, s, stopped := stopPair(t, spec, true, 700*time.Millisecond, nil)
	if c.err != nil || c.r == nil || !c.r.Interrupted {
		t.Errorf("the stopped client: %v; want an interrupted result", c)
	}
	if s.err != nil || s.r == nil || len(s.r.Sizes) != 1 || s.r.Sizes[0].BW.Iterations == 0 || s.r.Mismatches != 0 {
		t.Errorf("the server: %v; want the client's figures, no mismatches", s)
	}
	if d := s.at.Sub(stopped); d > 3*time.Second {
		t.Errorf("the server ended %v after the client's stop", d)
	}
}

// TestInterruptEndsBothSides stops one side of a test of each kind in
// the middle of its run, as Ctrl-C does. The stopped side reports what it
// measured, marked interrupted; the other side learns at once that its
// peer was interrupted (not by a timeout, nor by the stopped side closing
// the connection after giving up on its peer's result) and reports its
// own figures, or, where it only waits (a passive bandwidth side, the
// server of read_lat and atomic_lat), the peer's, without an error. Both
// end within 5 s of the stop: the ways of ending that the test guards
// against take 20 s or more here (each side's idle timeout, and the
// test's 20 s duration), so that a slow VM (TCG) has room. A latency
// test's stopped client keeps the samples it took.
func TestInterruptEndsBothSides(t *testing.T) {
	for _, tc := range []struct {
		name       string
		test       exchange.Test
		stopClient bool
		bidi       bool
	}{
		{"write_lat/client_stops", exchange.WriteLat, true, false},
		{"write_lat/server_stops", exchange.WriteLat, false, false},
		{"send_lat/client_stops", exchange.SendLat, true, false},
		{"send_lat/server_stops", exchange.SendLat, false, false},
		{"read_lat/client_stops", exchange.ReadLat, true, false},
		{"read_lat/server_stops", exchange.ReadLat, false, false},
		{"atomic_lat/server_stops", exchange.AtomicLat, false, false},
		{"write_bw/client_stops", exchange.WriteBW, true, false},
		{"write_bw/server_stops", exchange.WriteBW, false, false},
		{"read_bw/client_stops", exchange.ReadBW, true, false},
		{"read_bw/server_stops", exchange.ReadBW, false, false},
		{"atomic_bw/server_stops", exchange.AtomicBW, false, false},
		{"send_bw/client_stops", exchange.SendBW, true, false},
		{"send_bw/server_stops", exchange.SendBW, false, false},
		{"write_bw/bidirectional/server_stops", exchange.WriteBW, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := exchange.TestSpec{Test: tc.test, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 20,
				NumQPs: 1, TXDepth: 32, RXDepth: 64, CQModeration: 8, Bidirectional: tc.bidi}
			if tc.test.IsLatency() {
				spec.TXDepth, spec.RXDepth, spec.CQModeration = 1, 16, 1
			}
			if tc.test.IsAtomic() {
				spec.Size = 8
			}
			// Stopped half a second into both sides' loops: both have
			// measured, whatever the set-up took. (300 ms was once too
			// little for write_lat's first round trip on the emulator.)
			c, s, stopped := stopPairWhen(t, spec, tc.stopClient, inLoop(500*time.Millisecond), func(l *bench.Local) {
				l.IdleTimeout = 20 * time.Second
			})
			halt, other := c, s
			if !tc.stopClient {
				halt, other = s, c
			}
			for _, o := range []sideOutcome{c, s} {
				t.Logf("%s: ended %v after the stop: %v", o.role, o.at.Sub(stopped), o.short())
				if d := o.at.Sub(stopped); d > 5*time.Second {
					t.Errorf("the %s ended %v after the stop, want within 5 s (at once, not after its peer's idle timeout or the test's duration)", o.role, d)
				}
			}
			if halt.err != nil || halt.r == nil || !halt.r.Interrupted {
				t.Errorf("the stopped %s: %v; want an interrupted result", halt.role, halt.short())
			}
			if other.err != nil || other.r == nil || other.r.Interrupted || !other.r.PeerInterrupted {
				t.Errorf("the %s whose peer stopped: %v; want its result, not interrupted, with the peer interrupted", other.role, other.short())
			}
			// The client of a latency test times it; a bandwidth test's
			// figures are on both sides (the active side's on a passive
			// one).
			for _, o := range []sideOutcome{c, s} {
				if o.r == nil {
					continue
				}
				if len(o.r.Sizes) != 1 {
					t.Errorf("the %s reported %d sizes, want 1", o.role, len(o.r.Sizes))
					continue
				}
				switch sz := o.r.Sizes[0]; {
				case tc.test.IsLatency() && o.role == "client" && sz.Lat.N == 0:
					t.Errorf("the latency client reported no samples")
				case !tc.test.IsLatency() && sz.BW.Iterations == 0:
					t.Errorf("the %s reported no messages", o.role)
				}
			}
		})
	}
}

// TestInterruptBeforeWarmUp stops the passive server of a write_bw sweep
// with --perform_warm_up while it waits at the barrier of the second
// size, for the client's warm-up. It tells the client (its abort) and
// closes its QPs, under the warm-up, which fails: the client must report
// the first size with its peer interrupted, not fail "warming up".
func TestInterruptBeforeWarmUp(t *testing.T) {
	var calls atomic.Int32
	defer bench.SetBeforeWarmUp(func() {
		if calls.Add(1) == 2 {
			time.Sleep(2500 * time.Millisecond) // the server is stopped meanwhile
		}
	})()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, AllSizes: true, Iterations: 20,
		NumQPs: 1, TXDepth: 16, CQModeration: 4, WarmUp: true}
	c, s, stopped := stopPair(t, spec, false, time.Second, nil)
	for _, o := range []sideOutcome{c, s} {
		t.Logf("%s: ended %v after the stop: %v", o.role, o.at.Sub(stopped), o.short())
	}
	if calls.Load() < 2 {
		t.Fatalf("%d warm-ups, want the second size's too", calls.Load())
	}
	if s.err != nil || s.r == nil || !s.r.Interrupted || len(s.r.Sizes) != 1 {
		t.Errorf("the stopped server: %v; want an interrupted result of one size", s.short())
	}
	if c.err != nil || c.r == nil || c.r.Interrupted || !c.r.PeerInterrupted || len(c.r.Sizes) != 1 {
		t.Errorf("the client: %v; want one size's result, not interrupted, with the peer interrupted", c.short())
	}
	if d := c.at.Sub(stopped); d > 6*time.Second {
		t.Errorf("the client ended %v after the stop", d)
	}
}

// TestResponderWithoutSamples stops a write_lat or send_lat client before
// its loop sends a message (its loop held until after the stop): the
// responder, which times the test too, has no samples, and reports no
// size, as the client does, where it reported one "measured by the peer"
// (a result without samples says so), though no peer measured it.
func TestResponderWithoutSamples(t *testing.T) {
	// The client, come to its loop, waits for the responder to come to
	// its own, is stopped a moment later, and is held a second more: its
	// loop begins stopped, and the responder learns of the stop only once
	// it has ended (abort). Its first message may still get its answer (a
	// sample of the client's, seen now and then): the responder, whose
	// sample is the time between two of its own posts, has none.
	beforeLoop := func(stop func()) func() {
		responding := make(chan struct{})
		var once sync.Once
		return bench.SetBeforeLoop(func(client bool) {
			if !client {
				once.Do(func() { close(responding) })
				return
			}
			select {
			case <-responding:
			case <-time.After(10 * time.Second):
			}
			time.Sleep(200 * time.Millisecond)
			stop()
			time.Sleep(time.Second)
		})
	}
	for _, test := range []exchange.Test{exchange.WriteLat, exchange.SendLat} {
		t.Run(test.String(), func(t *testing.T) {
			spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 10,
				NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1}
			c, s, _ := stopPairWhen(t, spec, true, beforeLoop, nil)
			t.Logf("client: %v; server: %v", c.short(), s.short())
			if s.err != nil || s.r == nil || !s.r.PeerInterrupted {
				t.Fatalf("the server of a client stopped before its loop: %v; want its result, the peer interrupted", s.short())
			}
			for _, sz := range s.r.Sizes {
				if sz.Lat.N == 0 {
					t.Errorf("the responder reported a size of %d iterations without samples", sz.Iterations)
				}
			}
		})
	}
}
