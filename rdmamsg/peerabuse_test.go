//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestPeerWriteWithImm: the peer writes n bytes into a region this side
// registered for remote writes with immediate data (RDMA_WRITE_WITH_IMM),
// posted on its QP behind rdmamsg's back: the write takes a receive,
// which completes as RECV_RDMA_WITH_IMM with the write's length. Recv
// fails the connection (EPROTO), naming the opcode and the length, and
// so does Send after. Where Recv took the completion for a message of
// the write's length, it panicked under the Conn's mutex (past the
// receive buffers: 300000), returned the stale bytes of a receive buffer
// as a message (longer than MaxMessage, within the buffers: 5000) or an
// empty message (0).
func TestPeerWriteWithImm(t *testing.T) {
	for _, n := range []int{0, 5000, 300000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			srv, cli := pair(t, nil, nil)
			ctx := timeout(t, 30*time.Second)
			r, err := srv.RegisterMemory(1<<20, ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			// The server's receive buffers hold messages of their own
			// before the write.
			for i := range 20 {
				if err := cli.Send(ctx, bytes.Repeat([]byte{byte('a' + i)}, srv.MaxRecv())); err != nil {
					t.Fatal(err)
				}
				if _, err := srv.Recv(ctx, make([]byte, srv.MaxRecv())); err != nil {
					t.Fatal(err)
				}
			}
			src, err := cli.RegisterMemory(max(n, 1), 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range src.Bytes() {
				src.Bytes()[i] = 'H'
			}
			rem := r.Remote()
			wr := ibverbs.SendWR{ID: 1 << 63, Opcode: ibverbs.OpRDMAWriteWithImm, RemoteAddr: rem.Addr, RKey: rem.RKey}
			if n > 0 {
				wr.SGL = []ibverbs.SGE{rdmamsg.RegionSGE(src, 0, n)}
			}
			if err := cli.QP().PostSend([]ibverbs.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			type result struct {
				n     int
				err   error
				panic any
			}
			out := make(chan result, 1)
			go func() {
				var got result
				defer func() {
					got.panic = recover()
					out <- got
				}()
				got.n, got.err = srv.Recv(ctx, make([]byte, 1<<20))
			}()
			var got result
			select {
			case got = <-out:
			case <-time.After(20 * time.Second):
				t.Fatal("Recv still waits 20 s after the peer's RDMA_WRITE_WITH_IMM")
			}
			if got.panic != nil {
				// The Conn's mutex stays held: leave the pair as it is.
				t.Fatalf("Recv after the peer's RDMA_WRITE_WITH_IMM of %d bytes panicked: %v", n, got.panic)
			}
			want := fmt.Sprintf("RECV_RDMA_WITH_IMM of %d bytes", n)
			if !errors.Is(got.err, syscall.EPROTO) || !strings.Contains(got.err.Error(), want) {
				t.Errorf("Recv after the peer's RDMA_WRITE_WITH_IMM of %d bytes = %d, %v; want an error matching EPROTO that says %q", n, got.n, got.err, want)
			}
			if err := srv.Send(ctx, []byte("x")); !errors.Is(err, syscall.EPROTO) {
				t.Errorf("Send after: %v, want the connection's failure (EPROTO)", err)
			}
			cli.Abort()
			srv.Close()
			if err := r.Close(); err != nil {
				t.Error(err)
			}
			if err := src.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestOwnerAfterRefusedOp: the peer's RDMA write past the end of this
// side's region, or read with an rkey this side does not know, fails the
// peer's operation (REM_ACCESS_ERR) and its connection; this side's device
// (soft-RoCE's) moves this side's QP to the error state too, with no
// completion of an error of its own, only flushes. The owner's Recv and
// Send fail within a few seconds with an error matching ECONNRESET that
// says so, the owner disconnects (the peer's link ends), and Close
// returns at once, with nothing left behind over the rounds. Where the
// flushes were taken for those of this side's or the peer's end, Recv
// waited for good (until its context ended), Sends returned nil and were
// flushed, and Close said "broken pipe".
func TestOwnerAfterRefusedOp(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(ctx context.Context, cli *rdmamsg.Conn, local *rdmamsg.Region, rem ibverbs.RemoteMR) error
	}{
		{"write past the region", func(ctx context.Context, cli *rdmamsg.Conn, local *rdmamsg.Region, rem ibverbs.RemoteMR) error {
			rem.Len += 1 << 20 // a RemoteMR that claims more than there is
			return cli.WriteRemote(ctx, rem, 1<<16, local, 0, 64)
		}},
		{"read with a bad rkey", func(ctx context.Context, cli *rdmamsg.Conn, local *rdmamsg.Region, rem ibverbs.RemoteMR) error {
			rem.RKey ^= 0x5a5a00
			return cli.ReadRemote(ctx, local, 0, rem, 0, 64)
		}},
	} {
		for _, via := range []string{"rdma_cm", "Handshake"} {
			t.Run(tc.name+" via "+via, func(t *testing.T) {
				checkNoLeaks(t, 2, "refused operations", func() {
					var srv, cli *rdmamsg.Conn
					if via == "Handshake" {
						srv, cli = handshakePair(t, nil, nil)
					} else {
						srv, cli = pair(t, nil, nil)
					}
					ctx := timeout(t, 30*time.Second)
					sr, err := srv.RegisterMemory(8192, ibverbs.AccessRemoteRead|ibverbs.AccessRemoteWrite)
					if err != nil {
						t.Fatal(err)
					}
					cr, err := cli.RegisterMemory(8192, 0)
					if err != nil {
						t.Fatal(err)
					}
					if err := tc.op(ctx, cli, cr, sr.Remote()); !errors.Is(err, ibverbs.WCRemAccessErr) {
						t.Fatalf("the peer's operation: %v, want REM_ACCESS_ERR", err)
					}
					rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					start := time.Now()
					_, err = srv.Recv(rctx, make([]byte, 100))
					took := time.Since(start)
					if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "without a failure of this side's requests") {
						t.Fatalf("the owner's Recv after the peer's refused operation: %v after %v, want an error matching ECONNRESET that says why", err, took)
					}
					if took > 5*time.Second {
						t.Errorf("the owner's Recv took %v to fail", took)
					}
					if serr := srv.Send(ctx, []byte("x")); !errors.Is(serr, syscall.ECONNRESET) {
						t.Errorf("the owner's Send after: %v, want %v", serr, err)
					}
					if rc := cli.RDMA(); rc != nil {
						select {
						case <-rc.Done():
						case <-time.After(5 * time.Second):
							t.Errorf("the peer's connection still up 5 s after the owner's failure: the owner did not disconnect")
						}
					}
					start = time.Now()
					if err := srv.Close(); err != nil && !errors.Is(err, syscall.ECONNRESET) {
						t.Errorf("the owner's Close: %v", err)
					}
					if d := time.Since(start); d > 2*time.Second {
						t.Errorf("the owner's Close took %v", d)
					}
					cli.Close()
					if err := errors.Join(sr.Close(), cr.Close()); err != nil {
						t.Error(err)
					}
				})
			})
		}
	}
}

// TestNetPacketConnNilAddr: the net.PacketConn's WriteTo to a nil
// net.Addr, or to a nil *net.UDPAddr or *net.TCPAddr, fails with an
// error matching EINVAL, as a *net.UDPConn's does, and writes nothing.
// To a nil net.Addr it panicked (a nil interface's String).
func TestNetPacketConnNilAddr(t *testing.T) {
	srvNet, _ := ends(t)
	ctx := timeout(t, 30*time.Second)
	p, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, a := range []net.Addr{nil, (*net.UDPAddr)(nil), (*net.TCPAddr)(nil)} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("WriteTo(b, %#v) panicked: %v", a, r)
				}
			}()
			if n, err := p.NetPacketConn().WriteTo([]byte("x"), a); n != 0 || !errors.Is(err, syscall.EINVAL) {
				t.Errorf("WriteTo(b, %#v) = %d, %v; want 0 and an error matching EINVAL", a, n, err)
			}
		}()
	}
}

