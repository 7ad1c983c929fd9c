//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"golang.org/x/sys/unix"
)

// loopback runs spec between a server and a client in this process, on
// the test device, over a control connection on 127.0.0.1.
// cmClient is a tweak for loopback and tryLoopback that, with cm, has the
// client reach the server's rdma_cm address (gidHost), for RdmaCM specs.
func cmClient(t *testing.T, cm bool) func(l *bench.Local, client bool) {
	host := ""
	if cm {
		host = gidHost(t)
	}
	return func(l *bench.Local, client bool) {
		if client {
			l.CMHost = host
		}
	}
}

// loopClock is when the client's measuring loop last began
// (bench.SetBeforeLoop, hooked until the test ends).
type loopClock struct{ start atomic.Int64 }

func newLoopClock(t *testing.T) *loopClock {
	c := new(loopClock)
	t.Cleanup(bench.SetBeforeLoop(func(client bool) {
		if client {
			c.start.Store(time.Now().UnixNano())
		}
	}))
	return c
}

// reset forgets the last loop's start, before a test's next run.
func (c *loopClock) reset() { c.start.Store(0) }

// since returns the time since the client's loop began.
func (c *loopClock) since() time.Duration { return time.Since(time.Unix(0, c.start.Load())) }

func loopback(t *testing.T, spec exchange.TestSpec, tweak ...func(l *bench.Local, client bool)) (*bench.Result, *bench.Result) {
	t.Helper()
	cr, sr, cerr, serr := tryLoopback(t, spec, tweak...)
	if cerr != nil {
		t.Fatalf("client: %v", cerr)
	}
	if serr != nil {
		t.Fatalf("server: %v", serr)
	}
	return cr, sr
}

// tryLoopback is loopback returning each side's error.
func tryLoopback(t *testing.T, spec exchange.TestSpec, tweak ...func(l *bench.Local, client bool)) (cr, sr *bench.Result, cerr, serr error) {
	t.Helper()
	info := rdmatest.Device(t)
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}
	sl := l
	for _, f := range tweak {
		f(&sl, false)
		f(&l, true)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A one-test Serve hands the listener back open: it closes it only
	// at ctx's end.
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := serveOne(ctx, ln, sl)
	cr, cerr = bench.Client(ctx, ln.Addr().String(), spec, l, nil)
	so, late := serverAfter(ln, srv, cerr, serverGrace(sl), cancel)
	if late != nil {
		so.err = fmt.Errorf("%v; its error then: %v", late, so.err)
	}
	return cr, so.r, cerr, so.err
}

// serverGrace is how long a server on l may take to end after its
// client has returned: its idle timeout, within which it gives up on a
// client gone mid-test, and 10 s more.
func serverGrace(l bench.Local) time.Duration {
	idle := l.IdleTimeout
	if idle <= 0 {
		idle = 10 * time.Second // bench's default
	}
	return idle + 10*time.Second
}

// serverAfter receives a one-test server's outcome from srv once its
// client has returned, with cerr. A client that failed before it asked
// for its test leaves the server accepting: it closes ln at once, which
// ends that wait (a server that has taken its test runs on, and ends
// with its own outcome). A server that has not ended within grace is
// stopped (stop, which must end it), and late says so: a client's
// failure, or a server's, costs a run no more than that, where it waited
// out the context's minute.
func serverAfter[T any](ln net.Listener, srv <-chan T, cerr error, grace time.Duration, stop func()) (o T, late error) {
	if cerr != nil {
		ln.Close()
	}
	select {
	case o = <-srv:
		return o, nil
	case <-time.After(grace):
	}
	stop()
	o = <-srv
	return o, fmt.Errorf("the server had not ended %v after its client returned (%v), and was stopped", grace, cerr)
}

// serveOutcome is what a server's one test gave: its result, or its error.
type serveOutcome struct {
	r   *bench.Result
	err error
}

// serveOne serves one test on ln with l, in a goroutine, whose outcome
// comes on the channel.
func serveOne(ctx context.Context, ln net.Listener, l bench.Local) <-chan serveOutcome {
	srv := make(chan serveOutcome, 1)
	go func() {
		var o serveOutcome
		err := bench.Serve(ctx, ln, l, exchange.DefaultLimits(), true, nil, func(r *bench.Result, err error) { o = serveOutcome{r, err} })
		if o.err == nil {
			o.err = err
		}
		srv <- o
	}()
	return srv
}

