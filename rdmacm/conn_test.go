//go:build linux && cgo

package rdmacm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestConnectSendWrite connects two ends on one device, sends a message,
// and RDMA-writes into memory whose address and rkey the server sent as
// private data with its accept.
func TestConnectSendWrite(t *testing.T) {
	t.Run("post_send", func(t *testing.T) { testConnectSendWrite(t, false) })
	t.Run("wr_api", func(t *testing.T) { testConnectSendWrite(t, true) })
}

// testConnectSendWrite is TestConnectSendWrite with both ends' QPs made
// for ibv_post_send or, with wrapi, for the ibv_wr_* API (rdma_create_qp_ex).
func testConnectSendWrite(t *testing.T, wrapi bool) {
	n := device(t)
	// The server's memory must exist before it accepts, to advertise it:
	// so it uses a PD of its own on librdmacm's device context.
	_, pd := devicePD(t, n)
	target := register(t, pd, 4096, ibverbs.AccessRemoteWrite)
	adv := binary.BigEndian.AppendUint64(nil, target.mr.Addr())
	adv = binary.BigEndian.AppendUint32(adv, target.mr.RKey())

	start := time.Now()
	l := listen(t, n.IP, &rdmacm.Config{PD: pd, PrivateData: adv, WRAPI: wrapi})
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{PrivateData: []byte("hello from the client"), WRAPI: wrapi})
	t.Logf("connected in %v: %s -> %s", time.Since(start), cli.LocalAddr(), cli.RemoteAddr())
	if srv.QP().WRAPI() != wrapi || cli.QP().WRAPI() != wrapi {
		t.Errorf("QP.WRAPI(): server %v, client %v; want %v", srv.QP().WRAPI(), cli.QP().WRAPI(), wrapi)
	}

	if srv.Context().Name() != n.Dev || cli.Context().Name() != n.Dev {
		t.Errorf("devices: server %s, client %s, want %s", srv.Context().Name(), cli.Context().Name(), n.Dev)
	}
	if srv.PD() != pd {
		t.Error("the server's Conn does not use Config.PD")
	}
	if !bytes.HasPrefix(srv.PrivateData(), []byte("hello from the client")) {
		t.Errorf("server got private data %q", srv.PrivateData())
	}
	got := cli.PrivateData()
	if len(got) < 12 || !bytes.Equal(got[:12], adv) {
		t.Fatalf("client got private data %x, want prefix %x", got, adv)
	}
	raddr, rkey := binary.BigEndian.Uint64(got), binary.BigEndian.Uint32(got[8:])
	if cli.RemoteAddr() != l.Addr() || srv.LocalAddr() != l.Addr() || srv.RemoteAddr() != cli.LocalAddr() {
		t.Errorf("addresses: listener %s, server %s<-%s, client %s->%s",
			l.Addr(), srv.LocalAddr(), srv.RemoteAddr(), cli.LocalAddr(), cli.RemoteAddr())
	}
	if typ := cli.QP().Type(); typ != ibverbs.QPTypeRC {
		t.Errorf("QP type %s", typ)
	}

	// Send and receive.
	rm := register(t, pd, 4096, 0)
	cm := register(t, cli.PD(), 4096, 0)
	msg := []byte("rdma_cm says hi")
	postRecv(t, srv, rm, 0, 64)
	copy(cm.buf.Bytes(), msg)
	// The server waits for it on its CQ's own completion channel, parked
	// before the message is sent.
	type waited struct {
		wc  ibverbs.WC
		err error
	}
	recvd := make(chan waited, 1)
	go func() {
		wc, err := waitEvent(srv.RecvCQ(), 20*time.Second)
		recvd <- waited{wc, err}
	}()
	time.Sleep(50 * time.Millisecond)
	send(t, cli, cm, 0, len(msg))
	w := <-recvd
	if w.err != nil {
		t.Fatalf("CQ.Wait on the server's receive CQ: %v", w.err)
	}
	wc := w.wc
	if wc.Opcode != ibverbs.WCRecv || int(wc.ByteLen) != len(msg) || !bytes.Equal(rm.buf.Bytes()[:len(msg)], msg) {
		t.Errorf("received %d bytes %q (opcode %s)", wc.ByteLen, rm.buf.Bytes()[:wc.ByteLen], wc.Opcode)
	}

	// RDMA write into the advertised memory.
	data := []byte("written with RDMA through rdma_cm")
	copy(cm.buf.Bytes()[1024:], data)
	err := cli.QP().PostSend([]ibverbs.SendWR{{ID: 9, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{cm.mr.SGE(1024, len(data))}, RemoteAddr: raddr + 100, RKey: rkey}})
	if err != nil {
		t.Fatal(err)
	}
	if wc, err := waitEvent(cli.SendCQ(), 20*time.Second); err != nil || wc.WRID != 9 {
		t.Errorf("write completion %+v, %v", wc, err)
	}
	if g := target.buf.Bytes()[100 : 100+len(data)]; !bytes.Equal(g, data) {
		t.Errorf("target holds %q, want %q", g, data)
	}

	// The client closes; the server sees the peer disconnect, and a
	// goroutine waiting on its receive CQ wakes with the flushed receive.
	postRecv(t, srv, rm, 0, 64)
	go func() {
		wc, err := waitEvent(srv.RecvCQ(), 20*time.Second)
		recvd <- waited{wc, err}
	}()
	time.Sleep(50 * time.Millisecond)
	closeOK(t, cm.mr)
	closeOK(t, cli)
	closeOK(t, cli)
	if !errors.Is(cli.Err(), rdmacm.ErrClosed) {
		t.Errorf("client Err() = %v after Close", cli.Err())
	}
	select {
	case <-srv.Done():
		if !errors.Is(srv.Err(), rdmacm.ErrDisconnected) {
			t.Errorf("server Err() = %v, want ErrDisconnected", srv.Err())
		}
	case <-time.After(20 * time.Second):
		t.Error("the server saw no disconnect 20s after the client closed")
	}
	var we *ibverbs.WCError
	if w := <-recvd; !errors.As(w.err, &we) || we.Status != ibverbs.WCWRFlushErr {
		t.Errorf("a receive pending at the disconnect: %+v, %v; want a flush error", w.wc, w.err)
	}
}

