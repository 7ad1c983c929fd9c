//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/ibverbs/internal/cverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestCompChannelBlock waits for completion events with the thread asleep:
// nothing armed or nothing come ends the wait empty, each armed CQ's
// completion wakes it with that CQ, the CQ is re-armed for the next one,
// and a wait for an event costs no allocation.
func TestCompChannelBlock(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	wcs := make([]ibverbs.WC, 4)

	// No event: 0 only looks, a timeout sleeps and comes back empty.
	if cq, err := p.ch.Block(0); cq != nil || err != nil {
		t.Fatalf("Block(0) with no event = %p, %v; want nil, nil", cq, err)
	}
	start := time.Now()
	if cq, err := p.ch.Block(50 * time.Millisecond); cq != nil || err != nil {
		t.Fatalf("Block(50ms) with no event = %p, %v; want nil, nil", cq, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("Block(50ms) with no event returned after %v", d)
	}

	// A send completes on both sides: each armed CQ raises one event.
	for _, cq := range []*ibverbs.CQ{p.a.cq, p.b.cq} {
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 7, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 8, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	woke := map[*ibverbs.CQ]int{}
	for range 2 {
		cq, err := p.ch.Block(5 * time.Second)
		if err != nil || cq == nil {
			t.Fatalf("Block for a completion = %p, %v", cq, err)
		}
		woke[cq]++
	}
	if woke[p.a.cq] != 1 || woke[p.b.cq] != 1 {
		t.Fatalf("events for the sender's CQ %d, the receiver's %d; want one each", woke[p.a.cq], woke[p.b.cq])
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCSend); wc.WRID != 8 {
		t.Errorf("send completion wr_id %d, want 8", wc.WRID)
	}
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 7 {
		t.Errorf("receive completion wr_id %d, want 7", wc.WRID)
	}

	// Block re-armed the sender's CQ: its next completion raises an event
	// with no ReqNotify in between, each time, and none allocates.
	b := writeBatch(t, p, 9)
	var failed error
	round := func() {
		if failed != nil {
			return
		}
		if err := b.Post(0, 1, 0); err != nil {
			failed = err
			return
		}
		cq, err := p.ch.Block(5 * time.Second)
		if err != nil || cq != p.a.cq {
			failed = fmt.Errorf("Block after a write = %p, %v; want the sender's CQ %p", cq, err, p.a.cq)
			return
		}
		if k, err := cq.Poll(wcs); err != nil || k != 1 || wcs[0].WRID != 9 || wcs[0].Err() != nil {
			t.Errorf("Poll after the event = %d, %v, %+v; want the write's completion", k, err, wcs[0])
		}
	}
	round()
	if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
		t.Errorf("a post, Block and Poll allocate %v times, want 0", allocs)
	}
	if failed != nil {
		t.Fatal(failed)
	}

	// The receiver's CQ was re-armed by the Block that took its event:
	// an unsignalled send wakes it alone.
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 10, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 11, Opcode: ibverbs.OpSend,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if cq, err := p.ch.Block(5 * time.Second); err != nil || cq != p.b.cq {
		t.Fatalf("Block after a send = %p, %v; want the receiver's CQ %p", cq, err, p.b.cq)
	}
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 10 {
		t.Errorf("receive completion wr_id %d, want 10", wc.WRID)
	}
}

// TestCompChannelBlockSolicited: a CQ armed for solicited completions
// only wakes Block at a solicited send's receive, not at a plain one's,
// and Block re-arms it the same way. (Block re-armed every CQ for its
// next completion: the plain send after the first solicited one woke it.)
func TestCompChannelBlockSolicited(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	if err := p.b.cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	id := uint64(0)
	send := func(flags ibverbs.SendFlags) {
		t.Helper()
		id++
		sendOne(t, p, id, flags)
	}
	// wake says whether Block found the receiver's CQ's event; an event
	// comes with its completion, which send has seen, so 300 ms is long
	// enough for one that came.
	wake := func() bool {
		t.Helper()
		cq, err := p.ch.Block(300 * time.Millisecond)
		if err != nil || (cq != nil && cq != p.b.cq) {
			t.Fatalf("Block = %p, %v; want the receiver's CQ %p or none", cq, err, p.b.cq)
		}
		return cq != nil
	}
	for round := range 2 {
		send(0)
		if wake() {
			t.Fatalf("round %d: a plain send woke a CQ armed for solicited completions only", round)
		}
		send(ibverbs.SendSolicited)
		if !wake() {
			t.Fatalf("round %d: a solicited send did not wake its receiver's CQ", round)
		}
	}
}

// sendOne sends 8 bytes from p's a to its b, unsignalled, with flags
// (solicited or not), into a receive with wr_id id, and waits until the
// receive has completed on b's CQ.
func sendOne(t *testing.T, p *pair, id uint64, flags ibverbs.SendFlags) {
	t.Helper()
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: id, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: id, Opcode: ibverbs.OpSend, Flags: flags,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != id {
		t.Fatalf("receive completion wr_id %d, want %d", wc.WRID, id)
	}
}

// TestCQWaitSolicited: after ReqNotify(true) CQ.Wait arms the CQ for
// solicited completions only, as Block re-arms it: a solicited send's
// receive wakes it, a plain one's does not, and the Wait ends at its
// deadline; Block, after those Waits, still wakes at a solicited receive
// alone, and re-arms the CQ so. (Wait armed every CQ for its next
// completion, which the plain send's receive then woke.)
func TestCQWaitSolicited(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	if err := p.b.cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 4)
	// wait posts a receive, and a send with flags once a Wait on the
	// receiver's CQ sleeps (its polls and arm done: the receive's
	// completion comes to it as an event or not at all), and returns
	// that Wait's result.
	wait := func(id uint64, flags ibverbs.SendFlags, d time.Duration) (int, error) {
		t.Helper()
		if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: id, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		ctx := timeout(t, d)
		go func() {
			n, err := p.b.cq.Wait(ctx, wcs)
			done <- result{n, err}
		}()
		waitFor(t, func() bool { return p.b.cq.Waiting() > 0 })
		if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: id, Opcode: ibverbs.OpSend, Flags: flags,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}}}); err != nil {
			t.Fatal(err)
		}
		r := <-done
		return r.n, r.err
	}
	if n, err := wait(1, ibverbs.SendSolicited, 10*time.Second); err != nil || n != 1 || wcs[0].WRID != 1 || wcs[0].Err() != nil {
		t.Fatalf("Wait after ReqNotify(true) across a solicited send = %d, %v (%+v); want its receive", n, err, wcs[0])
	}
	if n, err := wait(2, 0, time.Second); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait after ReqNotify(true) across a plain send = %d, %v (%+v); want its deadline", n, err, wcs[0])
	}
	if wc := pollOK(t, p.b.cq, ibverbs.WCRecv); wc.WRID != 2 {
		t.Fatalf("the plain send's receive: wr_id %d, want 2", wc.WRID)
	}

	// The Wait that ended at its deadline left the CQ armed for solicited
	// completions, and Block re-arms it so.
	for round, flags := range []ibverbs.SendFlags{0, ibverbs.SendSolicited, 0} {
		sendOne(t, p, uint64(3+round), flags)
		// The event comes with its completion, which is in: 300 ms is
		// long enough for one that came.
		cq, err := p.ch.Block(300 * time.Millisecond)
		if err != nil || (cq != nil && cq != p.b.cq) {
			t.Fatalf("Block = %p, %v; want the receiver's CQ %p or none", cq, err, p.b.cq)
		}
		if solicited := flags != 0; (cq != nil) != solicited {
			t.Fatalf("after the Waits, a send (solicited %v) woke Block: %v", solicited, cq != nil)
		}
	}
}