func TestLoopbackAllTests(t *testing.T) {
	for _, tc := range []struct {
		test exchange.Test
		conn ibverbs.QPType
		size uint32
		rx   uint32 // RX depth, if not 64
		bidi bool
		qps  uint16 // if not 1
		imm  bool   // immediate data, checked in order by --validate
	}{
		{exchange.WriteBW, ibverbs.QPTypeRC, 4096, 0, false, 0, false},
		{exchange.WriteBW, ibverbs.QPTypeUC, 4096, 0, false, 0, false},
		{exchange.WriteBW, ibverbs.QPTypeRC, 4096, 0, true, 0, false},
		{exchange.ReadBW, ibverbs.QPTypeRC, 4096, 0, false, 0, false},
		{exchange.ReadBW, ibverbs.QPTypeRC, 4096, 0, true, 0, false},
		{exchange.SendBW, ibverbs.QPTypeRC, 4096, 0, false, 0, false},
		{exchange.SendBW, ibverbs.QPTypeRC, 4096, 0, true, 2, false}, // one loop sends and receives on two QPs
		{exchange.SendBW, ibverbs.QPTypeUD, 512, 0, false, 0, false},
		{exchange.SendBW, ibverbs.QPTypeUC, 4096, 8, false, 0, false}, // few receives: a UC receiver may lose messages, and ends when they stop
		{exchange.SendBW, ibverbs.QPTypeUD, 512, 0, true, 0, false},
		{exchange.AtomicBW, ibverbs.QPTypeRC, 8, 0, false, 0, false},
		{exchange.WriteLat, ibverbs.QPTypeRC, 64, 0, false, 0, false},
		{exchange.ReadLat, ibverbs.QPTypeRC, 64, 0, false, 0, false},
		{exchange.SendLat, ibverbs.QPTypeRC, 64, 0, false, 0, false},
		{exchange.SendLat, ibverbs.QPTypeUD, 64, 0, false, 0, false},
		{exchange.SendLat, ibverbs.QPTypeRC, 64, 1, false, 0, false}, // no spare receive: replaced before the send
		{exchange.AtomicLat, ibverbs.QPTypeRC, 8, 0, false, 0, false},
		{exchange.WriteBW, ibverbs.QPTypeRC, 4096, 0, false, 2, true}, // the writes complete receives
		{exchange.WriteBW, ibverbs.QPTypeUC, 4096, 0, true, 0, true},
		{exchange.WriteLat, ibverbs.QPTypeRC, 64, 0, false, 0, true}, // send_lat's loop
		{exchange.SendBW, ibverbs.QPTypeRC, 4096, 0, true, 2, true},
		{exchange.SendBW, ibverbs.QPTypeUD, 512, 0, false, 0, true},
		{exchange.SendLat, ibverbs.QPTypeRC, 64, 0, false, 0, true},
	} {
		name := tc.test.String() + "/" + tc.conn.String()
		if tc.rx != 0 {
			name += fmt.Sprintf("/rx=%d", tc.rx)
		}
		if tc.bidi {
			name += "/bidirectional"
		}
		if tc.qps != 0 {
			name += fmt.Sprintf("/qps=%d", tc.qps)
		}
		if tc.imm {
			name += "/imm"
		}
		t.Run(name, func(t *testing.T) {
			spec := exchange.TestSpec{Test: tc.test, ConnType: tc.conn, Size: tc.size, Iterations: 200,
				NumQPs: max(tc.qps, 1), TXDepth: 32, RXDepth: 64, CQModeration: 8, Bidirectional: tc.bidi, Immediate: tc.imm,
				// Not a bidirectional read_bw, whose reads land where the
				// pattern already is: Validate refuses it.
				ValidateData: tc.test != exchange.ReadBW || !tc.bidi}
			if tc.rx != 0 {
				spec.RXDepth = tc.rx
			}
			if tc.test.IsLatency() {
				spec.TXDepth, spec.CQModeration = 1, 1
			}
			c, s := loopback(t, spec)
			if len(c.Sizes) != 1 || len(s.Sizes) != 1 {
				t.Fatalf("sizes: client %d, server %d", len(c.Sizes), len(s.Sizes))
			}
			// perftest's headers: the TX depth where requests are posted,
			// the RX depth where sends are received.
			sends := spec.Receives()
			for _, h := range []struct {
				side   string
				tx, rx int
				wantTX bool
				wantRX bool
			}{
				{"client", c.Header.TXDepth, c.Header.RXDepth, true, sends && tc.bidi},
				{"server", s.Header.TXDepth, s.Header.RXDepth, tc.bidi, sends},
			} {
				if (h.tx > 0) != h.wantTX || (h.rx > 0) != h.wantRX {
					t.Errorf("%s header: TX depth %d, RX depth %d", h.side, h.tx, h.rx)
				}
			}
			if c.Header.Test != s.Header.Test {
				t.Errorf("titles: client %q, server %q", c.Header.Test, s.Header.Test)
			}
			if c.Mismatches != 0 {
				t.Errorf("%d data mismatches", c.Mismatches)
			}
			r := c.Sizes[0]
			if tc.test.IsLatency() {
				// Both sides ran the 200 iterations, a server that only
				// lets its memory be read too.
				if ci, si := r.Iterations, s.Sizes[0].Iterations; ci != 200 || si != 200 {
					t.Errorf("iterations: client %d, server %d, want 200", ci, si)
				}
				// The client keeps perftest's 199 samples, one from each
				// post to the next (print_report_lat's measure_cnt),
				// not the last round trip's too.
				if r.Lat.N != 199 || r.Lat.Min <= 0 || r.Lat.Typical < r.Lat.Min || r.Lat.Max < r.Lat.Typical {
					t.Errorf("latency %+v, want 199 samples", r.Lat)
				}
				// The server of a ping-pong times it too, as perftest's
				// does, from each of its 200 answers to the next; where
				// the client reads or does atomics, it only waits.
				sl := s.Sizes[0].Lat
				switch pingPong := tc.test == exchange.WriteLat || tc.test == exchange.SendLat; {
				case pingPong && (sl.N != 199 || sl.Min <= 0 || sl.Typical < sl.Min || sl.Max < sl.Typical):
					t.Errorf("server latency %+v, want 199 samples", sl)
				case !pingPong && sl.N != 0:
					t.Errorf("server: %d samples of a test the client times", sl.N)
				}
				t.Logf("t_typical %.2f us (server %.2f us)", r.Lat.Typical/1000, sl.Typical/1000)
				return
			}
			want := 200 * uint64(spec.NumQPs) // this side's, both ways too
			if tc.conn == ibverbs.QPTypeUD {
				want = 0 // UD may drop; at least something arrived
			}
			if r.BW.Iterations < want || r.BW.Iterations == 0 || r.BW.AvgMBps <= 0 || r.BW.PeakMBps < r.BW.AvgMBps {
				t.Errorf("bandwidth %+v", r.BW)
			}
			if tc.bidi {
				if sr := s.Sizes[0].BW; sr.Iterations < want || sr.Iterations == 0 {
					t.Errorf("the server's bandwidth %+v", sr)
				}
				// Each side's two directions, mirrored on the other, add
				// up to the total, peaks included; the messages are the
				// side's own, as perftest reports them.
				cs, ss := c.Sizes[0], s.Sizes[0]
				if cs.Local == nil || cs.Remote == nil || ss.Local == nil || ss.Remote == nil {
					t.Fatalf("bidirectional without both directions: client %v %v, server %v %v", cs.Local, cs.Remote, ss.Local, ss.Remote)
				}
				if cs.Local.Iterations != r.BW.Iterations || ss.Local.Iterations != ss.BW.Iterations || *cs.Local != *ss.Remote || *cs.Remote != *ss.Local {
					t.Errorf("directions: client %+v and %+v of %d; server %+v and %+v of %d", *cs.Local, *cs.Remote, r.BW.Iterations, *ss.Local, *ss.Remote, ss.BW.Iterations)
				}
				if got, want := r.BW.MsgRateMpps, cs.Local.MsgRateMpps+cs.Remote.MsgRateMpps; got != want {
					t.Errorf("message rate %g Mpps, want both directions' %g", got, want)
				}
				if p := max(r.BW.AvgMBps, cs.Local.PeakMBps+cs.Remote.PeakMBps); r.BW.PeakMBps != p {
					t.Errorf("bidirectional peak %.2f MB/s, want the two directions' %.2f", r.BW.PeakMBps, p)
				}
				if s.Mismatches != 0 {
					t.Errorf("%d data mismatches on the server", s.Mismatches)
				}
			}
			if got := s.Sizes[0].BW.Iterations; tc.conn == ibverbs.QPTypeUC && tc.test == exchange.SendBW && !tc.bidi && (got == 0 || got > r.BW.Iterations) {
				t.Errorf("the UC receiver counted %d of %d messages sent", got, r.BW.Iterations)
			}
			if !tc.bidi && (r.Local != nil || r.Remote != nil) {
				t.Errorf("one-way test with directions %v, %v", r.Local, r.Remote)
			}
			t.Logf("%.2f MB/s avg, %.2f peak, %d iterations", r.BW.AvgMBps, r.BW.PeakMBps, r.BW.Iterations)
		})
	}
}

// TestDurationLatencyEndsOnEachSidesClock runs write_lat and send_lat for
// a duration with one side starting 300 ms after the other, so the two
// sides' time runs out many iterations apart: the side that carries on
// must end at its own deadline, not wait out the idle timeout (5 s here)
// for a message the other will not send, and report the peer gone.
func TestDurationLatencyEndsOnEachSidesClock(t *testing.T) {
	for _, test := range []exchange.Test{exchange.WriteLat, exchange.SendLat} {
		for _, late := range []string{"server", "client"} {
			t.Run(test.String()+"/"+late+"_late", func(t *testing.T) {
				defer bench.SetBeforeLoop(func(client bool) {
					if client == (late == "client") {
						time.Sleep(300 * time.Millisecond)
					}
				})()
				spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 8, Duration: 1,
					NumQPs: 1, TXDepth: 1, RXDepth: 64, CQModeration: 1}
				start := time.Now()
				c, s := loopback(t, spec)
				took := time.Since(start)
				if len(c.Sizes) != 1 || len(s.Sizes) != 1 {
					t.Fatalf("sizes: client %d, server %d", len(c.Sizes), len(s.Sizes))
				}
				if lat := c.Sizes[0].Lat; lat.N == 0 || lat.Typical <= 0 {
					t.Errorf("latency %+v", lat)
				}
				if took > 4*time.Second {
					t.Errorf("took %v for a 1 s test", took)
				}
				t.Logf("%d samples, t_typical %.2f us, %v in all", c.Sizes[0].Lat.N, c.Sizes[0].Lat.Typical/1000, took)
			})
		}
	}
}

// TestBidirectionalSendForADuration runs send_bw both ways for a
// duration: the one loop on each side must stop sending at its deadline,
// go on receiving until the peer has stopped too, and end without an idle
// timeout (5 s here). What each side sent is timed to its last send's
// completion, not to the end of its wait for the peer's messages. The
// server starts 500 ms late, so that the client waits at least 700 ms
// past its deadline (the server's 500 ms more of sending, then 200 ms of
// quiet): timed to that wait, the client's figure would be 1.7 s or more,
// where the bound is 1.4 s, which leaves an emulated VM on a loaded host
// 400 ms for its last completions (CI saw 156 ms).
func TestBidirectionalSendForADuration(t *testing.T) {
	defer bench.SetBeforeLoop(func(client bool) {
		if !client {
			time.Sleep(500 * time.Millisecond)
		}
	})()
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 1,
		NumQPs: 1, TXDepth: 32, RXDepth: 64, CQModeration: 8, Bidirectional: true}
	start := time.Now()
	c, s := loopback(t, spec)
	took := time.Since(start)
	for side, r := range map[string]*bench.Result{"client": c, "server": s} {
		if len(r.Sizes) != 1 || r.Sizes[0].BW.Iterations == 0 || r.Sizes[0].BW.AvgMBps <= 0 {
			t.Fatalf("%s: %+v", side, r.Sizes)
		}
		if l := r.Sizes[0].Local; l == nil || l.Elapsed < time.Second || l.Elapsed > 1400*time.Millisecond {
			t.Errorf("%s: sent %+v; want it timed over the 1 s it sent for", side, l)
		}
	}
	if took > 5*time.Second {
		t.Errorf("took %v for a 1 s test", took)
	}
	t.Logf("%d messages sent by the client, %v in all", c.Sizes[0].BW.Iterations, took)
}

