//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// testNet is where the device tests listen and dial.
type testNet = rdmatest.Net

// Tests that mostly wait (on a timer, on the kernel) call t.Parallel or
// run their cases as parallel subtests: they run side by side once all
// the others have ended, each on IDs and listeners of its own (port 0).
// A test that sets a hook (export_test.go), counts the process's
// goroutines or descriptors (checkLeaks) or takes a link down must not.

func device(t *testing.T) testNet       { return rdmatest.Addr(t) }
func secondDevice(t *testing.T) testNet { return rdmatest.SecondAddr(t) }

func addr(ip netip.Addr, port uint16) string { return netip.AddrPortFrom(ip, port).String() }

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func closeOK(t testing.TB, c interface{ Close() error }) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func listen(t *testing.T, ip netip.Addr, cfg *rdmacm.Config) *rdmacm.Listener {
	t.Helper()
	l, err := rdmacm.Listen(context.Background(), addr(ip, 0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, l) })
	return l
}

// connect dials l from src while l accepts, and returns both ends; they
// close when the test ends.
func connect(t *testing.T, l *rdmacm.Listener, src netip.Addr, cfg *rdmacm.Config) (srv, cli *rdmacm.Conn) {
	t.Helper()
	srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cli); closeOK(t, srv) })
	return srv, cli
}

func tryConnect(ctx context.Context, l *rdmacm.Listener, src netip.Addr, cfg *rdmacm.Config) (srv, cli *rdmacm.Conn, err error) {
	type res struct {
		c   *rdmacm.Conn
		err error
	}
	acc := make(chan res, 1)
	go func() {
		c, err := l.Accept(ctx)
		acc <- res{c, err}
	}()
	c := *cfg
	c.SrcAddr = src.String()
	cli, err = rdmacm.Dial(ctx, l.Addr().String(), &c)
	a := <-acc
	if err != nil || a.err != nil {
		for _, x := range []*rdmacm.Conn{cli, a.c} {
			if x != nil {
				x.Close()
			}
		}
		if err == nil {
			err = a.err
		}
		return nil, nil, err
	}
	return a.c, cli, nil
}

// devicePD returns librdmacm's context for n's device and a PD on it, for
// what a listener's connections share; both close when the test ends.
func devicePD(t *testing.T, n testNet) (*ibverbs.Context, *ibverbs.PD) {
	t.Helper()
	dctx, err := rdmacm.Device(n.Dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, dctx) })
	pd, err := dctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	return dctx, pd
}

// newID makes an event channel and on it an ID of port space ps, both
// closed when the test ends, the ID first.
func newID(t *testing.T, ps rdmacm.PortSpace) (*rdmacm.EventChannel, *rdmacm.ID) {
	t.Helper()
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	id, err := ch.CreateID(ps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, id) })
	return ch, id
}

// pendingRequest connects a raw ID from n's address to l, an ID with no
// QP that never answers its events (closed when the test ends), and
// returns it with its request, which l has taken and not answered.
func pendingRequest(t *testing.T, ctx context.Context, n testNet, l *rdmacm.Listener) (*rdmacm.ID, *rdmacm.ConnRequest) {
	t.Helper()
	_, id, _ := rdmatest.RoutedID(t, ctx, n.IP, l.Addr())
	if err := id.Connect(&rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	r, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id, r
}

// rawListener makes an event channel and on it an ID that listens on ip,
// on a port of the kernel's choice: no Listener. Both close when the test
// ends, the ID first; a test may close them itself before.
func rawListener(t *testing.T, ip netip.Addr) (*rdmacm.EventChannel, *rdmacm.ID) {
	t.Helper()
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch) })
	lid, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, lid) })
	if err := lid.BindAddr(netip.AddrPortFrom(ip, 0)); err != nil {
		t.Fatal(err)
	}
	if err := lid.Listen(0); err != nil {
		t.Fatal(err)
	}
	return ch, lid
}

// idQP makes an RC QP on id, with a CQ of 8 and room for 4 requests
// each way, on the context, PD and CQ it needs. When the test ends the QP
// closes, then id, then the rest, all before rdmatest.RoutedID's cleanup
// closes id's channel; a test may close the QP or id itself first.
func idQP(t *testing.T, id *rdmacm.ID) *ibverbs.QP {
	t.Helper()
	pd, cq := idPDCQ(t, id)
	qp, err := id.CreateQP(pd, ibverbs.QPInit{SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, id) })
	t.Cleanup(func() { closeOK(t, qp) })
	return qp
}

// idPDCQ opens id's device and makes a PD and a CQ of 8 on it, which
// close, and the device's handle, when the test ends.
func idPDCQ(t *testing.T, id *rdmacm.ID) (*ibverbs.PD, *ibverbs.CQ) {
	t.Helper()
	dctx, err := id.Context()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, dctx) })
	pd, err := dctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	cq, err := dctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, cq) })
	return pd, cq
}

