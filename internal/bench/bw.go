//go:build linux && cgo

package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"math/bits"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/stats"
)

// sideResult is what one side measured for one message size.
type sideResult struct {
	Iters uint64 // messages completed, all QPs
	Bytes uint64 // payload bytes moved
	// Elapsed is the time from the first post to the last completion: in
	// a bidirectional test the sending loop's last send's, however long
	// it then waits for the peer's messages; a receiver's, from its first
	// message to its last.
	Elapsed time.Duration
	// Peak is the fastest window of messages (peakMeter): the best
	// sustained rate seen, zero if unknown.
	Peak    stats.Window
	Samples keptSamples // latency tests: one per iteration but the last (see pingPong), in ns, or one in so many (sampleStore)
	// CPU is, with a margin (TestSpec.Margin) and Local.CPUUtil, the
	// process's CPU time at the edges of the measured span, which the
	// counts above cover; nil: the whole run's is the one to report.
	CPU *[2]cpuSample
	// SpanIters is, in a latency test with a duration and a margin, the
	// iterations in the measured span, which are reported (as perftest's
	// #iterations are those of its SAMPLE_STATE) where Iters, the whole
	// run's, is what the validation checks; nil: Iters is reported.
	SpanIters *uint64
	// Window is, in a latency test, the time the iterations reported
	// took (latWindow): perftest's measuring window of a run of a
	// duration, from which its t_avg and tps are computed.
	Window time.Duration
}

// reported returns the iterations to report: the span's, if counted.
func (r sideResult) reported() uint64 {
	if r.SpanIters != nil {
		return *r.SpanIters
	}
	return r.Iters
}

// margin is the spec's margin as a duration.
func (s *session) margin() time.Duration { return time.Duration(s.spec.Margin) * time.Second }

// idBits is the width of a message's number in a work request's ID (the
// QP's index takes the bits above): exchange.MaxMessages is the largest.
const idBits = 48

// The two must agree: a compile error here if they do not.
var _ [exchange.MaxMessages - (1<<idBits - 1)]struct{}
var _ [(1<<idBits - 1) - exchange.MaxMessages]struct{}

// postBatch bounds the requests of one post in the bandwidth loop: a TX
// depth of thousands on many QPs should not mean as many prepared requests
// in memory, nor one cgo call that runs long enough for the runtime to take
// its P away.
const postBatch = 256

// sendOpcode is the operation a bandwidth or latency test posts.
func sendOpcode(spec exchange.TestSpec) ibverbs.Opcode {
	switch spec.Test {
	case exchange.WriteBW, exchange.WriteLat:
		if spec.Immediate {
			return ibverbs.OpRDMAWriteWithImm
		}
		return ibverbs.OpRDMAWrite
	case exchange.ReadBW, exchange.ReadLat:
		return ibverbs.OpRDMARead
	case exchange.AtomicBW, exchange.AtomicLat:
		if spec.Atomic == exchange.CmpSwap {
			return ibverbs.OpAtomicCmpAndSwp
		}
		return ibverbs.OpAtomicFetchAdd
	}
	if spec.Immediate {
		return ibverbs.OpSendWithImm
	}
	return ibverbs.OpSend
}

// immValue is the immediate data of a QP's message number c (from 1 in
// the bandwidth loop, from 0 in the latency loops): its low 32 bits, so
// that a receiver can check that each QP's messages arrive whole and in
// order.
func immValue(c uint64) uint32 { return uint32(c) }

// template returns QP i's work request for one message of size bytes.
func (s *session) template(i, size int) ibverbs.SendWR {
	op := sendOpcode(s.spec)
	wr := ibverbs.SendWR{Opcode: op, RemoteAddr: s.remote[i].Addr, RKey: s.remote[i].RKey}
	switch op {
	case ibverbs.OpRDMARead:
		// Reads land in this side's target region.
		wr.SGL = []ibverbs.SGE{s.sge(i, s.dst(i), size)}
	case ibverbs.OpAtomicFetchAdd, ibverbs.OpAtomicCmpAndSwp:
		wr.SGL = []ibverbs.SGE{s.sge(i, s.src(i), 8)}
		wr.CompareAdd = 1
		if op == ibverbs.OpAtomicCmpAndSwp {
			wr.CompareAdd, wr.Swap = 0, 0 // compare 0, swap 0: the value never changes
		}
	default:
		wr.SGL = []ibverbs.SGE{s.sge(i, s.src(i), size)}
		if size <= s.inlineSize(i) {
			wr.Flags |= ibverbs.SendInline
		}
	}
	if s.spec.ConnType == ibverbs.QPTypeUD {
		wr.AH = s.ahs[i]
		wr.RemoteQPN = s.remote[i].Endpoint.QPN
		if s.spec.Multicast {
			wr.RemoteQPN = mcastQPN
		}
		wr.RemoteQKey = s.remote[i].Endpoint.QKey
	}
	return wr
}

