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

// samples returns a slice for n latency samples; with a duration, a
// growing one.
func samples(iters uint64, dur time.Duration) []float64 {
	if dur > 0 {
		return make([]float64, 0, 1<<16)
	}
	return make([]float64, 0, iters)
}

// pingWrite is write_lat: the initiator writes message i into the peer's
// target region and waits for the peer's write of message i into its own;
// the responder waits first. Each side polls the last byte of its target
// region. A sample is half the round trip.
func (s *session) pingWrite(ctx context.Context, size int, iters uint64, dur time.Duration, initiator bool) (sideResult, error) {
	wr, err := s.oneSend(size)
	if err != nil {
		return sideResult{}, err
	}
	defer wr.Close()
	src := s.buf.Bytes()[s.src(0) : s.src(0)+size]
	at := s.dst(0) + size - 1
	wcs := make([]ibverbs.WC, 8)
	out := samples(iters, dur)
	start := time.Now()
	deadline := start.Add(dur)
	until := peerWaitLimit(deadline, dur)
	var i uint64
	var pc pacer
	for ; dur > 0 || i < iters; i++ {
		v := seqByte(i)
		t0 := pc.start()
		if !initiator {
			if err := s.waitByte(ctx, at, v, until); errors.Is(err, errTimeUp) {
				break
			} else if err != nil {
				return sideResult{}, err
			}
		}
		src[size-1] = v
		if err := wr.Post(0, 1, 0); err != nil {
			return sideResult{}, err
		}
		if initiator {
			if err := s.waitByte(ctx, at, v, until); errors.Is(err, errTimeUp) {
				break
			} else if err != nil {
				return sideResult{}, err
			}
			out = append(out, float64(time.Since(t0).Nanoseconds())/2)
		}
		if _, err := s.waitSend(ctx, wcs); err != nil {
			return sideResult{}, err
		}
		if dur > 0 && i&63 == 0 && time.Now().After(deadline) || interrupted(ctx) {
			i++
			break
		}
	}
	return sideResult{Iters: i, Bytes: i * uint64(size), Elapsed: time.Since(start), Samples: out}, ctx.Err()
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
		return &idleError{what, s.idle}
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

// waitCQ polls cq until one completion arrives, bounded as waitByte is.
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
			return wcs[0], nil
		}
		if spin&1023 == 1023 {
			if err := st.check(ctx, s, "completion"); err != nil {
				return ibverbs.WC{}, err
			}
		}
	}
}

// pingSend is send_lat: like pingWrite with sends and receives. Every
// receive is replaced as soon as it completes.
func (s *session) pingSend(ctx context.Context, size int, iters uint64, dur time.Duration, initiator bool) (sideResult, error) {
	wr, err := s.oneSend(size)
	if err != nil {
		return sideResult{}, err
	}
	defer wr.Close()
	rb, err := s.qps[0].NewRecvBatch([]ibverbs.RecvWR{s.recvWR(0)})
	if err != nil {
		return sideResult{}, err
	}
	defer rb.Close()
	wcs := make([]ibverbs.WC, 1)
	out := samples(iters, dur)
	start := time.Now()
	deadline := start.Add(dur)
	until := peerWaitLimit(deadline, dur)
	// With spare receives posted (-r over 1, the default), the one an
	// iteration used is replaced after its send, off the round trip;
	// with one, it must be replaced before the peer can send again.
	late := s.spec.RXDepth > 1
	wait := func() error {
		if _, err := s.waitCQ(ctx, s.rcq, wcs, until); err != nil {
			return err
		}
		if late {
			return nil
		}
		return rb.Post(0, 1)
	}
	var i uint64
	var pc pacer
	for ; dur > 0 || i < iters; i++ {
		t0 := pc.start()
		if !initiator {
			if err := wait(); errors.Is(err, errTimeUp) {
				break
			} else if err != nil {
				return sideResult{}, err
			}
		}
		if err := wr.Post(0, 1, 0); err != nil {
			return sideResult{}, err
		}
		if initiator {
			if err := wait(); errors.Is(err, errTimeUp) {
				break
			} else if err != nil {
				return sideResult{}, err
			}
			out = append(out, float64(time.Since(t0).Nanoseconds())/2)
		}
		if late {
			if err := rb.Post(0, 1); err != nil {
				return sideResult{}, err
			}
		}
		if _, err := s.waitSend(ctx, wcs); err != nil {
			return sideResult{}, err
		}
		if dur > 0 && i&63 == 0 && time.Now().After(deadline) || interrupted(ctx) {
			i++
			break
		}
	}
	return sideResult{Iters: i, Bytes: i * uint64(size), Elapsed: time.Since(start), Samples: out}, ctx.Err()
}

// oneSided is read_lat and atomic_lat: post one request, wait for its
// completion, repeat. A sample is the whole round trip, as in perftest.
func (s *session) oneSided(ctx context.Context, size int, iters uint64, dur time.Duration) (sideResult, error) {
	wr, err := s.oneSend(size)
	if err != nil {
		return sideResult{}, err
	}
	defer wr.Close()
	wcs := make([]ibverbs.WC, 1)
	out := samples(iters, dur)
	start := time.Now()
	deadline := start.Add(dur)
	var i uint64
	var pc pacer
	for ; dur > 0 || i < iters; i++ {
		t0 := pc.start()
		if err := wr.Post(0, 1, 0); err != nil {
			return sideResult{}, err
		}
		if _, err := s.waitSend(ctx, wcs); err != nil {
			return sideResult{}, err
		}
		out = append(out, float64(time.Since(t0).Nanoseconds()))
		if dur > 0 && i&63 == 0 && time.Now().After(deadline) || interrupted(ctx) {
			i++
			break
		}
	}
	return sideResult{Iters: i, Bytes: i * uint64(s.payload(size)), Elapsed: time.Since(start), Samples: out}, ctx.Err()
}