// mem is registered memory that closes when the test ends (before the
// connections made earlier in the test).
type mem struct {
	buf *ibverbs.Buffer
	mr  *ibverbs.MR
}

func register(t *testing.T, pd *ibverbs.PD, size int, access ibverbs.Access) *mem {
	t.Helper()
	buf, err := ibverbs.NewBuffer(size, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, buf) })
	mr, err := pd.RegMR(buf, access|ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, mr) })
	return &mem{buf: buf, mr: mr}
}

// waitWC polls cq for one successful completion, for at most d.
func waitWC(t *testing.T, cq *ibverbs.CQ, d time.Duration) ibverbs.WC {
	t.Helper()
	wc, err := pollWC(cq, d)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

// waitEvent waits for cq's next completion with CQ.Wait, for at most d.
func waitEvent(cq *ibverbs.CQ, d time.Duration) (ibverbs.WC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	wcs := make([]ibverbs.WC, 1)
	if _, err := cq.Wait(ctx, wcs); err != nil {
		return ibverbs.WC{}, err
	}
	return wcs[0], wcs[0].Err()
}

func pollWC(cq *ibverbs.CQ, d time.Duration) (ibverbs.WC, error) {
	wcs := make([]ibverbs.WC, 1)
	deadline := time.Now().Add(d)
	for {
		n, err := cq.Poll(wcs)
		if err != nil {
			return ibverbs.WC{}, err
		}
		if n == 1 {
			return wcs[0], wcs[0].Err()
		}
		if time.Now().After(deadline) {
			return ibverbs.WC{}, context.DeadlineExceeded
		}
		time.Sleep(time.Millisecond)
	}
}

func send(t *testing.T, c *rdmacm.Conn, m *mem, off, n int) {
	t.Helper()
	err := c.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{m.mr.SGE(off, n)}}})
	if err != nil {
		t.Fatal(err)
	}
	waitWC(t, c.SendCQ(), 20*time.Second)
}

func postRecv(t *testing.T, c *rdmacm.Conn, m *mem, off, n int) {
	t.Helper()
	if err := c.QP().PostRecv([]ibverbs.RecvWR{{ID: 2, SGL: []ibverbs.SGE{m.mr.SGE(off, n)}}}); err != nil {
		t.Fatal(err)
	}
}

// usage is what a test must give back: goroutines and open descriptors.
type usage struct{ goroutines, fds int }

func measure(t *testing.T) usage {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return usage{runtime.NumGoroutine(), len(ents)}
}

// checkLeaks fails the test if, once it has cleaned up, more goroutines or
// descriptors are in use than at the call, beyond slack.
func checkLeaks(t *testing.T, slack int) {
	t.Helper()
	// librdmacm opens each device once, the first time a process needs
	// it, and keeps it open: open them first, so that a test run alone
	// does not count those descriptors as its own. The handles Devices
	// returns are closed (the devices stay open): an open one would hold
	// the device's async event stream open for the tests that follow
	// (TestCloseRetry waits for it to close).
	devs, err := rdmacm.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		closeOK(t, d)
	}
	before := measure(t)
	t.Cleanup(func() {
		var now usage
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			now = measure(t)
			if now.goroutines <= before.goroutines+slack && now.fds <= before.fds+slack || time.Now().After(deadline) {
				break
			}
		}
		if now.goroutines > before.goroutines+slack || now.fds > before.fds+slack {
			buf := make([]byte, 1<<16)
			t.Errorf("leak: %d goroutines and %d fds before, %d and %d after\n%s",
				before.goroutines, before.fds, now.goroutines, now.fds, buf[:runtime.Stack(buf, true)])
		}
	})
}

// warmUp makes one connection so that librdmacm has opened its devices,
// which stay open, before a test counts descriptors.
func warmUp(t *testing.T, n testNet) {
	t.Helper()
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv, cli, err := tryConnect(timeout(t, 60*time.Second), l, n.IP, &rdmacm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, cli)
	closeOK(t, srv)
}

// acceptOne accepts one connection on l within ctx, in a goroutine, and
// closes it at once: what the channel gets is Accept's error.
func acceptOne(ctx context.Context, l *rdmacm.Listener) <-chan error {
	acc := make(chan error, 1)
	go func() {
		c, err := l.Accept(ctx)
		if c != nil {
			c.Close()
		}
		acc <- err
	}()
	return acc
}

// dialAndClose dials addr from src in the background and closes the
// connection should it be made; the channel has Dial's error.
func dialAndClose(ctx context.Context, addr string, src netip.Addr) <-chan error {
	dialed := make(chan error, 1)
	go func() {
		c, err := rdmacm.Dial(ctx, addr, &rdmacm.Config{SrcAddr: src.String()})
		if c != nil {
			c.Close()
		}
		dialed <- err
	}()
	return dialed
}