// inlineSize is the largest message that QP i sends inline: the inline
// size asked for (-I), as perftest's, or by default perftest's default
// or the most the device can inline where that is less (fitInline); or
// what the QP was granted where that is less still, as perftest lowers
// its -I to it. A provider may grant more than asked (rxe grants at
// least an SGE's 16 bytes, even for -I 0; others round up to their WQE's
// room), which is no reason to inline more.
func (s *session) inlineSize(i int) int {
	return min(s.inline, s.qps[i].Cap().MaxInline)
}

// wholeLists is what of n requests, left of them still to post after
// the posted ones, the loop posts in lists of pl: up to the end of a
// list, as perftest's loop (which posts when a whole list fits the send
// queue), but for the run's last requests, which may end short of one. A
// list split by the queue's room would ring the doorbell for fewer
// requests than -l says. (A rate limit may still cut one; the rest of it
// goes next, up to its end.) Each list's last request asks for a
// completion (-l is a multiple of -Q), so the queue always drains to
// room for the rest of a list.
func wholeLists(posted, n, left, pl uint64) uint64 {
	if n == left {
		return n
	}
	end := (posted + n) / pl * pl
	if end <= posted {
		return 0
	}
	return end - posted
}

// runSender posts iters messages of size bytes on every QP (or, with a
// duration, as many as fit in it), keeping up to the TX depth in flight,
// posting lists of PostList requests and asking for one completion per
// CQModeration requests. In a bidirectional send test it also receives
// what the peer sends, and ends once both directions have; what it
// reports is what it sent, over the time from its first post to its last
// send's completion. An infinite run (RunInfinitely) ends when ctx does,
// or when the peer has closed the control connection after messages
// flowed. Any run ends at once when the peer's has ended (peerEnded: it
// was interrupted, failed, or ended an infinite run): the peer may no
// longer replace its receives, so the requests in flight are not waited
// for. The loop does not allocate.
func (s *session) runSender(ctx context.Context, size int, iters uint64, dur time.Duration) (_ sideResult, err error) {
	nqp := len(s.qps)
	tx := uint64(max(s.spec.TXDepth, 1))
	mod := uint64(max(s.spec.CQModeration, 1))
	pl := uint64(max(s.spec.PostList, 1))
	var rcv *receiver // a bidirectional send test's other direction
	if s.spec.Receives() && s.spec.Bidirectional {
		if rcv, err = s.newReceiver(iters, dur); err != nil {
			return sideResult{}, err
		}
		defer func() {
			if cerr := rcv.close(); err == nil {
				err = cerr
			}
		}()
	}
	rcvOver := false
	if dur > 0 {
		iters = exchange.MaxMessages
	}
	// Each QP's requests for one post: as many whole lists of PostList
	// requests (one ibv_post_send each) as fit in postBatch, and no more
	// than the TX depth, so that the room a poll opens is posted in one
	// cgo call, or a few where it is large. They are built once, in a
	// SendBatch; each post sets only their IDs and flags.
	batch := min(tx, max(postBatch/pl, 1)*pl)
	base := s.template(0, size).Flags // inline or not: the same on every QP
	imm := s.spec.Immediate
	batches, err := s.sendBatches(int(batch), size)
	if err != nil {
		return sideResult{}, err
	}
	defer closeAll(batches)
	posted := make([]uint64, nqp)
	done := make([]uint64, nqp)
	lastSig := make([]uint64, nqp)
	wcs := make([]ibverbs.WC, 64)
	window := tx * uint64(nqp)
	var total uint64
	start := time.Now()
	deadline := start.Add(dur)
	measured := newSpan(start, dur, s.margin(), s.local.CPUUtil)
	lastProgress := start
	peak := newPeaks(start, window)
	stopping := false
	rep := s.newReporter(start)
	infinite := s.spec.RunInfinitely && !s.warming // a warm-up has its end
	if infinite {
		deadline = start.Add(100 * 365 * 24 * time.Hour)
		iters = exchange.MaxMessages
		dur = time.Until(deadline)
	}
	// On a failure, what completed so far is still reported.
	partial := func(err error) (sideResult, error) {
		return sideResult{Iters: total, Bytes: total * uint64(s.payload(size)), Elapsed: lastProgress.Sub(start), Peak: peak.whole.best}, err
	}
	var lim *limiter // --rate_limit: the tokens a post takes
	if r := s.rateLimit(); r.Rate > 0 {
		lim = newLimiter(r, s.payload(size), start, pl)
	}
	defer func() { s.got += s.sentFromPeer(total) }()
	var pc pacer
	for {
		// Fill each QP's room. Once stopping, post one more signalled
		// request where the last ones were unsignalled, so that their
		// completion is seen.
		posts := false
		var tokens uint64 // with a limiter: what it allows this round
		if lim != nil && !stopping {
			tokens = lim.take(time.Now(), window)
		}
		for i := range s.qps {
			for {
				var n uint64
				switch room := tx - (posted[i] - done[i]); {
				case room == 0:
				case !stopping && posted[i] < iters:
					n = wholeLists(posted[i], min(iters-posted[i], room, batch), iters-posted[i], pl)
					if lim != nil {
						// The limiter may cut a list: waiting for a
						// whole list's tokens would space the posts
						// -l/rate apart, past the receiver's quiet
						// and idle bounds at slow rates.
						n = min(n, tokens)
						tokens -= n
					}
				case stopping && lastSig[i] < posted[i]:
					n = 1
				}
				if n == 0 {
					break
				}
				b := batches[i]
				for j := range int(n) {
					c := posted[i] + uint64(j) + 1
					b.SetID(j, uint64(i)<<idBits|c)
					f := base
					if c%mod == 0 || c == iters || stopping {
						f |= ibverbs.SendSignaled
						lastSig[i] = c
					}
					b.SetFlags(j, f)
					if imm {
						b.SetImm(j, immValue(c))
					}
				}
				if err := b.Post(0, int(n), int(pl)); err != nil {
					return partial(err)
				}
				posted[i] += n
				posts = true
			}
		}
		if lim != nil {
			lim.giveBack(tokens) // the room was full
		}
		k, err := s.scq.Poll(wcs)
		if err != nil {
			return partial(err)
		}
		var now time.Time
		if k > 0 {
			now = time.Now()
			lastProgress = now
		}
		for _, wc := range wcs[:k] {
			if err := wc.Err(); err != nil {
				return partial(s.completionErr(err))
			}
			i, c := int(wc.WRID>>idBits), wc.WRID&(1<<idBits-1)
			total += c - done[i]
			done[i] = c
		}
		if k > 0 {
			peak.observe(now, total, &measured)
		}
		received := 0
		if rcv != nil && !rcvOver {
			if received, err = rcv.drain(); err != nil {
				return partial(err)
			}
		}
		sent := true
		for i := range s.qps {
			if done[i] < posted[i] || lastSig[i] < posted[i] || (!stopping && posted[i] < iters) {
				sent = false
			}
		}
		if sent && (rcv == nil || rcvOver || !rcv.more()) {
			break
		}
		if s.ch != nil && k == 0 && received == 0 && !posts {
			// -e: nothing to post and nothing came; sleep until a
			// completion does, or, for a side held back by its rate
			// limit, at most until its next token. The sleep's clock
			// counts whole milliseconds, rounding up: it sleeps the
			// whole milliseconds before the token and polls the rest,
			// so that the sleep does not slow the rate.
			slice := eventSlice
			if lim != nil && tokens == 0 && !stopping {
				slice = min(slice, lim.due().Truncate(time.Millisecond))
			}
			if slice > 0 {
				if _, err := s.ch.Block(slice); err != nil {
					return partial(err)
				}
				pc.slept()
			}
		}
		if now, ok := pc.dueAt(now); ok {
			if peerEnded(ctx) {
				break
			}
			if !stopping && (dur > 0 && now.After(deadline) || interrupted(ctx)) {
				stopping = true
			}
			if rep.due(now) {
				s.report(&rep, now, size, total, rcv, iters*uint64(nqp), dur)
			}
			if idle := s.completionIdle(total, lastProgress.Sub(start), size, mod*uint64(nqp)); !sent && now.Sub(lastProgress) > idle {
				return partial(s.idleAfter("completion", idle, s.got+s.sentFromPeer(total)))
			}
			if rcv != nil && !rcvOver && !rcv.more() {
				// Every message due has come: there is nothing left to
				// wait for, and the pause until this side's sends are
				// done (a rate limit of its own) is no idle peer. A
				// dead peer is still found below.
				rcvOver = true
			}
			if rcv != nil && !rcvOver {
				over, err := rcv.check(ctx, now)
				if err != nil {
					return partial(err)
				}
				rcvOver = over
			}
			if err := s.peerGone(now); err != nil {
				if infinite && total > 0 && errors.Is(err, errPeerClosed) {
					break // the peer's end, and so the run's
				}
				return partial(err)
			}
		}
	}
	n, el := measured.measured(total, lastProgress.Sub(start))
	if el > 0 && n > 0 {
		s.sendRate = float64(n) * float64(s.payload(size)) / el.Seconds()
	}
	return sideResult{Iters: n, Bytes: n * uint64(s.payload(size)), Elapsed: el, Peak: peak.best(&measured), CPU: measured.cpuSpan()}, ctx.Err()
}

