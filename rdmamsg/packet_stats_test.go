//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmamsg"
)

// TestPacketStats: each of Stats' counters moves when what it counts
// happens, and only then: datagrams sent and read, one cut to the
// buffer, two malformed ones (too short for the header, a header not
// rdmamsg's) and a forger's from a QP a lookup refuted, which a bare UD
// QP on the client's address sends, and a receive queue run full.
func TestPacketStats(t *testing.T) {
	s, c := packetPair(t)
	_, cli := ends(t)
	ctx := timeout(t, 90*time.Second)
	buf := make([]byte, s.MaxDatagram())
	check := func(what string, p *rdmamsg.PacketConn, want rdmamsg.PacketStats) {
		t.Helper()
		if got := p.Stats(); got != want {
			t.Errorf("%s: at %v: Stats %+v, want %+v", what, p.LocalAddr(), got, want)
		}
	}
	read := func(p *rdmamsg.PacketConn, b []byte, want string) netip.AddrPort {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, from, _ := p.ReadFrom(short, b)
		if string(b[:n]) != want {
			t.Fatalf("at %v: %q from %v, want %q", p.LocalAddr(), b[:n], from, want)
		}
		return from
	}
	check("new", s, rdmamsg.PacketStats{})

	if err := c.WriteTo(ctx, []byte("GET key"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	read(s, buf[:3], "GET")
	check("one datagram sent", c, rdmamsg.PacketStats{Sent: 1})
	check("one datagram read, cut", s, rdmamsg.PacketStats{Received: 1, Cut: 1})

	// Two datagrams that are no PacketConn's, then the client's: the
	// read gives the client's, having dropped the others.
	f := newForger(t, cli.Dev, cli.IP, s.LocalAddr())
	f.sendRaw(t, []byte("GE"))
	f.sendRaw(t, []byte("HTTP/1.1 200 OK"))
	time.Sleep(200 * time.Millisecond) // they come first
	if err := c.WriteTo(ctx, []byte("GET 2"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	read(s, buf, "GET 2")
	check("two malformed", s, rdmamsg.PacketStats{Received: 2, Cut: 1, Malformed: 2})

	// The server answers the client (a lookup); the forger claims the
	// client's port, which has the server look it up again before its
	// next answer; the lookup refutes the forger's QP, whose next
	// datagram is counted.
	if err := s.WriteTo(ctx, []byte("VALUE 1"), c.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	read(c, buf, "VALUE 1")
	f.send(t, c.LocalAddr().Port(), uint32(s.MaxDatagram()), []byte("PUT 1"))
	read(s, buf, "PUT 1")
	check("a forger's datagram not yet refuted", s, rdmamsg.PacketStats{Sent: 1, Received: 3, Cut: 1, Malformed: 2})
	if err := s.WriteTo(ctx, []byte("VALUE 2"), c.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	read(c, buf, "VALUE 2")
	f.send(t, c.LocalAddr().Port(), uint32(s.MaxDatagram()), []byte("PUT 2"))
	read(s, buf, "PUT 2")
	check("a refuted forger's datagram", s, rdmamsg.PacketStats{Sent: 2, Received: 4, Cut: 1, Malformed: 2, Refuted: 1})
	check("the client", c, rdmamsg.PacketStats{Sent: 2, Received: 2})

	// 8 datagrams to a side that keeps 4 receives posted and does not
	// read: 4 are read, and the queue ran full once.
	na, _ := ends(t)
	d, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(na.IP, 0).String(), &rdmamsg.PacketConfig{Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, d) })
	for i := range 8 {
		if err := c.WriteTo(ctx, message(i, 20), d.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // they come, or are dropped
	got := 0
	for {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, _, err := d.ReadFrom(short, buf)
		cancel()
		if err != nil {
			break
		}
		got++
	}
	if got != 4 {
		t.Errorf("a side that keeps 4 receives posted read %d of 8 datagrams sent at once", got)
	}
	check("8 datagrams to 4 receives", d, rdmamsg.PacketStats{Received: 4, Full: 1})
	check("the client, at the end", c, rdmamsg.PacketStats{Sent: 10, Received: 2})
}
