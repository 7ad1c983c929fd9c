package report

import (
	"testing"
	"time"
)

// TestFormatTime: Result's times are UTC, RFC 3339 with milliseconds,
// whatever the time's zone; the zero time is none.
func TestFormatTime(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 40, 1, 123456789, time.FixedZone("UTC+2", 2*3600))
	if got := FormatTime(at); got != "2026-12-07T08:40:01.123Z" {
		t.Errorf("FormatTime(%v) = %q, want 2026-12-07T08:40:01.123Z", at, got)
	}
	if got := FormatTime(time.Time{}); got != "" {
		t.Errorf("FormatTime of the zero time = %q, want none", got)
	}
	if p, err := time.Parse(time.RFC3339, FormatTime(at)); err != nil || !p.Equal(at.Truncate(time.Millisecond)) {
		t.Errorf("parsed back: %v, %v", p, err)
	}
}