// TestBidirectionalUDSendTime runs send_bw both ways over UD with one
// receive posted on each side, so that most datagrams are dropped and
// each side's receiving ends only after 500 ms without one: the time
// each side reports for what it sent ends at its last send's completion
// (under 100 ms in an emulated VM, 500 datagrams, so that a VM slowed
// by a loaded host stays well under it), not after that quiet period.
func TestBidirectionalUDSendTime(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 512, Iterations: 500,
		NumQPs: 1, TXDepth: 32, RXDepth: 1, CQModeration: 8, Bidirectional: true}
	c, s := loopback(t, spec)
	for _, r := range []*bench.Result{c, s} {
		if len(r.Sizes) != 1 || r.Sizes[0].Local == nil || r.Sizes[0].Remote == nil {
			t.Fatalf("%s: %+v", r.Role, r.Sizes)
		}
		l, rem := r.Sizes[0].Local, r.Sizes[0].Remote
		t.Logf("%s: sent %d in %v; the peer sent %d in %v", r.Role, l.Iterations, l.Elapsed, rem.Iterations, rem.Elapsed)
		if l.Iterations != 500 || l.Elapsed <= 0 || l.Elapsed >= 500*time.Millisecond {
			t.Errorf("%s: sent %d datagrams in %v; want 500, timed to the last one's completion", r.Role, l.Iterations, l.Elapsed)
		}
	}
}

// TestMargin runs tests of 3 s with a margin of 1 s at each end (-D 3
// -f 1): what each side reports, messages, time and CPU time, covers the
// middle second, about a third of the run, on the sending and on the
// receiving side, and a latency test keeps the samples of that second and
// reports its iterations (it reported the whole run's 3 s of them).
func TestMargin(t *testing.T) {
	cpu := func(l *bench.Local, client bool) { l.CPUUtil = true }
	// The span's edges are the first polls past them, which a stall of
	// the emulator delays: send_bw's client has measured 0.897 s. A
	// stall of 400 ms at the start, or of 700 ms at the end, still
	// passes, where the figures of the whole run are of 3 s (and those
	// of a run less one margin would be of 2 s).
	near := func(d, want time.Duration) bool { return d > want*6/10 && d < want*17/10 }
	for _, test := range []exchange.Test{exchange.WriteBW, exchange.SendBW, exchange.SendLat, exchange.ReadLat} {
		t.Run(test.String(), func(t *testing.T) {
			spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 3, Margin: 1,
				NumQPs: 1, TXDepth: 32, RXDepth: 64, CQModeration: 8}
			if test.IsLatency() {
				spec.TXDepth, spec.CQModeration = 1, 1
			}
			c, s := loopback(t, spec, cpu)
			for _, side := range []struct {
				name string
				r    *bench.Result
			}{{"client", c}, {"server", s}} {
				if len(side.r.Sizes) != 1 || side.r.Sizes[0].CPU == nil {
					t.Fatalf("%s: %+v", side.name, side.r.Sizes)
				}
				r := side.r.Sizes[0]
				if test.IsLatency() {
					// A sample is half the time from one post to the next, so
					// the samples kept tile the time they cover: the middle
					// second, however the rate varied over the run (under
					// emulation the first second is often the slowest).
					// (read_lat's sample is the whole time from one
					// post to the next.)
					per := 2.0
					if test == exchange.ReadLat {
						per = 1
					}
					var span float64
					for _, v := range r.Samples {
						span += per * v
					}
					// Both sides of send_lat time it, as perftest's
					// do; read_lat's server only lets its memory be read.
					timed := side.name == "client" || test != exchange.ReadLat
					// The client's samples leave out its yields to the
					// scheduler, seen under emulation to take up to 7%
					// of the second (a bound of 10% failed once).
					covered := time.Duration(span)
					if side.name == "client" {
						covered += covered / 10
					}
					if timed && (r.Lat.N == 0 || !near(covered, time.Second)) {
						t.Errorf("%s: %d samples kept of %d iterations, covering %v; want the middle second's",
							side.name, r.Lat.N, r.CPU.Messages, time.Duration(span))
					}
					if !timed && r.Lat.N != 0 {
						t.Errorf("%s: %d samples, where the peer times the test", side.name, r.Lat.N)
					}
					if timed {
						t.Logf("%s: %d samples kept of %d iterations run, %d reported, covering %v",
							side.name, r.Lat.N, r.CPU.Messages, r.Iterations, time.Duration(span))
					}
					// The iterations reported are the middle second's, as
					// the samples (and so the tps) are, not the run's 3 s:
					// as many as the samples on a side that times the
					// test, and fewer than the run's on both sides
					// (read_lat's server reports the client's, and runs
					// none).
					if timed && (r.Iterations < uint64(r.Lat.N) || r.Iterations > uint64(r.Lat.N)+uint64(r.Lat.N)/100+2) {
						t.Errorf("%s: %d iterations reported over %d samples of the middle second (%d run)",
							side.name, r.Iterations, r.Lat.N, r.CPU.Messages)
					}
					if r.Iterations >= r.CPU.Messages && (side.name == "client" || test != exchange.ReadLat) {
						t.Errorf("%s: %d iterations reported of %d run; want the middle second's of 3", side.name, r.Iterations, r.CPU.Messages)
					}
					if side.name == "server" {
						t.Logf("server: %d iterations reported of %d run, CPU over %v", r.Iterations, r.CPU.Messages, r.CPU.Wall)
					}
					// read_lat's server, which runs no loop, spreads the
					// CPU time of the middle second, which it takes by
					// its clock, over the client's count of it; it took
					// the whole run's 3 s, per message three times too much.
					if !timed && !near(r.CPU.Wall, time.Second) {
						t.Errorf("%s: CPU time over %v, want the measured second", side.name, r.CPU.Wall)
					}
					continue
				}
				if !near(r.BW.Elapsed, time.Second) || r.BW.Iterations == 0 {
					t.Errorf("%s: %d messages in %v, want the middle second's", side.name, r.BW.Iterations, r.BW.Elapsed)
				}
				// write_bw's server, which runs no loop, takes its CPU
				// time at the span's edges by its clock, where it took
				// the whole run's 3 s for the client's count of 1 s.
				if !near(r.CPU.Wall, time.Second) {
					t.Errorf("%s: CPU time over %v, want the measured second", side.name, r.CPU.Wall)
				}
				t.Logf("%s: %d messages in %v, CPU over %v", side.name, r.BW.Iterations, r.BW.Elapsed, r.CPU.Wall)
			}
		})
	}
}

// TestWarmUp runs atomic_bw's fetch-and-add with and without a warm-up
// (--perform_warm_up): each QP completes a TX depth of extra operations,
// outside what the test reports, and --validate, which checks the last
// value fetched against the adds of the warm-up and the test, finds the
// peer's counters moved by both. The device's packet counter, which
// retransmissions under emulation also move, is logged.
func TestWarmUp(t *testing.T) {
	info := rdmatest.Device(t)
	set, _ := counters.Open("/sys", info.Name, info.Port, []string{"sent_pkts"}) // nil: not logged
	const qps, tx, iters = 2, 16, 100
	sent := func(warm bool) uint64 {
		spec := exchange.TestSpec{Test: exchange.AtomicBW, ConnType: ibverbs.QPTypeRC, Size: 8, Iterations: iters,
			NumQPs: qps, TXDepth: tx, CQModeration: 4, ValidateData: true, WarmUp: warm}
		var before, after counters.Snapshot
		if set != nil {
			before, _ = set.Read()
		}
		c, _ := loopback(t, spec)
		if c.Mismatches != 0 || c.Sizes[0].BW.Iterations != qps*iters {
			t.Errorf("warm-up %v: %d mismatches, %d messages reported", warm, c.Mismatches, c.Sizes[0].BW.Iterations)
		}
		if want := map[bool]uint64{false: 0, true: tx}[warm]; c.WarmedUp != want {
			t.Errorf("warm-up %v: each QP warmed up with %d operations, want %d", warm, c.WarmedUp, want)
		}
		if set == nil {
			return 0
		}
		after, _ = set.Read()
		return set.Diff(before, after)[0].Delta
	}
	cold, warm := sent(false), sent(true)
	if set == nil {
		t.Log("no sent_pkts counter on this device: packets not logged")
		return
	}
	// One device plays both sides: a request and a response each.
	t.Logf("packets: %d without a warm-up, %d with (%d more expected)", cold, warm, 2*qps*tx)
}