// TestTwoDevices connects rxe1 (198.18.0.2) to a listener on rxe0
// (198.18.0.1): traffic crosses the veth pair as between two hosts.
func TestTwoDevices(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	l := listen(t, n.IP, nil)
	start := time.Now()
	srv, cli := connect(t, l, n2.IP, &rdmacm.Config{})
	t.Logf("connected in %v: %s -> %s", time.Since(start), cli.LocalAddr(), cli.RemoteAddr())
	if srv.Context().Name() != n.Dev || cli.Context().Name() != n2.Dev {
		t.Errorf("devices: server %s, client %s; want %s and %s", srv.Context().Name(), cli.Context().Name(), n.Dev, n2.Dev)
	}
	if cli.LocalAddr().Addr() != n2.IP || srv.RemoteAddr().Addr() != n2.IP {
		t.Errorf("client address %s, server sees %s; want %s", cli.LocalAddr(), srv.RemoteAddr(), n2.IP)
	}
	sm := register(t, srv.PD(), 4096, 0)
	cm := register(t, cli.PD(), 4096, 0)
	postRecv(t, cli, cm, 0, 64)
	copy(sm.buf.Bytes(), "across the wire")
	send(t, srv, sm, 0, 15)
	if wc := waitWC(t, cli.RecvCQ(), 20*time.Second); string(cm.buf.Bytes()[:wc.ByteLen]) != "across the wire" {
		t.Errorf("client received %q", cm.buf.Bytes()[:wc.ByteLen])
	}
}

// TestTOSAndAckTimeout: Config.TOS reaches both QPs' addresses (the
// accepted side takes the dialer's) and Config.AckTimeout each side's QP,
// by rdma_set_option.
func TestTOSAndAckTimeout(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	query := func(c *rdmacm.Conn) ibverbs.QPAttr {
		t.Helper()
		a, err := c.QP().Query()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Without either: rdma_cm's own values, which the settings below
	// must change.
	l := listen(t, n.IP, nil)
	srv, cli := connect(t, l, n2.IP, &rdmacm.Config{})
	d, ds := query(cli), query(srv)
	t.Logf("defaults: client timeout %d, traffic class %#x; server timeout %d", d.Timeout, d.AH.GRH.TrafficClass, ds.Timeout)

	const tos, cliTO, srvTO = 0x68, 21, 17
	if d.AH.GRH.TrafficClass == tos || d.Timeout == cliTO || ds.Timeout == srvTO {
		t.Fatalf("the defaults already hold the values under test")
	}
	l = listen(t, n.IP, &rdmacm.Config{AckTimeout: srvTO})
	srv, cli = connect(t, l, n2.IP, &rdmacm.Config{TOS: tos, AckTimeout: cliTO})
	a, as := query(cli), query(srv)
	if a.AH.GRH.TrafficClass != tos || a.Timeout != cliTO {
		t.Errorf("client QP: traffic class %#x, timeout %d; want %#x and %d", a.AH.GRH.TrafficClass, a.Timeout, tos, cliTO)
	}
	// The accepted side takes the dialer's type of service.
	if as.AH.GRH.TrafficClass != tos || as.Timeout != srvTO {
		t.Errorf("server QP: traffic class %#x, timeout %d; want %#x and %d", as.AH.GRH.TrafficClass, as.Timeout, tos, srvTO)
	}
}

func TestReject(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	reqData := make(chan []byte, 1)
	go func() {
		r, err := l.GetRequest(ctx)
		if err != nil {
			reqData <- []byte(err.Error())
			return
		}
		reqData <- r.PrivateData()
		if err := r.Reject([]byte("go away")); err != nil {
			t.Errorf("reject: %v", err)
		}
	}()
	c, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String(), PrivateData: []byte("may I?")})
	if err == nil {
		c.Close()
		t.Fatal("Dial succeeded; the server rejects")
	}
	if d := <-reqData; !bytes.HasPrefix(d, []byte("may I?")) {
		t.Errorf("request private data %q", d)
	}
	var rej *rdmacm.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("Dial: %v, want a *RejectedError", err)
	}
	if !bytes.HasPrefix(rej.PrivateData, []byte("go away")) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial: %v (status %d, private data %q)", err, rej.Status, rej.PrivateData)
	}
	t.Logf("%v", err)
}

