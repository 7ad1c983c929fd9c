//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
)

// Latency tests run on the first QP only, as perftest's do.

// seqByte is the value iteration i writes into a message's last byte:
// never 0, so a zeroed buffer never looks like a message.
func seqByte(i uint64) byte { return byte(i%255) + 1 }

// lastByte reads the byte at off with an atomic load of the aligned word
// holding it, so the compiler cannot keep it in a register while the NIC
// writes the memory.
func (s *session) lastByte(off int) byte {
	b := s.buf.Bytes()
	w := off &^ 3
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[w])))
	var word [4]byte
	*(*uint32)(unsafe.Pointer(&word[0])) = v
	return word[off-w]
}

// sinceMono is the time since start, which must hold a monotonic clock
// reading (time.Now's do). time.Since then reads the monotonic clock
// alone, one vDSO call, where time.Now makes two (the wall clock's too):
// a latency loop's timestamps cost half as much.
func sinceMono(start time.Time) time.Duration { return time.Since(start) }

// pingWrite is write_lat: each side writes message i into the peer's
// target region and polls the last byte of its own for the peer's; the
// initiator writes first.
func (s *session) pingWrite(ctx context.Context, size int, iters uint64, dur time.Duration, initiator bool) (sideResult, error) {
	wr, err := s.oneSend(size)
	if err != nil {
		return sideResult{}, err
	}
	defer wr.Close()
	at := s.dst(0) + size - 1
	p := &writePing{s: s, wr: wr, at: at,
		src: s.buf.Bytes()[s.src(0) : s.src(0)+size]}
	return s.pingPong(ctx, size, iters, dur, initiator, p)
}

// pingSend is send_lat, and write_lat with immediate data: pingWrite
// with messages that complete receives. Every receive is replaced as soon
// as it completes.
func (s *session) pingSend(ctx context.Context, size int, iters uint64, dur time.Duration, initiator bool) (sideResult, error) {
	wr, err := s.oneSend(size)
	if err != nil {
		return sideResult{}, err
	}
	defer wr.Close()
	rb, err := s.newRecvBatch(0, []ibverbs.RecvWR{s.recvWR(0)})
	if err != nil {
		return sideResult{}, err
	}
	defer rb.Close()
	// With spare receives posted (-r over 1, the default), the one an
	// iteration used is replaced after its send, off the round trip;
	// with one, it must be replaced before the peer can send again.
	p := &sendPing{s: s, wr: wr, rb: rb, late: s.spec.RXDepth > 1, wcs: make([]ibverbs.WC, 1),
		imm: s.spec.Immediate, check: s.newImmCheck(0)}
	r, err := s.pingPong(ctx, size, iters, dur, initiator, p)
	// The receive the last wait used (the initiator's, for the last
	// answer) is replaced now: the queue holds the RX depth again
	// for the next size.
	for p.owed > 0 {
		if perr := p.repost(); perr != nil {
			return r, errors.Join(err, perr)
		}
	}
	return r, err
}

// pingSide is how one of write_lat and send_lat sends and receives.
type pingSide interface {
	// first posts message 0, the initiator's, which answers nothing.
	first() error
	// number makes the next message posted message send.
	number(send uint64)
	// wait waits for the peer's message got, answering nothing.
	wait(ctx context.Context, got uint64, until time.Time) error
	// reply posts the numbered message after a wait.
	reply() error
	// sent runs after each post.
	sent() error
}

// answer waits for the peer's message got and then posts message send,
// with nothing between the two: the message is numbered before the wait.
func answer(ctx context.Context, p pingSide, got, send uint64, until time.Time) error {
	p.number(send)
	if err := p.wait(ctx, got, until); err != nil {
		return err
	}
	return p.reply()
}

// lastAnswerWait bounds the wait for the answer to the last message of a
// test with a duration, whose deadline has passed by then.
const lastAnswerWait = 100 * time.Millisecond

