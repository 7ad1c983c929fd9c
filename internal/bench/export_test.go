//go:build linux && cgo

package bench

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// SetBeforeLoop makes f run on each side just before its measuring loop,
// until the returned function restores the default.
func SetBeforeLoop(f func(client bool)) (restore func()) {
	old := beforeLoop
	beforeLoop = f
	return func() { beforeLoop = old }
}

// SetControlTimeout bounds the control protocol's steps by d, and
// SetBeforeWarmUp makes f run before each warm-up, until the returned
// function restores the default.
func SetControlTimeout(d time.Duration) (restore func()) {
	old := controlTimeout
	controlTimeout = d
	return func() { controlTimeout = old }
}

func SetBeforeWarmUp(f func()) (restore func()) {
	old := beforeWarmUp
	beforeWarmUp = f
	return func() { beforeWarmUp = old }
}

// SpecTitle is specTitle, for the tests.
var SpecTitle = specTitle

// DialServer is dialServer, for the tests.
var DialServer = dialServer

// SetAfterConnect makes f get each side's QPs once they are connected,
// until the returned function restores the default.
func SetAfterConnect(f func(client bool, qps []*ibverbs.QP)) (restore func()) {
	old := afterConnect
	afterConnect = f
	return func() { afterConnect = old }
}

// SetBeforeValidate makes f get each side's buffer before --validate
// checks it, until the returned function restores the default.
func SetBeforeValidate(f func(client bool, buf []byte)) (restore func()) {
	old := beforeValidate
	beforeValidate = f
	return func() { beforeValidate = old }
}

// SetGroupWait sets how long a server gathers a test's threads, until
// the returned function restores it.
func SetGroupWait(d time.Duration) (restore func()) {
	old := groupWait
	groupWait = d
	return func() { groupWait = old }
}

// InlineDecisions opens spec's resources on l's device, with no peer, and
// reports the inline data QP 0 was granted and, for each size, whether
// the request the loops post on QP 0 for a message of that size goes
// inline.
func InlineDecisions(spec exchange.TestSpec, l Local, sizes []int) (granted int, inline []bool, err error) {
	s, err := openSession(spec, l)
	if err != nil {
		return 0, nil, err
	}
	defer s.close()
	s.remote = make([]exchange.QPInfo, len(s.qps)) // RC: the address is not used here
	for _, size := range sizes {
		inline = append(inline, s.template(0, size).Flags&ibverbs.SendInline != 0)
	}
	return s.qps[0].Cap().MaxInline, inline, nil
}

// SetGosched makes the loops' yields to the scheduler (pacer) call f
// instead of runtime.Gosched, until the returned function restores it.
func SetGosched(f func()) (restore func()) {
	old := gosched
	gosched = f
	return func() { gosched = old }
}

// restoreAtEnd puts *p back as it is now once the test has ended, after
// its cleanups, among them the ends of the servers it started: a
// deferred restore ran before those, while a server's goroutine could
// still read the variable (a data race under -race in
// TestServeGreetsPastFlood's greet).
func restoreAtEnd[T any](t testing.TB, p *T) {
	old := *p
	t.Cleanup(func() { *p = old })
}
