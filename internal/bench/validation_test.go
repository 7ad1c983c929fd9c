//go:build linux && cgo

package bench_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestValidateChecks runs, with --validate, the tests whose data was not
// checked before (every latency test, CMP_AND_SWAP, FETCH_AND_ADD both
// ways and atomic_lat for a duration), read_bw, write_lat of 1 byte (its
// number alone), warm-ups, whose messages must not spoil the check, and
// sends through an SRQ and over UD: once as they are, with no mismatch,
// and once with each side's buffer spoiled (every byte inverted) after
// the run, when the side that checks must count one.
func TestValidateChecks(t *testing.T) {
	rc := ibverbs.QPTypeRC
	for _, tc := range []struct {
		name string
		spec exchange.TestSpec
	}{
		{"write_lat", exchange.TestSpec{Test: exchange.WriteLat, ConnType: rc, Size: 64}},
		{"write_lat 1 byte", exchange.TestSpec{Test: exchange.WriteLat, ConnType: rc, Size: 1}},
		{"write_lat UC", exchange.TestSpec{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeUC, Size: 300}},
		{"write_lat immediate", exchange.TestSpec{Test: exchange.WriteLat, ConnType: rc, Size: 64, Immediate: true}},
		{"send_lat", exchange.TestSpec{Test: exchange.SendLat, ConnType: rc, Size: 64}},
		{"send_lat UD", exchange.TestSpec{Test: exchange.SendLat, ConnType: ibverbs.QPTypeUD, Size: 256}},
		{"send_lat SRQ", exchange.TestSpec{Test: exchange.SendLat, ConnType: rc, Size: 64, SRQ: true}},
		{"read_lat", exchange.TestSpec{Test: exchange.ReadLat, ConnType: rc, Size: 4096}},
		{"atomic_lat", exchange.TestSpec{Test: exchange.AtomicLat, ConnType: rc, Size: 8}},
		{"atomic_lat CMP_AND_SWAP", exchange.TestSpec{Test: exchange.AtomicLat, ConnType: rc, Size: 8, Atomic: exchange.CmpSwap}},
		{"atomic_lat duration", exchange.TestSpec{Test: exchange.AtomicLat, ConnType: rc, Size: 8, Duration: 1}},
		{"atomic_bw CMP_AND_SWAP", exchange.TestSpec{Test: exchange.AtomicBW, ConnType: rc, Size: 8, Atomic: exchange.CmpSwap, NumQPs: 2}},
		{"atomic_bw CMP_AND_SWAP duration", exchange.TestSpec{Test: exchange.AtomicBW, ConnType: rc, Size: 8, Atomic: exchange.CmpSwap, Duration: 1}},
		{"atomic_bw bidirectional", exchange.TestSpec{Test: exchange.AtomicBW, ConnType: rc, Size: 8, NumQPs: 2, Bidirectional: true}},
		{"read_bw", exchange.TestSpec{Test: exchange.ReadBW, ConnType: rc, Size: 4096, NumQPs: 2}},
		{"read_bw warm-up", exchange.TestSpec{Test: exchange.ReadBW, ConnType: rc, Size: 65536, NumQPs: 2, WarmUp: true}},
		{"write_bw warm-up", exchange.TestSpec{Test: exchange.WriteBW, ConnType: rc, Size: 65536, NumQPs: 2, WarmUp: true}},
		{"send_bw SRQ 8 QPs", exchange.TestSpec{Test: exchange.SendBW, ConnType: rc, Size: 1024, NumQPs: 8, SRQ: true}},
		{"send_bw UD", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 512, NumQPs: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.ValidateData, spec.NumQPs = true, max(spec.NumQPs, 1)
			spec.TXDepth, spec.RXDepth, spec.CQModeration = 16, 16, 4
			if spec.Test.IsLatency() {
				spec.TXDepth, spec.CQModeration = 1, 1
			}
			if spec.Duration == 0 {
				spec.Iterations = 100
			}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			c, s := loopback(t, spec)
			if c.Mismatches != 0 || s.Mismatches != 0 || len(c.Sizes) != 1 {
				t.Fatalf("intact: %d mismatches on the client, %d on the server, %d sizes", c.Mismatches, s.Mismatches, len(c.Sizes))
			}
			defer bench.SetBeforeValidate(func(_ bool, buf []byte) {
				for i := range buf {
					buf[i] = ^buf[i]
				}
			})()
			c, s = loopback(t, spec)
			if c.Mismatches == 0 || c.Mismatches != s.Mismatches {
				t.Errorf("spoiled: %d mismatches on the client, %d on the server; want the same, not 0", c.Mismatches, s.Mismatches)
			}
		})
	}
}