// peakMeter finds a sending loop's peak, as perftest's is its shortest
// time per message over a run of consecutive messages: the fastest of its
// windows, each from a poll (the first from the first post) to the first
// later poll by which at least window more messages (the TX depth of
// every QP) have completed, with the messages completed in between. It
// keeps the window whole, its time and its count, where a time per
// message in whole nanoseconds read up to 1 ns a message fast (4.5% at
// 20.9 ns a message).
type peakMeter struct {
	window uint64       // the fewest messages of a window
	from   uint64       // messages completed at the current window's start
	mark   time.Time    // its start
	best   stats.Window // the fastest window so far; zero while none
}

func newPeakMeter(start time.Time, window uint64) peakMeter {
	return peakMeter{window: max(window, 1), mark: start}
}

// observe takes a poll at now by which total messages had completed.
func (p *peakMeter) observe(now time.Time, total uint64) {
	if total-p.from < p.window {
		return
	}
	if w := (stats.Window{Messages: total - p.from, Elapsed: now.Sub(p.mark)}); w.Faster(p.best) {
		p.best = w
	}
	p.from, p.mark = total, now
}

// peaks are a sending loop's peak meters: the whole run's, and with a
// margin (-f) that of the span the counts cover, from its first edge,
// where the whole run's may be in the margins the counts leave out.
type peaks struct {
	whole, span peakMeter
}