// TestWarmUpOutlastsControlTimeout: the passive side waits at the
// barrier for as long as the active side's warm-up takes, not for the
// control protocol's bound (30 s, 300 ms here), which a large warm-up on
// a slow link outlasts (1 s here, by a pause before it).
func TestWarmUpOutlastsControlTimeout(t *testing.T) {
	defer bench.SetControlTimeout(300 * time.Millisecond)()
	defer bench.SetBeforeWarmUp(func() { time.Sleep(time.Second) })()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 100,
		NumQPs: 1, TXDepth: 16, CQModeration: 4, WarmUp: true}
	c, _ := loopback(t, spec)
	if c.WarmedUp != 16 || c.Sizes[0].BW.Iterations != 100 {
		t.Errorf("warmed up with %d writes, reported %d", c.WarmedUp, c.Sizes[0].BW.Iterations)
	}
}

// TestBidirectionalWarmUpOutlastsControlTimeout: in a bidirectional test
// both sides are active, and each waits at the barrier for the peer's
// warm-up as long as it takes, not for the control protocol's bound (300
// ms here): one side's warm-up is held back 1 s (as a rate limit of its
// own would), and the other, done with its own, waits for it.
func TestBidirectionalWarmUpOutlastsControlTimeout(t *testing.T) {
	defer bench.SetControlTimeout(300 * time.Millisecond)()
	var calls atomic.Int32
	defer bench.SetBeforeWarmUp(func() {
		if calls.Add(1) == 1 { // one side's only
			time.Sleep(time.Second)
		}
	})()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 100,
		NumQPs: 1, TXDepth: 16, CQModeration: 4, WarmUp: true, Bidirectional: true}
	c, s := loopback(t, spec)
	for _, r := range []*bench.Result{c, s} {
		if r.WarmedUp != 16 || r.Sizes[0].BW.Iterations != 100 {
			t.Errorf("%s: warmed up with %d writes, reported %d", r.Role, r.WarmedUp, r.Sizes[0].BW.Iterations)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("%d warm-ups, want both sides'", calls.Load())
	}
}

// TestMRPerQP runs bandwidth tests on three QPs with one memory region
// per QP (--mr_per_qp): each QP's endpoint offers its own rkey, where
// they share the buffer's otherwise, and the data, read into or written
// and sent through each QP's region, arrives intact.
func TestMRPerQP(t *testing.T) {
	for _, tc := range []struct {
		test exchange.Test
		srq  bool
	}{{exchange.WriteBW, false}, {exchange.ReadBW, false}, {exchange.SendBW, false}, {exchange.SendBW, true}, {exchange.AtomicBW, false}} {
		for _, perQP := range []bool{false, true} {
			spec := exchange.TestSpec{Test: tc.test, ConnType: ibverbs.QPTypeRC, Size: 1024, Iterations: 100,
				NumQPs: 3, TXDepth: 16, RXDepth: 32, CQModeration: 4, ValidateData: true, MRPerQP: perQP, SRQ: tc.srq}
			if tc.test.IsAtomic() {
				spec.Size = 8
			}
			c, s := loopback(t, spec)
			for _, r := range []*bench.Result{c, s} {
				keys := map[uint32]bool{}
				for _, e := range r.Header.Local {
					keys[e.RKey] = true
				}
				if want := map[bool]int{false: 1, true: 3}[perQP]; len(keys) != want {
					t.Errorf("%v, SRQ %v, MR per QP %v: the %s's QPs offer %d rkeys, want %d", tc.test, tc.srq, perQP, r.Role, len(keys), want)
				}
			}
			if c.Mismatches != 0 || c.Sizes[0].BW.Iterations != 300 {
				t.Errorf("%v, SRQ %v, MR per QP %v: %d mismatches, %d messages", tc.test, tc.srq, perQP, c.Mismatches, c.Sizes[0].BW.Iterations)
			}
		}
	}
}

// TestLatencyGap runs the latency loops with the client pausing 40 ms
// before each request (--latency_gap): the runs take the pauses' time,
// and the samples leave them out, where counting them would put
// t_typical at 20 ms (ping-pong: half of a round trip and the pause) or
// 40 ms (read_lat) or more. The mark, a quarter of the gap, leaves room
// for rxe's round trips in a loaded emulated VM, which have reached 3 ms
// after a pause.
func TestLatencyGap(t *testing.T) {
	const iters, gap = 15, 40 * time.Millisecond
	for _, test := range []exchange.Test{exchange.WriteLat, exchange.SendLat, exchange.ReadLat} {
		spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: iters,
			NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1}
		start := time.Now()
		c, _ := loopback(t, spec, func(l *bench.Local, client bool) {
			if client {
				l.LatencyGap = gap
			}
		})
		took := time.Since(start)
		lat := c.Sizes[0].Lat
		if lat.N != iters-1 || lat.Typical >= float64(gap/4) || took < (iters-1)*gap {
			t.Errorf("%v: %d samples, t_typical %.1f µs, %v in all; want %d under %v, in at least %v",
				test, lat.N, lat.Typical/1e3, took, iters-1, gap/4, (iters-1)*gap)
		}
		t.Logf("%v: t_typical %.1f µs, %v in all", test, lat.Typical/1e3, took)
	}
}

// TestRelaxedOrdering registers the buffers with and without PCIe relaxed
// ordering, as the client asks: both sides' headers say which, and the
// data arrives intact either way (rxe takes the flag and ignores it).
// write_lat registers without it whatever the client asks, as
// ib_write_lat does: its receiver polls each message's last byte.
func TestRelaxedOrdering(t *testing.T) {
	t.Run("write_lat", func(t *testing.T) {
		spec := exchange.TestSpec{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 20,
			NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1, ValidateData: true}
		c, s := loopback(t, spec)
		if c.Header.PCIeRelaxOrder || s.Header.PCIeRelaxOrder {
			t.Errorf("write_lat's PCIe relax order: client %v, server %v; want off on both", c.Header.PCIeRelaxOrder, s.Header.PCIeRelaxOrder)
		}
		if c.Mismatches != 0 || s.Mismatches != 0 {
			t.Errorf("data mismatches: client %d, server %d", c.Mismatches, s.Mismatches)
		}
	})
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", off), func(t *testing.T) {
			spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 100,
				NumQPs: 1, TXDepth: 32, RXDepth: 64, CQModeration: 8, ValidateData: true, NoRelaxedOrdering: off}
			c, s := loopback(t, spec)
			if c.Header.PCIeRelaxOrder == off || s.Header.PCIeRelaxOrder == off {
				t.Errorf("PCIe relax order: client %v, server %v", c.Header.PCIeRelaxOrder, s.Header.PCIeRelaxOrder)
			}
			if c.Mismatches != 0 || s.Mismatches != 0 {
				t.Errorf("data mismatches: client %d, server %d", c.Mismatches, s.Mismatches)
			}
		})
	}
}

// TestOutstandingReads runs read_bw with -o 2: both sides offer 2, and
// the client's QP issues at most 2, as the headers report. (A power of
// two: rxe and mlx5 round the depth up to one, and the header reports
// what the QP got.)
func TestOutstandingReads(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.ReadBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 200,
		NumQPs: 2, TXDepth: 32, CQModeration: 8, OutReads: 2, ValidateData: true}
	c, s := loopback(t, spec)
	if c.Mismatches != 0 || len(c.Sizes) != 1 || c.Sizes[0].BW.Iterations != 400 {
		t.Fatalf("read_bw -o 2: %d mismatches, %+v", c.Mismatches, c.Sizes)
	}
	for _, r := range []*bench.Result{c, s} {
		h := r.Header
		if h.OutstandingReads != 2 {
			t.Errorf("%s header: %d outstanding reads, want 2", r.Role, h.OutstandingReads)
		}
		for _, e := range append(h.Local, h.Remote...) {
			if e.OutReads != 2 {
				t.Errorf("%s header: endpoint QPN %#x offers %d reads, want 2", r.Role, e.QPN, e.OutReads)
			}
		}
	}
}

