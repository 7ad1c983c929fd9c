//go:build linux && cgo

package bench

import (
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// SetBeforeLoop makes f run on each side just before its measuring loop,
// until the returned function restores the default.
func SetBeforeLoop(f func(client bool)) (restore func()) {
	old := beforeLoop
	beforeLoop = f
	return func() { beforeLoop = old }
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

// SetGroupWait sets how long a server gathers a test's threads, until
// the returned function restores it.
func SetGroupWait(d time.Duration) (restore func()) {
	old := groupWait
	groupWait = d
	return func() { groupWait = old }
}
