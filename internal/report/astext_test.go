package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// halfNs is a latency summary whose figures, in ns, lie 0.1 to 0.4 ns
// above x.125 or x.625 µs: rounded to the nanosecond (SizeResult's
// fields, --json's) they are a half of the second decimal, which %.2f
// rounds to even, down, where the figures as measured, the text's, round
// up (11125.3 ns: 11.13, and 11.12 from 11.125).
var halfNs = stats.Latency{N: 1000, Min: 11125.3, TMax: 20625.4, Typical: 12125.2, Avg: 13625.1, Stdev: 1125.4,
	T99: 19625.3, T999: 20125.4, P50: 12125.2, P90: 13625.1, P99: 19625.3, P999: 20125.4, P9999: 20625.4, Max: 21625.3}

// TestPerftestJSONLatAsText: perftest's file has the latency figures
// the text prints, digit for digit, as perftest writes the same double to
// both: the row's seven (WriteLatRow) and --output latency's six
// decimals (WriteLatValue), not those of the figures rounded to the
// nanosecond (reviewer F1, F3: stdout 31.059340, the file's avg_lat
// 31.059000; a row's 11.13, the file's 11.12).
func TestPerftestJSONLatAsText(t *testing.T) {
	r := fixtureRoCE("send_lat", "client", "rxe1")
	r.Results = []SizeResult{SizeFromLatency(2, 1000, halfNs)}

	var row bytes.Buffer
	if err := WriteLatRow(&row, 2, 1000, halfNs); err != nil {
		t.Fatal(err)
	}
	cells := strings.Fields(row.String())[2:] // after #bytes and #iterations
	results := perftestFileResults(t, r)
	for i, k := range []string{"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"} {
		if got := results[k].String(); got != cells[i] {
			t.Errorf("%s %s, the text's row %s:\n%s", k, got, cells[i], row.String())
		}
	}

	var value bytes.Buffer
	if err := WriteLatValue(&value, halfNs); err != nil {
		t.Fatal(err)
	}
	results = perftestFileValue(t, r, PerftestJSON{Value: LatValue})
	if got, want := results["avg_lat"].String(), strings.TrimSpace(value.String()); got != want || len(results) != 1 {
		t.Errorf("--output latency: the file's results %v, stdout %s", results, want)
	}
}

// TestPerftestJSONLatDurAsText: so do a latency test of a duration's
// (-D): the file's t_avg and tps_average are the text's row's
// (WriteLatWindowRow) and its avg_lat with --output latency the figure
// stdout prints (WriteLatWindowValue), where the file had the window's
// t_avg rounded to the nanosecond.
func TestPerftestJSONLatDurAsText(t *testing.T) {
	// 100001 ns over 7 round trips: t_avg 7142.928571... ns a half.
	d := LatDur{Iterations: 7, Window: 100*time.Microsecond + 1, Halves: true}
	r := fixtureRoCE("write_lat", "client", "rxe1")
	r.DurationS = 2
	r.Results = []SizeResult{SizeFromLatencyWindow(2, d, halfNs)}

	var row bytes.Buffer
	if err := WriteLatWindowRow(&row, 2, d, halfNs); err != nil {
		t.Fatal(err)
	}
	cells := strings.Fields(row.String())[2:]
	results := perftestFileResults(t, r)
	if avg, tps := results["t_avg"].String(), results["tps_average"].String(); avg != cells[0] || tps != cells[1] {
		t.Errorf("t_avg %s, tps_average %s; the text's row %q", avg, tps, row.String())
	}

	var value bytes.Buffer
	if err := WriteLatWindowValue(&value, d, halfNs); err != nil {
		t.Fatal(err)
	}
	results = perftestFileValue(t, r, PerftestJSON{Value: LatValue})
	if got, want := results["t_avg"].String(), strings.TrimSpace(value.String()); got != want || len(results) != 1 {
		t.Errorf("--output latency: the file's results %v, stdout %s", results, want)
	}
}

