//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// handshakePair connects two Conns with Handshake over a TCP connection
// between the test's two addresses, as pair does through rdma_cm.
func handshakePair(t testing.TB, srvCfg, cliCfg *rdmamsg.Config) (s, c *rdmamsg.Conn) {
	t.Helper()
	srvNet, cliNet := ends(t)
	srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
	return handshakeBoth(t, srvNC, cliNC, srvCfg, cliCfg)
}

// handshakeBoth runs Handshake on both ends of a connection at once, each
// with its settings, and returns both Conns; the caller closes them.
func handshakeBoth(t testing.TB, srvNC, cliNC net.Conn, srvCfg, cliCfg *rdmamsg.Config) (s, c *rdmamsg.Conn) {
	t.Helper()
	ctx := timeout(t, 60*time.Second)
	type res struct {
		c   *rdmamsg.Conn
		err error
	}
	acc := make(chan res, 1)
	go func() {
		c, err := rdmamsg.Handshake(ctx, srvNC, srvCfg)
		acc <- res{c, err}
	}()
	c, err := rdmamsg.Handshake(ctx, cliNC, cliCfg)
	a := <-acc
	if err != nil || a.err != nil {
		if c != nil {
			c.Close()
		}
		if a.c != nil {
			a.c.Close()
		}
		t.Fatalf("client's handshake: %v; server's: %v", err, a.err)
	}
	return a.c, c
}

// TestHandshakeEndIsEOF: after the peer closes, this side reads what it
// sent and then io.EOF, however long it waits first: its keepalives do
// not go on to the peer's QP, which is gone, and fail there.
func TestHandshakeEndIsEOF(t *testing.T) {
	cfg := &rdmamsg.Config{KeepAlive: 20 * time.Millisecond, CM: rdmacm.Config{AckTimeout: 14, RetryCount: 1}}
	srv, cli := handshakePair(t, cfg, cfg)
	defer closeOK(t, cli)
	ctx := timeout(t, 60*time.Second)
	if err := srv.Send(ctx, []byte("bye")); err != nil {
		t.Fatal(err)
	}
	closeOK(t, srv)
	time.Sleep(time.Second) // many keepalive periods and ACK timeouts
	buf := make([]byte, 8)
	if n, err := cli.Recv(ctx, buf); err != nil || string(buf[:n]) != "bye" {
		t.Fatalf("the last message: %q, %v", buf[:n], err)
	}
	if n, err := cli.Recv(ctx, buf); err != io.EOF {
		t.Errorf("after the last message: %d bytes, %v; want io.EOF", n, err)
	}
}

// tcpPair returns the two ends of a TCP connection from cli to srv.
func tcpPair(t testing.TB, srv, cli netip.Addr) (srvNC, cliNC net.Conn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(srv, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		acc <- nc
	}()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(cli, 0)), Timeout: 10 * time.Second}
	cliNC, err = d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srvNC = <-acc
	if srvNC == nil {
		t.FailNow()
	}
	return srvNC, cliNC
}

// TestHandshake runs the Conn's tests again on Conns that Handshake made
// over TCP, and checks what is Handshake's own: the addresses are the TCP
// connection's, there is no rdma_cm connection, and closing the TCP
// connection from outside ends the Conn.
func TestHandshake(t *testing.T) {
	viaHandshake = true
	t.Cleanup(func() { viaHandshake = false })
	for _, tt := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"Messages", TestMessages},
		{"BothWaysAtOnce", TestBothWaysAtOnce},
		{"SendWaitsForReceiver", TestSendWaitsForReceiver},
		{"Stream", TestStream},
		{"StreamCopy", TestStreamCopy},
		{"CloseWakesWaiters", TestCloseWakesWaiters},
		{"EndUnderIO", TestEndUnderIO},
		{"NoAllocations", TestNoAllocations},
		{"NoLeaks", TestNoLeaks},
		{"PeerDies", TestPeerDies},
		{"KeepAlive", TestKeepAlive},
		{"KeepAliveWithoutCredit", TestKeepAliveWithoutCredit},
		{"ConcurrentWrites", TestConcurrentWrites},
		{"Deadlines", TestDeadlines},
		{"OwedUpdate", TestOwedUpdate},
		{"TurnWaitEnds", TestTurnWaitEnds},
		{"RemoteWriteRead", TestRemoteWriteRead},
		{"RemoteConcurrent", TestRemoteConcurrent},
		{"RemoteAccessError", TestRemoteAccessError},
		{"Abort", TestAbort},
		{"AbortWithoutCredit", TestAbortWithoutCredit},
		{"CloseWrite", TestCloseWrite},
	} {
		t.Run(tt.name, tt.f)
	}
	t.Run("Addresses", func(t *testing.T) {
		srv, cli := connect(t, nil, nil)
		if srv.RDMA() != nil || cli.RDMA() != nil {
			t.Error("RDMA() is not nil on a Conn that Handshake made")
		}
		srvNet, cliNet := ends(t)
		if srv.LocalAddr().Addr() != srvNet.IP || cli.LocalAddr().Addr() != cliNet.IP ||
			cli.RemoteAddr() != srv.LocalAddr() || srv.RemoteAddr() != cli.LocalAddr() {
			t.Errorf("server %v <- %v, client %v -> %v", srv.LocalAddr(), srv.RemoteAddr(), cli.LocalAddr(), cli.RemoteAddr())
		}
		if srv.QP().Num() == 0 || srv.QP().Num() == cli.QP().Num() && srvNet.Dev == cliNet.Dev {
			t.Errorf("QPs %d and %d", srv.QP().Num(), cli.QP().Num())
		}
		for _, c := range []*rdmamsg.Conn{srv, cli} {
			attr, err := c.QP().Query()
			if err != nil {
				t.Fatal(err)
			}
			// Remote write for the keepalive probes, writes of no bytes,
			// and with remote read for ReadRemote and WriteRemote (only
			// the regions registered give remote access); no atomic.
			if want := ibverbs.AccessRemoteRead | ibverbs.AccessRemoteWrite; attr.State != ibverbs.QPStateRTS ||
				attr.Access&ibverbs.AccessRemoteAtomic != 0 || attr.Access&want != want {
				t.Errorf("QP %d: state %v, access %v; want RTS, remote write and read alone", c.QP().Num(), attr.State, attr.Access)
			}
			if attr.Timeout != 18 || attr.RetryCnt != rdmacm.DefaultRetryCount {
				t.Errorf("QP %d: ACK timeout %d, retry count %d; want Handshake's defaults, 18 and %d",
					c.QP().Num(), attr.Timeout, attr.RetryCnt, rdmacm.DefaultRetryCount)
			}
		}
	})
}