// TestSteadyStateAllocations runs write_bw and send_bw, polling and with
// -e, send_lat and read_lat with -e, and write_bw and write_lat with
// immediate data checked per message, with 300 and with 3,000
// iterations and compares the allocations: set-up allocates, the measured
// loop must not, so the difference must be (nearly) nothing.
func TestSteadyStateAllocations(t *testing.T) {
	for _, tc := range []struct {
		test   exchange.Test
		bidi   bool
		events bool
		imm    bool // immediate data, each message's checked (--validate)
	}{
		{exchange.WriteBW, false, false, false}, {exchange.SendBW, false, false, false}, {exchange.SendBW, true, false, false},
		{exchange.WriteBW, false, true, false}, {exchange.SendBW, true, true, false},
		{exchange.SendLat, false, true, false}, {exchange.ReadLat, false, true, false},
		{exchange.WriteBW, true, false, true}, {exchange.WriteLat, false, false, true},
	} {
		test := tc.test
		mallocs := func(iters uint64) uint64 {
			spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: iters,
				NumQPs: 1, TXDepth: 64, RXDepth: 128, CQModeration: 16, PostList: 16, Bidirectional: tc.bidi,
				Events: tc.events, Immediate: tc.imm, ValidateData: tc.imm}
			if test.IsLatency() {
				spec.TXDepth, spec.CQModeration, spec.PostList = 1, 1, 1
			}
			var a, b runtime.MemStats
			runtime.ReadMemStats(&a)
			loopback(t, spec)
			runtime.ReadMemStats(&b)
			return b.Mallocs - a.Mallocs
		}
		mallocs(300) // warm up
		small, large := mallocs(300), mallocs(3000)
		t.Logf("%v (bidirectional %v, events %v, immediate %v): %d allocations for 300 iterations, %d for 3000", test, tc.bidi, tc.events, tc.imm, small, large)
		// 2,700 more messages may cost a few allocations of timers and
		// goroutine stacks, not one per message.
		if large > small+100 {
			t.Errorf("%v: %d more allocations for 2,700 more messages", test, large-small)
		}
	}
}

// serverOnDevice returns the test device's Local, with an idle timeout
// of idle, and a listener on 127.0.0.1 for a server of it.
func serverOnDevice(t *testing.T, idle time.Duration) (bench.Local, net.Listener) {
	t.Helper()
	info := rdmatest.Device(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // a one-test Serve hands it back open
	return bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: idle}, ln
}

// serving runs bench.Serve within lim, with done (nil for none), on the
// test device (serverOnDevice, idle 5 s), until the test ends, or 90 s
// have passed: it returns the server's Local, its address and the
// context that bounds it, for the test's clients. The test fails if
// Serve returns an error, or does not end within 10 s of its context.
func serving(t *testing.T, lim exchange.Limits, done func(*bench.Result, error)) (context.Context, bench.Local, string) {
	t.Helper()
	l, ln := serverOnDevice(t, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	served := make(chan error, 1)
	go func() { served <- bench.Serve(ctx, ln, l, lim, false, nil, done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not end within 10 s of its context")
		}
	})
	return ctx, l, ln.Addr().String()
}

// TestServeManyNoLeaks runs 600 tests in a row against one Serve and checks
// that file descriptors, goroutines and the kernel's count of RDMA
// resources end where they started, and that memory stops growing: over
// the second 300, the Go and C heaps may grow by 64 KiB
// (rdmatest.CheckSteadyGrowth), which a leak of 220 bytes a test passes.
// (1,000 tests took 67 s of CI's emulated VM; 600 take about 40.)
func TestServeManyNoLeaks(t *testing.T) {
	l, ln := serverOnDevice(t, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	var failures, finished atomic.Int32
	go func() {
		served <- bench.Serve(ctx, ln, l, exchange.DefaultLimits(), false, nil, func(_ *bench.Result, err error) {
			if err != nil {
				failures.Add(1)
			}
			finished.Add(1)
		})
	}()
	// settled waits until the server has closed what its side of the
	// tests so far opened: its side of a test ends after the client's,
	// closing its QPs, device and connection (a fixed sleep of 100 ms
	// once saw an fd of the last one still open).
	settled := func(tests int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); finished.Load() < int32(tests); {
			if time.Now().After(deadline) {
				t.Fatalf("the server finished %d of %d tests within 10 s", finished.Load(), tests)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The fourth of each four is a test of two threads: two connections,
	// and on each side two OS threads that end with it.
	tests := []exchange.Test{exchange.WriteBW, exchange.SendBW, exchange.ReadLat, exchange.SendBW}
	one := func(i int) {
		spec := exchange.TestSpec{Test: tests[i%len(tests)], ConnType: ibverbs.QPTypeRC, Size: 256, Iterations: 20,
			NumQPs: 2, TXDepth: 8, RXDepth: 16, CQModeration: 4}
		if spec.Test.IsLatency() {
			spec.NumQPs, spec.TXDepth, spec.CQModeration = 1, 1, 1
		}
		if i%len(tests) == 3 {
			spec.Threads = 2
		}
		if _, err := bench.Client(context.Background(), ln.Addr().String(), spec, l, nil); err != nil {
			t.Fatalf("test %d: %v", i, err)
		}
	}
	n := 600
	if testing.Short() {
		n = 60
	}
	const warm = 30
	for i := range warm {
		one(i)
	}
	settled(warm)
	u0, g0 := rdmatest.Measure(t), runtime.NumGoroutine()
	// The first half warms up what grows to a plateau (seen: 30 KiB of Go
	// heap, 80 KiB of C heap, up to 5 MiB of RSS with a new OS thread and
	// its malloc arena). A leak keeps growing through the second.
	for i := range n / 2 {
		one(i)
	}
	half := rdmatest.Measure(t)
	for i := range n / 2 {
		one(i)
	}
	settled(warm + n)
	u1, g1 := rdmatest.Measure(t), runtime.NumGoroutine()
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	t.Logf("%d tests, goroutines %d -> %d\nbefore: %v\nhalf:   %v\nafter:  %v\nrdma resources before:\n%safter:\n%s",
		n, g0, g1, u0, half, u1, u0.RDMA, u1.RDMA)
	rdmatest.CheckSteadyGrowth(t, u0, half, u1, n/2, "tests")
	if u1.FDs != u0.FDs || g1 > g0 || u1.RDMA != u0.RDMA || failures.Load() != 0 {
		t.Errorf("leak: fds %d -> %d, goroutines %d -> %d, %d failed tests, rdma resources changed: %v",
			u0.FDs, u1.FDs, g0, g1, failures.Load(), u1.RDMA != u0.RDMA)
	}
}

// TestServeBoundsDurationSamples: a serve's limit on a latency test's
// iterations bounds the samples its side of a test of a duration keeps
// (it thins them past it), where the time alone bounded them (up to 2^26,
// 512 MiB, on a host with the memory).
func TestServeBoundsDurationSamples(t *testing.T) {
	l, ln := serverOnDevice(t, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := exchange.DefaultLimits()
	// Far below what 2 s give even a loaded VM (1292 round trips seen
	// where an idle one makes 34107).
	lim.MaxIterations = 200
	results := make(chan *bench.Result, 1)
	go bench.Serve(ctx, ln, l, lim, true, nil, func(r *bench.Result, err error) {
		if err != nil {
			t.Errorf("server: %v", err)
		}
		results <- r
	})
	spec := exchange.TestSpec{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeRC, Size: 8, Duration: 2,
		NumQPs: 1, TXDepth: 1, RXDepth: 1, CQModeration: 1}
	c, err := bench.Client(ctx, ln.Addr().String(), spec, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := <-results
	if s == nil || len(s.Sizes) != 1 || len(c.Sizes) != 1 {
		t.Fatalf("results: server %+v, client %+v", s, c)
	}
	sl, cl := s.Sizes[0].Lat, c.Sizes[0].Lat
	t.Logf("server: %d samples kept of %d (1 in %d); client: %d of %d", sl.Stored, sl.N, sl.Every, cl.Stored, cl.N)
	if len(s.Sizes[0].Samples) > 200 || sl.Every < 2 || sl.N <= 200 {
		t.Errorf("server: %d samples kept of %d, 1 in %d; want at most 200 of more", len(s.Sizes[0].Samples), sl.N, sl.Every)
	}
	if cl.N <= 200 || cl.Every > 1 || len(c.Sizes[0].Samples) != cl.N {
		t.Errorf("client: %d samples kept of %d, 1 in %d; want all of more than 200", len(c.Sizes[0].Samples), cl.N, cl.Every)
	}
}

// TestPostPath checks which post path each side takes: ibv_post_send with
// OldPostSend, else the ibv_wr_* API, which soft-RoCE has; the header
// says which, and the data arrive either way.
func TestPostPath(t *testing.T) {
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	da, err := ctx.QueryDevice()
	ctx.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, cm bool }{{true, false}, {false, false}} { // rdma_cm: in internal/cli's end-to-end test
		old := tc.old
		spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 200,
			NumQPs: 1, TXDepth: 32, RXDepth: 1, CQModeration: 8, ValidateData: true, OldPostSend: old, RdmaCM: tc.cm}
		c, s := loopback(t, spec)
		if c.Mismatches != 0 {
			t.Errorf("OldPostSend %v, rdma_cm %v: %d data mismatches", old, tc.cm, c.Mismatches)
		}
		for _, r := range []*bench.Result{c, s} {
			switch {
			case old && r.Header.WRAPI:
				t.Errorf("%s with OldPostSend: the header says the ibv_wr_* API", r.Role)
			case !old && !r.Header.WRAPI && da.VendorID == 0xffffff:
				t.Errorf("%s on soft-RoCE: the header says ibv_post_send, want the ibv_wr_* API", r.Role)
			}
			t.Logf("OldPostSend %v, rdma_cm %v, %s: ibv_wr_* API %v", old, tc.cm, r.Role, r.Header.WRAPI)
		}
	}
}

// qpAttrs is what recordQPAttrs saw of each side's QPs: true for the
// client's.
type qpAttrs[T any] struct {
	mu sync.Mutex
	m  map[bool][]T
}

func (q *qpAttrs[T]) get() map[bool][]T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.m
}

// recordQPAttrs queries each QP of both sides as the side connects, for
// the rest of the test, and keeps f of its attributes.
func recordQPAttrs[T any](t *testing.T, f func(ibverbs.QPAttr) T) *qpAttrs[T] {
	q := &qpAttrs[T]{m: map[bool][]T{}}
	t.Cleanup(bench.SetAfterConnect(func(client bool, qps []*ibverbs.QP) {
		for _, qp := range qps {
			a, err := qp.Query()
			if err != nil {
				t.Error(err)
			}
			q.mu.Lock()
			q.m[client] = append(q.m[client], f(a))
			q.mu.Unlock()
		}
	}))
	return q
}

// sideAttrCase is one run of checkSideAttr: what each side's Local is
// given, and what its two QPs' attribute must then be.
type sideAttrCase struct {
	name             string
	client, server   int
	wantCli, wantSrv uint8
	rdmaCM           bool
}

// checkSideAttr runs a small write_bw for each case, with set giving each
// side's Local its value, and checks the attribute get of each side's QPs.
func checkSideAttr(t *testing.T, what string, cases []sideAttrCase, get func(ibverbs.QPAttr) uint8, set func(*bench.Local, int)) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 20,
		NumQPs: 2, TXDepth: 16, CQModeration: 1}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := spec
			spec.RdmaCM = tc.rdmaCM
			rec := recordQPAttrs(t, get)
			cmHost := ""
			if tc.rdmaCM {
				cmHost = gidHost(t)
			}
			loopback(t, spec, func(l *bench.Local, client bool) {
				set(l, tc.server)
				if client {
					set(l, tc.client)
					l.CMHost = cmHost
				}
			})
			got := rec.get()
			if !slices.Equal(got[true], []uint8{tc.wantCli, tc.wantCli}) || !slices.Equal(got[false], []uint8{tc.wantSrv, tc.wantSrv}) {
				t.Errorf("%s: client %v, server %v; want %d and %d on each QP", what, got[true], got[false], tc.wantCli, tc.wantSrv)
			}
		})
	}
}