// TestCompChannelWaitAllocs: Wait, which parks the goroutine in the
// netpoller, returns each armed CQ's event and, with one context for the
// whole loop, cancellable or not, costs no allocation after the first.
func TestCompChannelWaitAllocs(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	wcs := make([]ibverbs.WC, 4)
	b := writeBatch(t, p, 12)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", cctx}} {
		var failed error
		round := func() {
			if failed != nil {
				return
			}
			if err := p.a.cq.ReqNotify(false); err != nil {
				failed = err
				return
			}
			if err := b.Post(0, 1, 0); err != nil {
				failed = err
				return
			}
			cq, err := p.ch.Wait(c.ctx)
			if err != nil || cq != p.a.cq {
				failed = fmt.Errorf("Wait after a write = %p, %v; want the sender's CQ %p", cq, err, p.a.cq)
				return
			}
			if k, err := cq.Poll(wcs); err != nil || k != 1 || wcs[0].WRID != 12 || wcs[0].Err() != nil {
				failed = fmt.Errorf("Poll after the event = %d, %v, %+v; want the write's completion", k, err, wcs[0])
			}
		}
		round()
		if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
			t.Errorf("%s: a post, Wait and Poll allocate %v times, want 0", c.name, allocs)
		}
		if failed != nil {
			t.Fatalf("%s: %v", c.name, failed)
		}
	}
}

