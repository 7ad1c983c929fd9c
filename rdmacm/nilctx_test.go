//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"testing"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// Every call that takes a context panics at once on a nil one, naming
// itself, as net.Dialer.DialContext does: before it touches its receiver
// or a device (the receivers here are nil, and the addresses those of no
// device on a host without one). Dial, Listen and the rest went on with
// the nil context, to a nil dereference on the way or, with no device, an
// error that hid the mistake.
func TestNilContext(t *testing.T) {
	var nilCtx context.Context
	var ch *rdmacm.EventChannel
	var l *rdmacm.Listener
	var r *rdmacm.ConnRequest
	for _, c := range []struct {
		name string
		call func()
	}{
		{"Dial", func() { rdmacm.Dial(nilCtx, "198.18.0.1:7471", nil) }},
		{"Listen", func() { rdmacm.Listen(nilCtx, "198.18.0.1:0", nil) }},
		{"LookupUD", func() { rdmacm.LookupUD(nilCtx, "198.18.0.1:7471", nil) }},
		{"JoinMulticast", func() { rdmacm.JoinMulticast(nilCtx, "239.1.2.3", nil) }},
		{"(*EventChannel).GetEvent", func() { ch.GetEvent(nilCtx) }},
		{"(*EventChannel).Await", func() { ch.Await(nilCtx, rdmacm.EventEstablished) }},
		{"(*Listener).Accept", func() { l.Accept(nilCtx) }},
		{"(*Listener).GetRequest", func() { l.GetRequest(nilCtx) }},
		{"(*ConnRequest).Accept", func() { r.Accept(nilCtx, nil) }},
	} {
		want := "rdmacm." + c.name + ": nil Context"
		if got := rdmatest.Panic(c.call); got != want {
			t.Errorf("%s(nil): panicked with %v; want %q", c.name, got, want)
		}
	}
}
