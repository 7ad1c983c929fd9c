//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// hammer starts one goroutine for each of calls, which calls it in a loop
// until it fails, and waits until each has called it once. The returned
// wait waits, 10 s at most, for them all to stop, and returns each one's
// error.
func hammer(t *testing.T, calls ...func() error) (wait func() []error) {
	t.Helper()
	errs := make([]error, len(calls))
	var started, wg sync.WaitGroup
	for i, f := range calls {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for {
				err := f()
				if first {
					started.Done()
					first = false
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	started.Wait()
	return func() []error {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the callers did not stop within 10 s of Close")
		}
		return errs
	}
}

// closeRounds runs round until n rounds or d have passed, or the test has
// failed, and logs how many ran.
func closeRounds(t *testing.T, n int, d time.Duration, round func(i int)) {
	t.Helper()
	end, i := time.Now().Add(d), 0
	for ; i < n && time.Now().Before(end) && !t.Failed(); i++ {
		round(i)
	}
	t.Logf("%d rounds", i)
}

// wantClosed fails t unless every error is ErrClosed.
func wantClosed(t *testing.T, round int, what []string, errs []error) {
	t.Helper()
	for i, err := range errs {
		if !errors.Is(err, ibverbs.ErrClosed) {
			t.Errorf("round %d: %s ended with %v, want ErrClosed", round, what[i], err)
		}
	}
}

// TestCloseCQWhilePolling closes a CQ while goroutines Poll it, PollEx
// it and arm it (ReqNotify) in a loop: Close must wait for the calls in C
// (ibv_poll_cq, the extended CQ's ibv_start_poll, ibv_req_notify_cq)
// rather than free the CQ under them, and each caller must then get
// ErrClosed. Each round makes a CQ, by ibv_create_cq or ibv_create_cq_ex
// in turn, and sweeps Close across the calls with a growing delay. It
// crashed the process (SIGSEGV in ibv_poll_cq) before Close waited.
func TestCloseCQWhilePolling(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	what := []string{"Poll", "Poll", "PollEx", "ReqNotify"}
	var polls atomic.Int64
	defer func() { t.Logf("%d polls", polls.Load()) }()
	closeRounds(t, 200, 6*time.Second, func(i int) {
		var cq *ibverbs.CQ
		var err error
		if i%2 == 0 {
			cq, err = ctx.CreateCQ(16, nil)
		} else {
			cq, err = ctx.CreateCQEx(ibverbs.CQInit{Entries: 16})
		}
		if err != nil {
			t.Fatal(err)
		}
		poll := func() func() error {
			wcs := make([]ibverbs.WC, 4)
			return func() error {
				_, err := cq.Poll(wcs)
				polls.Add(1)
				return err
			}
		}
		wcx := make([]ibverbs.WCEx, 4)
		wait := hammer(t, poll(), poll(),
			func() error { _, err := cq.PollEx(wcx); return err },
			func() error { return cq.ReqNotify(i%4 == 1) })
		for t0 := time.Now(); time.Since(t0) < time.Duration(i%20)*time.Microsecond; {
		}
		if err := cq.Close(); err != nil {
			t.Fatalf("round %d: Close while polled: %v", i, err)
		}
		wantClosed(t, i, what, wait())
		if _, err := cq.Poll(make([]ibverbs.WC, 1)); !errors.Is(err, ibverbs.ErrClosed) {
			t.Errorf("round %d: Poll after Close: %v, want ErrClosed", i, err)
		}
	})
}

// TestCloseQPWhileQuerying closes a QP while goroutines look at it
// (State, Query, Endpoint) and modify it (ToError) in a loop, as a
// goroutine does that reacts to a connection's end while another closes
// it: Close must wait for the ibv_query_qp and ibv_modify_qp under way,
// and each caller must then get ErrClosed, never a crash (SIGSEGV in
// ibv_query_qp) or the ENOENT of a query on a destroyed QP.
func TestCloseQPWhileQuerying(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	gid := rdmatest.GIDIndex(t, ctx, info.Port)
	pd := newPD(t, ctx)
	cq, err := ctx.CreateCQ(16, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cq) })
	what := []string{"State", "State", "Query", "Endpoint", "ToError"}
	closeRounds(t, 100, 6*time.Second, func(i int) {
		qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq,
			Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.ToInit(ibverbs.ConnParams{Port: info.Port, GIDIndex: gid}); err != nil {
			t.Fatal(err)
		}
		state := func() error { _, err := qp.State(); return err }
		wait := hammer(t, state, state,
			func() error { _, err := qp.Query(); return err },
			func() error { _, err := qp.Endpoint(info.Port, gid); return err },
			qp.ToError)
		if err := qp.Close(); err != nil {
			t.Fatalf("round %d: Close while queried: %v", i, err)
		}
		wantClosed(t, i, what, wait())
	})
}