// TestCompChannelInterrupt ends a Wait with no event: one under way, and
// one that begins after the Interrupt; after them an event still wakes
// the next Wait, which returns its CQ; a closed channel refuses.
func TestCompChannelInterrupt(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.a.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() {
		if err := p.ch.Interrupt(); err != nil {
			t.Error(err)
		}
	})
	if cq, err := p.ch.Wait(ctx); !errors.Is(err, ibverbs.ErrInterrupted) || cq != nil {
		t.Fatalf("Wait interrupted under way = %p, %v; want ErrInterrupted", cq, err)
	}
	if err := p.ch.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ch.Wait(ctx); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Fatalf("Wait after Interrupt = %v; want ErrInterrupted", err)
	}
	// The CQ is still armed: a completion raises the event the next Wait
	// returns.
	b := writeBatch(t, p, 7)
	if err := b.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if cq, err := p.ch.Wait(ctx); err != nil || cq != p.a.cq {
		t.Fatalf("Wait for the write's event = %p, %v; want %p", cq, err, p.a.cq)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != 7 {
		t.Errorf("completion %+v", wc)
	}
	if n := testing.AllocsPerRun(50, func() { p.ch.Interrupt() }); n != 0 {
		t.Errorf("Interrupt allocates %v times", n)
	}
	ch, err := p.ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, ch)
	if err := ch.Interrupt(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("Interrupt on a closed channel = %v, want ErrClosed", err)
	}
}

