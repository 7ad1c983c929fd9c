//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"math/rand"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// ping sends a message from cli to srv and fails the test unless it
// arrives: the connection is live at both ends. Its memory is closed
// before it returns, so that the Conns close cleanly after.
func ping(t *testing.T, cli, srv *rdmacm.Conn) {
	t.Helper()
	reg := func(c *rdmacm.Conn) (*ibverbs.Buffer, *ibverbs.MR) {
		buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mr, err := c.PD().RegMR(buf, ibverbs.AccessLocalWrite)
		if err != nil {
			buf.Close()
			t.Fatal(err)
		}
		return buf, mr
	}
	sbuf, smr := reg(srv)
	defer func() { closeOK(t, smr); closeOK(t, sbuf) }()
	cbuf, cmr := reg(cli)
	defer func() { closeOK(t, cmr); closeOK(t, cbuf) }()
	if err := srv.QP().PostRecv([]ibverbs.RecvWR{{ID: 2, SGL: []ibverbs.SGE{smr.SGE(0, 64)}}}); err != nil {
		t.Fatalf("the accepted connection's PostRecv: %v", err)
	}
	copy(cbuf.Bytes(), "ping")
	if err := cli.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{cmr.SGE(0, 4)}}}); err != nil {
		t.Fatalf("the dialed connection's PostSend: %v", err)
	}
	if wc, err := pollWC(cli.SendCQ(), 10*time.Second); err != nil {
		t.Fatalf("the dialed connection's send: %+v, %v (its Err: %v; the accepted one's: %v)", wc, err, cli.Err(), srv.Err())
	}
	if wc, err := pollWC(srv.RecvCQ(), 10*time.Second); err != nil || wc.ByteLen != 4 || string(sbuf.Bytes()[:4]) != "ping" {
		t.Fatalf("the accepted connection's receive: %+v, %v, %q", wc, err, sbuf.Bytes()[:4])
	}
}

// matchConns pairs each dialed Conn with the accepted Conn whose remote
// address is its local one, checks that each pair carries a message, and
// fails the test for a dialed Conn that no Accept returned (its Dial
// succeeded and the server never got it) or the reverse.
func matchConns(t *testing.T, dialed, accepted []*rdmacm.Conn) {
	t.Helper()
	byPeer := map[netip.AddrPort]*rdmacm.Conn{}
	for _, s := range accepted {
		byPeer[s.RemoteAddr()] = s
	}
	for _, c := range dialed {
		s, ok := byPeer[c.LocalAddr()]
		if !ok {
			select {
			case <-c.Done():
				t.Errorf("Dial from %v succeeded, no Accept returned its connection, and it ended: %v", c.LocalAddr(), c.Err())
			default:
				t.Errorf("Dial from %v succeeded, and no Accept returned its connection", c.LocalAddr())
			}
			continue
		}
		delete(byPeer, c.LocalAddr())
		ping(t, c, s)
	}
	for p := range byPeer {
		t.Errorf("Accept returned a connection from %v, whose Dial failed", p)
	}
}

// closeAll closes every Conn of lists.
func closeAll(t *testing.T, lists ...[]*rdmacm.Conn) {
	t.Helper()
	for _, l := range lists {
		for _, c := range l {
			closeOK(t, c)
		}
	}
}

