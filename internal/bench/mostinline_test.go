//go:build linux && cgo

package bench

import "testing"

// TestMostInline: the search for the most a device inlines finds the
// largest size its provider accepts under the one refused, whatever the
// provider's limit (irdma's 101 bytes, siw's 80, none), in a few tries,
// and reports none accepted where even no inline data is refused.
func TestMostInline(t *testing.T) {
	for _, tc := range []struct {
		refused, limit int // -1: nothing accepted
	}{{236, 101}, {220, 80}, {188, 0}, {236, 235}, {236, 118}, {4096, 512}, {1, 0}, {236, -1}} {
		tries := 0
		got, ok := mostInline(tc.refused, func(n int) bool {
			tries++
			if n >= tc.refused {
				t.Errorf("%d under %d: tried %d", tc.limit, tc.refused, n)
			}
			return n <= tc.limit
		})
		switch {
		case tc.limit < 0 && ok:
			t.Errorf("nothing accepted under %d: found %d", tc.refused, got)
		case tc.limit >= 0 && (!ok || got != tc.limit):
			t.Errorf("a limit of %d under %d: found %d, %v", tc.limit, tc.refused, got, ok)
		}
		if tries > 26 {
			t.Errorf("a limit of %d under %d: %d tries", tc.limit, tc.refused, tries)
		}
	}
}