// TestCompChannelBlockInterrupt ends a Block with no event, as
// TestCompChannelInterrupt does a Wait: one under way, and one that
// begins after the Interrupt. An Interrupt ends one wait, whichever kind
// takes it: the wake-up left over for the other kind ends nothing. After
// them an event still wakes the next Block, which returns its CQ.
func TestCompChannelBlockInterrupt(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	if err := p.a.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	interrupt := func() {
		t.Helper()
		if err := p.ch.Interrupt(); err != nil {
			t.Fatal(err)
		}
	}
	// Block(5s) ended under way.
	timer := time.AfterFunc(50*time.Millisecond, func() {
		if err := p.ch.Interrupt(); err != nil {
			t.Error(err)
		}
	})
	start := time.Now()
	cq, err := p.ch.Block(5 * time.Second)
	timer.Stop()
	if !errors.Is(err, ibverbs.ErrInterrupted) || cq != nil {
		t.Fatalf("Block interrupted under way = %p, %v after %v; want ErrInterrupted", cq, err, time.Since(start))
	}
	interrupt()
	if cq, err := p.ch.Block(5 * time.Second); !errors.Is(err, ibverbs.ErrInterrupted) || cq != nil {
		t.Fatalf("Block after Interrupt = %p, %v; want ErrInterrupted", cq, err)
	}
	// The eventfd still holds that Interrupt's kick, which the Block
	// took at its start: the next Block waits its time.
	const short = 100 * time.Millisecond
	blockNone := func(what string) {
		t.Helper()
		start := time.Now()
		cq, err := p.ch.Block(short)
		if err != nil || cq != nil {
			t.Fatalf("Block(%v) %s = %p, %v; want no event", short, what, cq, err)
		}
		if d := time.Since(start); d < short-short/10 {
			t.Fatalf("Block(%v) %s returned after %v", short, what, d)
		}
	}
	blockNone("after an interrupted Block")
	// One word for both kinds: an Interrupt a Block took leaves no
	// Wait interrupted, and one a Wait took no Block.
	waitNone := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), short)
		defer cancel()
		if cq, err := p.ch.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || cq != nil {
			t.Fatalf("Wait %s = %p, %v; want DeadlineExceeded", what, cq, err)
		}
	}
	waitNone("before any Interrupt") // registers the netpoller's waiter
	interrupt()
	if _, err := p.ch.Block(5 * time.Second); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Fatalf("Block after Interrupt = %v; want ErrInterrupted", err)
	}
	waitNone("after a Block took the Interrupt")
	interrupt()
	if _, err := p.ch.Wait(timeout(t, 10*time.Second)); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Fatalf("Wait after Interrupt = %v; want ErrInterrupted", err)
	}
	blockNone("after a Wait took the Interrupt")
	// The CQ is still armed: a completion raises the event the next
	// Block returns.
	b := writeBatch(t, p, 8)
	if err := b.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if cq, err := p.ch.Block(10 * time.Second); err != nil || cq != p.a.cq {
		t.Fatalf("Block for the write's event = %p, %v; want %p", cq, err, p.a.cq)
	}
	if wc := pollOK(t, p.a.cq, ibverbs.WCRDMAWrite); wc.WRID != 8 {
		t.Errorf("completion %+v", wc)
	}
	round := func() {
		p.ch.Interrupt()
		if _, err := p.ch.Block(0); !errors.Is(err, ibverbs.ErrInterrupted) {
			t.Fatalf("Block(0) after Interrupt = %v; want ErrInterrupted", err)
		}
	}
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Errorf("an Interrupt and Block allocate %v times", n)
	}
}

// TestCompChannelBlockNoDescriptor: a Block whose process has no
// descriptor left for the eventfd that Interrupt wakes it through waits
// without it, where it could fail for the rest of the channel's life; an
// Interrupt before it ends it, and one while it sleeps ends it within a
// slice. Once descriptors are free again
// the next Block makes the eventfd, and an Interrupt wakes it.
func TestCompChannelBlockNoDescriptor(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var fill []int
	release := func() {
		for _, fd := range fill {
			syscall.Close(fd)
		}
		fill = nil
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	defer release()
	for {
		fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		if err != nil || len(fill) > 256 {
			t.Fatalf("filling the descriptor table: %v after %d", err, len(fill))
		}
		fill = append(fill, fd)
	}
	if cq, err := p.ch.Block(50 * time.Millisecond); err != nil || cq != nil {
		t.Fatalf("Block with no descriptor left = %p, %v; want no event", cq, err)
	}
	if err := p.ch.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ch.Block(5 * time.Second); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Fatalf("Block after Interrupt with no descriptor left = %v; want ErrInterrupted", err)
	}
	// An Interrupt while such a Block sleeps ends it within a slice (50
	// ms), where it slept to its end; so would the channel's Close.
	early := time.AfterFunc(50*time.Millisecond, func() {
		if err := p.ch.Interrupt(); err != nil {
			t.Error(err)
		}
	})
	defer early.Stop()
	start := time.Now()
	if cq, err := p.ch.Block(5 * time.Second); !errors.Is(err, ibverbs.ErrInterrupted) || cq != nil || time.Since(start) > 3*time.Second {
		t.Fatalf("Block with no descriptor left, interrupted under way = %p, %v after %v; want ErrInterrupted well before 5 s", cq, err, time.Since(start))
	}
	release()
	timer := time.AfterFunc(50*time.Millisecond, func() {
		if err := p.ch.Interrupt(); err != nil {
			t.Error(err)
		}
	})
	defer timer.Stop()
	start = time.Now()
	if cq, err := p.ch.Block(5 * time.Second); !errors.Is(err, ibverbs.ErrInterrupted) || cq != nil {
		t.Fatalf("Block interrupted under way, descriptors free again = %p, %v after %v; want ErrInterrupted", cq, err, time.Since(start))
	}
}

