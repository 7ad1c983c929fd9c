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

// TestAckTimeoutRefused: an ACK timeout above 31, which the QP's 5-bit
// field cannot hold, is refused at once with EINVAL naming it: by Listen
// and Dial (Config.AckTimeout) and by ID.SetAckTimeout. Before, Listen
// took it and every Accept failed (rdma_accept: invalid argument), Dial
// failed on the reply ("connection error (RDMA_CM_EVENT_CONNECT_ERROR:
// invalid argument)") and SetAckTimeout returned nil.
func TestAckTimeoutRefused(t *testing.T) {
	t.Parallel() // it waits out its Accept's ctx
	n := device(t)
	if l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), &rdmacm.Config{AckTimeout: 32}); !errors.Is(err, syscall.EINVAL) ||
		!strings.Contains(err.Error(), "Config.AckTimeout 32") {
		if l != nil {
			l.Close()
		}
		t.Errorf("Listen with AckTimeout 32: %v, want EINVAL naming it", err)
	}
	l := listen(t, n.IP, nil)
	acc := acceptOne(timeout(t, 3*time.Second), l)
	start := time.Now()
	if c, err := rdmacm.Dial(timeout(t, 10*time.Second), l.Addr().String(), &rdmacm.Config{AckTimeout: 200, SrcAddr: n.IP.String()}); !errors.Is(err, syscall.EINVAL) ||
		!strings.Contains(err.Error(), "Config.AckTimeout 200") {
		if c != nil {
			c.Close()
		}
		t.Errorf("Dial with AckTimeout 200: %v, want EINVAL naming it", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Dial with AckTimeout 200 took %v to fail, want at once", d)
	}
	<-acc
	_, id := newID(t, rdmacm.PortSpaceTCP)
	if err := id.SetAckTimeout(32); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "32") {
		t.Errorf("SetAckTimeout(32): %v, want EINVAL naming it", err)
	}
	if err := id.SetAckTimeout(31); err != nil {
		t.Errorf("SetAckTimeout(31): %v", err)
	}
}