// pingPong is the loop of write_lat and send_lat. The responder answers
// the peer's message i with its own message i; the initiator sends message
// 0 and answers the peer's message i with its message i+1. A sample is
// half the time from one of a side's posts to the next, on both sides, as
// in perftest, whose server prints its own figures too: iters-1 of them
// with a count of iterations, as perftest's print_report_lat has (its
// measure_cnt), the last message's round trip, which no post follows,
// left out; with a duration the initiator also keeps that one, from its
// last post to the answer. The responder's
// also hold the initiator's pauses (its yields below, and a latency gap),
// which only the initiator can leave out. Nothing but the post lies
// between a message's arrival and its answer: the clock is read, the
// pacer consulted and the send completion polled while the answer
// travels. The one exception is the initiator's
// yield to the scheduler (pacer), every few milliseconds: it comes once an
// answer has arrived, before the next message, when nothing is in flight,
// and its time is left out of the sample, where after a post it lay in
// the round trip. With a latency gap (Local.LatencyGap) the initiator
// pauses that long between an answer's arrival and its next message, and
// a sample is half the time from its post to the answer, so that the
// pause is not in it.
func (s *session) pingPong(ctx context.Context, size int, iters uint64, dur time.Duration, initiator bool, p pingSide) (sideResult, error) {
	wcs := make([]ibverbs.WC, 1)
	out := newSampleStore(iters, dur, s.local.maxSamples)
	defer out.free()
	margin := s.margin() // -f: only the samples between the margins count
	// With a duration and a margin, the iterations reported are those
	// posted in the span, as the samples are (perftest counts its
	// iterations in SAMPLE_STATE only); done below stays the run's, which
	// the validation checks.
	spanning := dur > 0 && margin > 0
	var inSpanIters uint64
	lastIn := false // the last message posted was in the span
	start := time.Now()
	deadline := start.Add(dur)
	until := peerWaitLimit(deadline, dur)
	pc := pacer{yielded: start}
	var prev time.Duration // when the last message was posted, since start
	gap := s.local.LatencyGap
	yieldNext := false // the initiator yields once the answer it waits for has come
	timedOut := false
	stopped := false // a wait for the peer ended with ctx
	var i uint64     // messages posted
	var span *uint64 // the messages posted in the span, where there is one
	if spanning {
		span = &inSpanIters
	}
	var win latWindow // the time the iterations reported took
	// On a failure (the peer killed, the link down), the samples taken
	// so far are still reported, as a bandwidth test's messages are.
	partial := func(i uint64, err error) (sideResult, error) {
		return latResult(i, size, start, out, span, win.length()), err
	}
	for ; dur > 0 || i < iters; i++ {
		var err error
		switch {
		case !initiator:
			err = answer(ctx, p, i, i, until)
		case i == 0:
			err = p.first()
		case gap > 0 || yieldNext:
			if err = p.wait(ctx, i-1, until); err == nil {
				arrived := sinceMono(start)
				if gap > 0 && inSpan(arrived, dur, margin) {
					out.add(float64(arrived-prev) / 2)
				}
				if yieldNext {
					// Nothing is in flight: the yield's time is
					// taken out of the sample, which keeps the round
					// trip and the next post.
					pc.yield(start.Add(arrived))
					if gap == 0 {
						prev += sinceMono(start) - arrived
					}
					yieldNext = false
				}
				if gap > 0 {
					spinUntil(start, arrived+gap)
				}
				p.number(i)
				err = p.reply()
			}
		default:
			err = answer(ctx, p, i-1, i, until)
		}
		if errors.Is(err, errTimeUp) {
			timedOut = true
			break
		} else if stoppedBy(ctx, err) {
			// Ctrl-C, or the peer's end: what was measured so far is
			// the result.
			stopped = true
			break
		} else if err != nil {
			return partial(i, err)
		}
		el := sinceMono(start)
		in := inSpan(el, dur, margin)
		if i > 0 && (!initiator || gap == 0) && in && out.add(float64(el-prev)/2) {
			// The store took long (it decimated its samples) after
			// this post: the next sample holds that time, not the
			// device's, and is left out.
			out.dropNext()
		}
		prev = el
		win.post(el, in)
		if lastIn = spanning && in; lastIn {
			inSpanIters++
		}
		if initiator {
			yieldNext = pc.yieldDue(start.Add(el))
		} else {
			// The responder cannot tell when nothing is in flight:
			// it yields as its answer leaves, and the initiator's
			// message comes a round trip later, so the yield lies
			// in a sample only where it outlasts one.
			pc.yield(start.Add(el))
		}
		if err := p.sent(); err != nil {
			return partial(i, err)
		}
		_, err = s.waitSend(ctx, wcs)
		if err != nil && !stoppedBy(ctx, err) {
			return partial(i, err)
		}
		if err != nil || dur > 0 && i&63 == 0 && el > dur || interrupted(ctx) {
			i++
			break
		}
	}
	done := i
	unanswered := func() { // the answer to the last message did not come
		done--
		win.drop()
		if lastIn {
			inSpanIters--
		}
	}
	if initiator && (timedOut || stopped) {
		unanswered()
	} else if timedOut || stopped {
		// The responder's last answer has no next post, and the wait
		// for one ran until the peer's end or the time-out: the window
		// ends at that answer, one round trip short, not after the wait.
		win.drop()
	} else if initiator && i > 0 {
		// The answer to the initiator's last message: it is due within a
		// round trip even when the test's time is up, unless the peer
		// ended first.
		if !until.IsZero() {
			until = time.Now().Add(lastAnswerWait)
		}
		switch err := p.wait(ctx, i-1, until); {
		case errors.Is(err, errTimeUp), err != nil && ctx.Err() != nil:
			unanswered()
		case err != nil:
			return partial(i, err)
		default:
			// With a count of iterations the samples are perftest's,
			// iters-1: the last round trip is not one of them.
			if el := sinceMono(start); dur > 0 && inSpan(el, dur, margin) {
				out.add(float64(el-prev) / 2)
			}
		}
	}
	win.end(sinceMono(start))
	return latResult(done, size, start, out, span, win.length()), ctx.Err()
}