// TestHandshakeRefused covers a handshake that cannot succeed: a peer that
// is not rdmamsg's, one that closes or says nothing, one whose settings
// are refused, and addresses that name no RDMA port. Each fails promptly
// with the reason, on both sides where both take part, and closes the
// TCP connection.
func TestHandshakeRefused(t *testing.T) {
	srvNet, cliNet := ends(t)
	short := func(t *testing.T) context.Context { return timeout(t, 30*time.Second) }

	t.Run("not rdmamsg", func(t *testing.T) {
		srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
		go func() {
			srvNC.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
			io.Copy(io.Discard, srvNC)
		}()
		_, err := rdmamsg.Handshake(short(t), cliNC, nil)
		if err == nil || !strings.Contains(err.Error(), "not an rdmamsg peer") {
			t.Fatalf("Handshake = %v, want not an rdmamsg peer", err)
		}
		t.Log(err)
		checkClosed(t, cliNC)
		srvNC.Close()
	})
	t.Run("peer closes", func(t *testing.T) {
		srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
		srvNC.Close()
		_, err := rdmamsg.Handshake(short(t), cliNC, nil)
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("Handshake = %v, want ECONNRESET", err)
		}
	})
	t.Run("peer silent", func(t *testing.T) {
		srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
		defer srvNC.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := rdmamsg.Handshake(ctx, cliNC, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Handshake = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		checkClosed(t, cliNC)
	})
	t.Run("cancelled", func(t *testing.T) {
		srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
		defer srvNC.Close()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		if _, err := rdmamsg.Handshake(ctx, cliNC, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Handshake = %v, want context.Canceled", err)
		}
	})
	t.Run("config", func(t *testing.T) {
		srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
		defer srvNC.Close()
		if _, err := rdmamsg.Handshake(short(t), cliNC, &rdmamsg.Config{Depth: 2}); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("Handshake = %v, want EINVAL", err)
		}
		checkClosed(t, cliNC)
		// A QP's ACK timeout is 5 bits: 32 is refused before the
		// peer is waited for, as rdmacm's Dial and Listen refuse it.
		srvNC2, cliNC2 := tcpPair(t, srvNet.IP, cliNet.IP)
		defer srvNC2.Close()
		_, err := rdmamsg.Handshake(short(t), cliNC2, &rdmamsg.Config{CM: rdmacm.Config{AckTimeout: 32}})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "AckTimeout") {
			t.Errorf("Handshake with Config.CM.AckTimeout 32 = %v, want EINVAL naming AckTimeout", err)
		}
		_, err = rdmamsg.Dial(short(t), netip.AddrPortFrom(srvNet.IP, 1).String(), &rdmamsg.Config{Device: srvNet.Dev})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Handshake") {
			t.Errorf("Dial with Config.Device = %v, want EINVAL", err)
		}
	})
	t.Run("no RDMA port", func(t *testing.T) {
		// Loopback has no RoCE GID: both sides fail, each with the
		// reason, the server's reaching the client.
		srvNC, cliNC := tcpPair(t, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1"))
		srvErr := make(chan error, 1)
		go func() {
			_, err := rdmamsg.Handshake(short(t), srvNC, nil)
			srvErr <- err
		}()
		_, errC := rdmamsg.Handshake(short(t), cliNC, nil)
		if !errors.Is(errC, syscall.ENODEV) && !errors.Is(errC, syscall.ECONNREFUSED) {
			t.Errorf("client: %v, want ENODEV or the server's refusal", errC)
		}
		if err := <-srvErr; !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "Config.Device") {
			t.Errorf("server: %v, want ENODEV naming Config.Device", err)
		} else {
			t.Logf("server: %v\nclient: %v", err, errC)
		}
		_, err := rdmamsg.Handshake(short(t), pipeEnd(t), nil)
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Config.Device") {
			t.Errorf("over a net.Pipe: %v, want EINVAL naming Config.Device", err)
		}
		_, err = rdmamsg.Handshake(short(t), pipeEnd(t), &rdmamsg.Config{Device: "no_such_device0"})
		if err == nil || !strings.Contains(err.Error(), "no_such_device0") {
			t.Errorf("an unknown device: %v", err)
		}
	})
}

