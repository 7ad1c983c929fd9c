//go:build linux && cgo

package bench_test

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestGIDFamilyMismatch: a client on its link-local IPv6 GID (-x) and a
// server on its automatic IPv4 one both fail before their QPs are
// modified, each naming both GIDs and the flags that choose others,
// where both said only "ibv_modify_qp: invalid argument".
func TestGIDFamilyMismatch(t *testing.T) {
	info := rdmatest.Device(t)
	ll := rdmatest.LinkLocalGID(t, info.Name, info.Port)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 20,
		NumQPs: 1, TXDepth: 16, CQModeration: 1}
	_, _, cerr, serr := tryLoopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.GIDIndex = ll.Index
		}
	})
	for side, err := range map[string]error{"client": cerr, "server": serr} {
		t.Logf("%s: %v", side, err)
		if err == nil {
			t.Errorf("%s: no error", side)
			continue
		}
		for _, w := range []string{"incompatible GIDs", ll.IP().String(), "IPv6", "IPv4", "-x", "--gid-family"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", side, err, w)
			}
		}
	}
}

// TestServeClientKilled: a client whose control connection closes mid-test
// (killed: its end of the connection goes, here a proxy's) leaves a
// passive server (write-bw) that says the peer closed the connection, as
// a client says of a killed server, and serve names the client's
// address; it said only "receiving: EOF".
func TestServeClientKilled(t *testing.T) {
	l, ln := serverOnDevice(t, 10*time.Second)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	failed := make(chan error, 1)
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		bench.Serve(ctx, ln, l, exchange.DefaultLimits(), false, nil, func(_ *bench.Result, err error) {
			if err != nil {
				select {
				case failed <- err:
				default:
				}
			}
		})
	}()
	defer func() { cancel(); <-serveDone }()
	// The proxy between the client and the server: kill closes both of
	// its connections, as a killed client's kernel closes its own.
	var mu sync.Mutex
	var conns []net.Conn
	var toServer string // the server's view of the client: the proxy's end
	go func() {
		for {
			a, err := pl.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				a.Close()
				return
			}
			mu.Lock()
			conns = append(conns, a, b)
			toServer = b.LocalAddr().String()
			mu.Unlock()
			go io.Copy(a, b)
			go io.Copy(b, a)
		}
	}()
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}
	defer bench.SetBeforeLoop(func(client bool) {
		if client {
			time.AfterFunc(500*time.Millisecond, kill)
		}
	})()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 3,
		NumQPs: 1, TXDepth: 16, CQModeration: 4}
	_, cerr := bench.Client(ctx, pl.Addr().String(), spec, l, nil)
	t.Logf("client: %v", cerr)
	select {
	case err := <-failed:
		t.Logf("server: %v", err)
		mu.Lock()
		addr := toServer
		mu.Unlock()
		// The passive server waits through the client's run: its error
		// says so, where it said "exchanging results".
		for _, w := range []string{"the peer closed the control connection: it exited or was killed", "client " + addr, "waiting for the peer's run"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("server: %q lacks %q", err, w)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server reported no failure within 20 s")
	}
}

// TestPassivePortDown takes a passive server's own netdev down mid-test
// (write-bw, the control connection over that netdev too): the server
// stops at once with its device's PORT_ERR, as the active client does,
// where it waited out its idle timeout and blamed the peer.
func TestPassivePortDown(t *testing.T) {
	info := rdmatest.Device(t)
	srv := rdmatest.Addr(t)
	cli := rdmatest.SecondAddr(t)
	nd := os.Getenv("RXE_NETDEV")
	if nd == "" {
		t.Skip("needs the two-device rxe VM, whose netdev the test may take down")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(srv.IP.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // a one-test Serve hands it back open
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const idle = 10 * time.Second
	sl := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: idle}
	cl := bench.Local{Device: cli.Dev, Port: 1, GIDIndex: -1, IdleTimeout: idle}
	srvOut := serveOne(ctx, ln, sl)
	var down time.Time
	var downMu sync.Mutex
	takeDown := func() {
		downMu.Lock()
		defer downMu.Unlock()
		down = time.Now()
		if out, err := exec.Command("ip", "link", "set", nd, "down").CombinedOutput(); err != nil {
			t.Errorf("%v: %s", err, out)
		}
	}
	// The link comes back before the next test: both ports ACTIVE, and
	// the server's device quiet for 3 s after its last port event (a
	// PORT_ERR read late would fail a later test's session).
	evs := deviceEvents(t, info.Name)
	defer func() {
		rdmatest.LinkUp(t, nd, info.Name, cli.Dev) // the VM's routes through nd too, which going down removed
		if !settle(t, info.Name, evs) {
			t.Errorf("%s's events did not settle in 20 s", info.Name)
		}
	}()
	var timer *time.Timer
	defer func() {
		downMu.Lock()
		if timer != nil {
			timer.Stop() // the test ended before it: no link to take down
		}
		downMu.Unlock()
	}()
	defer bench.SetBeforeLoop(func(client bool) {
		if client {
			downMu.Lock()
			timer = time.AfterFunc(time.Second, takeDown)
			downMu.Unlock()
		}
	})()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Duration: 10,
		NumQPs: 1, TXDepth: 16, CQModeration: 4}
	cdone := make(chan error, 1)
	go func() {
		_, err := bench.Client(ctx, ln.Addr().String(), spec, cl, nil)
		cdone <- err
	}()
	o := <-srvOut
	at := time.Now()
	t.Logf("server: %v", o.err)
	downMu.Lock()
	d := down
	downMu.Unlock()
	if d.IsZero() {
		t.Fatalf("the server ended before the link went down: %v", o.err)
	}
	if o.err == nil || !strings.Contains(o.err.Error(), "PORT_ERR") || !strings.Contains(o.err.Error(), info.Name) {
		t.Errorf("server: %v, want %s's PORT_ERR", o.err, info.Name)
	}
	if took := at.Sub(d); took > idle/2 {
		t.Errorf("the server took %v after the link went down to stop", took)
	}
	select {
	case err := <-cdone:
		t.Logf("client: %v", err)
	case <-ctx.Done():
		t.Error("the client did not end")
	}
}

