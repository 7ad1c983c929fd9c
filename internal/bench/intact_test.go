//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// unitSession is a session over spec's buffer alone, with no device.
func unitSession(t *testing.T, spec exchange.TestSpec) *session {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	buf, err := ibverbs.NewBuffer(int(spec.BufferLen()), ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	return &session{spec: spec, buf: buf, region: int(spec.RegionLen()), qps: make([]*ibverbs.QP, spec.NumQPs)}
}

// TestWriteLatIntactNumber: write_lat's --validate checks the last byte
// of the last message, its number (seqByte of the peer's message done-1),
// and so checks something at -s 1, where the pattern before it is empty.
func TestWriteLatIntactNumber(t *testing.T) {
	for _, size := range []int{1, 2, 64} {
		spec := exchange.TestSpec{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeRC, Size: uint32(size), Iterations: 10,
			NumQPs: 1, TXDepth: 1, ValidateData: true}
		s := unitSession(t, spec)
		b := s.buf.Bytes()
		msg := b[s.dst(0) : s.dst(0)+size]
		pattern(msg, size, 0)
		msg[size-1] = seqByte(9)
		if !s.latencyIntact(size, true, 10) {
			t.Errorf("size %d: the intact last message (number 9) counted as a mismatch", size)
		}
		msg[size-1] = seqByte(8)
		if s.latencyIntact(size, true, 10) {
			t.Errorf("size %d: message 8's number where 9's is due passed", size)
		}
		for i := range msg {
			msg[i] = 0x5a
		}
		if s.latencyIntact(size, false, 10) {
			t.Errorf("size %d: 0x5a bytes passed", size)
		}
	}
}