// dialPastCancelledAccept dials l from n's address and calls Accept with
// actx, which the test cancels during the handshake: Accept must return
// context.Canceled, and the Dial must still succeed. It returns the
// dialed Conn, closed when the test ends, or nil (the test has failed)
// if the Dial failed. what says where actx ends, for the messages.
func dialPastCancelledAccept(t *testing.T, n testNet, l *rdmacm.Listener, actx context.Context, what string) *rdmacm.Conn {
	t.Helper()
	dialed := make(chan *rdmacm.Conn, 1)
	go func() {
		c, err := rdmacm.Dial(timeout(t, 20*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
		if err != nil {
			t.Errorf("Dial, whose request an Accept took and whose context ended %s: %v", what, err)
		}
		dialed <- c
	}()
	if c, err := l.Accept(actx); !errors.Is(err, context.Canceled) {
		if c != nil {
			c.Close()
		}
		cli := <-dialed
		if cli != nil {
			cli.Close()
		}
		t.Fatalf("Accept whose context ended %s: %v, want context.Canceled", what, err)
	}
	cli := <-dialed
	if cli != nil {
		t.Cleanup(func() { closeOK(t, cli) })
	}
	return cli
}

// cancelInPrepare returns a Config whose Prepare calls the CancelFunc
// stored in the pointer it returns, if any, and then holds the handshake
// 200 ms: an Accept returns a connection that is made by the time it
// sees its context's end (Listener.accept), and on a loaded VM the
// handshake, which goes on, could finish first (TestCloseClosesKept's
// Accept returned it once in CI).
func cancelInPrepare() (*rdmacm.Config, *atomic.Pointer[context.CancelFunc]) {
	var f atomic.Pointer[context.CancelFunc]
	return &rdmacm.Config{Prepare: func(*rdmacm.Conn) (func() error, error) {
		if c := f.Load(); c != nil {
			(*c)()
			time.Sleep(200 * time.Millisecond)
		}
		return nil, nil
	}}, &f
}

// TestAcceptCtxEndsInHandshake: an Accept whose context ends once the
// connection's resources are being made (Config.Prepare cancels it)
// returns the context's error; the handshake goes on, the dialer gets a
// live connection, and the next Accept returns it. Before, the end of
// the context rejected the request: the peer's Dial failed with a
// *RejectedError.
func TestAcceptCtxEndsInHandshake(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	cfg, cancelAccept := cancelInPrepare()
	l := listen(t, n.IP, cfg)
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelAccept.Store(&cancel)
	cli := dialPastCancelledAccept(t, n, l, actx, "in the handshake")
	cancelAccept.Store(nil)
	if cli == nil {
		return
	}
	srv, err := l.Accept(timeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("the next Accept: %v, want the connection whose handshake the first began", err)
	}
	defer closeOK(t, srv)
	matchConns(t, []*rdmacm.Conn{cli}, []*rdmacm.Conn{srv})
}

// TestAcceptCtxEndsAtReply: an Accept whose context ends as it sends its
// reply (rdma_accept: a hook on the ID's verbs cancels it there) returns
// the context's error, the handshake completes, and the next Accept
// returns the connection, live at both ends. Before, Accept tore the
// connection down while it waited for ESTABLISHED: the peer's Dial
// failed (CONNECT_ERROR) or succeeded and its Conn ended at once.
func TestAcceptCtxEndsAtReply(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	var armed atomic.Pointer[context.CancelFunc]
	restore := rdmacm.SetQPUseHook(func(where string) {
		if where != "verb" {
			return
		}
		if f := armed.Swap(nil); f != nil {
			(*f)()
		}
	})
	defer restore()
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Prepare runs just before the reply: the next verb, rdma_accept,
	// cancels the Accept's context.
	l := listen(t, n.IP, &rdmacm.Config{Prepare: func(*rdmacm.Conn) (func() error, error) {
		armed.Store(&cancel)
		return nil, nil
	}})
	cli := dialPastCancelledAccept(t, n, l, actx, "at its reply")
	if cli == nil {
		return
	}
	srv, err := l.Accept(timeout(t, 10*time.Second))
	if err != nil {
		t.Fatalf("the next Accept: %v, want the connection whose reply the first sent", err)
	}
	defer closeOK(t, srv)
	select {
	case <-cli.Done():
		t.Fatalf("the dialed connection ended: %v", cli.Err())
	case <-time.After(300 * time.Millisecond):
	}
	matchConns(t, []*rdmacm.Conn{cli}, []*rdmacm.Conn{srv})
}

// TestAcceptPollLoop: a server that accepts in a loop with a short
// deadline on each Accept (poll for shutdown, accept again) and dialers
// that come one at a time: every Dial that succeeds gets a connection
// that some Accept returned, and a message goes over it. Before, an
// Accept whose deadline passed in the handshake tore it down: Dials
// succeeded and their Conns ended at once (DISCONNECTED, REJECTED).
func TestAcceptPollLoop(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 3)
	l := listen(t, n.IP, nil)
	stop := make(chan struct{})
	accepted := make(chan *rdmacm.Conn, 100)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			c, err := l.Accept(ctx)
			cancel()
			switch {
			case err == nil:
				accepted <- c
			case errors.Is(err, context.DeadlineExceeded):
			default:
				t.Errorf("Accept: %v", err)
			}
		}
	}()
	const N = 20
	var dialed []*rdmacm.Conn
	rng := rand.New(rand.NewSource(1))
	for range N {
		time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
		c, err := rdmacm.Dial(timeout(t, 20*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
		if err != nil {
			t.Errorf("Dial to a server that accepts in a loop: %v", err)
			continue
		}
		dialed = append(dialed, c)
	}
	// The last connections may still be on their way to an Accept.
	var got []*rdmacm.Conn
	for deadline := time.Now().Add(5 * time.Second); len(got) < len(dialed) && time.Now().Before(deadline); {
		select {
		case c := <-accepted:
			got = append(got, c)
		case <-time.After(50 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	close(accepted)
	for c := range accepted {
		got = append(got, c)
	}
	matchConns(t, dialed, got)
	closeAll(t, dialed, got)
}

// TestAcceptCancelStorm: dialers at once, and Accepts whose deadlines
// (0 to 3 ms) pass at every stage of the handshakes: every Dial that
// succeeds is matched by a connection from some Accept, live, and the
// listener's Close leaves nothing behind. Before, 5 Dials succeeded and
// no Accept returned their connections.
func TestAcceptCancelStorm(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 3)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, l)
	const N = 12
	var mu sync.Mutex
	var dialed []*rdmacm.Conn
	var dw sync.WaitGroup
	for range N {
		dw.Add(1)
		go func() {
			defer dw.Done()
			c, err := rdmacm.Dial(timeout(t, 30*time.Second), l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
			if err != nil {
				t.Errorf("Dial: %v", err)
				return
			}
			mu.Lock()
			dialed = append(dialed, c)
			mu.Unlock()
		}()
	}
	var got []*rdmacm.Conn
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000 && len(got) < N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.Intn(3000))*time.Microsecond)
		c, err := l.Accept(ctx)
		cancel()
		switch {
		case err == nil:
			got = append(got, c)
		case !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("Accept: %v", err)
		}
	}
	dw.Wait()
	for len(got) < len(dialed) {
		c, err := l.Accept(timeout(t, 5*time.Second))
		if err != nil {
			break
		}
		got = append(got, c)
	}
	matchConns(t, dialed, got)
	closeAll(t, dialed, got)
}

// TestCloseClosesKept: a connection whose handshake an Accept began, and
// whose caller gave up, is closed by the listener's Close if no Accept
// has returned it: its peer gets DISCONNECTED, and nothing is left.
func TestCloseClosesKept(t *testing.T) {
	n := device(t)
	warmUp(t, n)
	checkLeaks(t, 2)
	cfg, cancelAccept := cancelInPrepare()
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelAccept.Store(&cancel)
	cli := dialPastCancelledAccept(t, n, l, actx, "in the handshake")
	if cli == nil {
		return
	}
	// Let the handshake finish and its connection wait for an Accept.
	time.Sleep(200 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatalf("Close with a connection kept: %v", err)
	}
	select {
	case <-cli.Done():
		if !errors.Is(cli.Err(), rdmacm.ErrDisconnected) {
			t.Errorf("the dialed connection ended: %v, want ErrDisconnected", cli.Err())
		}
	case <-time.After(10 * time.Second):
		t.Error("the dialed connection still up 10 s after the listener's Close closed its peer")
	}
}