// TestQPTimeout: each side's QPs get its own Local.QPTimeout (-u), and
// perftest's 14 without one; through rdma_cm (-R) too, where rdma_cm's
// own would be the path's (19 on soft-RoCE).
func TestQPTimeout(t *testing.T) {
	checkSideAttr(t, "QP timeouts", []sideAttrCase{
		{"default", 0, 0, 14, 14, false},
		{"set", 20, 9, 20, 9, false},
		{"rdma_cm", 20, 9, 20, 9, true},
		{"rdma_cm default", 0, 0, 14, 14, true},
	}, func(a ibverbs.QPAttr) uint8 { return a.Timeout }, func(l *bench.Local, v int) { l.QPTimeout = uint8(v) })
}

// TestRetryCount sets each side's RC retry count (--retry_count), none
// on the client and 3 on the server, with QPs gorperf connects and with
// rdma_cm's, where the connection request carries the client's to both
// sides' QPs and rdma_accept's is ignored; by default both have 7, also
// through rdma_cm, whose own default (rdmacm.DefaultRetryCount) is 6.
func TestRetryCount(t *testing.T) {
	checkSideAttr(t, "retry counts", []sideAttrCase{
		{"default", 0, 0, 7, 7, false},
		{"set", -1, 3, 0, 3, false},
		{"rdma_cm", -1, 3, 0, 0, true},
		{"rdma_cm default", 0, 0, 7, 7, true},
	}, func(a ibverbs.QPAttr) uint8 { return a.RetryCnt }, func(l *bench.Local, v int) { l.RetryCount = v })
}

// TestGRHAndPKey: the spec's flow labels (taken in turn) and traffic
// class and each side's P_Key index reach the QPs' attributes, as the
// kernel reports them; an index beyond the port's table fails before a
// test.
func TestGRHAndPKey(t *testing.T) {
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	pa, err := ctx.QueryPort(info.Port)
	ctx.Close()
	if err != nil {
		t.Fatal(err)
	}
	last := uint16(pa.PKeyTableLen - 1)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 20,
		NumQPs: 3, TXDepth: 16, CQModeration: 1, TrafficClass: 32, FlowLabels: []uint32{0x11, 0xfedcb}}
	type grh struct {
		fl        uint32
		tc        uint8
		pkeyIndex uint16
	}
	rec := recordQPAttrs(t, func(a ibverbs.QPAttr) grh { return grh{a.AH.GRH.FlowLabel, a.AH.GRH.TrafficClass, a.PKeyIndex} })
	loopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.PKeyIndex = last
		}
	})
	got := rec.get()
	for _, client := range []bool{true, false} {
		var want []grh
		for i := range 3 {
			w := grh{spec.FlowLabels[i%2], 32, 0}
			if client {
				w.pkeyIndex = last
			}
			want = append(want, w)
		}
		if !slices.Equal(got[client], want) {
			t.Errorf("client %v: QPs' flow label, traffic class, P_Key index %+v, want %+v", client, got[client], want)
		}
	}
	err = bench.Check(bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, PKeyIndex: last + 1})
	if want := fmt.Sprintf("P_Key index %d is beyond %s port %d's table of %d entries", last+1, info.Name, info.Port, last+1); err == nil || err.Error() != want {
		t.Errorf("Check with P_Key index %d: %v, want %q", last+1, err, want)
	}
}

// gidHost is the address of the test device's GID: what rdma_cm dials
// (Local.CMHost), not the control connection's loopback address.
func gidHost(t *testing.T) string {
	t.Helper()
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ctx.SelectGID(info.Port, ibverbs.GIDRule{})
	ctx.Close()
	if err != nil {
		t.Fatal(err)
	}
	return g.Entry.IP().String()
}

