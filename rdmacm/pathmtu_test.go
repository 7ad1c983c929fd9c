//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestPathMTURefused: a Config.PathMTU that is not an MTU is refused at
// once by Listen and Dial with EINVAL naming it, before they look at the
// address.
func TestPathMTURefused(t *testing.T) {
	for _, m := range []ibverbs.MTU{6, 255} {
		cfg := &rdmacm.Config{PathMTU: m}
		want := fmt.Sprintf("Config.PathMTU %d", m)
		if l, err := rdmacm.Listen(context.Background(), "127.0.0.1:0", cfg); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), want) {
			if l != nil {
				l.Close()
			}
			t.Errorf("Listen with PathMTU %d: %v, want EINVAL naming it", m, err)
		}
		if c, err := rdmacm.Dial(context.Background(), "127.0.0.1:7471", cfg); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), want) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial with PathMTU %d: %v, want EINVAL naming it", m, err)
		}
	}
}

// TestPathMTU: Config.PathMTU caps the path MTU of an RC connection's QP,
// on the side that sets it (Dial's, Accept's, both), below the one
// rdma_cm derives from the route, which it does not raise; and data moves
// over QPs so capped, in packets of many MTUs (sends each way, an RDMA
// write and an RDMA read). PathMTU 0 leaves rdma_cm's. librdmacm moved
// the QPs it made with the route's path MTU, and the program could not
// lower it.
func TestPathMTU(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	mtuOf := func(c *rdmacm.Conn) ibverbs.MTU {
		t.Helper()
		a, err := c.QP().Query()
		if err != nil {
			t.Fatal(err)
		}
		return a.PathMTU
	}
	srv, cli := connect(t, listen(t, n.IP, nil), n2.IP, &rdmacm.Config{})
	route := mtuOf(cli)
	if s := mtuOf(srv); s != route || route <= ibverbs.MTU256 {
		t.Fatalf("without PathMTU: server %v, client %v; want the same, above 256", s, route)
	}
	capped := min(ibverbs.MTU1024, route-1)
	t.Logf("rdma_cm's path MTU %v; PathMTU %v", route, capped)

	for _, tc := range []struct {
		name               string
		lcfg, dcfg         rdmacm.Config
		wantSrv, wantCli   ibverbs.MTU
		moveData, srq, wrs bool
	}{
		{name: "both", lcfg: rdmacm.Config{PathMTU: capped}, dcfg: rdmacm.Config{PathMTU: capped},
			wantSrv: capped, wantCli: capped, moveData: true},
		{name: "both_wrapi_srq", lcfg: rdmacm.Config{PathMTU: capped, WRAPI: true}, dcfg: rdmacm.Config{PathMTU: capped, WRAPI: true},
			wantSrv: capped, wantCli: capped, moveData: true, srq: true},
		{name: "dial", dcfg: rdmacm.Config{PathMTU: capped}, wantSrv: route, wantCli: capped},
		{name: "accept", lcfg: rdmacm.Config{PathMTU: capped}, wantSrv: capped, wantCli: route},
		{name: "above_the_route", lcfg: rdmacm.Config{PathMTU: ibverbs.MTU4096}, dcfg: rdmacm.Config{PathMTU: ibverbs.MTU4096},
			wantSrv: route, wantCli: route, moveData: true},
		{name: "zero", wantSrv: route, wantCli: route},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, pd := devicePD(t, n)
			lcfg := tc.lcfg
			lcfg.PD = pd
			var srq *ibverbs.SRQ
			if tc.srq {
				var err error
				if srq, err = pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 4, MaxSGE: 1}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { closeOK(t, srq) })
				lcfg.SRQ = srq
			}
			srv, cli := connect(t, listen(t, n.IP, &lcfg), n2.IP, &tc.dcfg)
			if s, c := mtuOf(srv), mtuOf(cli); s != tc.wantSrv || c != tc.wantCli {
				t.Errorf("path MTU: server %v, client %v; want %v and %v", s, c, tc.wantSrv, tc.wantCli)
			}
			for _, c := range []*rdmacm.Conn{srv, cli} {
				if a, err := c.QP().Query(); err != nil || a.State != ibverbs.QPStateRTS || a.MinRNRTimer != ibverbs.DefaultMinRNRTimer {
					t.Errorf("QP %#x: %v, state %v, RNR timer %d; want RTS and %d", c.QP().Num(), err, a.State, a.MinRNRTimer, ibverbs.DefaultMinRNRTimer)
				}
			}
			if srv.QP().WRAPI() != tc.lcfg.WRAPI || cli.QP().WRAPI() != tc.dcfg.WRAPI {
				t.Errorf("QP.WRAPI(): server %v, client %v", srv.QP().WRAPI(), cli.QP().WRAPI())
			}
			if tc.moveData {
				moveKiB(t, srv, cli, pd, srq)
			}
		})
	}
}

