//go:build linux && cgo

package bench

import (
	"os"
	"testing"
)

// TestHostTicks: the user and idle figures of /proc/stat's first line,
// which perftest's --cpu_util reads, and none from other text.
func TestHostTicks(t *testing.T) {
	for _, tc := range []struct {
		stat       string
		user, idle uint64
		ok         bool
	}{
		{"cpu  4705 356 584 3699176 23 23 0 0 0 0\ncpu0 1393 280 290 924349 8 5 0 0 0 0\n", 4705, 3699176, true},
		{"cpu 1 2 3 4", 1, 4, true},
		{"cpu0 1 2 3 4 5\n", 0, 0, false},
		{"cpu 1 2 3\n", 0, 0, false},
		{"cpu x 2 3 4\n", 0, 0, false},
		{"", 0, 0, false},
	} {
		u, i, ok := hostTicks([]byte(tc.stat))
		if u != tc.user || i != tc.idle || ok != tc.ok {
			t.Errorf("hostTicks(%q) = %d, %d, %v; want %d, %d, %v", tc.stat, u, i, ok, tc.user, tc.idle, tc.ok)
		}
	}
	if _, err := os.Stat("/proc/stat"); err == nil {
		if u, i := readHostTicks(); u+i == 0 {
			t.Error("readHostTicks read nothing from /proc/stat")
		}
	}
}

// TestCPUSampleSince: a stretch's host ticks are the difference of its
// edges', none where either edge has none.
func TestCPUSampleSince(t *testing.T) {
	a := cpuSample{hostUser: 100, hostIdle: 1000}
	b := cpuSample{hostUser: 130, hostIdle: 1090}
	if c := b.since(a, 1); c.HostUser != 30 || c.HostIdle != 90 || c.HostUserPercent() != 25 {
		t.Errorf("since: %+v", c)
	}
	if c := b.since(cpuSample{}, 1); c.HostUser != 0 || c.HostIdle != 0 {
		t.Errorf("since an edge without /proc/stat: %+v", c)
	}
}