// A CQ can be made on each of the device's completion vectors, with a
// channel, and a vector beyond them is refused before the verb, naming
// the range.
func TestCreateCQVector(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	n := p.ctx.NumCompVectors()
	if n < 1 {
		t.Fatalf("NumCompVectors = %d", n)
	}
	for v := range n {
		cq, err := p.ctx.CreateCQVector(8, p.ch, v)
		if err != nil {
			t.Fatalf("vector %d of %d: %v", v, n, err)
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Error(err)
		}
		closeOK(t, cq)
	}
	for _, v := range []int{n, -1} {
		_, err := p.ctx.CreateCQVector(8, p.ch, v)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), fmt.Sprintf("the device has %d", n)) {
			t.Errorf("vector %d of %d: %v, want EINVAL naming the count", v, n, err)
		}
	}
	t.Logf("%s has %d completion vectors", p.ctx.Name(), n)
}

// TestCreateCQEx: CQs made with ibv_create_cq_ex, promised to one thread,
// carry sends, writes with immediate data and their completions (fields
// and events included) as ibv_create_cq's do; a bad vector or a closed
// channel fails before the verb.
func TestCreateCQEx(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true, singleThreaded: true})
	if p.a.cq.Len() < 256 || !p.a.cq.SingleThreaded() || p.a.qp.SendCQ() != p.a.cq || p.a.qp.RecvCQ() != p.a.cq {
		t.Errorf("Len %d, want at least 256; single-threaded %v; the QP's CQs %p and %p, want %p",
			p.a.cq.Len(), p.a.cq.SingleThreaded(), p.a.qp.SendCQ(), p.a.qp.RecvCQ(), p.a.cq)
	}
	if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 7, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	wr := ibverbs.SendWR{ID: 3, Opcode: ibverbs.OpRDMAWriteWithImm, Flags: ibverbs.SendSignaled, Imm: 0xabcd,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 48)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	if err := p.a.qp.PostSend([]ibverbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	if wc := pollN(t, p.a.cq, 1)[0]; wc.Err() != nil || wc.WRID != 3 || wc.Opcode != ibverbs.WCRDMAWrite {
		t.Errorf("sender's completion %+v", wc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if cq, err := p.ch.Wait(ctx); err != nil || cq != p.b.cq {
		t.Fatalf("completion event: CQ %p, %v; want the receiver's %p", cq, err, p.b.cq)
	}
	wc := pollN(t, p.b.cq, 1)[0]
	if wc.Err() != nil || wc.WRID != 7 || wc.Opcode != ibverbs.WCRecvRDMAWithImm || wc.Imm != 0xabcd ||
		wc.Flags&ibverbs.WCWithImm == 0 || wc.ByteLen != 48 || wc.QPN != p.b.qp.Num() {
		t.Errorf("receiver's completion %+v", wc)
	}

	// WaitEx sleeps on the channel and reads the completion through the
	// extended CQ's iterator, with no allocation.
	wcx := make([]ibverbs.WCEx, 4)
	var failed error
	round := func() {
		if failed != nil {
			return
		}
		if failed = p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 8, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); failed != nil {
			return
		}
		if failed = p.a.qp.PostSend([]ibverbs.SendWR{wr}); failed != nil {
			return
		}
		if k, err := p.b.cq.WaitEx(ctx, wcx); err != nil || k != 1 || wcx[0].WRID != 8 || wcx[0].Imm != 0xabcd ||
			wcx[0].Opcode != ibverbs.WCRecvRDMAWithImm || wcx[0].ByteLen != 48 {
			failed = fmt.Errorf("WaitEx = %d, %v, %+v; want the write's immediate data", k, err, wcx[0])
			return
		}
		if k, err := p.a.cq.WaitEx(ctx, wcx); err != nil || k != 1 || wcx[0].WRID != 3 || wcx[0].Err() != nil {
			failed = fmt.Errorf("sender's WaitEx = %d, %v, %+v", k, err, wcx[0])
		}
	}
	round()
	if allocs := testing.AllocsPerRun(10, round); allocs != 0 {
		t.Errorf("posts and WaitEx allocate %v times a round, want 0", allocs)
	}
	if failed != nil {
		t.Fatal(failed)
	}
	for _, v := range []int{-1, p.ctx.NumCompVectors()} {
		if _, err := p.ctx.CreateCQEx(ibverbs.CQInit{Entries: 8, Vector: v}); !errors.Is(err, syscall.EINVAL) ||
			!strings.Contains(err.Error(), "ibv_create_cq_ex") {
			t.Errorf("vector %d: %v, want EINVAL from ibv_create_cq_ex", v, err)
		}
	}
	ch, err := p.ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, ch)
	if _, err := p.ctx.CreateCQEx(ibverbs.CQInit{Entries: 8, Channel: ch}); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("closed channel: %v", err)
	}
}

