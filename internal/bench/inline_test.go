//go:build linux && cgo

package bench_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
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

// TestInlineDefaultFits: an inline size that is perftest's default
// (InlineDefault) and more than the device can inline comes down to the
// most it can, on both sides, through rdma_cm too, and the header says
// that size; the loops inline messages up to it, and the data arrives
// intact. The same size asked for (-I) fails, saying what the device can
// inline: rxe refuses a QP over its largest with EINVAL, as irdma, siw,
// EFA and bnxt_re do perftest's defaults of 220 and 236 bytes.
func TestInlineDefaultFits(t *testing.T) {
	info := rdmatest.Device(t)
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
	const over = exchange.MaxInline // more than rxe inlines (512 bytes)
	spec := exchange.TestSpec{Test: exchange.SendLat, ConnType: ibverbs.QPTypeRC, Size: over, Iterations: 20,
		NumQPs: 1, TXDepth: 1, RXDepth: 16, CQModeration: 1, Inline: over}

	_, _, err := bench.InlineDecisions(spec, l, nil)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), fmt.Sprintf("cannot inline %d bytes of data (-I): at most", over)) {
		t.Fatalf("-I %d: %v; want EINVAL, saying the device cannot inline so much", over, err)
	}
	t.Log(err)

	spec.InlineDefault = true
	granted, _, err := bench.InlineDecisions(spec, l, nil)
	if err != nil {
		t.Fatalf("the default %d: %v", over, err)
	}
	t.Logf("a default of %d inlines %d", over, granted)
	if granted <= 0 || granted >= over {
		t.Fatalf("the default %d: QP granted %d", over, granted)
	}
	if _, inline, err := bench.InlineDecisions(spec, l, []int{1, granted, granted + 1}); err != nil || !inline[0] || !inline[1] || inline[2] {
		t.Errorf("the default %d, %d granted: inline at 1, %[2]d and %d bytes %v, %v; want true, true, false", over, granted, granted+1, inline, err)
	}
	// The most the device inlines: one byte more is refused.
	spec.InlineDefault, spec.Inline = false, uint32(granted)
	if _, _, err := bench.InlineDecisions(spec, l, nil); err != nil {
		t.Errorf("-I %d, the most found: %v", granted, err)
	}
	spec.Inline++
	if _, _, err := bench.InlineDecisions(spec, l, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("-I %d, one over the most found: %v, want EINVAL", spec.Inline, err)
	}

	spec.Size, spec.Inline, spec.InlineDefault, spec.ValidateData = 64, over, true, true
	for _, cm := range []bool{false, true} {
		spec.RdmaCM = cm
		c, s := loopback(t, spec, cmClient(t, cm))
		for _, r := range []*bench.Result{c, s} {
			if r.Header.MaxInline != granted {
				t.Errorf("rdma_cm %v: the %s's header says Max inline data %d, want %d", cm, r.Role, r.Header.MaxInline, granted)
			}
		}
		if c.Mismatches+s.Mismatches != 0 || len(c.Sizes) != 1 || c.Sizes[0].Lat.N == 0 {
			t.Errorf("rdma_cm %v: %d mismatches, sizes %+v", cm, c.Mismatches+s.Mismatches, c.Sizes)
		}
	}
	spec.InlineDefault = false
	spec.RdmaCM = true
	_, _, cerr, serr := tryLoopback(t, spec, cmClient(t, true))
	for _, err := range []error{cerr, serr} {
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "(-I)") {
			t.Errorf("-I %d through rdma_cm: %v; want EINVAL, saying the device cannot inline so much", over, err)
		}
	}
}
