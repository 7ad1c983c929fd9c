//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmamsg"
)

// Every call that takes a context panics at once on a nil one, naming
// itself, as net.Dialer.DialContext does: before it touches its receiver
// or a device (the receivers here are nil, and the addresses those of no
// device on a host without one). They went on with the nil context, to
// a nil dereference on the way or, with no device, an error that hid the
// mistake. Handshake leaves its net.Conn open, the caller's.
func TestNilContext(t *testing.T) {
	var nilCtx context.Context
	var c *rdmamsg.Conn
	var l *rdmamsg.Listener
	var p *rdmamsg.PacketConn
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	buf := make([]byte, 8)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"Dial", func() { rdmamsg.Dial(nilCtx, "198.18.0.1:7471", nil) }},
		{"Listen", func() { rdmamsg.Listen(nilCtx, "198.18.0.1:0", nil) }},
		{"Handshake", func() { rdmamsg.Handshake(nilCtx, a, nil) }},
		{"ListenPacket", func() { rdmamsg.ListenPacket(nilCtx, "198.18.0.1:0", nil) }},
		{"(*Listener).Accept", func() { l.Accept(nilCtx) }},
		{"(*Conn).Send", func() { c.Send(nilCtx, buf) }},
		{"(*Conn).Recv", func() { c.Recv(nilCtx, buf) }},
		{"(*Conn).ReadRemote", func() { c.ReadRemote(nilCtx, nil, 0, ibverbs.RemoteMR{}, 0, 1) }},
		{"(*Conn).WriteRemote", func() { c.WriteRemote(nilCtx, ibverbs.RemoteMR{}, 0, nil, 0, 1) }},
		{"(*PacketConn).ReadFrom", func() { p.ReadFrom(nilCtx, buf) }},
		{"(*PacketConn).WriteTo", func() { p.WriteTo(nilCtx, buf, netip.MustParseAddrPort("198.18.0.2:1")) }},
	} {
		want := "rdmamsg." + tc.name + ": nil Context"
		if got := rdmatest.Panic(tc.call); got != want {
			t.Errorf("%s(nil): panicked with %v; want %q", tc.name, got, want)
		}
	}
	// The pipe is still open: a write on one end reaches the other.
	go a.Write([]byte("x"))
	if n, err := b.Read(buf); n != 1 || err != nil {
		t.Errorf("Handshake's net.Conn after the panic: read %d, %v; want it open", n, err)
	}
}