// Resize grows a CQ with completions in it (most likely: the writes have
// had 50 ms), which it keeps, and refuses to shrink it below them.
func TestResizeCQ(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	wrs := make([]ibverbs.SendWR, 3)
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 8)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	}
	if err := p.a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the writes complete, unpolled
	before := p.a.cq.Len()
	if err := p.a.cq.Resize(before + 500); err != nil {
		rdmatest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	if p.a.cq.Len() < before+500 {
		t.Errorf("Len %d after Resize(%d)", p.a.cq.Len(), before+500)
	}
	// Below the three completions it holds, a resize fails and says why
	// (it gave the entries alone).
	want := "it cannot shrink below the completions it holds"
	if err := p.a.cq.Resize(1); !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("Resize(1) with 3 completions queued = %v, want EINVAL saying %q", err, want)
	}
	for i, wc := range pollN(t, p.a.cq, 3) {
		if wc.Err() != nil || wc.WRID != uint64(i) {
			t.Errorf("completion %d after the resize: %+v", i, wc)
		}
	}
	if err := p.a.cq.Resize(0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Resize(0) = %v, want EINVAL", err)
	}
}

// TestCQModerate: Moderate (ibv_modify_cq) sets a CQ's event moderation
// or, on a device without it such as soft-RoCE, fails with an error
// matching errors.ErrUnsupported that names the verb; values out of the
// verb's 16 bits fail with EINVAL before it, and a closed CQ with
// ErrClosed.
func TestCQModerate(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	cq, err := ctx.CreateCQ(16, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = cq.Moderate(16, 100*time.Microsecond)
	if err != nil && (!errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "ibv_modify_cq: ")) {
		t.Errorf("Moderate(16, 100µs) = %v, want nil or an error of ibv_modify_cq matching errors.ErrUnsupported", err)
	}
	t.Logf("Moderate(16, 100µs) on %s: %v", ctx.Name(), err)
	if err == nil {
		if err := cq.Moderate(0, 0); err != nil {
			t.Errorf("Moderate(0, 0), to turn it off = %v", err)
		}
	}
	for _, c := range []struct {
		count  int
		period time.Duration
	}{{-1, 0}, {65536, 0}, {1, -time.Microsecond}, {1, 65536 * time.Microsecond}, {1, 65535*time.Microsecond + 1}} {
		if err := cq.Moderate(c.count, c.period); !errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Moderate(%d, %v) = %v, want EINVAL", c.count, c.period, err)
		}
	}
	closeOK(t, cq)
	if err := cq.Moderate(1, 0); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("Moderate of a closed CQ = %v, want ErrClosed", err)
	}
}