func newPeaks(start time.Time, window uint64) peaks {
	return peaks{whole: newPeakMeter(start, window)}
}

// observe takes a poll at now by which total messages had completed, and
// shows it to w, the run's span.
func (p *peaks) observe(now time.Time, total uint64, w *span) {
	p.whole.observe(now, total)
	if w.open() {
		p.span.observe(now, total)
	}
	if w.observe(now, total) {
		p.span = newPeakMeter(now, p.whole.window)
		p.span.from = total
	}
}

// best is the peak of what w reports: its span's, or the whole run's.
func (p *peaks) best(w *span) stats.Window {
	if w.passed() {
		return p.span.best
	}
	return p.whole.best
}

// completionIdle is how long the sending loop waits for a completion
// before it declares the peer gone: the idle timeout, or four times what
// window messages of size bytes (one signalled in every CQ moderation's
// worth on each QP) take at the rate seen so far, this size's (total
// messages done in el) or else the last size's, whichever is longer. A
// moderation of 100 makes completions rare with large messages on a slow
// link, or under a rate limit: 100 writes of 4 MiB at 50 MB/s take 8 s a
// QP. A rate limit bounds the rate; before any rate is known, each QP
// gets the idle timeout.
func (s *session) completionIdle(total uint64, el time.Duration, size int, window uint64) time.Duration {
	rate := s.sendRate
	if total > 0 && el > 0 {
		rate = float64(total) * float64(s.payload(size)) / el.Seconds()
	}
	if r := s.rateLimit(); r.Rate > 0 {
		limit := r.perSecond(s.payload(size)) * float64(s.payload(size))
		if rate <= 0 || limit < rate {
			rate = limit
		}
	}
	if rate <= 0 {
		return s.idle * time.Duration(max(len(s.qps), 1))
	}
	w := time.Duration(4 * float64(window) * float64(s.payload(size)) / rate * float64(time.Second))
	return max(s.idle, w)
}

// sendBatches builds a SendBatch of n copies of each QP's template.
func (s *session) sendBatches(n, size int) ([]*ibverbs.SendBatch, error) {
	batches := make([]*ibverbs.SendBatch, len(s.qps))
	wrs := make([]ibverbs.SendWR, n)
	for i, qp := range s.qps {
		for j := range wrs {
			wrs[j] = s.template(i, size)
		}
		b, err := qp.NewSendBatch(wrs)
		if err != nil {
			closeAll(batches)
			return nil, err
		}
		batches[i] = b
	}
	return batches, nil
}