// latResult is what a latency loop reports after n messages of size bytes
// each, begun at start: the samples out holds, with a span (-D with a
// margin) the messages posted in it, and the time the messages reported
// took (latWindow).
func latResult(n uint64, size int, start time.Time, out *sampleStore, span *uint64, window time.Duration) sideResult {
	return sideResult{Iters: n, Bytes: n * uint64(size), Elapsed: time.Since(start), Samples: out.take(), SpanIters: span, Window: window}
}

// writePing is write_lat's side: message i is seqByte(i) in the last byte
// of the region written.
type writePing struct {
	s   *session
	wr  *ibverbs.SendBatch
	src []byte // this side's message
	at  int    // the offset of the byte the peer's message ends with
}

func (p *writePing) first() error {
	p.number(0)
	return p.wr.Post(0, 1, 0)
}

func (p *writePing) number(send uint64) { p.src[len(p.src)-1] = seqByte(send) }

func (p *writePing) wait(ctx context.Context, got uint64, until time.Time) error {
	return p.s.waitByte(ctx, p.at, seqByte(got), until)
}

func (p *writePing) reply() error { return p.wr.Post(0, 1, 0) }

func (p *writePing) sent() error { return nil }

// sendPing is send_lat's side. It keeps the RX depth of receives posted:
// it replaces each receive a wait used, and only those, so that the
// queue never needs room for more (mlx5 makes one of exactly the depth
// asked for when that is a power of two, rxe when it is one less).
type sendPing struct {
	s    *session
	wr   *ibverbs.SendBatch
	rb   *ibverbs.RecvBatch // the receive a message used, posted again
	late bool               // whether that is done after the answer
	wcs  []ibverbs.WC       // one, for the receive's completion
	imm  bool               // message i carries immValue(i)
	// owed is the receives the waits used and not yet posted again.
	owed int
	// check, with --validate, checks the peer's messages' immediate data.
	check *immCheck
}

func (p *sendPing) first() error {
	p.number(0)
	return p.wr.Post(0, 1, 0)
}

func (p *sendPing) number(send uint64) {
	if p.imm {
		p.wr.SetImm(0, immValue(send))
	}
}

// reply replaces the receive the wait used first where that is not done
// late, after the send.
func (p *sendPing) reply() error {
	if !p.late {
		if err := p.repost(); err != nil {
			return err
		}
	}
	return p.wr.Post(0, 1, 0)
}

func (p *sendPing) wait(ctx context.Context, got uint64, until time.Time) error {
	_, err := p.s.waitCQ(ctx, p.s.rcq, p.wcs, until)
	if err == nil {
		p.owed++
		if p.check != nil {
			p.check.take(&p.wcs[0])
		}
	}
	return err
}

// sent replaces, late, the receive the last wait used: none after the
// initiator's first message, which answers nothing.
func (p *sendPing) sent() error {
	if p.late {
		return p.repost()
	}
	return nil
}

// repost posts again one receive that a wait used, if one is owed.
func (p *sendPing) repost() error {
	if p.owed == 0 {
		return nil
	}
	if err := p.rb.Post(0, 1); err != nil {
		return err
	}
	p.owed--
	return nil
}

// oneSend is a latency loop's request, signalled, in a SendBatch of one,
// so that each iteration posts it without building it again.
func (s *session) oneSend(size int) (*ibverbs.SendBatch, error) {
	wr := s.template(0, size)
	wr.Flags |= ibverbs.SendSignaled
	return s.qps[0].NewSendBatch([]ibverbs.SendWR{wr})
}

