//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestPatternDiffersBySize: the pattern of each size of -a differs from
// every other's at every byte, where those of 256 bytes and over were
// all the same (size*7 is 0 mod 256), so a size whose messages did not
// land could pass on what the last one left.
func TestPatternDiffersBySize(t *testing.T) {
	sizes := (exchange.TestSpec{AllSizes: true}).Sizes()
	const n = 64
	pats := make([][]byte, len(sizes))
	for i, size := range sizes {
		pats[i] = make([]byte, n)
		pattern(pats[i], int(size), 0)
	}
	for i := range sizes {
		for k := range i {
			for j := range n {
				if pats[i][j] == pats[k][j] {
					t.Errorf("sizes %d and %d: byte %d is %#x in both", sizes[i], sizes[k], j, pats[i][j])
					break
				}
			}
		}
	}
}

// TestStaleTargetCounts: a side whose target regions hold the pattern
// already when the size starts (a file's pages kept from an earlier run,
// --mmap, or the last size's messages) counts a mismatch on each QP that
// no message of the size reached: fillPatterns writes the complement
// there first. write_lat's last byte, the message number the loop polls,
// gets 0, no number.
func TestStaleTargetCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   exchange.TestSpec
		client bool
		qps    int
	}{
		{"write_bw server", exchange.TestSpec{Test: exchange.WriteBW, Size: 65536, NumQPs: 2, TXDepth: 16}, false, 2},
		{"write_bw bidirectional client", exchange.TestSpec{Test: exchange.WriteBW, Size: 4096, NumQPs: 2, TXDepth: 16, Bidirectional: true}, true, 2},
		{"send_bw server", exchange.TestSpec{Test: exchange.SendBW, Size: 512, NumQPs: 3, TXDepth: 16, RXDepth: 16}, false, 3},
		{"write_lat", exchange.TestSpec{Test: exchange.WriteLat, Size: 256, NumQPs: 1, TXDepth: 1}, true, 1},
		{"send_lat", exchange.TestSpec{Test: exchange.SendLat, Size: 1024, NumQPs: 1, TXDepth: 1, RXDepth: 4}, false, 1},
		{"read_bw client", exchange.TestSpec{Test: exchange.ReadBW, Size: 65536, NumQPs: 2, TXDepth: 16}, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.ConnType, spec.Iterations, spec.ValidateData = ibverbs.QPTypeRC, 10, true
			s := unitSession(t, spec)
			b := s.buf.Bytes()
			size := int(spec.Size)
			for i := range tc.qps { // what the regions held before
				pattern(b[s.dst(i):s.dst(i)+size], size, i)
				if spec.Test == exchange.WriteLat {
					b[s.dst(i)+size-1] = seqByte(9)
				}
			}
			s.fillPatterns(size, tc.client)
			if bad := s.validate(size, tc.client, 10); bad != uint64(tc.qps) {
				t.Errorf("no message landed: %d mismatches, want %d", bad, tc.qps)
			}
			if spec.Test == exchange.WriteLat {
				if got := b[s.dst(0)+size-1]; got != 0 {
					t.Errorf("write_lat's last byte is %#x, want 0", got)
				}
			}
		})
	}
}

// TestWarmUpSources: a validating side's warm-up sends the pattern's
// complement, so that its writes cannot leave the size's pattern in the
// peer's targets, and fillPatterns after it puts the pattern back in the
// sources and the complement in a reader's targets, where the warm-up's
// reads put the pattern.
func TestWarmUpSources(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.ReadBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 10,
		NumQPs: 2, TXDepth: 16, WarmUp: true, ValidateData: true}
	s := unitSession(t, spec)
	b := s.buf.Bytes()
	const size = 4096
	want := make([]byte, size)
	s.fillPatterns(size, true)
	s.fillWarmUp(size)
	for i := range 2 {
		pattern(want, size, i)
		src := b[s.src(i) : s.src(i)+size]
		for j := range src {
			if src[j] != ^want[j] {
				t.Fatalf("QP %d's warm-up source byte %d is %#x, want the complement %#x", i, j, src[j], ^want[j])
			}
		}
		copy(b[s.dst(i):], want) // the warm-up's reads
	}
	s.fillPatterns(size, true)
	for i := range 2 {
		pattern(want, size, i)
		if string(b[s.src(i):s.src(i)+size]) != string(want) {
			t.Errorf("QP %d's source is not the pattern after the warm-up", i)
		}
	}
	if bad := s.validate(size, true, 10); bad != 2 {
		t.Errorf("the warm-up's reads alone: %d mismatches, want 2", bad)
	}
}
