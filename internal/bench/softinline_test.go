//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestDefaultInline: perftest's default inline size (write_lat's 220)
// is none on rxe and siw, which perftest does not recognise and inlines
// nothing on, and stays on other devices; a size asked for (-I) stays
// everywhere.
func TestDefaultInline(t *testing.T) {
	for _, tc := range []struct {
		vendor uint32
		dflt   bool
		want   int
	}{
		{rxeVendorID, true, 0},
		{siwVendorID, true, 0},
		{0x02c9, true, 220}, // Mellanox
		{0x8086, true, 220}, // Intel
		{rxeVendorID, false, 220},
		{siwVendorID, false, 220},
	} {
		spec := exchange.TestSpec{Test: exchange.WriteLat, Inline: 220, InlineDefault: tc.dflt}
		if got := defaultInline(spec, tc.vendor); got != tc.want {
			t.Errorf("vendor %#x, default %v: inline %d, want %d", tc.vendor, tc.dflt, got, tc.want)
		}
	}
}
