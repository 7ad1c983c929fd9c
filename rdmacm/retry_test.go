//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestSilentPeerDefaultRetries: with the default retry count, which the
// dialer's connection request carries to both QPs (6,
// rdmacm.DefaultRetryCount; 7 asked for stays 7), a request to a peer
// that went silent (its QP in the error state: its device drops what
// comes, and answers nothing) fails with WCRetryExcErr once the retries
// run out: 7 ACK timeouts of 67 ms here (AckTimeout 14). (The default
// was 7, which soft-RoCE takes for "retry forever": the request never
// completed.)
func TestSilentPeerDefaultRetries(t *testing.T) {
	t.Parallel() // it waits out the retries
	n := device(t)
	l := listen(t, n.IP, nil)
	srv, cli := connect(t, l, n.IP, &rdmacm.Config{AckTimeout: 14})
	for side, c := range map[string]*rdmacm.Conn{"dialer": cli, "acceptor": srv} {
		if a, err := c.QP().Query(); err != nil || a.RetryCnt != rdmacm.DefaultRetryCount {
			t.Errorf("the %s's QP: retry_cnt %d, %v; want %d", side, a.RetryCnt, err, rdmacm.DefaultRetryCount)
		}
	}
	if err := srv.QP().ToError(); err != nil {
		t.Fatal(err)
	}
	// An RDMA write of no bytes: it needs no memory, only the peer's ACK.
	err := cli.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = waitEvent(cli.SendCQ(), 15*time.Second)
	var we *ibverbs.WCError
	if !errors.As(err, &we) || we.Status != ibverbs.WCRetryExcErr {
		t.Fatalf("a write to a silent peer: %v after %v, want WCRetryExcErr", err, time.Since(start))
	}
	t.Logf("the write failed %v after it was posted: %v", time.Since(start), err)

	_, cli7 := connect(t, l, n.IP, &rdmacm.Config{RetryCount: 7})
	if a, err := cli7.QP().Query(); err != nil || a.RetryCnt != 7 {
		t.Errorf("Config.RetryCount 7: retry_cnt %d, %v; want 7", a.RetryCnt, err)
	}
}