func TestNoListener(t *testing.T) {
	n := device(t)
	// A port that was just free: take one, then let it go.
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().Port()
	closeOK(t, l)
	checkLeaks(t, 2)
	start := time.Now()
	c, err := rdmacm.Dial(timeout(t, 30*time.Second), addr(n.IP, port), &rdmacm.Config{SrcAddr: n.IP.String()})
	if err == nil {
		c.Close()
		t.Fatal("Dial to a port nobody listens on succeeded")
	}
	el := time.Since(start)
	t.Logf("%v after %v", err, el)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial: %v, want an error matching ECONNREFUSED", err)
	}
	if el > 10*time.Second {
		t.Errorf("refusal took %v", el)
	}

	// The same for a UD lookup (SIDR), which gets status 1.
	c, err = rdmacm.Dial(timeout(t, 30*time.Second), addr(n.IP, port), &rdmacm.Config{UD: true, SrcAddr: n.IP.String()})
	if err == nil {
		c.Close()
		t.Fatal("UD Dial to a port nobody listens on succeeded")
	}
	t.Logf("UD: %v", err)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("UD Dial: %v, want an error matching ECONNREFUSED", err)
	}
}

func TestDialCancel(t *testing.T) {
	n := device(t)
	if !netip.MustParsePrefix("198.18.0.0/15").Contains(n.IP) {
		// Off that subnet, 198.18.0.3 is reached through a router, and
		// the test sends nothing beyond this host.
		t.Skipf("the test device's address %v is not on the VM's 198.18.0.0/15 (GORPERF_TEST_ADDR)", n.IP)
	}
	warmUp(t, n)
	checkLeaks(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	// 198.18.0.3 is on the VM's subnet but nobody has it: ARP never answers.
	c, err := rdmacm.Dial(ctx, "198.18.0.3:7471", &rdmacm.Config{AddrTimeout: 10 * time.Second})
	el := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("Dial to 198.18.0.3 succeeded")
	}
	t.Logf("%v after %v", err, el)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Dial: %v, want context.Canceled", err)
	}
	// Well within the 10 s AddrTimeout that a Dial blind to the
	// cancellation waits out, and far enough past 200 ms for a slow host
	// (CI's VM runs under TCG).
	if el > 6*time.Second {
		t.Errorf("Dial returned %v after being cancelled at 200ms", el)
	}

	// Without a deadline, the address resolution gives up after
	// AddrTimeout with ADDR_ERROR and ETIMEDOUT.
	start = time.Now()
	c, err = rdmacm.Dial(context.Background(), "198.18.0.3:7471", &rdmacm.Config{AddrTimeout: time.Second})
	if err == nil {
		c.Close()
		t.Fatal("Dial to 198.18.0.3 succeeded")
	}
	el = time.Since(start)
	t.Logf("%v after %v", err, el)
	if !errors.Is(err, rdmacm.ErrAddrResolve) || !errors.Is(err, syscall.ETIMEDOUT) || el < time.Second || el > 3*time.Second {
		t.Errorf("Dial with a 1s AddrTimeout: %v after %v, want ErrAddrResolve and ETIMEDOUT after 1s", err, el)
	}

	// A deadline gives DeadlineExceeded, well before the AddrTimeout: 10 s
	// here, since a Dial blind to the deadline would wait out the default
	// 2 s within the limit of 6 s.
	start = time.Now()
	c, err = rdmacm.Dial(timeout(t, 300*time.Millisecond), "198.18.0.3:7471", &rdmacm.Config{AddrTimeout: 10 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("Dial to 198.18.0.3 succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 6*time.Second {
		t.Errorf("Dial with a 300ms deadline: %v after %v", err, time.Since(start))
	}
}

func TestAcceptCancelAndClose(t *testing.T) {
	n := device(t)
	checkLeaks(t, 1)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Without the deadline Accept would wait for ever: 6 s leaves a slow
	// host room.
	if _, err := l.Accept(timeout(t, 200*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 6*time.Second {
		t.Errorf("Accept with a 200ms deadline: %v after %v", err, time.Since(start))
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept(context.Background())
		errc <- err
	}()
	waitInGetEvent(t, l.ID().Channel()) // Accept waits for a request
	closeOK(t, l)
	select {
	case err := <-errc:
		if !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("Accept after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits 5s after Close")
	}
	closeOK(t, l)
}

// TestPeerKilled kills a peer process with SIGKILL while connected; the
// survivor must see the connection end.
func TestPeerKilled(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "GORPERF_RDMACM_HELPER=dial "+l.Addr().String()+" "+n.IP.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // the helper exits if we die
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	srv, err := l.Accept(timeout(t, 60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, srv)
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		io.Copy(io.Discard, out)
	}()
	select {
	case s := <-line:
		if s != "connected\n" {
			t.Fatalf("helper said %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not connect in 30s")
	}
	select {
	case <-srv.Done():
		t.Fatalf("connection ended before the peer was killed: %v", srv.Err())
	default:
	}
	start := time.Now()
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
		t.Logf("survivor saw %v after %v", srv.Err(), time.Since(start))
		if !errors.Is(srv.Err(), rdmacm.ErrDisconnected) {
			t.Errorf("Err() = %v, want ErrDisconnected", srv.Err())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the survivor saw nothing 30s after the peer was killed")
	}
}

// TestHelperProcess is the peer that TestPeerKilled starts and kills.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv("GORPERF_RDMACM_HELPER")
	if spec == "" {
		t.Skip("the peer process of TestPeerKilled")
	}
	f := strings.Fields(spec)
	c, err := rdmacm.Dial(timeout(t, 60*time.Second), f[1], &rdmacm.Config{SrcAddr: f[2]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	fmt.Println("connected")
	io.Copy(io.Discard, os.Stdin) // until killed, or the test's end closes stdin
	c.Close()
	os.Exit(0)
}

// TestManyConnections opens and closes 100 connections in a row; the
// process's goroutines and descriptors must stay flat.
func TestManyConnections(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	warmUp(t, n)
	const rounds = 100
	before := measure(t)
	start := time.Now()
	for i := range rounds {
		srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n.IP, &rdmacm.Config{Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if err := errors.Join(cli.Close(), srv.Close()); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	el := time.Since(start)
	t.Logf("%d connections in %v, %v each", rounds, el, el/rounds)
	var after usage
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if after = measure(t); after.goroutines <= before.goroutines+2 && after.fds <= before.fds+2 {
			break
		}
	}
	t.Logf("goroutines %d -> %d, fds %d -> %d", before.goroutines, after.goroutines, before.fds, after.fds)
	if after.goroutines > before.goroutines+2 || after.fds > before.fds+2 {
		t.Errorf("leak over %d connections: goroutines %d -> %d, fds %d -> %d",
			rounds, before.goroutines, after.goroutines, before.fds, after.fds)
	}
}

// TestUD resolves a UD peer through rdma_cm and sends it a datagram with
// the address handle from the ESTABLISHED event.
func TestUD(t *testing.T) {
	n := device(t)
	cfg := &rdmacm.Config{UD: true, PrivateData: []byte("ud listener")}
	l := listen(t, n.IP, cfg)
	srv, cli := connect(t, l, n.IP, cfg)
	if srv.QP().Type() != ibverbs.QPTypeUD || cli.QP().Type() != ibverbs.QPTypeUD {
		t.Fatalf("QP types %s and %s", srv.QP().Type(), cli.QP().Type())
	}
	ah, qpn, qkey := cli.RemoteUD()
	if ah == nil || qpn != srv.QP().Num() || qkey == 0 {
		t.Fatalf("RemoteUD: AH %v, QPN %#x (server has %#x), QKey %#x", ah, qpn, srv.QP().Num(), qkey)
	}
	if !bytes.HasPrefix(cli.PrivateData(), []byte("ud listener")) {
		t.Errorf("client got private data %q", cli.PrivateData())
	}
	if a, _, _ := srv.RemoteUD(); a != nil {
		t.Error("the accepting side has a remote AH")
	}
	const grh = 40
	sm := register(t, srv.PD(), 4096, 0)
	cm := register(t, cli.PD(), 4096, 0)
	postRecv(t, srv, sm, 0, grh+256)
	msg := []byte("a datagram through rdma_cm")
	copy(cm.buf.Bytes(), msg)
	err := cli.QP().PostSend([]ibverbs.SendWR{{ID: 3, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{cm.mr.SGE(0, len(msg))}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}})
	if err != nil {
		t.Fatal(err)
	}
	waitWC(t, cli.SendCQ(), 20*time.Second)
	wc := waitWC(t, srv.RecvCQ(), 20*time.Second)
	if int(wc.ByteLen) != grh+len(msg) || !bytes.Equal(sm.buf.Bytes()[grh:grh+len(msg)], msg) {
		t.Errorf("received %d bytes, payload %q", wc.ByteLen, sm.buf.Bytes()[grh:wc.ByteLen])
	}
	if wc.SrcQP != cli.QP().Num() {
		t.Errorf("source QP %#x, want %#x", wc.SrcQP, cli.QP().Num())
	}
}

// TestLowLevel drives the one-to-one API: resolve, route and connect
// events by hand on one channel.
func TestLowLevel(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	acc := make(chan error, 1)
	go func() {
		c, err := l.Accept(ctx)
		if err == nil {
			<-c.Done() // until the client disconnects
			err = c.Close()
		}
		acc <- err
	}()
	ch, id, next := rdmatest.RoutedID(t, ctx, n.IP, l.Addr())
	qp := idQP(t, id)
	if id.Close() == nil {
		t.Error("closing an ID with a QP succeeded")
	}
	if err := id.Connect(&rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7, InitiatorDepth: 1, ResponderResources: 1}); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventEstablished)
	if err := id.Disconnect(); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventDisconnected)
	if err := <-acc; err != nil {
		t.Fatal(err)
	}
	closeOK(t, qp)
	if ch.Close() == nil {
		t.Error("closing a channel with an ID on it succeeded")
	}
}

// TestSRQ: Config.SRQ gives two accepted connections one shared receive
// queue. Each client's message arrives through it, with its own server
// QP's number in the completion; the QPs themselves refuse receives, and
// an SRQ without a PD is refused.
func TestSRQ(t *testing.T) {
	n := device(t)
	dctx, pd := devicePD(t, n)
	srq, err := pd.CreateSRQ(ibverbs.SRQInit{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, srq) })
	rcq, err := dctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, rcq) })
	m := register(t, pd, 4096, 0)

	l := listen(t, n.IP, &rdmacm.Config{PD: pd, SRQ: srq, RecvCQ: rcq})
	srv1, cli1 := connect(t, l, n.IP, &rdmacm.Config{})
	srv2, cli2 := connect(t, l, n.IP, &rdmacm.Config{})
	for _, c := range []*rdmacm.Conn{srv1, srv2} {
		if c.QP().SRQ() != srq {
			t.Fatalf("accepted QP %#x takes receives from %p, not the SRQ %p", c.QP().Num(), c.QP().SRQ(), srq)
		}
	}
	if err := srv1.QP().PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{m.mr.SGE(0, 64)}}}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("PostRecv on a QP with an SRQ: %v, want EINVAL", err)
	}
	if err := srq.PostRecv([]ibverbs.RecvWR{{ID: 0, SGL: []ibverbs.SGE{m.mr.SGE(0, 64)}}, {ID: 1, SGL: []ibverbs.SGE{m.mr.SGE(64, 64)}}}); err != nil {
		t.Fatal(err)
	}
	from := map[uint32]string{srv1.QP().Num(): "from one", srv2.QP().Num(): "from two"}
	for _, c := range []*rdmacm.Conn{cli1, cli2} {
		cm := register(t, c.PD(), 64, 0)
		msg := "from one"
		if c == cli2 {
			msg = "from two"
		}
		copy(cm.buf.Bytes(), msg)
		send(t, c, cm, 0, len(msg)) // and waits for its completion
	}
	for range 2 {
		wc := waitWC(t, rcq, 20*time.Second)
		got := string(m.buf.Bytes()[64*wc.WRID:][:wc.ByteLen])
		if want, ok := from[wc.QPN]; !ok || got != want {
			t.Errorf("receive %d on QP %#x: %q, want %q", wc.WRID, wc.QPN, got, want)
		}
		delete(from, wc.QPN)
	}

	_, err = rdmacm.Dial(timeout(t, 10*time.Second), l.Addr().String(), &rdmacm.Config{SRQ: srq, SrcAddr: n.IP.String()})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "Config.SRQ needs Config.PD") {
		t.Errorf("Dial with an SRQ and no PD: %v", err)
	}
}

