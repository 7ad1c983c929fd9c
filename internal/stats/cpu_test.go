package stats

import (
	"testing"
	"time"
)

func TestCPU(t *testing.T) {
	c := CPU{User: 3 * time.Millisecond, System: 7 * time.Millisecond, Wall: 20 * time.Millisecond, Messages: 1000}
	if u, s := c.PerMessage(); u != 3 || s != 7 {
		t.Errorf("PerMessage = %v, %v µs; want 3, 7", u, s)
	}
	if p := c.Percent(); p != 50 {
		t.Errorf("Percent = %v, want 50", p)
	}
	// Two busy threads: over one CPU.
	c = CPU{User: 30 * time.Millisecond, System: 10 * time.Millisecond, Wall: 20 * time.Millisecond}
	if p := c.Percent(); p != 200 {
		t.Errorf("Percent = %v, want 200", p)
	}
	if u, s := c.PerMessage(); u != 0 || s != 0 {
		t.Errorf("no messages: PerMessage = %v, %v", u, s)
	}
	if p := (CPU{User: time.Second}).Percent(); p != 0 {
		t.Errorf("no wall time: Percent = %v", p)
	}
}

// TestHostUserPercent: perftest's calc_cpu_util, user over user and idle
// ticks, whatever the process's own time.
func TestHostUserPercent(t *testing.T) {
	for _, tc := range []struct {
		c    CPU
		want float64
	}{
		{CPU{HostUser: 25, HostIdle: 75, User: time.Second, Wall: time.Millisecond}, 25},
		{CPU{HostUser: 300, HostIdle: 0}, 100},
		{CPU{User: time.Second, Wall: time.Second}, 0}, // /proc/stat unread
	} {
		if got := tc.c.HostUserPercent(); got != tc.want {
			t.Errorf("%+v: HostUserPercent = %v, want %v", tc.c, got, tc.want)
		}
	}
}
