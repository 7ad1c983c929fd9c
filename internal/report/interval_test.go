package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// TestIntervalHasNoPeak: an interval of a --run_infinitely run has no
// peak, and every format says so its own way: the text row's BW peak
// column reads 0.00, as perftest's intervals do, the CSV row's
// bw_peak_mbps cell is empty and the JSON interval has no bw_peak_mbps.
// The text row printed the interval's average as its peak (the
// Bandwidth a run reports for an interval has its peak equal to its
// average), where the CSV and JSON of the same run had none. A size's
// row keeps its peak.
func TestIntervalHasNoPeak(t *testing.T) {
	// As bench reports an interval: no window, so PeakMBps = AvgMBps.
	b := stats.ComputeBandwidth(65536, 1600, 500*time.Millisecond, 0)
	if b.PeakMBps == 0 || b.PeakMBps != b.AvgMBps {
		t.Fatalf("an interval's Bandwidth: peak %v, average %v", b.PeakMBps, b.AvgMBps)
	}
	for _, gbits := range []bool{false, true} {
		var text bytes.Buffer
		if err := WriteIntervalRow(&text, b, gbits); err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(text.String())
		want := "200.00" // MB/sec: 1600 × 64 KiB in 0.5 s
		if gbits {
			want = "1.68"
		}
		if len(f) != 5 || f[0] != "65536" || f[1] != "1600" || f[2] != "0.00" || f[3] != want {
			t.Errorf("gbits %v: the interval's text row %q, want its peak 0.00 and its average %s", gbits, text.String(), want)
		}
	}

	r := Result{Test: "write_bw", RunInfinitely: true, DurationS: 1,
		Intervals: []Interval{IntervalFromBandwidth(time.Second/2, b)},
		Results:   []SizeResult{SizeFromBandwidth(stats.ComputeBandwidth(65536, 1600, 500*time.Millisecond, 100*time.Microsecond))}}
	var c bytes.Buffer
	if err := WriteCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	rows, col := readCSV(t, &c, 3, "a header, the interval and the size")
	if iv := rows[1]; iv[col["bw_peak_mbps"]] != "" || iv[col["bw_avg_mbps"]] != "200" || iv[col["interval_end_s"]] != "0.5" {
		t.Errorf("CSV: the interval's row %q, want bw_peak_mbps empty, bw_avg_mbps 200", iv)
	}
	if size := rows[2]; size[col["bw_peak_mbps"]] != "625" {
		t.Errorf("CSV: the size's row %q, want its peak, 625", size)
	}

	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Intervals []map[string]any `json:"intervals"`
		Results   []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil || len(doc.Intervals) != 1 || len(doc.Results) != 1 {
		t.Fatalf("JSON: %v:\n%s", err, j.String())
	}
	if _, ok := doc.Intervals[0]["bw_peak_mbps"]; ok || doc.Intervals[0]["bw_avg_mbps"] != 200.0 {
		t.Errorf("JSON: the interval %v, want no bw_peak_mbps and bw_avg_mbps 200", doc.Intervals[0])
	}
	if doc.Results[0]["bw_peak_mbps"] != 625.0 {
		t.Errorf("JSON: the size %v, want its peak, 625", doc.Results[0])
	}
}

// readCSV reads a CSV document of want rows, the header's included, and
// returns them with the column of each header name.
func readCSV(t *testing.T, r io.Reader, want int, what string) ([][]string, map[string]int) {
	t.Helper()
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil || len(rows) != want {
		t.Fatalf("CSV: %v, %d rows, want %s", err, len(rows), what)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	return rows, col
}