// TestMinRNRTimer: the kernel's CM leaves an RC QP's RNR NAK timer at 0
// (655 ms); Dial and Accept set 0.64 ms unless Config.MinRNRTimer asks for
// another or, negative, for the CM's; above 31 is refused. A sender that
// finds no receive posted, one of which comes 20 ms later, then waits a
// few RNR periods, not 655 ms.
func TestMinRNRTimer(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	rnr := func(c *rdmacm.Conn) uint8 {
		t.Helper()
		a, err := c.QP().Query()
		if err != nil {
			t.Fatal(err)
		}
		return a.MinRNRTimer
	}
	for _, tc := range []struct {
		srv, cli         int
		wantSrv, wantCli uint8
	}{
		{0, 0, 12, 12},
		{-1, -1, 0, 0},
		{5, 20, 5, 20},
	} {
		l := listen(t, n.IP, &rdmacm.Config{MinRNRTimer: tc.srv})
		srv, cli := connect(t, l, n2.IP, &rdmacm.Config{MinRNRTimer: tc.cli})
		if s, c := rnr(srv), rnr(cli); s != tc.wantSrv || c != tc.wantCli {
			t.Errorf("MinRNRTimer %d and %d: server %d, client %d, want %d and %d", tc.srv, tc.cli, s, c, tc.wantSrv, tc.wantCli)
		}
	}
	l := listen(t, n.IP, nil)
	if c, err := rdmacm.Dial(timeout(t, 20*time.Second), l.Addr().String(), &rdmacm.Config{MinRNRTimer: 32, SrcAddr: n2.IP.String()}); !errors.Is(err, syscall.EINVAL) ||
		!strings.Contains(err.Error(), "Config.MinRNRTimer 32") {
		if c != nil {
			c.Close()
		}
		t.Errorf("MinRNRTimer 32: %v, want EINVAL naming it", err)
	}

	// Listen refuses such a timer at once; an Accept given one refuses
	// the request, and the dialer hears of it at once rather than waiting
	// out its handshake.
	if l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), &rdmacm.Config{MinRNRTimer: 40}); !errors.Is(err, syscall.EINVAL) {
		if l != nil {
			l.Close()
		}
		t.Errorf("Listen with MinRNRTimer 40: %v, want EINVAL", err)
	}
	l = listen(t, n.IP, nil)
	accErr := make(chan error, 1)
	go func() {
		ctx := timeout(t, 20*time.Second)
		r, err := l.GetRequest(ctx)
		if err == nil {
			var c *rdmacm.Conn
			if c, err = r.Accept(ctx, &rdmacm.Config{MinRNRTimer: 40}); c != nil {
				c.Close()
			}
		}
		accErr <- err
	}()
	start := time.Now()
	c, err := rdmacm.Dial(timeout(t, 20*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n2.IP.String()})
	if c != nil {
		c.Close()
	}
	if aerr := <-accErr; !errors.Is(aerr, syscall.EINVAL) || !strings.Contains(aerr.Error(), "Config.MinRNRTimer 40") {
		t.Errorf("Accept with MinRNRTimer 40: %v, want EINVAL naming it", aerr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 5*time.Second {
		t.Errorf("Dial to a listener that refused: %v after %v, want ECONNREFUSED at once", err, time.Since(start))
	}

	// A send that finds no receive, posted 20 ms before one: with the
	// default timer it completes a few RNR periods after the receive;
	// with the CM's 0 the sender waits 655 ms before it tries again.
	wait := func(cfg *rdmacm.Config) time.Duration {
		t.Helper()
		l := listen(t, n.IP, cfg)
		srv, cli := connect(t, l, n2.IP, &rdmacm.Config{})
		sm, cm := register(t, srv.PD(), 64, 0), register(t, cli.PD(), 64, 0)
		start := time.Now()
		if err := cli.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{cm.mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		postRecv(t, srv, sm, 0, 64)
		waitWC(t, cli.SendCQ(), 5*time.Second)
		return time.Since(start)
	}
	// 550 ms leaves room for a slow VM's stalls in the 20 ms sleep and
	// the receive's post, below the 655 ms of the CM's timer.
	if d := wait(nil); d > 550*time.Millisecond {
		t.Errorf("with the default RNR timer the send completed %v after it was posted, 20 ms before the receive", d)
	}
	if d := wait(&rdmacm.Config{MinRNRTimer: -1}); d < 600*time.Millisecond {
		t.Errorf("with the CM's RNR timer the send completed %v after it was posted: want 655 ms or more", d)
	}
}

// TestSingleThreadedCQs: the CQs a connection makes are single-threaded
// when asked (the test device takes the flag), ordinary otherwise, and
// carry a send and its receive either way, waited on through their
// channels.
func TestSingleThreadedCQs(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	for _, single := range []bool{false, true} {
		cfg := &rdmacm.Config{SingleThreadedCQs: single}
		l := listen(t, n.IP, cfg)
		srv, cli := connect(t, l, n2.IP, cfg)
		for _, c := range []*rdmacm.Conn{srv, cli} {
			if c.SendCQ().SingleThreaded() != single || c.RecvCQ().SingleThreaded() != single {
				t.Errorf("SingleThreadedCQs %v: the CQs say %v and %v", single, c.SendCQ().SingleThreaded(), c.RecvCQ().SingleThreaded())
			}
		}
		sm, cm := register(t, srv.PD(), 4096, 0), register(t, cli.PD(), 4096, 0)
		postRecv(t, srv, sm, 0, 64)
		copy(cm.buf.Bytes(), "single-threaded")
		send(t, cli, cm, 0, 15)
		wc, err := waitEvent(srv.RecvCQ(), 20*time.Second)
		if err != nil || wc.ByteLen != 15 || string(sm.buf.Bytes()[:15]) != "single-threaded" {
			t.Errorf("SingleThreadedCQs %v: receive %+v, %v, %q", single, wc, err, sm.buf.Bytes()[:15])
		}
	}
}

// TestSharedCQ: with Config.SharedCQ each side's send and receive
// completions come on one CQ, sized for both queues, with one channel
// whose events wake for either kind; the Conns close cleanly, one CQ
// each, leaving no descriptor behind.
func TestSharedCQ(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	checkLeaks(t, 2)
	cfg := &rdmacm.Config{SharedCQ: true, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 6}}
	l := listen(t, n.IP, cfg)
	srv, cli := connect(t, l, n2.IP, cfg)
	for _, c := range []*rdmacm.Conn{srv, cli} {
		if c.SendCQ() != c.RecvCQ() || c.SendCQ().Len() < 10 || c.SendCQ().Channel() == nil {
			t.Fatalf("SendCQ %p, RecvCQ %p, %d entries; want one CQ of 10 or more, with a channel",
				c.SendCQ(), c.RecvCQ(), c.SendCQ().Len())
		}
	}
	sm, cm := register(t, srv.PD(), 4096, 0), register(t, cli.PD(), 4096, 0)
	postRecv(t, srv, sm, 0, 64)
	copy(cm.buf.Bytes(), "shared")
	send(t, cli, cm, 0, 6) // the send's completion, on the shared CQ
	wc, err := waitEvent(srv.RecvCQ(), 20*time.Second)
	if err != nil || wc.Opcode != ibverbs.WCRecv || string(sm.buf.Bytes()[:6]) != "shared" {
		t.Fatalf("receive %+v, %v, %q", wc, err, sm.buf.Bytes()[:6])
	}
	postRecv(t, cli, cm, 64, 64)
	send(t, srv, sm, 0, 6)
	if wc, err := waitEvent(cli.RecvCQ(), 20*time.Second); err != nil || wc.Opcode != ibverbs.WCRecv {
		t.Fatalf("the answer: %+v, %v", wc, err)
	}
}

// TestSharedCQKeepsRecvCQ: Config.SharedCQ with a RecvCQ given leaves
// the receives on it, where the shared CQ took them and the owner of
// RecvCQ waited for completions that never came.
func TestSharedCQKeepsRecvCQ(t *testing.T) {
	n := device(t)
	dctx, pd := devicePD(t, n)
	ch, err := dctx.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	rcq, err := dctx.CreateCQ(8, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, rcq) })
	l := listen(t, n.IP, nil)
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{PD: pd, RecvCQ: rcq, SharedCQ: true, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if cli.RecvCQ() != rcq || cli.SendCQ() == rcq {
		t.Fatalf("RecvCQ %p, SendCQ %p; want the RecvCQ given, %p, and a CQ of the connection's", cli.RecvCQ(), cli.SendCQ(), rcq)
	}
	sm, cm := register(t, srv.PD(), 4096, 0), register(t, pd, 4096, 0)
	postRecv(t, cli, cm, 0, 64)
	send(t, srv, sm, 0, 6)
	wcs := make([]ibverbs.WC, 1)
	if _, err := rcq.Wait(timeout(t, 20*time.Second), wcs); err != nil || wcs[0].Opcode != ibverbs.WCRecv {
		t.Fatalf("the receive on the RecvCQ given: %+v, %v", wcs[0], err)
	}
}

