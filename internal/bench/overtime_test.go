//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestBoundTime: a served test of iterations on a server of a maximum
// duration runs under a context that ends with that duration's words
// once it has run that long, which the abort sends and the client's
// side reads back as the server's; a test of a duration, and any test on
// a server of none, runs under the server's own.
func TestBoundTime(t *testing.T) {
	restoreAtEnd(t, &overtimeAfter)
	overtimeAfter = func(uint32) time.Duration { return 50 * time.Millisecond }
	ctx := context.Background()
	iters := exchange.TestSpec{Iterations: 1000}
	for _, tc := range []struct {
		spec exchange.TestSpec
		lim  Limits
	}{
		{exchange.TestSpec{Duration: 5}, Limits{MaxDuration: 7}},
		{iters, Limits{}},
	} {
		if tctx, stop := boundTime(ctx, tc.spec, tc.lim); tctx != ctx {
			t.Errorf("%+v within %+v: a context of its own", tc.spec, tc.lim)
			stop()
		}
	}
	tctx, stop := boundTime(ctx, iters, Limits{MaxDuration: 7})
	defer stop()
	select {
	case <-tctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the test's context did not end at its maximum duration")
	}
	const want = "stopped at its --max-duration of 7 s"
	if !errors.Is(tctx.Err(), context.Canceled) || stopWords(tctx) != want {
		t.Fatalf("ended with %v, abort says %q, want context.Canceled and %q", tctx.Err(), stopWords(tctx), want)
	}
	word := &exchange.PeerError{Code: exchange.CodeAborted, Text: stopWords(tctx)}
	if got := peerStopWords(word); got != want {
		t.Errorf("the client reads the abort as %q, want %q", got, want)
	}
}

// TestOvertimeOutcome: a run that the server's maximum duration stopped
// is reported so (Overtime), not as interrupted, and an error of one
// stopped before it ran says so; a run the server's own stop (Ctrl-C)
// ended as well stays interrupted, and one under a context that did not
// end is as it was.
func TestOvertimeOutcome(t *testing.T) {
	over, cancel := context.WithCancelCause(context.Background())
	cancel(overtime{9})
	res, err := overtimeOutcome(context.Background(), over, &Result{Interrupted: true}, nil)
	if err != nil || res.Interrupted || res.Overtime != 9 {
		t.Errorf("stopped at 9 s: %+v, %v; want Overtime 9, not interrupted", res, err)
	}
	cut := errors.New("receiving the setup: context canceled")
	if _, err := overtimeOutcome(context.Background(), over, nil, cut); !errors.Is(err, cut) ||
		!strings.HasPrefix(err.Error(), "stopped at its --max-duration of 9 s: ") {
		t.Errorf("stopped in its set-up: %v", err)
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if res, _ := overtimeOutcome(stopped, over, &Result{Interrupted: true}, nil); !res.Interrupted || res.Overtime != 0 {
		t.Errorf("the server stopped too: %+v, want interrupted", res)
	}
	if res, err := overtimeOutcome(context.Background(), context.Background(), &Result{Interrupted: true}, cut); !res.Interrupted || res.Overtime != 0 || err != cut {
		t.Errorf("not stopped by time: %+v, %v", res, err)
	}
}
