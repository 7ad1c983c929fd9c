package exchange

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestSpecSizeDefault: SizeDefault travels as bit 9 of the flags word,
// and a spec with it decodes to the same spec.
func TestSpecSizeDefault(t *testing.T) {
	s := TestSpec{Test: SendBW, ConnType: ibverbs.QPTypeUD, Size: 1024, Iterations: 20, NumQPs: 1, TXDepth: 1, RXDepth: 1, SizeDefault: true}
	p := s.AppendPayload(nil)
	plain := s
	plain.SizeDefault = false
	q := plain.AppendPayload(nil)
	// The flags word follows the 57 bytes before it.
	if len(p) != len(q) || p[57+2] != q[57+2]|0x02 {
		t.Fatalf("payload with SizeDefault % x, without % x: want bit 9 of the flags word", p, q)
	}
	got, err := decodeSpec(p)
	if err != nil || !got.SizeDefault || got.Flags != 0 {
		t.Fatalf("decodeSpec = %+v, %v; want SizeDefault and no unknown flags", got, err)
	}
}