// TestDepthsCut: read and atomic depths asked above the device's maximum
// are cut to it on both sides, as perftest cuts -o, where librdmacm
// refused them and Dial and Accept failed with a bare EINVAL.
func TestDepthsCut(t *testing.T) {
	n := device(t)
	cfg := &rdmacm.Config{InitiatorDepth: 250, ResponderResources: 250}
	l := listen(t, n.IP, cfg)
	srv, cli := connect(t, l, n.IP, cfg)
	da, err := cli.Context().QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if da.MaxQPInitRdAtom >= 250 {
		t.Skipf("the device takes %d reads in flight: nothing to cut", da.MaxQPInitRdAtom)
	}
	for _, c := range []*rdmacm.Conn{srv, cli} {
		a, err := c.QP().Query()
		if err != nil {
			t.Fatal(err)
		}
		if a.MaxRdAtomic == 0 || int(a.MaxRdAtomic) > da.MaxQPInitRdAtom || int(a.MaxDestRdAtomic) > da.MaxQPRdAtom {
			t.Errorf("%v: %d reads out, %d in; the device's maxima %d and %d", c.LocalAddr(), a.MaxRdAtomic, a.MaxDestRdAtomic, da.MaxQPInitRdAtom, da.MaxQPRdAtom)
		}
	}
}

