//go:build linux && cgo

package rdmamsg_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// checkOpError checks that err is what a TCP or UDP socket's method op
// returns: a *net.OpError itself (not one wrapped), of Net "rdma", the
// addresses source and addr, that unwraps to each of want.
func checkOpError(t *testing.T, what string, err error, op string, source, addr net.Addr, want ...error) {
	t.Helper()
	oe, ok := err.(*net.OpError)
	if !ok {
		t.Errorf("%s: %v (%T); want a *net.OpError", what, err, err)
		return
	}
	if oe.Op != op || oe.Net != "rdma" || oe.Source != source || oe.Addr != addr {
		t.Errorf("%s: %v: Op %q, Net %q, Source %v, Addr %v; want %q, \"rdma\", %v, %v",
			what, err, oe.Op, oe.Net, oe.Source, oe.Addr, op, source, addr)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("%s: %v does not match %v", what, err, w)
		}
	}
}

// checkTimeout checks that err is a net.Error whose Timeout is true, as
// a socket's passed deadline's is.
func checkTimeout(t *testing.T, what string, err error) {
	t.Helper()
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("%s: %v; want a net.Error whose Timeout is true", what, err)
	}
}

// checkNative checks that a method of rdmamsg's own API (with a context)
// returned its own error, not an OpError, matching want.
func checkNative(t *testing.T, what string, err error, want error) {
	t.Helper()
	if _, ok := err.(*net.OpError); ok || !errors.Is(err, want) {
		t.Errorf("%s: %v (%T); want rdmamsg's own error, matching %v", what, err, err, want)
	}
}

// TestNetConnOpError: NetConn's errors are a TCPConn's: a *net.OpError
// naming the method and both addresses (for the deadlines' setters, this
// side's), which still matches os.ErrDeadlineExceeded (and is a Timeout)
// or net.ErrClosed and ErrClosed; Read at the end of the stream returns
// io.EOF itself. (NetConn passed rdmamsg's errors through: after Close,
// closedError, which no err.(net.Error) or errors.As to *net.OpError
// found.)
func TestNetConnOpError(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	nc := cli.NetConn()
	local, remote := nc.LocalAddr(), nc.RemoteAddr()
	buf := make([]byte, 10)

	if err := nc.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := nc.Read(buf)
	checkOpError(t, "Read past its deadline", err, "read", local, remote, os.ErrDeadlineExceeded)
	checkTimeout(t, "Read past its deadline", err)
	_, err = nc.Write([]byte("x"))
	checkOpError(t, "Write past its deadline", err, "write", local, remote, os.ErrDeadlineExceeded)
	checkTimeout(t, "Write past its deadline", err)
	_, err = nc.(io.ReaderFrom).ReadFrom(strings.NewReader("x"))
	checkOpError(t, "ReadFrom past its deadline", err, "readfrom", local, remote, os.ErrDeadlineExceeded)
	checkTimeout(t, "ReadFrom past its deadline", err)
	_, err = nc.(io.WriterTo).WriteTo(io.Discard)
	checkOpError(t, "WriteTo past its deadline", err, "writeto", local, remote, os.ErrDeadlineExceeded)
	checkTimeout(t, "WriteTo past its deadline", err)
	if err := nc.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	// The peer's Close ends the stream: what it sent, then io.EOF itself.
	if _, err := srv.Write([]byte("end")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(nc, buf[:3]); err != nil || string(buf[:n]) != "end" {
		t.Fatalf("Read: %q, %v", buf[:n], err)
	}
	if n, err := nc.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Read at the end of the stream: %d bytes, %v (%T); want io.EOF itself", n, err, err)
	}

	if err := nc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = nc.Read(buf)
	checkOpError(t, "Read after Close", err, "read", local, remote, net.ErrClosed, rdmamsg.ErrClosed)
	_, err = nc.Write([]byte("x"))
	checkOpError(t, "Write after Close", err, "write", local, remote, net.ErrClosed, rdmamsg.ErrClosed)
	_, err = nc.(io.ReaderFrom).ReadFrom(strings.NewReader("x"))
	checkOpError(t, "ReadFrom after Close", err, "readfrom", local, remote, net.ErrClosed)
	_, err = nc.(io.WriterTo).WriteTo(io.Discard)
	checkOpError(t, "WriteTo after Close", err, "writeto", local, remote, net.ErrClosed)
	err = nc.(interface{ CloseWrite() error }).CloseWrite()
	checkOpError(t, "CloseWrite after Close", err, "close", local, remote, net.ErrClosed)
	checkOpError(t, "SetDeadline after Close", nc.SetDeadline(time.Time{}), "set", nil, local, net.ErrClosed)
	checkOpError(t, "SetReadDeadline after Close", nc.SetReadDeadline(time.Time{}), "set", nil, local, net.ErrClosed)
	checkOpError(t, "SetWriteDeadline after Close", nc.SetWriteDeadline(time.Time{}), "set", nil, local, net.ErrClosed)
	if err := nc.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}

	// The Conn's own methods keep rdmamsg's errors.
	_, err = cli.Read(buf)
	checkNative(t, "Conn.Read after Close", err, rdmamsg.ErrClosed)
	checkNative(t, "Conn.Send after Close", cli.Send(timeout(t, 10*time.Second), []byte("x")), rdmamsg.ErrClosed)
}