// TestCQWaitSharedChannel: two CQs share a channel and one goroutine
// waits on each in turn. An event for the other CQ, one left armed, does
// not fail a Wait, which waits on for its own CQ's completion; and
// messages flowing while the goroutine alternates Waits on the sender's
// and the receiver's CQ all arrive. A CQ without a channel cannot be
// waited on: EINVAL.
func TestCQWaitSharedChannel(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	if p.a.cq.Channel() != p.b.cq.Channel() {
		t.Fatal("the pair's CQs have two channels")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wcs := make([]ibverbs.WC, 1)
	recv := func(id uint64) {
		t.Helper()
		if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: id, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(id uint64, flags ibverbs.SendFlags) {
		t.Helper()
		if err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: id, Opcode: ibverbs.OpSend, Flags: flags,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(cq *ibverbs.CQ, id uint64, op ibverbs.WCOpcode) {
		t.Helper()
		n, err := cq.Wait(ctx, wcs)
		if err != nil {
			t.Fatalf("Wait for wr_id %d: %v", id, err)
		}
		if n != 1 || wcs[0].Err() != nil || wcs[0].WRID != id || wcs[0].Opcode != op {
			t.Fatalf("Wait for wr_id %d (%v): %d completions, %+v", id, op, n, wcs[0])
		}
	}

	// The receiver's CQ is armed and a message arrives: its event waits
	// on the channel. An unsignalled send leaves the sender's CQ empty.
	if err := p.b.cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	recv(1)
	recv(2)
	send(1, 0)
	pollOK(t, p.b.cq, ibverbs.WCRecv) // the event stays
	// The sender's Wait meets the receiver's event first, then its own
	// completion, which comes later.
	posted := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		posted <- p.a.qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}}})
	}()
	func() {
		defer func() {
			if err := <-posted; err != nil {
				t.Errorf("the later send: %v", err)
			}
		}()
		wait(p.a.cq, 2, ibverbs.WCSend)
	}()
	wait(p.b.cq, 2, ibverbs.WCRecv)

	// Traffic: each message's send and receive completions, waited for in
	// turn by this goroutine.
	const n = 200
	for i := uint64(3); i < 3+n; i++ {
		recv(i)
		send(i, ibverbs.SendSignaled)
		if i%2 == 0 {
			wait(p.a.cq, i, ibverbs.WCSend)
			wait(p.b.cq, i, ibverbs.WCRecv)
		} else {
			wait(p.b.cq, i, ibverbs.WCRecv)
			wait(p.a.cq, i, ibverbs.WCSend)
		}
	}

	cq, err := p.ctx.CreateCQ(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, cq)
	if _, err := cq.Wait(ctx, wcs); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Wait on a CQ without a channel: %v, want EINVAL", err)
	}
}

// TestCompChannelCloseRefused: a channel that ibv_destroy_comp_channel
// refuses to destroy, as it does while a CQ uses it (one made here behind
// the binding's back, so that Close's own count lets it try), stays open:
// Close returns the verb's EBUSY, and the channel still waits, takes CQs
// until the CQ is gone and Close succeeds.
func TestCompChannelCloseRefused(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	// Register the channel with the netpoller before the refused Close.
	if err := ch.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Wait(timeout(t, 10*time.Second)); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Fatalf("Wait after Interrupt: %v, want ErrInterrupted", err)
	}
	raw, err := cverbs.CreateCQ(ctx.Raw(), ibverbs.ChannelRaw(ch), 4)
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Close()
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "ibv_destroy_comp_channel") {
		t.Errorf("Close of a channel a CQ uses: %v, want the verb's EBUSY", err)
	}
	if ch.Fd() < 0 {
		t.Error("the channel has no fd after its refused Close")
	}
	if err := ch.Interrupt(); err != nil {
		t.Errorf("Interrupt after the refused Close: %v", err)
	} else if _, err := ch.Wait(timeout(t, 10*time.Second)); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Errorf("Wait after the refused Close and an Interrupt: %v, want ErrInterrupted", err)
	}
	if cq, err := ctx.CreateCQ(4, ch); err != nil {
		t.Errorf("CreateCQ on the channel after its refused Close: %v", err)
	} else {
		closeOK(t, cq)
	}
	if err := cverbs.DestroyCQ(raw); err != nil {
		t.Fatal(err)
	}
	closeOK(t, ch)
	if ch.Fd() != -1 {
		t.Errorf("Fd of the closed channel: %d, want -1", ch.Fd())
	}
}

