//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestLinkDown: a stream whose link goes down, and stays down, fails on
// both sides within the stall bound (3 s here) plus a few ticks, the
// sender's Send and the receiver's Recv alike: soft-RoCE's QP neither
// delivers nor fails its requests once its netdev is down (not even with
// the link back), and both waited for good. The link is restored after.
// It needs the rxe VM's two devices, and root, to take the dialer's
// netdev (RXE_NETDEV2) down.
func TestLinkDown(t *testing.T) {
	srvNet, cliNet := ends(t)
	nd := secondNetdev(t, srvNet, cliNet)
	const stall = 3 * time.Second
	defer rdmamsg.SetStallAfter(stall)()
	// An ACK timeout of 67 ms: where the device gave up as it should, it
	// would fail the requests in half a second.
	cfg := &rdmamsg.Config{KeepAlive: 500 * time.Millisecond, CM: rdmacm.Config{AckTimeout: 14}}
	srv, cli := pair(t, cfg, cfg)
	ctx := timeout(t, 60*time.Second)
	// Close returns, its error the loss, within its wait for the sends
	// (5 s without progress).
	defer func() {
		for _, c := range []*rdmamsg.Conn{cli, srv} {
			begin := time.Now()
			err := c.Close()
			if d := time.Since(begin); d > 10*time.Second {
				t.Errorf("Close took %v: %v", d, err)
			}
		}
	}()
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// The stream: the dialer sends, the listener receives, until each
	// fails; each says when.
	type end struct {
		n   int
		err error
		at  time.Time
	}
	sent, rcvd := make(chan end, 1), make(chan end, 1)
	go func() {
		var e end
		for e.err == nil {
			if e.err = cli.Send(ctx, message(e.n, 1000)); e.err == nil {
				e.n++
			}
		}
		e.at = time.Now()
		sent <- e
	}()
	go func() {
		var e end
		buf := make([]byte, 4096)
		for e.err == nil {
			if _, e.err = srv.Recv(ctx, buf); e.err == nil {
				e.n++
			}
		}
		e.at = time.Now()
		rcvd <- e
	}()
	time.Sleep(time.Second)
	begin := time.Now()
	ip("link", "set", nd, "down")
	// The link is down by the time ip returns, which on a loaded VM took
	// 40 s once: the bounds count from then, so that such a wait is not
	// taken for Send's (an error before it counts as at once).
	down := time.Now()
	if d := down.Sub(begin); d > time.Second {
		t.Logf("ip link set %s down took %v", nd, d)
	}
	defer func() {
		// Up again, before the Closes, with the VM's routes through it,
		// which going down removed, and both ports active.
		rdmatest.LinkUp(t, nd, srvNet.Dev, cliNet.Dev)
	}()
	// The bound, a tick or two (KeepAlive/4) late, on a VM under TCG.
	const within = stall + 5*time.Second
	for _, c := range []struct {
		what string
		ch   chan end
	}{{"Send", sent}, {"Recv", rcvd}} {
		select {
		case e := <-c.ch:
			after := e.at.Sub(down)
			// The stall's error, the device's retries' where it gave up,
			// or its failing the requests at once (soft-RoCE does so in
			// some runs: LOC_QP_OP_ERR, its send on a netdev down).
			if !errors.Is(e.err, syscall.ETIMEDOUT) && !errors.Is(e.err, ibverbs.WCRetryExcErr) && !errors.Is(e.err, ibverbs.WCLocQPOpErr) {
				t.Errorf("%s after %d messages, %v after the link went down: %v; want the stall's ETIMEDOUT or the device's failure", c.what, e.n, after, e.err)
			} else if after > within {
				t.Errorf("%s failed %v after the link went down, want within %v: %v", c.what, after, within, e.err)
			} else {
				t.Logf("%s after %d messages, %v after the link went down: %v", c.what, e.n, after, e.err)
			}
		case <-time.After(time.Until(down.Add(within + 10*time.Second))):
			t.Fatalf("%s still waits %v after the link went down", c.what, time.Since(down))
		}
	}
}

// TestKeepAliveAfterPost: a side that only receives, whose last post came
// just after a tick of its keepalive, still sends the keepalive within
// KeepAlive of that post, and finds a peer that died within KeepAlive and
// the retries. (Its ticker, of KeepAlive's period, sent one only after a
// whole tick without a post: up to twice KeepAlive after it, here some
// 7.6 s, where the limit is KeepAlive and 2 s, 6 s.)
func TestKeepAliveAfterPost(t *testing.T) {
	t.Parallel() // it waits on its keepalive
	const ka = 4 * time.Second
	srv, cli := connect(t, &rdmamsg.Config{KeepAlive: -1},
		&rdmamsg.Config{KeepAlive: ka, CM: rdmacm.Config{AckTimeout: 12}})
	start := time.Now() // the ticker started a little before
	ctx := timeout(t, 60*time.Second)
	// Just after the ticker's first tick, the one post.
	time.Sleep(ka + ka/10)
	if err := cli.Send(ctx, message(0, 10)); err != nil {
		t.Fatal(err)
	}
	posted := time.Now()
	buf := make([]byte, 64)
	if _, err := srv.Recv(ctx, buf); err != nil {
		t.Fatal(err)
	}
	// The peer's QP stops without a word.
	if err := rdmamsg.StopSilently(srv); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 4*ka)
	defer cancel()
	_, err := cli.Recv(rctx, buf)
	took := time.Since(posted)
	if !keepAliveFailed(err) {
		t.Fatalf("Recv from a peer that died: %v, %v after the post (%v after the start), want the keepalive's failure", err, took, posted.Sub(start))
	}
	// KeepAlive, 7 ACK timeouts of 17 ms, and room for a VM under TCG
	// on a loaded host.
	if limit := ka + 2*time.Second; took > limit {
		t.Errorf("the keepalive failed %v after the last post, want within %v (KeepAlive %v and the retries)", took, limit, ka)
	}
}

// secondNetdev returns the netdev of the second rxe device (RXE_NETDEV2),
// which a test takes down, where the ends srv and cli are on two devices
// and the test runs as root: in the rxe VM. Elsewhere it skips the test,
// but in the VM, where the device tests must run, it fails it.
func secondNetdev(t *testing.T, srv, cli rdmatest.Net) string {
	t.Helper()
	nd := os.Getenv("RXE_NETDEV2")
	if srv.IP == cli.IP || nd == "" || os.Geteuid() != 0 {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("in the rxe VM but not root, or RXE_NETDEV2 is unset")
		}
		t.Skip("needs the rxe VM's second device, and root to take its netdev (RXE_NETDEV2) down")
	}
	return nd
}

// linkDown takes netdev nd down and returns up, which brings it back
// (rdmatest.LinkUp, waiting for devs' ports) and runs at the test's end
// where the test has not called it.
func linkDown(t *testing.T, nd string, devs ...string) (up func()) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", nd, "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s down: %v: %s", nd, err, out)
	}
	var once sync.Once
	up = func() { once.Do(func() { rdmatest.LinkUp(t, nd, devs...) }) }
	t.Cleanup(up)
	return up
}
