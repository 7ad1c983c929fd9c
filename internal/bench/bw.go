//go:build linux && cgo

package bench

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/stats"
)

// sideResult is what one side measured for one message size.
type sideResult struct {
	Iters   uint64        // messages completed, all QPs
	Bytes   uint64        // payload bytes moved
	Elapsed time.Duration // first post to last completion
	// Peak is the shortest time one window of messages took, divided by
	// the window's size: the best sustained rate seen (0 if unknown).
	Peak    time.Duration
	Samples []float64 // latency tests: one per iteration, in ns
}

const idBits = 48

// postBatch bounds the requests of one PostSendLists call in the bandwidth
// loop: ibverbs posts up to 256 per cgo call, and a TX depth of thousands
// on many QPs should not mean as many request templates in memory.
const postBatch = 256

// sendOpcode is the operation a bandwidth or latency test posts.
func sendOpcode(t exchange.Test, a exchange.AtomicOp) ibverbs.Opcode {
	switch t {
	case exchange.WriteBW, exchange.WriteLat:
		return ibverbs.OpRDMAWrite
	case exchange.ReadBW, exchange.ReadLat:
		return ibverbs.OpRDMARead
	case exchange.AtomicBW, exchange.AtomicLat:
		if a == exchange.CmpSwap {
			return ibverbs.OpAtomicCmpAndSwp
		}
		return ibverbs.OpAtomicFetchAdd
	}
	return ibverbs.OpSend
}

// template returns QP i's work request for one message of size bytes.
func (s *session) template(i, size int) ibverbs.SendWR {
	op := sendOpcode(s.spec.Test, s.spec.Atomic)
	wr := ibverbs.SendWR{Opcode: op, RemoteAddr: s.remote[i].Addr, RKey: s.remote[i].RKey}
	switch op {
	case ibverbs.OpRDMARead:
		// Reads land in this side's target region.
		wr.SGL = []ibverbs.SGE{s.mr.SGE(s.dst(i), size)}
	case ibverbs.OpAtomicFetchAdd, ibverbs.OpAtomicCmpAndSwp:
		wr.SGL = []ibverbs.SGE{s.mr.SGE(s.src(i), 8)}
		wr.CompareAdd = 1
		if op == ibverbs.OpAtomicCmpAndSwp {
			wr.CompareAdd, wr.Swap = 0, 0 // compare 0, swap 0: the value never changes
		}
	default:
		wr.SGL = []ibverbs.SGE{s.mr.SGE(s.src(i), size)}
		if size <= s.qps[i].Cap().MaxInline {
			wr.Flags |= ibverbs.SendInline
		}
	}
	if s.spec.ConnType == ibverbs.QPTypeUD {
		wr.AH = s.ahs[i]
		wr.RemoteQPN = s.remote[i].Endpoint.QPN
		wr.RemoteQKey = s.remote[i].Endpoint.QKey
	}
	return wr
}