// moveKiB sends 3 KiB each way between srv (whose receives are srq's,
// where not nil) and cli, and has cli write 3 KiB into srv's memory and
// read them back, each message several packets of a small path MTU.
func moveKiB(t *testing.T, srv, cli *rdmacm.Conn, pd *ibverbs.PD, srq *ibverbs.SRQ) {
	t.Helper()
	const size = 3 << 10
	sm := register(t, pd, 4*size, ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead)
	cm := register(t, cli.PD(), 4*size, 0)
	fill := func(b []byte, seed byte) {
		for i := range b {
			b[i] = seed + byte(i*7)
		}
	}
	fill(cm.buf.Bytes()[:size], 1)
	fill(sm.buf.Bytes()[size:2*size], 2)

	recv := ibverbs.RecvWR{ID: 2, SGL: []ibverbs.SGE{sm.mr.SGE(2*size, size)}}
	if srq != nil {
		if err := srq.PostRecv([]ibverbs.RecvWR{recv}); err != nil {
			t.Fatal(err)
		}
	} else if err := srv.QP().PostRecv([]ibverbs.RecvWR{recv}); err != nil {
		t.Fatal(err)
	}
	postRecv(t, cli, cm, size, size)
	send(t, cli, cm, 0, size)
	if wc := waitWC(t, srv.RecvCQ(), 20*time.Second); wc.ByteLen != size || !bytes.Equal(sm.buf.Bytes()[2*size:3*size], cm.buf.Bytes()[:size]) {
		t.Errorf("server received %d bytes, want the client's %d", wc.ByteLen, size)
	}
	send(t, srv, sm, size, size)
	if wc := waitWC(t, cli.RecvCQ(), 20*time.Second); wc.ByteLen != size || !bytes.Equal(cm.buf.Bytes()[size:2*size], sm.buf.Bytes()[size:2*size]) {
		t.Errorf("client received %d bytes, want the server's %d", wc.ByteLen, size)
	}

	write := ibverbs.SendWR{ID: 3, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{cm.mr.SGE(0, size)}, RemoteAddr: sm.mr.Addr() + 3*size, RKey: sm.mr.RKey()}
	read := ibverbs.SendWR{ID: 4, Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{cm.mr.SGE(2*size, size)}, RemoteAddr: sm.mr.Addr() + 3*size, RKey: sm.mr.RKey()}
	for _, wr := range []ibverbs.SendWR{write, read} {
		if err := cli.QP().PostSend([]ibverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		waitWC(t, cli.SendCQ(), 20*time.Second)
	}
	if !bytes.Equal(sm.buf.Bytes()[3*size:], cm.buf.Bytes()[:size]) || !bytes.Equal(cm.buf.Bytes()[2*size:3*size], cm.buf.Bytes()[:size]) {
		t.Error("the RDMA write, or the read of it back, moved other bytes")
	}
}

// TestPathMTUCloseFlushes: the Close of a Conn whose QP it made itself
// (Config.PathMTU) moves the QP to the error state, as rdma_disconnect
// moves one that librdmacm made, so that a receive still posted flushes
// to a CQ that stays open (Config.RecvCQ).
func TestPathMTUCloseFlushes(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	dctx, pd := devicePD(t, n2)
	cq, err := dctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cq) })
	m := register(t, pd, 4096, 0)
	for _, mtu := range []ibverbs.MTU{0, ibverbs.MTU512} {
		l := listen(t, n.IP, &rdmacm.Config{PathMTU: mtu})
		srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n2.IP, &rdmacm.Config{PathMTU: mtu, PD: pd, RecvCQ: cq})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, srv) })
		postRecv(t, cli, m, 0, 64)
		closeOK(t, cli)
		wc, err := pollWC(cq, 10*time.Second)
		var we *ibverbs.WCError
		if !errors.As(err, &we) || we.Status != ibverbs.WCWRFlushErr {
			t.Errorf("PathMTU %v: the receive posted before Close: %+v, %v; want a flush error", mtu, wc, err)
		}
	}
}