// closeAll closes the batches (or MRs) made so far: those not made are nil.
func closeAll[B interface {
	comparable
	Close() error
}](batches []B) {
	var none B
	for _, b := range batches {
		if b != none {
			b.Close()
		}
	}
}

// reporter is when a loop reports: every second its progress, or in an
// infinite run (RunInfinitely) an interval every Duration.
type reporter struct {
	every time.Duration // between reports
	start time.Time     // the run's start
	last  time.Time     // the last report, or the start
	count uint64        // an infinite run's messages counted by then
}

func (s *session) newReporter(start time.Time) reporter {
	r := reporter{every: time.Second, start: start, last: start}
	if s.spec.RunInfinitely && !s.warming {
		r.every = time.Duration(s.spec.Duration) * time.Second
	}
	return r
}

// due reports whether a report is due at now.
func (r *reporter) due(now time.Time) bool { return now.Sub(r.last) >= r.every }

// report calls the Interval and Progress callbacks, if any, at now, for
// total messages sent, and in a bidirectional send test those rcv
// received (a receiving loop's are its total, with rcv nil). An interval
// of a bidirectional test counts both directions, as the test's result
// does: the peer's messages as they arrive where they complete receives
// here, else (write, read, atomics, whose peer's operations this side
// does not see) as many as this side's, as perftest's intervals count
// them. An interval's time is the time since the last, as measured: a
// loop comes to its report a little after Duration has passed (up to
// a sleep of -e's, 10 ms), and perftest's intervals are measured too.
func (s *session) report(r *reporter, now time.Time, size int, total uint64, rcv *receiver, want uint64, dur time.Duration) {
	el := now.Sub(r.last)
	r.last = now
	if s.spec.RunInfinitely && !s.warming && s.local.Interval != nil {
		count := total
		switch {
		case s.spec.Bidirectional && rcv != nil:
			count += rcv.total
		case s.spec.Bidirectional:
			count *= 2
		}
		s.local.Interval(now.Sub(r.start), stats.ComputeBandwidth(s.payload(size), count-r.count, el, 0))
		r.count = count
		return
	}
	if s.local.Progress != nil {
		if dur > 0 {
			want = 0
		}
		s.local.Progress(size, total, want)
	}
}

// payload is the bytes one message moves.
func (s *session) payload(size int) int {
	if s.spec.Test.IsAtomic() {
		return 8
	}
	return size
}

// prepostRecvs fills every QP's receive queue, for send tests.
func (s *session) prepostRecvs() error {
	rx := int(max(s.spec.RXDepth, 1))
	if s.srq != nil {
		// The SRQ's RX depth for every QP, into their regions in turn.
		wrs := make([]ibverbs.RecvWR, rx)
		for j := range wrs {
			wrs[j] = s.recvWR(j % len(s.qps))
		}
		if s.spec.ValidateData {
			s.srqFilled = newSRQLanded(s.qps)
		}
		return s.srq.PostRecv(wrs)
	}
	for i, qp := range s.qps {
		wrs := make([]ibverbs.RecvWR, rx)
		for j := range wrs {
			wrs[j] = s.recvWR(i)
		}
		if err := qp.PostRecv(wrs); err != nil {
			return err
		}
	}
	return nil
}