// peerWaitLimit is when a latency loop's waits for the peer give up: at
// its deadline when the test has a duration, never (zero) otherwise.
//
// Each side ends by its own clock, as perftest's do, so the two can end an
// iteration apart: the side that carries on then waits for a message that
// will not come. Without a limit it would wait out the idle timeout and
// report the peer gone; with one it ends once its own time is up, leaving
// the unfinished iteration out.
func peerWaitLimit(deadline time.Time, dur time.Duration) time.Time {
	if dur > 0 {
		return deadline
	}
	return time.Time{}
}

// stoppedBy reports whether err is a wait that ctx's end cut short: Ctrl-C,
// or the end of the peer's run (peerEnded). The loop then reports what it
// measured until then.
func stoppedBy(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// errTimeUp ends a wait for the peer that outlasted the test's duration.
var errTimeUp = errors.New("the test's duration is over")

// waitByte spins until the byte at off is v, bounded by the idle timeout
// and, if it is not zero, by until (then errTimeUp).
func (s *session) waitByte(ctx context.Context, off int, v byte, until time.Time) error {
	st := stall{until: until}
	for spin := 0; s.lastByte(off) != v; spin++ {
		if spin&1023 == 1023 {
			if err := st.check(ctx, s, "message"); err != nil {
				return err
			}
		}
	}
	s.got++
	return nil
}

// stall tracks a spin-wait that has seen no progress yet.
type stall struct {
	since time.Time
	until time.Time // when the wait gives up with errTimeUp; zero: never
	pc    pacer     // for its yields
}

// check, called every so often while spinning, fails once the wait has
// passed until, lasted the idle timeout, the peer is gone, or ctx has ended.
func (st *stall) check(ctx context.Context, s *session, what string) error {
	now := time.Now()
	if !st.until.IsZero() && now.After(st.until) {
		return errTimeUp
	}
	if st.since.IsZero() {
		// A wait yields only once it has lasted yieldPeriod: most end
		// sooner, and a yield from a locked thread hands its P off.
		st.since, st.pc.yielded = now, now
	} else if now.Sub(st.since) > s.idle {
		return s.idleErr(what, s.idle)
	}
	st.pc.yield(now)
	if err := s.peerGone(now); err != nil {
		return err
	}
	if interrupted(ctx) {
		return ctx.Err()
	}
	return nil
}

// waitSend polls the send CQ until one completion arrives.
func (s *session) waitSend(ctx context.Context, wcs []ibverbs.WC) (ibverbs.WC, error) {
	return s.waitCQ(ctx, s.scq, wcs[:1], time.Time{})
}

// eventSlice bounds each sleep of a wait with -e, so that the wait's
// checks (idle timeout, peer, Ctrl-C, the end of a duration) still run.
const eventSlice = 10 * time.Millisecond

// sleep, with -e, waits for the next completion event on any of the
// session's CQs, for at most eventSlice. The event's CQ is re-armed; the
// caller polls the CQ it waits for, which may have had no event (an
// earlier poll took the completion that raised it, or the event was the
// other CQ's).
func (s *session) sleep() error {
	_, err := s.ch.Block(eventSlice)
	return err
}

// waitCQ polls cq until one completion arrives, bounded as waitByte is;
// with -e it sleeps on completion events between polls.
func (s *session) waitCQ(ctx context.Context, cq *ibverbs.CQ, wcs []ibverbs.WC, until time.Time) (ibverbs.WC, error) {
	st := stall{until: until}
	for spin := 0; ; spin++ {
		k, err := cq.Poll(wcs[:1])
		if err != nil {
			return ibverbs.WC{}, err
		}
		if k == 1 {
			if err := wcs[0].Err(); err != nil {
				return wcs[0], s.completionErr(err)
			}
			if s.fromPeer(&wcs[0]) {
				s.got++
			}
			return wcs[0], nil
		}
		if s.ch != nil {
			if err := s.sleep(); err != nil {
				return ibverbs.WC{}, err
			}
		}
		if s.ch != nil || spin&1023 == 1023 {
			if err := st.check(ctx, s, "completion"); err != nil {
				return ibverbs.WC{}, err
			}
		}
	}
}

// spinUntil spins until at has passed since start: a latency gap is
// kept to the microsecond, as perftest's busy-waiting keeps it.
func spinUntil(start time.Time, at time.Duration) {
	for sinceMono(start) < at {
	}
}

// postPollSpin bounds read_lat's spin in C for a completion: a NIC's read
// of 64 KiB comes back well within it, and a wait that outlasts it goes on
// in Go, where the idle timeout and the peer are checked.
const postPollSpin = 100 * time.Microsecond

// oneSided is read_lat and atomic_lat: post one request, wait for its
// completion, repeat. A sample is the time from one post to the next, as
// in perftest: one clock reading an iteration, taken again after a yield
// to the scheduler, which then falls between two samples. With a latency
// gap it is the time from a post to its completion, and the pause follows.
// With a count of iterations there are iters-1 samples, as perftest's
// print_report_lat has (its measure_cnt): the last request's, which no
// post follows, is left out; with a duration it is kept, from the last
// post to its completion.
func (s *session) oneSided(ctx context.Context, size int, iters uint64, dur time.Duration) (sideResult, error) {
	wr, err := s.oneSend(size)
	if err != nil {
		return sideResult{}, err
	}
	defer wr.Close()
	wcs := make([]ibverbs.WC, 1)
	out := newSampleStore(iters, dur, s.local.maxSamples)
	defer out.free()
	margin := s.margin()
	// The iterations reported are the span's, as in pingPong: a request
	// counts, and its sample is kept, where it was posted in the span, so
	// that the two are as many (a sample kept by when it ended could
	// begin before the span, and one more sample than iterations).
	spanning := dur > 0 && margin > 0
	var inSpanIters uint64
	gap := s.local.LatencyGap // a pause after each completion, out of the samples
	start := time.Now()
	var i uint64
	var span *uint64
	if spanning {
		span = &inSpanIters
	}
	// On a failure, the samples taken so far are still reported; an
	// atomic's message is its 8 bytes, as below.
	var win latWindow // the time the requests reported took
	partial := func(i uint64, err error) (sideResult, error) {
		return latResult(i, s.payload(size), start, out, span, win.length()), err
	}
	pc := pacer{yielded: start}
	var t0 time.Duration // when the last request was posted, since start
	stopped := false     // a wait for a completion ended with ctx
	for ; dur > 0 || i < iters; i++ {
		el := sinceMono(start)
		// A store that took long to add (it decimated its samples) has
		// the clock read again, as a yield does: the time falls between
		// two samples.
		slow := i > 0 && gap == 0 && inSpan(t0, dur, margin) && out.add(float64(el-t0))
		if pc.yield(start.Add(el)) || slow {
			el = sinceMono(start)
		}
		t0 = el
		win.post(t0, inSpan(t0, dur, margin))
		// Post and poll in one cgo call, which spins in C for the
		// completion for a while before waitSend takes over; with -e,
		// post and sleep until the completion's event.
		if s.ch != nil {
			if err := wr.Post(0, 1, 0); err != nil {
				return partial(i, err)
			}
			if _, err := s.waitSend(ctx, wcs); stoppedBy(ctx, err) {
				stopped = true // this request is not counted
				break
			} else if err != nil {
				return partial(i, err)
			}
		} else if k, err := wr.PostPoll(0, 1, 0, s.scq, wcs, postPollSpin); err != nil {
			return partial(i, err)
		} else if k == 0 {
			if _, err := s.waitSend(ctx, wcs); stoppedBy(ctx, err) {
				stopped = true
				break
			} else if err != nil {
				return partial(i, err)
			}
		} else if err := wcs[0].Err(); err != nil {
			return partial(i, s.completionErr(err))
		} else {
			s.got++ // a read's or atomic's response: RC, from the peer
		}
		if spanning && inSpan(t0, dur, margin) {
			inSpanIters++
		}
		if gap > 0 {
			done := sinceMono(start)
			if inSpan(t0, dur, margin) && (dur > 0 || i+1 < iters) {
				out.add(float64(done - t0))
			}
			if dur > 0 && done+gap > dur {
				// The next request would come after the deadline: the
				// run ends here, without the pause, where one checked
				// in 64 iterations ran up to 63 gaps over.
				i++
				break
			}
			spinUntil(start, done+gap)
		}
		if dur > 0 && i&63 == 0 && el > dur || interrupted(ctx) {
			i++
			break
		}
	}
	el := sinceMono(start)
	if dur > 0 && i > 0 && gap == 0 && !stopped && inSpan(t0, dur, margin) {
		out.add(float64(el - t0))
	}
	if stopped {
		win.drop()
	}
	win.end(el)
	return latResult(i, s.payload(size), start, out, span, win.length()), ctx.Err()
}
