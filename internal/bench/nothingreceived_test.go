//go:build linux && cgo

package bench_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestNothingReceivedReportsNothing: a UD send_bw receiver with a
// duration that receives no datagram (its Q_Key, changed once connected,
// is not the one the client sends to, so the device drops them all) ends
// when its time is up and reports no messages, while the client reports
// what it sent. It reported the client's send rate as its own.
func TestNothingReceivedReportsNothing(t *testing.T) {
	defer bench.SetAfterConnect(func(client bool, qps []*ibverbs.QP) {
		if client {
			return
		}
		for _, qp := range qps {
			if err := qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS, QKey: 0x22222222},
				ibverbs.QPAttrState|ibverbs.QPAttrQKey); err != nil {
				t.Errorf("changing the server's Q_Key: %v", err)
			}
		}
	})()
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 64, Duration: 2,
		NumQPs: 1, TXDepth: 16, RXDepth: 32, CQModeration: 4}
	c, s := loopback(t, spec)
	if len(c.Sizes) != 1 || len(s.Sizes) != 1 {
		t.Fatalf("sizes: client %d, server %d", len(c.Sizes), len(s.Sizes))
	}
	if sent := c.Sizes[0].BW; sent.Iterations == 0 || sent.AvgMBps == 0 {
		t.Errorf("client: sent %+v, want some", sent)
	}
	if got := s.Sizes[0].BW; got.Iterations != 0 || got.AvgMBps != 0 || got.PeakMBps != 0 || got.MsgRateMpps != 0 {
		t.Errorf("server: received %+v, want nothing (the client sent %d)", got, c.Sizes[0].BW.Iterations)
	}
}