// TestNetListenerOpError: NetListener's Accept after Close fails as a
// TCPListener's: a *net.OpError "accept" with the listener's address,
// matching net.ErrClosed and ErrClosed, and not temporary (net/http's
// Serve would go on). The Listener's own Accept keeps rdmamsg's error.
func TestNetListenerOpError(t *testing.T) {
	srvNet, _ := ends(t)
	ctx := timeout(t, 30*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	nl := l.NetListener()
	closeOK(t, nl)
	_, err = nl.Accept()
	checkOpError(t, "Accept after Close", err, "accept", nil, nl.Addr(), net.ErrClosed, rdmamsg.ErrClosed)
	// net/http's Serve asks Temporary, deprecated in net.Error.
	var tmp interface{ Temporary() bool }
	if _, ok := err.(net.Error); !ok || errors.As(err, &tmp) && tmp.Temporary() {
		t.Errorf("Accept after Close: %v; want a net.Error, not temporary", err)
	}
	_, err = l.Accept(ctx)
	checkNative(t, "Listener.Accept after Close", err, rdmamsg.ErrClosed)
}

// TestNetPacketConnOpError: NetPacketConn's errors are a UDPConn's: a
// *net.OpError naming the method, this side's address and WriteTo's
// destination as given, matching os.ErrDeadlineExceeded (a Timeout), the
// errno of a destination refused, or net.ErrClosed and ErrClosed after
// Close. The PacketConn's own methods keep rdmamsg's errors.
func TestNetPacketConnOpError(t *testing.T) {
	a, b := packetPair(t)
	na, nb := a.NetPacketConn(), b.NetPacketConn()
	local, to := na.LocalAddr(), nb.LocalAddr()
	buf := make([]byte, 64)

	if err := na.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	_, from, err := na.ReadFrom(buf)
	checkOpError(t, "ReadFrom past its deadline", err, "read", local, nil, os.ErrDeadlineExceeded)
	checkTimeout(t, "ReadFrom past its deadline", err)
	if from != nil {
		t.Errorf("ReadFrom past its deadline: from %v", from)
	}
	_, err = na.WriteTo([]byte("x"), to)
	checkOpError(t, "WriteTo past its deadline", err, "write", local, to, os.ErrDeadlineExceeded)
	checkTimeout(t, "WriteTo past its deadline", err)
	if err := na.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}

	ip := b.LocalAddr().Addr()
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7473}
	nowhere := rdmamsg.Addr(netip.AddrPortFrom(ip, b.LocalAddr().Port()+1))
	for _, tc := range []struct {
		name string
		to   net.Addr
		want error
	}{
		{"nil", nil, syscall.EINVAL},
		{"port 0", rdmamsg.Addr(netip.AddrPortFrom(ip, 0)), syscall.EINVAL},
		{"loopback", loopback, syscall.EADDRNOTAVAIL},
		{"nothing listens", nowhere, syscall.ECONNREFUSED},
	} {
		n, err := na.WriteTo([]byte("x"), tc.to)
		checkOpError(t, "WriteTo "+tc.name, err, "write", local, tc.to, tc.want)
		if n != 0 {
			t.Errorf("WriteTo %s: %d bytes", tc.name, n)
		}
	}

	if err := na.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, _, err = na.ReadFrom(buf)
	checkOpError(t, "ReadFrom after Close", err, "read", local, nil, net.ErrClosed, rdmamsg.ErrClosed)
	_, err = na.WriteTo([]byte("x"), to)
	checkOpError(t, "WriteTo after Close", err, "write", local, to, net.ErrClosed, rdmamsg.ErrClosed)
	checkOpError(t, "SetDeadline after Close", na.SetDeadline(time.Time{}), "set", nil, local, net.ErrClosed)
	checkOpError(t, "SetReadDeadline after Close", na.SetReadDeadline(time.Time{}), "set", nil, local, net.ErrClosed)
	checkOpError(t, "SetWriteDeadline after Close", na.SetWriteDeadline(time.Time{}), "set", nil, local, net.ErrClosed)

	ctx := timeout(t, 10*time.Second)
	_, _, err = a.ReadFrom(ctx, buf)
	checkNative(t, "PacketConn.ReadFrom after Close", err, rdmamsg.ErrClosed)
	checkNative(t, "PacketConn.WriteTo after Close", a.WriteTo(ctx, []byte("x"), b.LocalAddr()), rdmamsg.ErrClosed)
}

// TestCloseCutIsTimeout: a Close whose wait for its sends the write
// deadline cut (the peer went silent) fails with an error that is itself
// a net.Error whose Timeout is true, as a net.Conn's method reports its
// deadline: Conn.Close's, and NetConn's Close's, an OpError "close".
// (The cut was a fmt.Errorf in the errors.Join of Close's errors:
// err.(net.Error) failed, and an OpError around it was no Timeout.)
func TestCloseCutIsTimeout(t *testing.T) {
	for _, viaNet := range []bool{false, true} {
		name := "Conn"
		if viaNet {
			name = "NetConn"
		}
		t.Run(name, func(t *testing.T) {
			srv, cli := pair(t, &rdmamsg.Config{KeepAlive: -1},
				&rdmamsg.Config{KeepAlive: -1, CM: rdmacm.Config{AckTimeout: 20}})
			t.Cleanup(func() { srv.Close() })
			if err := rdmamsg.StopSilently(srv); err != nil {
				t.Fatal(err)
			}
			if err := cli.Send(timeout(t, 10*time.Second), message(0, 10)); err != nil {
				t.Fatal(err)
			}
			if err := cli.SetWriteDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			var err error
			if viaNet {
				nc := cli.NetConn()
				err = nc.Close()
				checkOpError(t, "Close cut", err, "close", nc.LocalAddr(), nc.RemoteAddr(), os.ErrDeadlineExceeded)
			} else {
				err = cli.Close()
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "may not have reached") {
				t.Errorf("Close cut: %v; want what may not have arrived, and os.ErrDeadlineExceeded", err)
			}
			checkTimeout(t, "Close cut", err)
		})
	}
}
