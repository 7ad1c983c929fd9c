package exchange

import (
	"math"
	"strings"
	"testing"
)

// TestFormatBytesExact: a value that four digits would show as a whole
// number of its unit, which it is not, is written exactly, and so are a
// value and the limit it is over where they would read the same, so that
// a size just past a limit does not read as the limit ("message size
// 8 MiB exceeds this server's maximum of 8 MiB", for -s 8388609).
func TestFormatBytesExact(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{8 << 20, "8 MiB"},
		{8<<20 + 1, "8388609 B (8 MiB + 1 B)"},
		{8<<20 - 1, "8388607 B (8 MiB - 1 B)"},
		{1<<20 - 1, "1048575 B (1 MiB - 1 B)"},
		{1<<30 - 1, "1073741823 B (1 GiB - 1 B)"},
		{8<<20 + 1024, "8.001 MiB"},
		{123456789, "117.7 MiB"},
		{1536, "1.5 KiB"},
		{16<<60 - 2, "18446744073709551614 B (16 EiB - 2 B)"},
		{math.MaxUint64, "more than 16 EiB"},
	} {
		if got := formatBytes(c.n); got != c.want {
			t.Errorf("formatBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	// A value over a limit that would read as the limit is written
	// exactly, and so is the limit.
	for _, c := range []struct {
		n, limit uint64
		a, b     string
	}{
		{8<<20 + 1, 8 << 20, "8388609 B (8 MiB + 1 B)", "8 MiB"},
		{61<<20 + 512<<10, 60 << 20, "61.5 MiB", "60 MiB"},
		{8<<20 + 1025, 8<<20 + 1024, "8389633 B (8.001 MiB)", "8389632 B (8.001 MiB)"},
	} {
		if a, b := formatOver(c.n, c.limit); a != c.a || b != c.b {
			t.Errorf("formatOver(%d, %d) = %q, %q, want %q, %q", c.n, c.limit, a, b, c.a, c.b)
		}
	}
	// The limit check's message, as the reviewer met it.
	spec := testSpec()
	spec.Size, spec.NumQPs, spec.ValidateData = 8<<20+1, 1, false
	lim := DefaultLimits()
	lim.MaxMsgSize = 8 << 20
	err := spec.CheckLimits(lim)
	if err == nil || !strings.Contains(err.Error(), "message size 8388609 B (8 MiB + 1 B) exceeds this server's maximum of 8 MiB") {
		t.Errorf("-s 8388609 against an 8 MiB maximum: %v", err)
	}
}