// TestSRQ runs the send tests with an SRQ (--use-srq) on rxe: every QP of
// a side takes its receives from the same SRQ, which refuses none of the
// test's, and the QPs themselves take none; every message arrives, and the
// data checks out.
func TestSRQ(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec exchange.TestSpec
		cm   bool
		msgs uint64
	}{
		{"send_bw", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 256, Iterations: 50, NumQPs: 3}, false, 150},
		{"send_bw bidirectional", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 256, Iterations: 50, NumQPs: 2, Bidirectional: true}, false, 100}, // this side's
		{"send_bw UD", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 256, Iterations: 50, NumQPs: 2}, false, 0},
		{"send_bw rdma_cm", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 256, Iterations: 50, NumQPs: 2, RdmaCM: true}, true, 100},
		{"send_lat", exchange.TestSpec{Test: exchange.SendLat, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 50, NumQPs: 1}, false, 49}, // samples: perftest's iters-1
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.SRQ, spec.ValidateData = true, true
			spec.TXDepth, spec.RXDepth, spec.CQModeration = 16, 8, 1
			var mu sync.Mutex
			srqs := map[bool]map[*ibverbs.SRQ]int{true: {}, false: {}}
			defer bench.SetAfterConnect(func(client bool, qps []*ibverbs.QP) {
				mu.Lock()
				defer mu.Unlock()
				for _, qp := range qps {
					srqs[client][qp.SRQ()]++
					if err := qp.PostRecv([]ibverbs.RecvWR{{ID: 1}}); !errors.Is(err, syscall.EINVAL) {
						t.Errorf("PostRecv on a QP of an SRQ: %v, want EINVAL", err)
					}
				}
			})()
			cr, sr := loopback(t, spec, cmClient(t, tc.cm))
			mu.Lock()
			defer mu.Unlock()
			for _, client := range []bool{true, false} {
				if len(srqs[client]) != 1 || srqs[client][nil] != 0 {
					t.Errorf("client %v: QPs by SRQ %v, want all %d on one", client, srqs[client], spec.NumQPs)
				}
			}
			if !cr.Header.UsingSRQ || !sr.Header.UsingSRQ || cr.Mismatches+sr.Mismatches != 0 {
				t.Errorf("using SRQ %v/%v, %d mismatches", cr.Header.UsingSRQ, sr.Header.UsingSRQ, cr.Mismatches+sr.Mismatches)
			}
			got := cr.Sizes[0].BW.Iterations
			if spec.Test.IsLatency() {
				got = uint64(cr.Sizes[0].Lat.N)
			}
			if tc.msgs != 0 && got != tc.msgs {
				t.Errorf("%d messages, want %d", got, tc.msgs)
			}
		})
	}
}

// Over UD -a stops at the path MTU, and a size over it fails at once:
// such datagrams are dropped, and the receiver would wait out its idle
// timeout. A size over the client's own offer fails on the client before
// it asks for its test (checkSpec), and the server never gets it; the check of
// both sides after the Setups swap, where the server offers less than
// the client, is cli's TestVLANUDSizeServerCapped's.
func TestUDSizes(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, AllSizes: true, Iterations: 20,
		NumQPs: 1, TXDepth: 16, RXDepth: 32, CQModeration: 4, ValidateData: true}
	c, _ := loopback(t, spec)
	mtu := c.Header.Mtu
	if n := len(c.Sizes); n == 0 || c.Sizes[n-1].Size != mtu || c.Sizes[0].Size != 2 {
		t.Fatalf("UD -a ran %d sizes, the last %d, want 2 to the MTU, %d", n, c.Sizes[n-1].Size, mtu)
	}
	if mtu >= 4096 {
		t.Skipf("the path MTU is %d: no UD size is over it", mtu)
	}
	spec.AllSizes, spec.Size = false, 4096
	start := time.Now()
	_, _, cerr, serr := tryLoopback(t, spec)
	if cerr == nil || !strings.Contains(cerr.Error(), fmt.Sprintf("at most the path MTU, %d bytes here, not 4096", mtu)) {
		t.Errorf("4096-byte UD messages: the client's error is %v", cerr)
	}
	// The server got no test: the client gave up before it asked (on the
	// control connection, where it told the server why), or before it
	// connected (the test closed the server's listener).
	if serr != nil && !strings.Contains(serr.Error(), "gave up before it asked for a test") &&
		!strings.Contains(serr.Error(), "use of closed network connection") {
		t.Errorf("4096-byte UD messages: the server's error is %v; want the client to have given up before its test", serr)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the refusal took %v", d)
	}
}

// TestRecvPostList: a receiver that replaces its receives only in whole
// lists, down to a list of the whole queue (all a QP's receives used
// before one is replaced), with a list that divides neither the queue nor
// the run (perftest requires the run to be a multiple), and with an SRQ
// whose QPs' holdings together would otherwise exceed it, still receives
// every message, with the data where it belongs. Over several sizes (-a)
// the receives a size used and did not replace, fewer than a list, are
// replaced at its end: each size starts with the RX depth posted, where
// the queue shrank by up to a list less one a size until an RC sender
// found none and retried until the idle timeout.
func TestRecvPostList(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec exchange.TestSpec
		msgs uint64 // every QP's messages; 0 for UD, which may drop
	}{
		// 10 messages a size in lists of 8: 2 receives left over at
		// each size's end, and 6 of the 8 posted at the next's start.
		// (Each message more lengthens the sweep's sizes of megabytes
		// under emulation.)
		{"send_bw all sizes", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, NumQPs: 1, RXDepth: 8, RecvPostList: 8,
			AllSizes: true, Iterations: 10}, 10},
		{"send_bw list of the queue", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, NumQPs: 2, RXDepth: 8, RecvPostList: 8}, 120},
		{"send_bw list dividing neither queue nor run", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, NumQPs: 1, RXDepth: 12, RecvPostList: 7}, 60},
		{"send_bw SRQ", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, NumQPs: 4, RXDepth: 8, RecvPostList: 6, SRQ: true}, 240},
		{"send_bw bidirectional", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, NumQPs: 1, RXDepth: 16, RecvPostList: 16, Bidirectional: true}, 60}, // this side's
		{"send_bw UD", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, NumQPs: 2, RXDepth: 32, RecvPostList: 8}, 0},
		{"write_bw immediate", exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, NumQPs: 2, RXDepth: 8, RecvPostList: 4, Immediate: true}, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.TXDepth, spec.CQModeration = 16, 4
			if !spec.AllSizes {
				// The sweep's 8 MiB patterns are slow to fill and check under emulation.
				spec.Size, spec.Iterations, spec.ValidateData = 256, 60, true
			}
			cr, sr := loopback(t, spec)
			if cr.Mismatches+sr.Mismatches != 0 {
				t.Errorf("%d mismatches", cr.Mismatches+sr.Mismatches)
			}
			if want := len(spec.Sizes()); len(cr.Sizes) != want || len(sr.Sizes) != want {
				t.Fatalf("sizes: client %d, server %d, want %d", len(cr.Sizes), len(sr.Sizes), want)
			}
			for _, r := range cr.Sizes {
				if got := r.BW.Iterations; tc.msgs != 0 && got != tc.msgs || got == 0 {
					t.Errorf("size %d: %d messages, want %d", r.Size, got, tc.msgs)
				}
			}
		})
	}
}

