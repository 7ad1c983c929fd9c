//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// TestDialDefaultConnectTimeout: a Dial (and a LookupUD) to a listener
// whose program never takes its request, with neither a deadline on ctx
// nor Config.Timeout, ends after the default bound (shortened here) with
// an error matching ETIMEDOUT and context.DeadlineExceeded that names the
// bound, where it waited on the kernel CM's retries: for RC, whose
// request the listener's kernel answers with an MRA of about 69 s, up to
// 17 min.
func TestDialDefaultConnectTimeout(t *testing.T) {
	n := device(t)
	const bound = 3 * time.Second
	// Restored once both kinds, which wait out the bound side by side,
	// have ended.
	t.Cleanup(rdmacm.SetConnectTimeout(bound))
	for _, ud := range []bool{false, true} {
		t.Run(map[bool]string{false: "RC", true: "UD"}[ud], func(t *testing.T) {
			t.Parallel()
			dialDefaultConnectTimeout(t, n, ud, bound)
		})
	}
}

// dialDefaultConnectTimeout is one kind of TestDialDefaultConnectTimeout,
// RC or UD, under the bound it has set.
func dialDefaultConnectTimeout(t *testing.T, n testNet, ud bool, bound time.Duration) {
	l := listen(t, n.IP, &rdmacm.Config{UD: ud})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		var err error
		if ud {
			_, err = rdmacm.LookupUD(context.Background(), addr(n.IP, l.Addr().Port()), nil)
		} else {
			var c *rdmacm.Conn
			if c, err = rdmacm.Dial(context.Background(), addr(n.IP, l.Addr().Port()), nil); c != nil {
				c.Close()
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		took := time.Since(start)
		if err == nil || !errors.Is(err, syscall.ETIMEDOUT) || !errors.Is(err, context.DeadlineExceeded) ||
			!strings.Contains(err.Error(), "no answer in 3s, the bound DefaultConnectTimeout gives when neither Config.Timeout nor a deadline on ctx does") {
			t.Errorf("UD %v: Dial to a listener that never accepts: %v; want ETIMEDOUT and DeadlineExceeded naming the bound", ud, err)
		}
		if took < bound || took > bound+10*time.Second {
			t.Errorf("UD %v: Dial returned after %v; want about %v", ud, took, bound)
		}
	case <-time.After(bound + 30*time.Second):
		t.Errorf("UD %v: Dial to a listener that never accepts still waits after %v; want it to end after about %v", ud, time.Since(start), bound)
	}
	closeOK(t, l)
}

// TestAcceptDefaultConnectTimeout: a ConnRequest.Accept whose peer never
// confirms the connection (a raw ID that connects without a QP and never
// calls rdma_establish, so no RTU comes), with neither a deadline on ctx
// nor Config.Timeout, ends after the default bound (shortened here) with
// an error that says the peer did not confirm it, matching ETIMEDOUT;
// it used to say "no answer", as for a Dial.
func TestAcceptDefaultConnectTimeout(t *testing.T) {
	n := device(t)
	const bound = 3 * time.Second
	defer rdmacm.SetConnectTimeout(bound)()
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	_, r := pendingRequest(t, ctx, n, l)
	start := time.Now()
	c, err := r.Accept(context.Background(), nil)
	took := time.Since(start)
	if c != nil {
		c.Close()
		t.Fatal("Accept returned a connection its peer never confirmed")
	}
	if !errors.Is(err, syscall.ETIMEDOUT) ||
		!strings.Contains(err.Error(), "the peer did not confirm the connection (no ESTABLISHED) in 3s, the bound DefaultConnectTimeout gives") {
		t.Errorf("Accept of a connection its peer never confirms: %v; want ETIMEDOUT, saying the peer did not confirm it in the bound", err)
	}
	if took < bound || took > bound+10*time.Second {
		t.Errorf("Accept returned after %v; want about %v", took, bound)
	}
}