// runSender posts iters messages of size bytes on every QP (or, with a
// duration, as many as fit in it), keeping up to the TX depth in flight,
// posting lists of PostList requests and asking for one completion per
// CQModeration requests. The loop does not allocate.
func (s *session) runSender(ctx context.Context, size int, iters uint64, dur time.Duration) (sideResult, error) {
	nqp := len(s.qps)
	tx := uint64(max(s.spec.TXDepth, 1))
	mod := uint64(max(s.spec.CQModeration, 1))
	pl := uint64(max(s.spec.PostList, 1))
	if dur > 0 {
		iters = 1<<idBits - 1
	}
	// Each QP's requests for one PostSendLists call: as many whole lists
	// of PostList requests (one ibv_post_send each) as fit in postBatch,
	// and no more than the TX depth, so that the room a poll opens is
	// posted in one cgo call, or a few where it is large.
	batch := min(tx, max(postBatch/pl, 1)*pl)
	lists := make([][]ibverbs.SendWR, nqp)
	for i := range lists {
		lists[i] = make([]ibverbs.SendWR, batch)
		for j := range lists[i] {
			lists[i][j] = s.template(i, size)
		}
	}
	posted := make([]uint64, nqp)
	done := make([]uint64, nqp)
	lastSig := make([]uint64, nqp)
	wcs := make([]ibverbs.WC, 64)
	base := lists[0][0].Flags // inline or not: the same on every QP
	window := tx * uint64(nqp)
	var total uint64
	nextMark := window
	start := time.Now()
	deadline := start.Add(dur)
	lastProgress, markTime := start, start
	var peak time.Duration
	stopping := false
	reportEvery := time.Second
	if s.spec.RunInfinitely {
		reportEvery = time.Duration(s.spec.Duration) * time.Second
		dur = 0
		deadline = start.Add(100 * 365 * 24 * time.Hour)
		iters = 1<<idBits - 1
		dur = time.Until(deadline)
	}
	lastReport := start
	var lastTotal uint64
	// On a failure, what completed so far is still reported.
	partial := func(err error) (sideResult, error) {
		return sideResult{Iters: total, Bytes: total * uint64(s.payload(size)), Elapsed: lastProgress.Sub(start), Peak: peak}, err
	}
	var pc pacer
	for {
		// Fill each QP's room. Once stopping, post one more signalled
		// request where the last ones were unsignalled, so that their
		// completion is seen.
		for i, qp := range s.qps {
			for {
				var n uint64
				switch room := tx - (posted[i] - done[i]); {
				case room == 0:
				case !stopping && posted[i] < iters:
					n = min(iters-posted[i], room, batch)
				case stopping && lastSig[i] < posted[i]:
					n = 1
				}
				if n == 0 {
					break
				}
				l := lists[i][:n]
				for j := range l {
					c := posted[i] + uint64(j) + 1
					l[j].ID = uint64(i)<<idBits | c
					l[j].Flags = base
					if c%mod == 0 || c == iters || stopping {
						l[j].Flags |= ibverbs.SendSignaled
						lastSig[i] = c
					}
				}
				if err := qp.PostSendLists(l, int(pl)); err != nil {
					return partial(err)
				}
				posted[i] += n
			}
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
		if k > 0 && total >= nextMark {
			if d := now.Sub(markTime) / time.Duration(total-(nextMark-window)); peak == 0 || d < peak {
				peak = d
			}
			markTime, nextMark = now, total+window
		}
		finished := true
		for i := range s.qps {
			if done[i] < posted[i] || lastSig[i] < posted[i] || (!stopping && posted[i] < iters) {
				finished = false
			}
		}
		if finished {
			break
		}
		if now, ok := pc.due(); ok {
			if !stopping && (dur > 0 && now.After(deadline) || interrupted(ctx)) {
				stopping = true
			}
			if now.Sub(lastReport) >= reportEvery {
				s.report(now, start, size, total, iters*uint64(nqp), dur, &lastTotal)
				lastReport = now
			}
			if now.Sub(lastProgress) > s.idle {
				return partial(&idleError{"completion", s.idle})
			}
			if err := s.peerGone(now); err != nil {
				return partial(err)
			}
		}
	}
	el := time.Since(start)
	return sideResult{Iters: total, Bytes: total * uint64(s.payload(size)), Elapsed: el, Peak: peak}, ctx.Err()
}

// report calls the Interval and Progress callbacks, if any.
func (s *session) report(now, start time.Time, size int, total, want uint64, dur time.Duration, last *uint64) {
	if s.spec.RunInfinitely && s.local.Interval != nil {
		d := time.Duration(s.spec.Duration) * time.Second
		s.local.Interval(now.Sub(start), stats.ComputeBandwidth(s.payload(size), total-*last, d, 0))
		*last = total
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

func (s *session) recvWR(i int) ibverbs.RecvWR {
	return ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{s.mr.SGE(s.dst(i), s.region)}}
}

// runReceiver counts the receives of a send test and keeps every receive
// queue full. It stops after iters messages on every QP, or, with a
// duration, once the sender's time is up and the receives have stopped.
// UD may drop messages: there it also stops when they stop coming.
func (s *session) runReceiver(ctx context.Context, size int, iters uint64, dur time.Duration) (sideResult, error) {
	nqp := len(s.qps)
	want := iters * uint64(nqp)
	wcs := make([]ibverbs.WC, 64)
	repost := make([][]ibverbs.RecvWR, nqp)
	one := make([]ibverbs.RecvWR, nqp) // built once: reposting must not allocate
	for i := range repost {
		repost[i] = make([]ibverbs.RecvWR, 0, len(wcs))
		one[i] = s.recvWR(i)
	}
	var total uint64
	var first time.Time
	start := time.Now()
	last := start
	ud := s.spec.ConnType == ibverbs.QPTypeUD
	quiet := s.idle
	if ud {
		quiet = 500 * time.Millisecond
	}
	if s.spec.RunInfinitely {
		// Until the sender stops: then the messages stop coming.
		dur, quiet, ud = 100*365*24*time.Hour, time.Second, true
	}
	partial := func(err error) (sideResult, error) {
		if first.IsZero() {
			first = last
		}
		return sideResult{Iters: total, Bytes: total * uint64(size), Elapsed: last.Sub(first)}, err
	}
	var pc pacer
	for dur > 0 || total < want {
		k, err := s.rcq.Poll(wcs)
		if err != nil {
			return partial(err)
		}
		if k > 0 {
			last = time.Now()
			if first.IsZero() {
				first = last
			}
		}
		for _, wc := range wcs[:k] {
			if err := wc.Err(); err != nil {
				return partial(s.completionErr(err))
			}
			i := int(wc.WRID)
			repost[i] = append(repost[i], one[i])
			total++
		}
		for i, l := range repost {
			if len(l) > 0 {
				if err := s.qps[i].PostRecv(l); err != nil {
					return partial(err)
				}
				repost[i] = l[:0]
			}
		}
		if now, ok := pc.due(); ok {
			idle := now.Sub(last)
			if dur > 0 && now.After(start.Add(dur)) && idle > 200*time.Millisecond {
				break
			}
			if ud && total > 0 && idle > quiet {
				break
			}
			if idle > s.idle {
				return partial(&idleError{"message", s.idle})
			}
			if err := s.peerGone(now); err != nil && !(s.spec.RunInfinitely && total > 0) {
				return partial(err)
			}
			if interrupted(ctx) {
				break
			}
		}
	}
	if first.IsZero() {
		first = start
	}
	return sideResult{Iters: total, Bytes: total * uint64(size), Elapsed: last.Sub(first)}, ctx.Err()
}

// pattern is the data a validating sender sends on QP i, and the receiver
// expects: it differs by size and QP, so a stale or misplaced message shows.
func pattern(b []byte, size, qp int) {
	for j := range b {
		b[j] = byte(j*31 + size*7 + qp*13 + 1)
	}
}

func fetchedValue(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