// TestThreads runs bandwidth tests as several connections at once
// (TestSpec.Threads): each side's result is the sum of its threads', as
// its SizeDone has each size (once, not each thread's own), each
// thread has its share of the QPs, every message arrives intact, and
// each measuring loop runs on a thread of its own pinned to its CPU.
func TestThreads(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := range 1024 {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	for _, tc := range []struct {
		name    string
		spec    exchange.TestSpec
		threads int
		cm      bool
	}{
		{"write_bw", exchange.TestSpec{Test: exchange.WriteBW, NumQPs: 3}, 2, false},
		{"send_bw bidirectional", exchange.TestSpec{Test: exchange.SendBW, NumQPs: 3, Bidirectional: true, RXDepth: 32}, 3, false},
		{"read_bw rdma_cm", exchange.TestSpec{Test: exchange.ReadBW, NumQPs: 2}, 2, true},
		{"atomic_bw reversed", exchange.TestSpec{Test: exchange.AtomicBW, Size: 8, NumQPs: 2, Reversed: true}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const iters = 100
			spec := tc.spec
			spec.ConnType, spec.Iterations, spec.TXDepth, spec.CQModeration, spec.ValidateData = ibverbs.QPTypeRC, iters, 16, 4, true
			spec.Threads = uint16(tc.threads)
			if spec.Size == 0 {
				spec.Size = 512
			}
			var mu sync.Mutex
			loops := map[bool][]int{} // each loop's thread's CPUs, by side
			defer bench.SetBeforeLoop(func(client bool) {
				var set unix.CPUSet
				if err := unix.SchedGetaffinity(0, &set); err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				for c := range 1024 {
					if set.IsSet(c) {
						loops[client] = append(loops[client], c)
					}
				}
				if set.Count() != 1 {
					loops[client] = append(loops[client], -1) // not pinned to one
				}
			})()
			done := map[bool][]bench.SizeResult{} // what each side's SizeDone got
			cr, sr := loopback(t, spec, cmClient(t, tc.cm), func(l *bench.Local, client bool) {
				l.ThreadCPUs = cpus
				l.SizeDone = func(s bench.SizeResult) {
					mu.Lock()
					defer mu.Unlock()
					done[client] = append(done[client], s)
				}
			})
			mu.Lock()
			for client, r := range map[bool]*bench.Result{true: cr, false: sr} {
				if !reflect.DeepEqual(done[client], r.Sizes) {
					t.Errorf("%s: SizeDone got\n%+v\nthe result has\n%+v", r.Role, done[client], r.Sizes)
				}
			}
			mu.Unlock()
			for _, r := range []*bench.Result{cr, sr} {
				if len(r.Threads) != tc.threads || r.Header.Threads != tc.threads || r.Header.NumQPs != int(spec.NumQPs) ||
					len(r.Header.Local) != int(spec.NumQPs) {
					t.Errorf("%s: %d threads (header %d), %d QPs and %d endpoints; want %d threads of %d QPs",
						r.Role, len(r.Threads), r.Header.Threads, r.Header.NumQPs, len(r.Header.Local), tc.threads, spec.NumQPs)
				}
				want := iters * uint64(spec.NumQPs) // this side's, both ways too
				if got := r.Sizes[0].BW.Iterations; got != want {
					t.Errorf("%s: %d messages, want %d", r.Role, got, want)
				}
				qps := 0
				for i, th := range r.Threads {
					qps += th.QPs
					if th.CPU != cpus[i%len(cpus)] || th.Err != nil || len(th.Sizes) != 1 || th.Sizes[0].Iterations == 0 {
						t.Errorf("%s thread %d: %+v, want on CPU %d with a size measured", r.Role, i, th, cpus[i%len(cpus)])
					}
				}
				if qps != int(spec.NumQPs) {
					t.Errorf("%s: the threads have %d QPs, want %d", r.Role, qps, spec.NumQPs)
				}
			}
			if cr.Mismatches+sr.Mismatches != 0 {
				t.Errorf("%d mismatches", cr.Mismatches+sr.Mismatches)
			}
			mu.Lock()
			defer mu.Unlock()
			// Each side's loops (a passive side's too): one a thread, each
			// alone on its CPU.
			var want []int
			for i := range tc.threads {
				want = append(want, cpus[i%len(cpus)])
			}
			slices.Sort(want)
			for _, client := range []bool{true, false} {
				got := loops[client]
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("client %v: loops on CPUs %v, want %v (-1: a loop not pinned to one)", client, got, want)
				}
			}
		})
	}
}

// TestThreadsServerGathers: a one-test server gathering a test's
// connections tells another client at once that it runs one test, and
// gives up on connections that do not come, telling those that did; it
// then ends.
func TestThreadsServerGathers(t *testing.T) {
	info := rdmatest.Device(t)
	defer bench.SetGroupWait(time.Second)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := make(chan error, 1)
	go func() {
		l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
		srv <- bench.Serve(ctx, ln, l, exchange.DefaultLimits(), true, nil, func(_ *bench.Result, err error) {})
	}()
	ask := func(group uint64) *exchange.Conn {
		c := dialServer(t, ctx, ln.Addr().String(), "test")
		spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10, TXDepth: 8,
			NumQPs: 1, Threads: 3, Group: group}
		if err := c.Send(ctx, spec); err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := ask(5)
	defer first.Close()
	time.Sleep(100 * time.Millisecond) // the server reads the first before the second comes
	other := ask(6)
	defer other.Close()
	for _, tc := range []struct {
		c    *exchange.Conn
		want string
	}{
		{other, "this server runs one test, and has taken another client's"},
		{first, "a test of 3 threads: 1 of its connections came in 1s"},
	} {
		_, err := tc.c.SwapSetup(ctx, exchange.Setup{})
		var pe *exchange.PeerError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want the server's error with %q", err, tc.want)
		}
	}
	if err := <-srv; err == nil || !strings.Contains(err.Error(), "1 of its connections came") {
		t.Errorf("server: %v", err)
	}
}

// TestThreadsRateAndFailure: a side's rate limit is the whole side's,
// shared out among its threads, not each thread's; and a thread that
// cannot start fails the test on both sides at once, naming it.
func TestThreadsRateAndFailure(t *testing.T) {
	const rate, secs = 2000.0, 2 // messages a second, all threads together
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: secs,
		TXDepth: 16, CQModeration: 4, NumQPs: 2, Threads: 2}
	cr, _ := loopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.Rate = bench.RateLimit{Rate: rate, Unit: 'p', Burst: 4}
		}
	})
	got, want := cr.Sizes[0].BW.Iterations, uint64(rate*secs)
	if got > want*13/10 || got < want*6/10 {
		t.Errorf("%d messages in %d s at %v a second, all threads together; want about %d", got, secs, rate, want)
	}
	for _, th := range cr.Threads {
		if n := th.Sizes[0].Iterations; n > want*7/10 {
			t.Errorf("thread %d sent %d messages: more than its share", th.Thread, n)
		}
	}

	defer bench.SetGroupWait(time.Second)()
	spec = exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 50,
		TXDepth: 16, CQModeration: 4, NumQPs: 2, Threads: 2}
	start := time.Now()
	_, _, cerr, serr := tryLoopback(t, spec, func(l *bench.Local, client bool) {
		if !client {
			l.ThreadCPUs = []int{0, 1023}
		}
	})
	if cerr == nil || !strings.Contains(cerr.Error(), "thread 1 on CPU 1023") ||
		serr == nil || !strings.Contains(serr.Error(), "thread 1 on CPU 1023") {
		t.Errorf("a server thread that cannot be pinned: client %v, server %v", cerr, serr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the failure took %v", d)
	}
}

// TestSingleThreadedCQs: each side's CQs, polled by its one loop, are
// made single-threaded where the device takes the flag, through rdma_cm
// too; where it does not, the test runs on ordinary CQs.
func TestSingleThreadedCQs(t *testing.T) {
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := ctx.CreateCQEx(ibverbs.CQInit{Entries: 4, SingleThreaded: true})
	if err != nil {
		t.Fatal(err)
	}
	want := probe.SingleThreaded()
	probe.Close()
	ctx.Close()
	for _, cm := range []bool{false, true} {
		var mu sync.Mutex
		var got []bool
		defer bench.SetAfterConnect(func(_ bool, qps []*ibverbs.QP) {
			mu.Lock()
			defer mu.Unlock()
			for _, qp := range qps {
				got = append(got, qp.SendCQ().SingleThreaded(), qp.RecvCQ().SingleThreaded())
			}
		})()
		spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 50,
			NumQPs: 2, TXDepth: 16, RXDepth: 16, CQModeration: 4, ValidateData: true, RdmaCM: cm}
		c, s := loopback(t, spec, cmClient(t, cm))
		if c.Mismatches+s.Mismatches != 0 || c.Sizes[0].BW.Iterations != 100 {
			t.Errorf("rdma_cm %v: %d mismatches, %d messages", cm, c.Mismatches+s.Mismatches, c.Sizes[0].BW.Iterations)
		}
		mu.Lock()
		if len(got) != 8 || slices.Contains(got, !want) {
			t.Errorf("rdma_cm %v: the QPs' CQs single-threaded: %v, want 8 × %v", cm, got, want)
		}
		mu.Unlock()
	}
}

// TestThreadsRateHeader: the header of a test of several threads with a
// rate limit gives the test's limit, each thread's share and its bursts,
// where it gave one thread's share as the test's.
func TestThreadsRateHeader(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 200,
		NumQPs: 2, Threads: 2, TXDepth: 16, CQModeration: 4}
	cr, _ := loopback(t, spec, func(l *bench.Local, client bool) {
		l.Rate = bench.RateLimit{Rate: 400000, Unit: bench.RatePps}
	})
	if want := "400000 messages/sec, 200000 a thread in bursts of 16 (SW)"; cr.Header.RateLimit != want {
		t.Errorf("rate limit %q, want %q", cr.Header.RateLimit, want)
	}
}