// TestCompChannelOneWaiter: while one goroutine waits on a channel (here
// through CQ.Wait on one of its CQs), a Wait, a Block and a CQ.Wait on
// another of its CQs each fail at once with EBUSY rather than share or
// steal its event; the first waiter still gets its completion, and once
// it has returned the channel takes a new waiter.
func TestCompChannelOneWaiter(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, events: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		n   int
		wc  ibverbs.WC
		err error
	}
	done := make(chan result, 1)
	go func() {
		wcs := make([]ibverbs.WC, 1)
		for {
			// The probes below may claim the channel before this Wait
			// does; it tries again until it is the one waiting.
			n, err := p.a.cq.Wait(ctx, wcs)
			if errors.Is(err, syscall.EBUSY) {
				time.Sleep(time.Millisecond)
				continue
			}
			done <- result{n, wcs[0], err}
			return
		}
	}()
	// Block(0) returns at once with no event while the channel is free,
	// and EBUSY once the goroutine above waits on it.
	for {
		cq, err := p.ch.Block(0)
		if errors.Is(err, syscall.EBUSY) {
			break
		}
		if err != nil || cq != nil {
			t.Fatalf("Block(0) with no event = %p, %v", cq, err)
		}
		if ctx.Err() != nil {
			t.Fatal("the waiting goroutine never claimed the channel")
		}
		time.Sleep(time.Millisecond)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if cq, err := p.ch.Wait(short); !errors.Is(err, syscall.EBUSY) || cq != nil {
		t.Errorf("a second Wait = %p, %v; want EBUSY", cq, err)
	}
	if cq, err := p.ch.Block(time.Second); !errors.Is(err, syscall.EBUSY) || cq != nil {
		t.Errorf("a Block during a Wait = %p, %v; want EBUSY", cq, err)
	}
	wcs := make([]ibverbs.WC, 1)
	if n, err := p.b.cq.Wait(short, wcs); !errors.Is(err, syscall.EBUSY) || n != 0 {
		t.Errorf("CQ.Wait on the channel's other CQ = %d, %v; want EBUSY", n, err)
	}
	b := writeBatch(t, p, 9)
	if err := b.Post(0, 1, 0); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 1 || r.wc.WRID != 9 || r.wc.Err() != nil {
		t.Fatalf("the first waiter's CQ.Wait = %d, %v, %+v; want the write's completion", r.n, r.err, r.wc)
	}
	// Released: a Wait ended by Interrupt, then a Block, each claim it.
	if err := p.ch.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ch.Wait(ctx); !errors.Is(err, ibverbs.ErrInterrupted) {
		t.Errorf("Wait after the first waiter returned = %v; want ErrInterrupted", err)
	}
	if cq, err := p.ch.Block(0); err != nil || cq != nil {
		t.Errorf("Block(0) after the waiters returned = %p, %v; want no event", cq, err)
	}
}

// writeBatch is a batch of one signalled 64-byte RDMA write, of wr_id id,
// from p's side a to side b, closed when t ends.
func writeBatch(t *testing.T, p *pair, id uint64) *ibverbs.SendBatch {
	t.Helper()
	b, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{{ID: id, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, b) })
	return b
}