// TestPeerSendTooLong: the peer sends, behind rdmamsg's back, a message
// longer than this side's largest: the device fails this side's receive
// (soft-RoCE with LOC_QP_OP_ERR, others with LOC_LEN_ERR), and Recv's
// error says that a message longer than MaxMessage is the likely cause,
// where it gave the status alone.
func TestPeerSendTooLong(t *testing.T) {
	srv, cli := pair(t, nil, nil)
	ctx := timeout(t, 30*time.Second)
	n := srv.MaxRecv() + 1000
	src, err := cli.RegisterMemory(n, 0)
	if err != nil {
		t.Fatal(err)
	}
	wr := ibverbs.SendWR{ID: 1 << 63, Opcode: ibverbs.OpSendWithImm, SGL: []ibverbs.SGE{rdmamsg.RegionSGE(src, 0, n)}}
	if err := cli.QP().PostSend([]ibverbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	_, err = srv.Recv(ctx, make([]byte, 2*n))
	want := fmt.Sprintf("likely a message longer than this side's largest, %d bytes", srv.MaxRecv())
	var wce *ibverbs.WCError
	if !errors.As(err, &wce) || !strings.Contains(err.Error(), want) {
		t.Errorf("Recv after the peer's send of %d bytes: %v; want the receive's *ibverbs.WCError and %q", n, err, want)
	}
	cli.Abort()
	srv.Close()
	if err := src.Close(); err != nil {
		t.Error(err)
	}
}

// TestDialNowhere: Dial refuses at once an address where no Listener can
// be, as PacketConn.WriteTo does: an unspecified one (EINVAL), a
// loopback one (EADDRNOTAVAIL) or port 0 (EINVAL), behind a host name
// too. It said
// "rdma_resolve_route: no such device", and a Dial to port 0 went out and
// the peer rejected it ("invalid service ID").
func TestDialNowhere(t *testing.T) {
	ctx := timeout(t, 30*time.Second)
	for _, tc := range []struct {
		addr string
		want error
	}{
		{"0.0.0.0:0", syscall.EINVAL},
		{"[::]:0", syscall.EINVAL},
		{"224.0.0.1:7471", syscall.EINVAL},
		{"127.0.0.1:1", syscall.EADDRNOTAVAIL},
		{"[::ffff:127.0.0.1]:1", syscall.EADDRNOTAVAIL},
		{"[::1]:7471", syscall.EADDRNOTAVAIL},
		{"198.18.0.1:0", syscall.EINVAL},
		{"[fd00::1]:0", syscall.EINVAL},
		{"rdma-server.invalid:0", syscall.EINVAL}, // refused before the name is looked up
	} {
		c, err := rdmamsg.Dial(ctx, tc.addr, nil)
		if c != nil {
			c.Close()
		}
		if !errors.Is(err, tc.want) || !strings.HasPrefix(fmt.Sprint(err), "rdmamsg: dial ") {
			t.Errorf("Dial %s: %v; want an error of Dial's matching %v", tc.addr, err, tc.want)
		}
	}
}

// TestListenPacketInUse: ListenPacket on a port in use says so, naming
// the address once (it said "listen A: A: rdma_bind_addr: ...").
func TestListenPacketInUse(t *testing.T) {
	srvNet, _ := ends(t)
	ctx := timeout(t, 30*time.Second)
	p, err := rdmamsg.ListenPacket(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addr := p.LocalAddr().String()
	p2, err := rdmamsg.ListenPacket(ctx, addr, nil)
	if p2 != nil {
		p2.Close()
	}
	if !errors.Is(err, syscall.EADDRINUSE) || strings.Count(fmt.Sprint(err), addr) != 1 {
		t.Errorf("ListenPacket at %s again: %v; want an error matching EADDRINUSE that names the address once", addr, err)
	}
}
