//go:build linux && cgo

package cli

import (
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestWriteLatNoRelaxedOnTheWire: a write-lat client asks the server for
// memory without PCIe relaxed ordering, flag or not, so that a server of
// the same protocol from before write_lat's rule agrees; the other tests
// ask only where --disable_pcie_relaxed says so.
func TestWriteLatNoRelaxedOnTheWire(t *testing.T) {
	for _, test := range []exchange.Test{exchange.WriteLat, exchange.WriteBW, exchange.ReadLat, exchange.SendLat} {
		for _, args := range [][]string{{"198.18.0.1"}, {"--disable_pcie_relaxed", "198.18.0.1"}} {
			s, _, err := parseTest(t, test, args...)
			if err != nil {
				t.Fatalf("%v %v: %v", test, args, err)
			}
			want := test == exchange.WriteLat || len(args) == 2
			if s.NoRelaxedOrdering != want {
				t.Errorf("%v %v: NoRelaxedOrdering %v; want %v", test, args, s.NoRelaxedOrdering, want)
			}
		}
	}
}
