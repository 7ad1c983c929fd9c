//go:build linux && cgo

package bench_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestNoReceiveCQ: a test that receives nothing makes no receive CQ of RX
// depth × QPs entries, as perftest's: write_bw -q 64 with perftest's
// default -r 512 wants 32768 of them, over rxe's largest CQ (32767).
func TestNoReceiveCQ(t *testing.T) {
	for _, test := range []exchange.Test{exchange.WriteBW, exchange.ReadBW} {
		t.Run(test.String(), func(t *testing.T) {
			spec := exchange.TestSpec{Test: test, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 8,
				NumQPs: 64, TXDepth: 4, RXDepth: 512, CQModeration: 1, ValidateData: true}
			c, _ := loopback(t, spec)
			if len(c.Sizes) != 1 || c.Sizes[0].BW.Iterations == 0 {
				t.Errorf("sizes %+v", c.Sizes)
			}
		})
	}
}