// TestUDAckTimeout: Config.AckTimeout, an RC QP's, is ignored by UD, where
// the kernel refused it and every UD Dial and Accept failed with EINVAL.
func TestUDAckTimeout(t *testing.T) {
	n := device(t)
	cfg := &rdmacm.Config{UD: true, AckTimeout: 14}
	l := listen(t, n.IP, cfg)
	srv, cli := connect(t, l, n.IP, cfg)
	if srv.QP().Type() != ibverbs.QPTypeUD || cli.QP().Type() != ibverbs.QPTypeUD {
		t.Errorf("QP types %v and %v, want UD", srv.QP().Type(), cli.QP().Type())
	}
}

// TestConnsShareEvents: the handles on one device that two connections
// and rdmacm.Device return share its one async event stream, which stays
// open while any of them is.
func TestConnsShareEvents(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	dev, err := rdmacm.Device(srv.Context().Name())
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, dev)
	want, err := dev.Events()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*rdmacm.Conn{srv, cli} {
		if ev, err := c.Context().Events(); err != nil || ev != want {
			t.Errorf("%v's Events: %v, %v; want the device's one stream", c.LocalAddr(), ev, err)
		}
	}
	closeOK(t, srv)
	closeOK(t, cli)
	select {
	case e, ok := <-want:
		if !ok {
			t.Fatal("the stream closed with the device's handle open")
		}
		t.Logf("event %v", e)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestPrepare: Config.Prepare runs on each side before the request or the
// reply goes, so that a receive it posts is there for the peer's first
// message, sent the moment the connection is up; its cleanup runs once,
// when the Conn closes. A Prepare that fails fails the Dial, or makes the
// Accept refuse the request.
func TestPrepare(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	type prepared struct {
		buf     *ibverbs.Buffer
		mr      *ibverbs.MR
		cleaned int
	}
	prepare := func(p *prepared) func(*rdmacm.Conn) (func() error, error) {
		return func(c *rdmacm.Conn) (func() error, error) {
			if c.QP() == nil || c.Err() != nil {
				return nil, errors.New("no QP yet")
			}
			var err error
			if p.buf, err = ibverbs.NewBuffer(64, ibverbs.BufferOptions{}); err != nil {
				return nil, err
			}
			if p.mr, err = c.PD().RegMR(p.buf, ibverbs.AccessLocalWrite); err != nil {
				return nil, errors.Join(err, p.buf.Close())
			}
			if err := c.QP().PostRecv([]ibverbs.RecvWR{{ID: 7, SGL: []ibverbs.SGE{p.mr.SGE(0, 64)}}}); err != nil {
				return nil, errors.Join(err, p.mr.Close(), p.buf.Close())
			}
			return func() error {
				p.cleaned++
				return errors.Join(p.mr.Close(), p.buf.Close())
			}, nil
		}
	}
	var sp, cp prepared
	// No RNR retries: a send that found no receive would fail.
	l := listen(t, n.IP, &rdmacm.Config{Prepare: prepare(&sp), RNRRetryCount: -1})
	srv, cli := connect(t, l, n2.IP, &rdmacm.Config{Prepare: prepare(&cp), RNRRetryCount: -1})
	for _, dir := range []struct {
		from, to *rdmacm.Conn
		p        *prepared
	}{{cli, srv, &sp}, {srv, cli, &cp}} {
		src, err := ibverbs.NewBuffer(8, ibverbs.BufferOptions{})
		if err != nil {
			t.Fatal(err)
		}
		copy(src.Bytes(), "prepared")
		mr, err := dir.from.PD().RegMR(src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := dir.from.QP().PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{mr.SGE(0, 8)}}}); err != nil {
			t.Fatal(err)
		}
		wcs := make([]ibverbs.WC, 1)
		ctx := timeout(t, 20*time.Second)
		if _, err := dir.from.SendCQ().Wait(ctx, wcs); err != nil || wcs[0].Err() != nil {
			t.Fatalf("send: %v %v", err, wcs[0].Err())
		}
		if _, err := dir.to.RecvCQ().Wait(ctx, wcs); err != nil || wcs[0].Err() != nil || wcs[0].WRID != 7 ||
			string(dir.p.buf.Bytes()[:8]) != "prepared" {
			t.Fatalf("receive: %v %+v %q", err, wcs[0], dir.p.buf.Bytes()[:8])
		}
		closeOK(t, mr)
		closeOK(t, src)
	}
	closeOK(t, cli)
	closeOK(t, srv)
	closeOK(t, cli)
	if sp.cleaned != 1 || cp.cleaned != 1 {
		t.Errorf("cleanups ran %d and %d times, want once each", sp.cleaned, cp.cleaned)
	}

	// A failing Prepare, on the accepting side: Accept fails with its
	// error, and the request is refused, so that Dial fails at once.
	bad := func(*rdmacm.Conn) (func() error, error) { return nil, syscall.ENOMEM }
	l = listen(t, n.IP, &rdmacm.Config{Prepare: bad})
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept(timeout(t, 20*time.Second))
		if c != nil {
			c.Close()
		}
		accepted <- err
	}()
	dc, err := rdmacm.Dial(timeout(t, 20*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n2.IP.String()})
	if dc != nil {
		dc.Close()
	}
	var rej *rdmacm.RejectedError
	if !errors.As(err, &rej) {
		t.Errorf("Dial to a listener whose Prepare fails: %v, want a *RejectedError", err)
	}
	if err := <-accepted; !errors.Is(err, syscall.ENOMEM) || errors.Is(err, rdmacm.ErrDisconnected) {
		t.Errorf("Accept whose Prepare fails: %v, want Prepare's ENOMEM", err)
	}
	// On the dialing side, Dial fails with Prepare's error, before it
	// sends a request.
	l = listen(t, n.IP, nil)
	c, err := rdmacm.Dial(timeout(t, 20*time.Second), l.Addr().String(), &rdmacm.Config{Prepare: bad, SrcAddr: n2.IP.String()})
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ENOMEM) || !strings.Contains(err.Error(), "Config.Prepare") {
		t.Errorf("Dial whose Prepare fails: %v", err)
	}
}

