//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// A served test of so many iterations (no -D) cannot be judged by its
// time when it comes: a server with Limits.MaxDuration stops it once it
// has held the server that long, from its admission, as a Ctrl-C would,
// and the client is told why (its abort's text, overtimeText). A test of
// a duration is judged when it comes (exchange.TestSpec.CheckLimits) and
// never stopped so.

// overtimePrefix begins the text of the abort of a test stopped at the
// server's maximum duration, which the client reports as the server's
// words (peerStopWords).
const overtimePrefix = "stopped at its --max-duration of "

// overtime is the cause of a served test's context that the server's
// Limits.MaxDuration ended.
type overtime struct{ seconds uint32 }

func (o overtime) Error() string { return fmt.Sprintf("%s%d s", overtimePrefix, o.seconds) }

// overtimeAfter is how long a test of iterations may hold a server of
// Limits.MaxDuration most (a variable for the tests).
var overtimeAfter = func(most uint32) time.Duration { return time.Duration(most) * time.Second }

// boundTime returns the context that a served test, spec, runs under:
// ctx, which for a test of iterations on a server of a maximum duration
// ends with overtime once it has run that long. stop releases its timer.
func boundTime(ctx context.Context, spec exchange.TestSpec, lim Limits) (tctx context.Context, stop func()) {
	if lim.MaxDuration == 0 || spec.Duration != 0 {
		return ctx, func() {}
	}
	tctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(overtimeAfter(lim.MaxDuration), func() { cancel(overtime{lim.MaxDuration}) })
	return tctx, func() { t.Stop(); cancel(nil) }
}

// overtimeOutcome is the outcome of a test run under tctx (boundTime's)
// on a server whose own context, ctx, goes on, from its run's, res and
// err: where the server's maximum duration stopped it, rather than a
// Ctrl-C, the result says so (Overtime) instead of Interrupted, and an
// error (a test stopped before it ran) says it too. The server serves
// on.
func overtimeOutcome(ctx, tctx context.Context, res *Result, err error) (*Result, error) {
	var o overtime
	if ctx.Err() != nil || !errors.As(context.Cause(tctx), &o) {
		return res, err
	}
	if res != nil && res.Interrupted {
		res.Interrupted, res.Overtime = false, o.seconds
	}
	if err != nil {
		err = fmt.Errorf("%v: %w", o, err)
	}
	return res, err
}

// isOvertimeText reports whether text, a peer's abort's, says that the
// server stopped the test at its maximum duration.
func isOvertimeText(text string) bool { return strings.HasPrefix(text, overtimePrefix) }