// TestStalePortEventCM: a link that went down and came back before a
// test over rdma_cm leaves that test alone. rdma_cm's context of the
// device lives as long as the process, and its event queue kept the
// flap's PORT_ERR, which the next -R test read as its own port failing
// (a server up for long, gorperf serve, failed its next -R test).
func TestStalePortEventCM(t *testing.T) {
	info := rdmatest.Device(t)
	nd := os.Getenv("RXE_NETDEV")
	if nd == "" || os.Getenv("GORPERF_TEST_DEVICE") != os.Getenv("RXE_DEV") {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("in the rxe VM but RXE_NETDEV is unset, or the device under test (GORPERF_TEST_DEVICE) is not RXE_DEV, whose netdev it is")
		}
		t.Skip("needs the rxe VM's netdev (RXE_NETDEV) to take down")
	}
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 50,
		NumQPs: 1, TXDepth: 16, CQModeration: 1, RdmaCM: true}
	loopback(t, spec, cmClient(t, true)) // rdma_cm opens its context of the device
	evs := deviceEvents(t, info.Name)
	if out, err := exec.Command("ip", "link", "set", nd, "down").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rdmatest.LinkUp(t, nd, info.Name) // the VM's routes through nd too
	if !settle(t, info.Name, evs) {
		t.Fatalf("%s's events did not settle in 20 s", info.Name)
	}
	if b, _ := os.ReadFile("/sys/class/infiniband/" + info.Name + "/ports/1/state"); !strings.Contains(string(b), "ACTIVE") {
		t.Fatalf("%s port 1: %s", info.Name, b)
	}
	loopback(t, spec, cmClient(t, true)) // fails the test if either side fails
}

// deviceEvents opens dev and returns its async events, until the test
// has ended and its context is closed.
func deviceEvents(t *testing.T, dev string) <-chan ibverbs.AsyncEvent {
	t.Helper()
	dctx, err := ibverbs.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dctx.Close() })
	evs, err := dctx.Events()
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// settle logs dev's async events, from evs, until none has come for 3 s,
// and reports whether that was within 20 s: a link flap's events have
// settled.
func settle(t *testing.T, dev string, evs <-chan ibverbs.AsyncEvent) bool {
	end, quiet := time.After(20*time.Second), time.NewTimer(3*time.Second)
	defer quiet.Stop()
	for {
		select {
		case ev := <-evs:
			t.Logf("%s: %v", dev, ev)
			quiet.Reset(3 * time.Second)
		case <-quiet.C:
			return true
		case <-end:
			return false
		}
	}
}

// TestGIDRemovedMidRun removes the address of the client's GID (a second
// address on its netdev, chosen by index) a second into a test: the
// client's error says its GID left the table, where it blamed the peer
// or the path between the GIDs ("is it still running? ... may not reach
// each other").
func TestGIDRemovedMidRun(t *testing.T) {
	info := rdmatest.Device(t)
	srv := rdmatest.Addr(t)
	cli := rdmatest.SecondAddr(t)
	nd := os.Getenv("RXE_NETDEV2")
	if nd == "" {
		t.Skip("needs the two-device rxe VM, whose second netdev the test may give an address")
	}
	const extra = "198.18.0.22"
	if out, err := exec.Command("ip", "addr", "add", extra+"/24", "dev", nd).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v: %s", err, out)
	}
	defer exec.Command("ip", "addr", "del", extra+"/24", "dev", nd).Run()
	dev, err := ibverbs.Open(cli.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	idx := -1
	for end := time.Now().Add(10 * time.Second); idx < 0 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		tab, err := dev.GIDTable(1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tab {
			if e.Type == ibverbs.GIDTypeRoCEv2 && e.IP().String() == extra {
				idx = e.Index
			}
		}
	}
	if idx < 0 {
		t.Fatalf("%s's GID for %s did not appear in 10 s", cli.Dev, extra)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(srv.IP.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const idle = 3 * time.Second
	srvOut := serveOne(ctx, ln, bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: idle})
	defer bench.SetBeforeLoop(func(client bool) {
		if client {
			time.AfterFunc(time.Second, func() { exec.Command("ip", "addr", "del", extra+"/24", "dev", nd).Run() })
		}
	})()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Duration: 8,
		NumQPs: 1, TXDepth: 16, CQModeration: 4}
	_, cerr := bench.Client(ctx, ln.Addr().String(), spec, bench.Local{Device: cli.Dev, Port: 1, GIDIndex: idx, IdleTimeout: idle}, nil)
	t.Logf("client: %v", cerr)
	want := "this side's GID " + extra + " on " + nd + " (index "
	if cerr == nil || !strings.Contains(cerr.Error(), want) || !strings.Contains(cerr.Error(), "is gone from "+cli.Dev+"'s GID table: its address was removed") {
		t.Errorf("client: %v; want %s... is gone from %s's GID table", cerr, want, cli.Dev)
	}
	select {
	case o := <-srvOut:
		t.Logf("server: %v", o.err)
	case <-ctx.Done():
		t.Error("the server did not end")
	}
}