// TestLookupUD looks up a UD listener's QP without making one: the answer
// names the QP the accepted side got, with rdma_cm's Q_Key and the private
// data it answered with, and an address handle made from it reaches that
// QP. Where nothing listens the lookup is refused at once.
func TestLookupUD(t *testing.T) {
	n := device(t)
	n2 := secondDevice(t)
	l := listen(t, n.IP, &rdmacm.Config{UD: true, PrivateData: []byte("answer")})
	ctx := timeout(t, 30*time.Second)
	acc := make(chan *rdmacm.Conn, 1)
	go func() {
		c, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
		}
		acc <- c
	}()
	ud, err := rdmacm.LookupUD(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: n2.IP.String(), PrivateData: []byte("q")})
	srv := <-acc
	if err != nil || srv == nil {
		t.Fatalf("LookupUD: %v", err)
	}
	defer closeOK(t, srv)
	if ud.QPNum != srv.QP().Num() || ud.QKey != rdmacm.UDPQKey || !strings.HasPrefix(string(ud.PrivateData), "answer") {
		t.Errorf("answer: QPN %#x, Q_Key %#x, private data %q; want %#x, %#x, \"answer\"", ud.QPNum, ud.QKey, ud.PrivateData, srv.QP().Num(), rdmacm.UDPQKey)
	}
	if !ud.AHAttr.IsGlobal || ud.AHAttr.GRH.DGID.Addr() != n.IP {
		t.Errorf("address handle attributes: %+v, want a GRH to %v", ud.AHAttr, n.IP)
	}

	start := time.Now()
	_, err = rdmacm.LookupUD(ctx, addr(n.IP, l.Addr().Port()+1), &rdmacm.Config{SrcAddr: n2.IP.String()})
	var op *rdmacm.OpError
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &op) || op.Op != "lookup" || time.Since(start) > 5*time.Second {
		t.Errorf("lookup where nothing listens: %v after %v", err, time.Since(start))
	}
}