// TestHandshakeOverLoopback runs the handshake's TCP over loopback and the
// messages over the device that Config.Device names, over a net.Pipe as
// well: the control connection need not take the RDMA port's route.
func TestHandshakeOverLoopback(t *testing.T) {
	srvNet, _ := ends(t)
	lo := netip.MustParseAddr("127.0.0.1")
	for _, name := range []string{"TCP over loopback", "net.Pipe"} {
		t.Run(name, func(t *testing.T) {
			var a, b net.Conn
			if name == "net.Pipe" {
				a, b = net.Pipe()
			} else {
				a, b = tcpPair(t, lo, lo)
			}
			cfg := &rdmamsg.Config{Device: srvNet.Dev}
			ctx := timeout(t, 60*time.Second)
			srv, cli := handshakeBoth(t, a, b, cfg, cfg)
			defer srv.Close()
			defer cli.Close()
			msg := []byte("over " + name)
			if err := cli.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 100)
			n, err := srv.Recv(ctx, buf)
			if err != nil || !bytes.Equal(buf[:n], msg) {
				t.Fatalf("Recv = %q, %v", buf[:n], err)
			}
			// Closing one side ends the other's stream: EOF, after what
			// was sent.
			if err := srv.Send(ctx, []byte("bye")); err != nil {
				t.Fatal(err)
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			if n, err := cli.Recv(ctx, buf); err != nil || string(buf[:n]) != "bye" {
				t.Fatalf("Recv = %q, %v; want bye", buf[:n], err)
			}
			if _, err := cli.Recv(ctx, buf); err != io.EOF {
				t.Fatalf("Recv after the peer closed = %v, want io.EOF", err)
			}
		})
	}
}

// TestHandshakeControlLost closes the TCP connection under a Conn from
// outside, as a peer process that dies does: the Conn ends, and its
// calls say so rather than wait; its peer reads io.ErrUnexpectedEOF, not
// the io.EOF of an orderly end.
func TestHandshakeControlLost(t *testing.T) {
	srvNet, cliNet := ends(t)
	srvNC, cliNC := tcpPair(t, srvNet.IP, cliNet.IP)
	ctx := timeout(t, 60*time.Second)
	srv, cli := handshakeBoth(t, srvNC, cliNC, nil, nil)
	defer cli.Close()
	defer srv.Close()
	recv := make(chan error, 1)
	go func() { _, err := cli.Recv(ctx, make([]byte, 10)); recv <- err }()
	time.Sleep(100 * time.Millisecond)
	srvNC.Close() // from under the server's Conn
	// No end message came: the stream did not end, it broke off.
	if err := <-recv; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("client's Recv = %v, want io.ErrUnexpectedEOF", err)
	}
	if err := cli.Send(ctx, []byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("client's Send = %v, want EPIPE", err)
	}
	if err := cli.Close(); err != nil {
		t.Errorf("client's Close: %v", err)
	}
	// The server's own end was closed under it: not the peer's orderly
	// end, so not io.EOF.
	if _, err := srv.Recv(ctx, make([]byte, 10)); err == nil || err == io.EOF || !strings.Contains(err.Error(), "handshake's connection") {
		t.Errorf("server's Recv = %v, want the lost connection", err)
	}
}

// checkClosed fails t unless nc is closed: a read fails at once with
// net.ErrClosed.
func checkClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the connection after a failed Handshake: read %v, want net.ErrClosed", err)
	}
}

// pipeEnd returns one end of a net.Pipe whose other end answers nothing.
func pipeEnd(t *testing.T) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	go io.Copy(io.Discard, b)
	return a
}

// nilAddrConn is a net.Conn that knows neither of its addresses, as some
// wrappers and test doubles do.
type nilAddrConn struct{ net.Conn }

func (nilAddrConn) LocalAddr() net.Addr  { return nil }
func (nilAddrConn) RemoteAddr() net.Addr { return nil }

// TestHandshakeNoAddresses: over a net.Conn without addresses, which
// cannot name the RDMA port, Handshake says to set Config.Device, where
// it panicked. It needs no device.
func TestHandshakeNoAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t, 10*time.Second)
	_, err = rdmamsg.Handshake(ctx, nilAddrConn{nc}, nil)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Config.Device") {
		t.Errorf("Handshake over a connection without addresses: %v, want EINVAL and what to set", err)
	}
}
