//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// The waits that take a context panic at once on a nil one, naming
// themselves, before they touch their receiver (nil here, so the test
// needs no device). All three went on, to a nil dereference inside the
// wait at the latest, where the caller's mistake was not named.
func TestNilContext(t *testing.T) {
	var nilCtx context.Context
	var ch *ibverbs.CompChannel
	var cq *ibverbs.CQ
	for _, c := range []struct {
		name string
		call func()
	}{
		{"(*CompChannel).Wait", func() { ch.Wait(nilCtx) }},
		{"(*CQ).Wait", func() { cq.Wait(nilCtx, make([]ibverbs.WC, 1)) }},
		{"(*CQ).WaitEx", func() { cq.WaitEx(nilCtx, make([]ibverbs.WCEx, 1)) }},
	} {
		want := "ibverbs." + c.name + ": nil Context"
		if got := rdmatest.Panic(c.call); got != want {
			t.Errorf("%s(nil): panicked with %v; want %q", c.name, got, want)
		}
	}
}
