//go:build linux && cgo

package bench_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestInlineSize: the loops send a message inline when it is at most the
// inline size asked for (-I), as perftest's, or what the QP was granted
// where that is less, not whenever it fits what the provider granted,
// which may be more (rxe grants 16 bytes for -I 0); the header's "Max
// inline data" says the size the loops use, as perftest's.
func TestInlineSize(t *testing.T) {
	info := rdmatest.Device(t)
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
	for _, tc := range []struct {
		test   exchange.Test
		inline uint32
	}{
		{exchange.SendBW, 0}, {exchange.WriteBW, 0}, {exchange.SendLat, 0}, {exchange.WriteLat, 0},
		{exchange.SendBW, 8}, {exchange.WriteLat, 100}, {exchange.SendLat, 236},
	} {
		spec := exchange.TestSpec{Test: tc.test, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
			NumQPs: 1, TXDepth: 16, RXDepth: 16, CQModeration: 1, Inline: tc.inline}
		if tc.test.IsLatency() {
			spec.TXDepth = 1
		}
		sizes := []int{1, 8, 9, 16, 17, 64, 100, 101, 236, 237}
		granted, inline, err := bench.InlineDecisions(spec, l, sizes)
		if err != nil {
			t.Fatalf("%v -I %d: %v", tc.test, tc.inline, err)
		}
		use := min(int(tc.inline), granted)
		for j, size := range sizes {
			if want := size <= use; inline[j] != want {
				t.Errorf("%v -I %d (granted %d): a message of %d bytes inline %v, want %v", tc.test, tc.inline, granted, size, inline[j], want)
			}
		}
		t.Logf("%v -I %d: granted %d", tc.test, tc.inline, granted)
	}
	for _, spec := range []exchange.TestSpec{
		{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 8, Iterations: 10, NumQPs: 1, TXDepth: 16, RXDepth: 16, CQModeration: 1, Inline: 0, ValidateData: true},
		{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeRC, Size: 8, Iterations: 10, NumQPs: 1, TXDepth: 1, RXDepth: 1, CQModeration: 1, Inline: 4, ValidateData: true},
	} {
		c, s := loopback(t, spec)
		for _, r := range []*bench.Result{c, s} {
			if r.Header.MaxInline != int(spec.Inline) {
				t.Errorf("%v -I %d: the %s's header says Max inline data %d", spec.Test, spec.Inline, r.Role, r.Header.MaxInline)
			}
		}
		if c.Mismatches+s.Mismatches != 0 {
			t.Errorf("%v -I %d: %d mismatches", spec.Test, spec.Inline, c.Mismatches+s.Mismatches)
		}
	}
}