// settleReceives, once both sides are done with a size of a test whose
// messages complete receives, takes the completions that no loop took and
// posts those receives again, each where it was (its ID names its QP's
// region), so that the next size starts with the RX depth posted and no
// completion left over. Left there, a completion is the next size's
// loop's to take:
//
//   - Each side of send_lat (and write_lat with immediate data) ends by
//     its own clock (peerWaitLimit): when the responder's runs out first
//     it stops after an answer, and the initiator's next message
//     completes a receive here. The next size's first wait would take it
//     and answer before the peer's first message has come, and two
//     messages would go round at once: about half the latency, reported
//     as the size's.
//   - A bandwidth receiver over UD or UC ends once the messages pause
//     (500 ms), and with a duration 200 ms after its time is up, so a
//     sender held back by a slow rate limit may send after it has ended.
//     The next size's receiver would count the messages as its own.
func (s *session) settleReceives() error {
	wcs := make([]ibverbs.WC, 16)
	var wrs [][]ibverbs.RecvWR // each QP's, or with an SRQ all in the first
	for {
		k, err := s.rcq.Poll(wcs)
		if err != nil {
			return err
		}
		for _, wc := range wcs[:k] {
			if err := wc.Err(); err != nil {
				return s.completionErr(err)
			}
			i := int(min(wc.WRID, uint64(len(s.qps)-1))) // the ID is a QP's index (recvWR)
			q := i
			if s.srq != nil {
				q = 0
			}
			if wrs == nil {
				wrs = make([][]ibverbs.RecvWR, len(s.qps))
			}
			wrs[q] = append(wrs[q], s.recvWR(i))
		}
		if k < len(wcs) {
			break
		}
	}
	for q, w := range wrs {
		var err error
		switch {
		case len(w) == 0:
		case s.srq != nil:
			err = s.srq.PostRecv(w)
		default:
			err = s.qps[q].PostRecv(w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *session) recvWR(i int) ibverbs.RecvWR {
	return ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{s.sge(i, s.dst(i), s.region)}}
}

// receiver keeps a send test's receive queues full and counts the
// messages that arrive. runReceiver drives one; in a bidirectional send
// test the sending loop drives one too, so that one loop and one thread
// serve both directions, as in perftest, instead of two loops competing
// for CPUs.
type receiver struct {
	s          *session
	want       uint64        // messages to receive; with a duration, unbounded
	dur        time.Duration // the test's duration, or 0
	quiet      time.Duration // with untilQuiet, how long a pause ends the test
	untilQuiet bool          // UD or UC, which may drop, or run_infinitely: end when messages stop
	wcs        []ibverbs.WC
	queues     []recvQueue // each QP's receive queue, or the one SRQ
	list       int         // replace receives in lists of this many (--recv_post_list), or 0: all at once
	imm        *immCheck   // --validate with immediate data, else nil
	total      uint64
	start      time.Time
	// first is when the clock started: the return of the first poll
	// that took completions or, while polls came back full, of the last
	// of them; firstN is how many those polls took. They came before
	// first, at times not seen, so the rate is timed from there (result).
	// A receiver that comes late finds a backlog that polls of len(wcs)
	// take in several, µs apart: timed, it would read as having arrived
	// in those µs. timing is set (clock) once a poll comes back short or
	// empty, or the polls have taken posted messages, the most that can
	// have waited: later full polls are the sender's pace, not a
	// backlog, so a saturated receiver (-D at a high rate) still times.
	first    time.Time
	firstN   uint64
	timing   bool
	posted   uint64    // receives posted when the loop began, on all its queues
	last     time.Time // when the last poll that took completions returned
	measured span      // with a margin, the part of the run reported
}

func (s *session) newReceiver(iters uint64, dur time.Duration) (*receiver, error) {
	nqp := len(s.qps)
	r := &receiver{s: s, want: iters * uint64(nqp), dur: dur, quiet: s.idle,
		// UC drops a message that finds no receive posted, where RC
		// would have the sender retry: a receiver that falls behind
		// loses messages, as with UD.
		untilQuiet: s.spec.ConnType == ibverbs.QPTypeUD || s.spec.ConnType == ibverbs.QPTypeUC,
		wcs:        make([]ibverbs.WC, 64), imm: s.newImmCheck(1)}
	if s.spec.RecvPostList > 1 {
		r.list = int(s.spec.RecvPostList)
	}
	var err error
	// A queue holds back fewer than a list and gets at most a poll's
	// completions more before it posts.
	if r.queues, err = s.recvQueues(len(r.wcs) + max(r.list, 1)); err != nil {
		return nil, err
	}
	// prepostRecvs and settleReceives leave the RX depth posted on each
	// queue: each QP's, or the one SRQ.
	r.posted = uint64(max(s.spec.RXDepth, 1)) * uint64(len(r.queues))
	if r.untilQuiet {
		r.quiet = 500 * time.Millisecond
	}
	if s.spec.RunInfinitely {
		// Until this side is stopped, or the peer's Result or Error ends
		// the loop (peerWatch): a pause in the messages (a slow rate
		// limit, a sender that stalls) ends nothing, on UD and UC too.
		r.dur, r.untilQuiet = 100*365*24*time.Hour, false
	}
	r.start = time.Now()
	r.last = r.start
	r.measured = newSpan(r.start, dur, s.margin(), s.local.CPUUtil) // none for run_infinitely, which has no margin
	return r, nil
}

// close posts again the receives the receiver used and did not replace,
// fewer than a list on each queue, as one short list, so that the next
// size's receiver starts with the RX depth posted; then it frees the
// batches. Left out, they would shrink the queue by up to a list less one
// at every size, until a sender found none (RC retries for ever, UD and
// UC drop).
func (r *receiver) close() error {
	r.s.got += r.total
	var err error
	for i := range r.queues {
		q := &r.queues[i]
		if q.used > 0 && err == nil {
			err = q.batch.PostLists(q.next, q.used, 0)
			q.used = 0
		}
	}
	closeQueues(r.queues)
	return err
}

// closeQueues frees the queues' batches; those not made are nil.
func closeQueues(queues []recvQueue) {
	for _, q := range queues {
		if q.batch != nil {
			q.batch.Close()
		}
	}
}

// recvQueue is a receive queue that a receiver keeps full: a QP's, or the
// SRQ that all the QPs share.
type recvQueue struct {
	batch *ibverbs.RecvBatch // its receives, built once: reposting converts nothing
	used  int                // receives consumed and not yet replaced
	next  int                // the batch entry to post from: an SRQ's regions go in turn
	turn  int                // with an SRQ, the number of regions, else 0
}

// recvQueues builds each QP's queue with a RecvBatch of room copies of its
// receive or, with an SRQ, the one queue whose batch holds room receives
// that take the QPs' regions in turn (a receive's ID names the region it
// fills, whichever QP's message lands there), as prepostRecvs posts them.
func (s *session) recvQueues(room int) ([]recvQueue, error) {
	nqp := len(s.qps)
	queues := make([]recvQueue, nqp)
	if s.srq != nil {
		queues = queues[:1]
		queues[0].turn = nqp
		room += nqp // posts start at any of the first nqp entries
	}
	wrs := make([]ibverbs.RecvWR, room)
	for i := range queues {
		for j := range wrs {
			region := i
			if queues[i].turn > 0 {
				region = j % queues[i].turn
			}
			wrs[j] = s.recvWR(region)
		}
		b, err := s.newRecvBatch(i, wrs)
		if err != nil {
			closeQueues(queues)
			return nil, err
		}
		queues[i].batch = b
	}
	return queues, nil
}

// due is how many of q's used receives to post now: all of them, or with
// lists of list receives, the whole lists among them.
func (q *recvQueue) due(list int) int {
	if list > 1 {
		return q.used - q.used%list
	}
	return q.used
}

// replace posts the receives that are due, in lists of list (0: one).
func (q *recvQueue) replace(list int) error {
	n := q.due(list)
	if n == 0 {
		return nil
	}
	if err := q.batch.PostLists(q.next, n, list); err != nil {
		return err
	}
	q.used -= n
	if q.turn > 0 {
		q.next = (q.next + n) % q.turn
	}
	return nil
}

// more reports whether messages are still due: always with a duration,
// which check ends.
func (r *receiver) more() bool { return r.dur > 0 || r.total < r.want }

// poll takes the completions there are, up to one batch, replaces their
// receives and reports how many there were.
func (r *receiver) poll() (int, error) {
	k, err := r.s.rcq.Poll(r.wcs)
	if err != nil || k == 0 {
		r.clock(0)
		return 0, err
	}
	r.last = time.Now()
	r.clock(k)
	for _, wc := range r.wcs[:k] {
		if err := wc.Err(); err != nil {
			return 0, r.s.completionErr(err)
		}
		if r.s.srq != nil {
			r.queues[0].used++
		} else {
			r.queues[wc.WRID].used++
		}
		r.total++
		if r.imm != nil {
			r.imm.take(&wc)
		}
		if r.s.srqFilled != nil {
			r.s.srqFilled.add(int(wc.WRID), wc.QPN)
		}
	}
	for i := range r.queues {
		if err := r.queues[i].replace(r.list); err != nil {
			return 0, err
		}
	}
	r.measured.observe(r.last, r.total)
	return k, nil
}

// clock notes a poll that took k completions, at r.last where k > 0:
// until timing, it moves the clock's start there and counts them as come
// before it. An empty poll shows that the polls before took all there
// was: the clock runs from the last of them.
func (r *receiver) clock(k int) {
	switch {
	case r.timing:
	case k == 0:
		r.timing = r.firstN > 0
	default:
		r.first, r.firstN = r.last, r.firstN+uint64(k)
		r.timing = k < len(r.wcs) || r.firstN >= r.posted
	}
}

// drain polls until the CQ is empty and reports how many messages came: a
// sending loop comes back only after posting, in which time more may have
// arrived than one batch, and each must be replaced before the peer runs
// out of receives.
func (r *receiver) drain() (int, error) {
	n := 0
	for {
		k, err := r.poll()
		n += k
		if err != nil || k < len(r.wcs) {
			return n, err
		}
	}
}

// check is the periodic work at now: it reports whether the receiving is
// over (the duration is up and the messages have stopped, a UD sender
// went quiet, or ctx ended), or fails on the idle timeout or a gone peer.
func (r *receiver) check(ctx context.Context, now time.Time) (over bool, err error) {
	idle := now.Sub(r.last)
	switch {
	case r.dur > 0 && now.After(r.start.Add(r.dur)) && idle > 200*time.Millisecond:
		return true, nil
	case r.untilQuiet && r.total > 0 && idle > r.quiet:
		return true, nil
	case idle > r.s.idle:
		return false, r.s.idleAfter("message", r.s.idle, r.s.got+r.total)
	}
	if err := r.s.peerGone(now); err != nil && !(r.s.spec.RunInfinitely && r.total > 0 && errors.Is(err, errPeerClosed)) {
		return false, err
	}
	return interrupted(ctx), nil
}

// result is what was received: every message, at the rate of those that
// came after the clock started, over the time from then to the last poll
// (with a margin, the span's messages over its time). The clock starts at
// the first poll that took completions, or where that one came back full,
// at the poll that took the last of the backlog: one that came back
// short, the last before one that came back empty, or the one that
// brought what the polls took to the receives posted when the loop began,
// the most that can have waited (clock). The messages those polls took
// had come before, when is not known: counted over the polls' µs they
// would raise the rate (a late receiver's backlog of 400 messages, timed
// over the 1 ms its polls took: 100 times the sender's rate), and alone
// (every message in them: a few, or a receiver that came late) they have
// no time at all, and no rate. The Elapsed returned is the time all the
// messages took at the rate of those timed, so that Iters over Elapsed
// is that rate, as the peer and the threads' sum (addBandwidth) take it;
// 0, with Iters above 0, where none were timed: the rate is unknown
// (stats.Bandwidth.RateUnknown).
func (r *receiver) result(size int) sideResult {
	n, el := r.measured.measured(r.total, timedSpan(r.total, r.firstN, r.last.Sub(r.first)))
	return sideResult{Iters: n, Bytes: n * uint64(size), Elapsed: el, CPU: r.measured.cpuSpan()}
}

// timedSpan is the time that total messages took, where the first
// firstN came before the clock started and the others in el after it:
// el stretched by total/(total-firstN), the time at their rate; 0 where
// none came after it.
func timedSpan(total, firstN uint64, el time.Duration) time.Duration {
	if total <= firstN || el <= 0 {
		return 0
	}
	return time.Duration(float64(el) * float64(total) / float64(total-firstN))
}

// runReceiver counts the receives of a send test and keeps every receive
// queue full. It stops after iters messages on every QP, or, with a
// duration, once the sender's time is up and the receives have stopped.
// UD and UC may drop messages: there it also stops when they stop coming.
// It stops too when ctx ends, and when the peer's run has ended
// (peerEnded) counts the messages that completed before that was known.
func (s *session) runReceiver(ctx context.Context, size int, iters uint64, dur time.Duration) (_ sideResult, err error) {
	r, err := s.newReceiver(iters, dur)
	if err != nil {
		return sideResult{}, err
	}
	defer func() {
		if cerr := r.close(); err == nil {
			err = cerr
		}
	}()
	var pc pacer
	// An infinite run's receiver reports its intervals, as the sender
	// does, of the messages it received.
	rep := s.newReporter(r.start)
	intervals := s.spec.RunInfinitely && s.local.Interval != nil
	for r.more() {
		k, err := r.poll()
		if err != nil {
			return r.result(size), err
		}
		if k == 0 && s.ch != nil {
			if err := s.sleep(); err != nil {
				return r.result(size), err
			}
			pc.slept()
		}
		var polled time.Time // the clock as poll read it, where it took completions
		if k > 0 {
			polled = r.last
		}
		if now, ok := pc.dueAt(polled); ok {
			if intervals && rep.due(now) {
				s.report(&rep, now, size, r.total, nil, 0, 0)
			}
			over, err := r.check(ctx, now)
			if err != nil {
				return r.result(size), err
			}
			if over {
				break
			}
		}
	}
	if peerEnded(ctx) {
		// The peer's last messages completed before its run's end was
		// known here: count those not polled yet.
		if _, err := r.drain(); err != nil {
			return r.result(size), err
		}
	}
	return r.result(size), ctx.Err()
}

// pattern is the data a validating sender sends on QP i, and the receiver
// expects: it differs by size and QP, so a stale or misplaced message shows.
// size*7 alone is the same for every multiple of 256: the size's bit
// length (odd times 101) makes the sizes of -a, powers of two, differ at
// every byte.
func pattern(b []byte, size, qp int) {
	k := size*7 + bits.Len(uint(size))*101 + qp*13 + 1
	for j := range b {
		b[j] = byte(j*31 + k)
	}
}

func fetchedValue(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
