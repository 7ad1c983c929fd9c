//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestBufferWithinMemory opens a side's resources for specs at depth 1
// and beyond: the buffer is the spec's BufferLen in regions of RegionLen,
// and what is registered never exceeds Memory, the figure a server's
// --max-memory bounds.
func TestBufferWithinMemory(t *testing.T) {
	info := rdmatest.Device(t)
	for _, spec := range []exchange.TestSpec{
		{Test: exchange.SendLat, ConnType: ibverbs.QPTypeRC, Size: 65536, Iterations: 10, NumQPs: 1, TXDepth: 1, RXDepth: 1},
		{Test: exchange.WriteLat, ConnType: ibverbs.QPTypeRC, Size: 1, Iterations: 10, NumQPs: 1, TXDepth: 1},
		{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 10, NumQPs: 3, TXDepth: 2, Bidirectional: true},
		{Test: exchange.ReadBW, ConnType: ibverbs.QPTypeRC, Size: 1000, Iterations: 10, NumQPs: 2, TXDepth: 1, MRPerQP: true},
		{Test: exchange.AtomicBW, ConnType: ibverbs.QPTypeRC, Size: 8, Iterations: 10, NumQPs: 4, TXDepth: 1},
		{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 512, Iterations: 10, NumQPs: 2, TXDepth: 1, RXDepth: 1},
	} {
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		s, err := openSession(spec, Local{Device: info.Name, Port: info.Port, GIDIndex: -1})
		if err != nil {
			rdmatest.SkipIfUnsupported(t, err)
			t.Fatalf("%v: %v", spec.Test, err)
		}
		registered := 0
		if s.mr != nil {
			registered = s.mr.Len()
		}
		for _, mr := range s.mrs {
			registered += mr.Len()
		}
		buf, region := len(s.buf.Bytes()), s.region
		s.close()
		if uint64(buf) != spec.BufferLen() || uint64(region) != spec.RegionLen() {
			t.Errorf("%v: a buffer of %d bytes in regions of %d, want %d and %d", spec.Test, buf, region, spec.BufferLen(), spec.RegionLen())
		}
		if registered != buf || uint64(registered) > spec.Memory() {
			t.Errorf("%v size %d depth %d: %d bytes registered of a %d-byte buffer; Memory counts %d", spec.Test, spec.Size, spec.TXDepth, registered, buf, spec.Memory())
		}
	}
}