// TestAddrsDuringClose: a Conn's and a Listener's addresses may be asked
// for while another goroutine closes them, and after, as net.Conn's may
// (a log line of RemoteAddr beside a Close): they are the ones the
// connection had, never freed memory (the race detector watches).
func TestAddrsDuringClose(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{})
	want := [...]netip.AddrPort{l.Addr(), srv.LocalAddr(), srv.RemoteAddr(), cli.LocalAddr(), cli.RemoteAddr()}
	port := cli.PortNum()
	if !want[4].IsValid() || want[4] != want[0] || port < 1 {
		t.Fatalf("addresses %v, port %d", want, port)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = cli.RemoteAddr()
			_ = srv.LocalAddr()
			_ = l.Addr()
		}
	}()
	closeOK(t, cli)
	closeOK(t, srv)
	closeOK(t, l)
	close(stop)
	<-done
	got := [...]netip.AddrPort{l.Addr(), srv.LocalAddr(), srv.RemoteAddr(), cli.LocalAddr(), cli.RemoteAddr()}
	if got != want || cli.PortNum() != port {
		t.Errorf("after Close: addresses %v, port %d; want %v, %d", got, cli.PortNum(), want, port)
	}
}

// TestListenerCloseEndsAccept: Close ends an Accept that has answered a
// request and waits for the connection to be completed by a peer that
// never does (an ID without a QP, whose CONNECT_RESPONSE librdmacm leaves
// to its program, which here does nothing).
func TestListenerCloseEndsAccept(t *testing.T) {
	n := device(t)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acc := acceptOne(context.Background(), l)
	_, id, next := rdmatest.RoutedID(t, timeout(t, 30*time.Second), n.IP, l.Addr())
	if err := id.Connect(&rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	// The listener has answered: its Accept waits for ESTABLISHED.
	next(rdmacm.EventConnectResponse)
	select {
	case err := <-acc:
		t.Fatalf("Accept returned before the connection was completed: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	start := time.Now()
	closeOK(t, l)
	select {
	case err := <-acc:
		// Only ErrClosed: the caller's context was not cancelled, and
		// the error is one accept's, not two nested.
		if !errors.Is(err, rdmacm.ErrClosed) || errors.Is(err, context.Canceled) ||
			strings.Count(err.Error(), "rdmacm: accept") != 1 {
			t.Errorf("Accept after Close: %v, want ErrClosed alone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits 5 s after the listener's Close")
	}
	t.Logf("Accept ended %v after Close", time.Since(start))
}
