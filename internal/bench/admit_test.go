//go:build linux && cgo

package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestAdmit: a server refuses a client's test beyond its limits, an -R
// test whose threads' rdma_cm ports would pass 65535 (one each from the
// server's port), and one its Local.Admit refuses, saying why; it admits
// the rest, and asks Admit only about a test within the rest.
func TestAdmit(t *testing.T) {
	lim := exchange.DefaultLimits()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100, NumQPs: 1, TXDepth: 64, RXDepth: 64}
	cm := spec
	cm.RdmaCM, cm.Threads, cm.Group = true, 4, 7
	asked := 0
	no := errors.New("not this one")
	for _, tc := range []struct {
		spec   exchange.TestSpec
		port   int
		admit  func(exchange.TestSpec) error
		want   string // in the error; "" admits
		askeds int    // Admit's calls so far
	}{
		{spec, 65535, nil, "", 0},
		{cm, 65532, nil, "", 0},
		{cm, 65533, nil, "4 threads over rdma_cm need ports 65533 to 65536 of this server, past 65535 (run the server with -p 65532 or lower)", 0},
		{func() exchange.TestSpec { s := spec; s.NumQPs = lim.MaxQPs + 1; return s }(), 18515,
			func(exchange.TestSpec) error { asked++; return nil }, "QPs", 0},
		{spec, 18515, func(s exchange.TestSpec) error { asked++; return no }, "not this one", 1},
		{spec, 18515, func(s exchange.TestSpec) error { asked++; return nil }, "", 2},
	} {
		err := admit(&tc.spec, Local{CMPort: tc.port, Admit: tc.admit}, lim)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v on port %d: %v, want it admitted", tc.spec, tc.port, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v on port %d: %v, want %q", tc.spec, tc.port, err, tc.want)
		}
		if asked != tc.askeds {
			t.Errorf("%+v: Admit asked %d times so far, want %d", tc.spec, asked, tc.askeds)
		}
	}

	// A deep default RX depth over UD that the server's memory refuses
	// is lowered to fit (64 bytes × 1024 is 64 KiB), and Admit sees the
	// lowered spec; the same depth asked for is refused.
	small := lim
	small.MaxMemory = 64 << 10
	ud := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 64, Iterations: 2000, NumQPs: 1,
		TXDepth: 128, RXDepth: 2000, RXDepthDefault: true}
	var seen uint32
	l := Local{CMPort: 18515, Admit: func(s exchange.TestSpec) error { seen = s.RXDepth; return nil }}
	if err := admit(&ud, l, small); err != nil || ud.RXDepth != 1024 || seen != 1024 {
		t.Errorf("UD's default RX depth 2000 over 64 KiB: %v, depth %d, Admit saw %d; want it admitted at 1024", err, ud.RXDepth, seen)
	}
	ud.RXDepth, ud.RXDepthDefault = 2000, false
	if err := admit(&ud, l, small); !errors.Is(err, exchange.ErrOverLimit) || ud.RXDepth != 2000 {
		t.Errorf("RX depth 2000 asked for, over 64 KiB: %v, depth %d; want it refused", err, ud.RXDepth)
	}
}