// TestPerftestJSONBidiGbitsAsText: in a bidirectional test with
// --report_gbits, this side's own average decides the file's six
// decimals, as it decides the text's row's (WriteBidiRow), not the
// total's (reviewer F2: the row 0.104622 0.104622, the file 0.10, 0.10).
func TestPerftestJSONBidiGbitsAsText(t *testing.T) {
	// About 0.0523 Gbit/sec each way, 0.1046 both.
	local := stats.Bandwidth{Bytes: 512, Iterations: 300, PeakMBps: 6.2356, AvgMBps: 6.2356, MsgRateMpps: 0.0127715}
	remote := local
	total := stats.Bandwidth{Bytes: 512, Iterations: 300, PeakMBps: 12.4712, AvgMBps: 12.4712, MsgRateMpps: 0.025543}
	if _, avg := local.Gbps(); avg >= extGbps {
		t.Fatalf("local %v Gbit/sec: want under %v", avg, extGbps)
	}
	if _, avg := total.Gbps(); avg < extGbps {
		t.Fatalf("total %v Gbit/sec: want %v or more", avg, extGbps)
	}
	s, l, rem := SizeFromBandwidth(total), SizeFromBandwidth(local), SizeFromBandwidth(remote)
	s.Local, s.Remote = &l, &rem
	r := fixtureRoCE("write_bw", "client", "rxe1")
	r.Bidirectional = true
	r.Results = []SizeResult{s}

	var row bytes.Buffer
	if err := WriteBidiRow(&row, total, local, true); err != nil {
		t.Fatal(err)
	}
	cells := strings.Fields(row.String())[2:]
	results := perftestFileValue(t, r, PerftestJSON{Gbits: true})
	for i, k := range []string{"BW_peak", "BW_average", "MsgRate"} {
		if got := results[k].String(); got != cells[i] {
			t.Errorf("%s %s, the text's row %s:\n%s", k, got, cells[i], row.String())
		}
	}
}

// perftestFileValue returns the "results" object of r's perftest JSON
// file as o asks for it, its numbers as written.
func perftestFileValue(t *testing.T, r Result, o PerftestJSON) map[string]json.Number {
	t.Helper()
	var buf bytes.Buffer
	if err := WritePerftestJSON(&buf, r, o); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results map[string]json.Number `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Results
}

// TestCSVLatDurWindow: the CSV of a latency test of a duration (-D) has
// the text's row's figures, the measuring window's (window_s,
// window_t_avg_us, tps_average, as the JSON's fields), after the fixed
// columns and before --cpu_util's; empty on the side the peer measured,
// whose CSV has the columns too, so that the two sides' concatenate. A
// run of iterations has none. CSVRows writes the same, byte for byte.
func TestCSVLatDurWindow(t *testing.T) {
	d := LatDur{Iterations: 37080, Window: 2 * time.Second, Halves: true}
	client := fixtureRoCE("write_lat", "client", "rxe1")
	client.DurationS = 4
	client.Results = []SizeResult{SizeFromLatencyWindow(2, d, halfNs)}
	client.Results[0].CPU = CPUFrom(stats.CPU{User: time.Millisecond, Wall: time.Second, Messages: 1000, HostUser: 1, HostIdle: 3})
	server := fixtureRoCE("write_lat", "server", "rxe0")
	server.DurationS = 4
	server.Results = []SizeResult{SizeFromLatencyWindow(2, d, stats.Latency{})}

	header := strings.Join(csvHeader, ",") + ",window_s,window_t_avg_us,tps_average"
	for _, tc := range []struct {
		r      Result
		header string
		suffix string // of the size's row
	}{
		{client, header + ",cpu_user_us_per_msg,cpu_sys_us_per_msg,cpu_util_pct,cpu_host_user_pct", ",21.625,2,26.969,18540,1,0,0.1,25"},
		{server, header, ",,,,"},
	} {
		var buf bytes.Buffer
		if err := WriteCSV(&buf, tc.r); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 2 || lines[0] != tc.header || !strings.HasSuffix(lines[1], tc.suffix) {
			t.Errorf("%s: CSV\n%s\nwant the header %s\nand a row ending %s", tc.r.Role, buf.String(), tc.header, tc.suffix)
		}
		var rows bytes.Buffer
		c := NewCSVRows(&rows, tc.r.Test, true, tc.r.Results[0].CPU != nil)
		if err := c.Write(tc.r.Results[0]); err != nil {
			t.Fatal(err)
		}
		if rows.String() != buf.String() {
			t.Errorf("%s: CSVRows\n%s\nWriteCSV\n%s", tc.r.Role, rows.String(), buf.String())
		}
	}

	// The JSON's figures, as the CSV's cells.
	b, err := json.Marshal(client.Results[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"window_s":2,`, `"window_t_avg_us":26.969,`, `"tps_average":18540,`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("JSON %s: want %s", b, f)
		}
	}

	// A run of iterations (-n): no window's columns.
	var buf bytes.Buffer
	if err := WriteCSV(&buf, latResult(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "window") {
		t.Errorf("a -n run's CSV has the window's columns:\n%s", buf.String())
	}
}