// TestCloseSRQWhileQuerying closes an SRQ while goroutines Query it and
// Arm it in a loop: the same for ibv_query_srq and ibv_modify_srq.
func TestCloseSRQWhileQuerying(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	pd := newPD(t, ctx)
	what := []string{"Query", "Query", "Arm"}
	closeRounds(t, 100, 4*time.Second, func(i int) {
		srq, err := pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 16, MaxSGE: 1})
		if err != nil {
			rdmatest.SkipIfUnsupported(t, err)
		}
		query := func() error { _, err := srq.Query(); return err }
		wait := hammer(t, query, query, func() error { return srq.Arm(4) })
		if err := srq.Close(); err != nil {
			t.Fatalf("round %d: Close while queried: %v", i, err)
		}
		wantClosed(t, i, what, wait())
	})
}

// TestCloseContextWhileQuerying closes a device context while goroutines
// query its port and device in a loop: Close must wait for the
// ibv_query_port and ibv_query_device_ex under way before
// ibv_close_device, and the callers then get ErrClosed, as
// NumCompVectors answers 0.
func TestCloseContextWhileQuerying(t *testing.T) {
	info := rdmatest.Device(t)
	what := []string{"QueryPort", "QueryPort", "QueryDevice"}
	closeRounds(t, 50, 4*time.Second, func(i int) {
		ctx, err := ibverbs.Open(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		port := func() error { _, err := ctx.QueryPort(info.Port); return err }
		wait := hammer(t, port, port, func() error { _, err := ctx.QueryDevice(); return err })
		if err := ctx.Close(); err != nil {
			t.Fatalf("round %d: Close while queried: %v", i, err)
		}
		wantClosed(t, i, what, wait())
		if n := ctx.NumCompVectors(); n != 0 {
			t.Errorf("round %d: NumCompVectors after Close: %d, want 0", i, n)
		}
	})
}

// TestClosePDWhileRegistering closes a PD while goroutines register and
// deregister MRs on it in a loop. An ibv_reg_mr under way finishes before
// the PD goes, and its MR keeps the PD open: Close then fails with EBUSY
// and changes nothing, and is tried again until it succeeds, after which
// each registering goroutine gets ErrClosed.
func TestClosePDWhileRegistering(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	buf := newBuffer(t, 4096)
	var busy int
	closeRounds(t, 30, 4*time.Second, func(i int) {
		pd, err := ctx.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		reg := func() error {
			mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
			if err != nil {
				return err
			}
			return mr.Close()
		}
		wait := hammer(t, reg, reg)
		for end := time.Now().Add(5 * time.Second); ; {
			err := pd.Close()
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(end) {
				t.Fatalf("round %d: Close while registering: %v", i, err)
			}
			busy++
		}
		wantClosed(t, i, []string{"RegMR", "RegMR"}, wait())
	})
	t.Logf("Close met an MR %d times", busy)
}

// TestCloseWakesWaiters: a CQ's Close ends a CQ.Wait or WaitEx asleep on
// its channel, and a channel's Close a CompChannel.Wait or Block asleep
// on it, with ErrClosed at once rather than when their time runs out (a
// CQ.Wait slept on until its context ended).
func TestCloseWakesWaiters(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	for _, tc := range []struct {
		name string
		wait func(cq *ibverbs.CQ, ch *ibverbs.CompChannel) error
		cq   bool // close the CQ, not the channel
	}{
		{"CQ.Wait", func(cq *ibverbs.CQ, _ *ibverbs.CompChannel) error {
			_, err := cq.Wait(timeout(t, 10*time.Second), make([]ibverbs.WC, 1))
			return err
		}, true},
		{"CQ.WaitEx", func(cq *ibverbs.CQ, _ *ibverbs.CompChannel) error {
			_, err := cq.WaitEx(timeout(t, 10*time.Second), make([]ibverbs.WCEx, 1))
			return err
		}, true},
		{"CompChannel.Wait", func(_ *ibverbs.CQ, ch *ibverbs.CompChannel) error {
			_, err := ch.Wait(timeout(t, 10*time.Second))
			return err
		}, false},
		{"CompChannel.Block", func(_ *ibverbs.CQ, ch *ibverbs.CompChannel) error {
			_, err := ch.Block(10 * time.Second)
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := ctx.CreateCompChannel()
			if err != nil {
				t.Fatal(err)
			}
			var cq *ibverbs.CQ
			if tc.cq {
				if cq, err = ctx.CreateCQ(4, ch); err != nil {
					t.Fatal(err)
				}
			}
			res := make(chan error, 1)
			go func() { res <- tc.wait(cq, ch) }()
			time.Sleep(100 * time.Millisecond) // asleep by now
			t0 := time.Now()
			if cq != nil {
				// The CQ's alone: the channel's Close would end
				// the wait too.
				closeOK(t, cq)
				defer closeOK(t, ch)
			} else {
				closeOK(t, ch)
			}
			select {
			case err := <-res:
				if !errors.Is(err, ibverbs.ErrClosed) {
					t.Errorf("%s during Close: %v, want ErrClosed", tc.name, err)
				}
				if d := time.Since(t0); d > 2*time.Second {
					t.Errorf("%s returned %v after Close, want at once", tc.name, d)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("%s still asleep 15 s after Close", tc.name)
			}
		})
	}
}

// TestWaitEmptySlice: CQ.Wait and WaitEx with no room for a completion
// fail at once with an error matching EINVAL that names the verb, where
// Wait slept past the completion already queued until its context ended;
// the completion stays for the next Poll.
func TestWaitEmptySlice(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	gid := rdmatest.GIDIndex(t, ctx, info.Port)
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	cq, err := ctx.CreateCQ(16, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cq) })
	pd := newPD(t, ctx)
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, qp) })
	if err := qp.ToInit(ibverbs.ConnParams{Port: info.Port, GIDIndex: gid}); err != nil {
		t.Fatal(err)
	}
	if err := qp.PostRecv([]ibverbs.RecvWR{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := qp.ToError(); err != nil { // the receive completes, flushed
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		wait func() error
	}{
		{"Wait(nil)", func() error { _, err := cq.Wait(timeout(t, 3*time.Second), nil); return err }},
		{"Wait([]WC{})", func() error { _, err := cq.Wait(timeout(t, 3*time.Second), []ibverbs.WC{}); return err }},
		{"WaitEx(nil)", func() error { _, err := cq.WaitEx(timeout(t, 3*time.Second), nil); return err }},
	} {
		t0 := time.Now()
		err := tc.wait()
		if !errors.Is(err, syscall.EINVAL) || err == nil || !strings.Contains(err.Error(), "ibv_poll_cq") {
			t.Errorf("%s: %v after %v, want EINVAL naming ibv_poll_cq", tc.name, err, time.Since(t0))
		}
	}
	if wc := pollN(t, cq, 1)[0]; wc.WRID != 1 || wc.Status != ibverbs.WCWRFlushErr {
		t.Errorf("the completion after the Waits: %+v, want wr_id 1 flushed", wc)
	}
}
