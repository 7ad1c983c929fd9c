package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/stats"
)

func TestLimits(t *testing.T) {
	bw := []SizeResult{
		{Bytes: 4096, BWAvgMBps: 900, BWAvgGbps: 7.55, MsgRateMpps: 0.23},
		{Bytes: 65536, BWAvgMBps: 1100, BWAvgGbps: 9.23, MsgRateMpps: 0.0176},
	}
	// --limit_p99 checks the table's 99% column (Percentile99Us,
	// perftest's), not the nearest rank over every sample (P99Us).
	lat := []SizeResult{
		{Bytes: 2, TTypicalUs: 1.8, Percentile99Us: 4.5, P99Us: 50},
		{Bytes: 64, TTypicalUs: 2.1, Percentile99Us: 9.0, P99Us: 3},
	}
	// The server of a latency test keeps no samples: its sizes are the
	// peer's to measure, as the CLI builds them.
	server := []SizeResult{SizeFromLatency(2, 1000, stats.Latency{}), SizeFromLatency(64, 1000, stats.Latency{})}
	for _, c := range []struct {
		name    string
		l       Limits
		results []SizeResult
		misses  []string // substrings, one per miss, in order
	}{
		{"none set", Limits{}, nil, nil},
		{"none set, gbits", Limits{Gbits: true}, nil, nil},
		{"bw passes", Limits{BW: 900}, bw, nil},
		{"bw misses one size", Limits{BW: 1000}, bw, []string{"4096 bytes: bandwidth 900.00 MB/sec, below 1000"}},
		{"bw in Gbit/s", Limits{BW: 8, Gbits: true}, bw, []string{"4096 bytes: bandwidth 7.55 Gbit/sec, below 8"}},
		{"msg rate", Limits{MsgRate: 0.1}, bw, []string{"65536 bytes: message rate 0.017600 Mpps, below 0.1"}},
		{"both miss", Limits{BW: 2000, MsgRate: 1}, bw[1:], []string{"bandwidth 1100.00", "message rate"}},
		{"typical passes", Limits{Typical: 2.1}, lat, nil},
		{"typical misses", Limits{Typical: 2}, lat, []string{"64 bytes: t_typical 2.10 µs, above 2"}},
		{"p99 misses", Limits{P99: 5}, lat, []string{"64 bytes: 99% percentile 9.00 µs, above 5"}},
		// A limit on a figure the test does not report cannot pass.
		{"latency limit on bandwidth", Limits{Typical: 100}, bw[:1], []string{"4096 bytes: t_typical 0.00 µs"}},
		{"bandwidth limit on latency", Limits{BW: 1}, lat[:1], []string{"2 bytes: bandwidth 0.00 MB/sec"}},
		{"nothing measured", Limits{BW: 1}, nil, []string{"nothing was measured"}},
		// The side the peer measured has no latency figures to miss.
		{"latency limits on the server", Limits{Typical: 100, P99: 5}, server, nil},
		{"latency limits on the client", Limits{Typical: 2, P99: 5}, append(server[:1:1], lat[1]),
			[]string{"64 bytes: t_typical 2.10 µs", "64 bytes: 99% percentile 9.00 µs"}},
		{"bandwidth limit on the server of latency", Limits{BW: 1}, server[:1], []string{"2 bytes: bandwidth 0.00 MB/sec"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.l.Check(c.results)
			if len(c.misses) == 0 {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("Check = %v, want a *LimitError", err)
			}
			if len(le.Misses) != len(c.misses) {
				t.Fatalf("misses %q, want %d", le.Misses, len(c.misses))
			}
			for i, m := range c.misses {
				if !strings.Contains(le.Misses[i], m) {
					t.Errorf("miss %d = %q, want it to contain %q", i, le.Misses[i], m)
				}
			}
			if len(c.misses) == 1 && !strings.HasPrefix(err.Error(), "limit missed: ") {
				t.Errorf("error %q", err)
			}
			if len(c.misses) > 1 && !strings.HasPrefix(err.Error(), "2 limits missed: ") {
				t.Errorf("error %q", err)
			}
		})
	}
}
