package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// TestReceiverHasNoPeak: a size that has an average and no peak (the
// receiving side of a one-way send test, whose Bandwidth bench gives a
// PeakMBps of 0) says so in every format, as an interval of
// --run_infinitely does: its text row reads 0.00 under BW peak, as
// perftest's receiver's does, its CSV bw_peak_mbps cell is empty, in
// WriteCSV and CSVRows alike, and its JSON has no bw_peak_mbps, also in a
// thread's part. The CSV gave 0 and the JSON "bw_peak_mbps": 0, a peak
// below the average that no measurement gives. A size that moved nothing
// keeps its zeros, and a measured size its peak.
func TestReceiverHasNoPeak(t *testing.T) {
	recv := stats.ComputeBandwidth(65536, 1600, 500*time.Millisecond, 0)
	recv.PeakMBps = 0 // as bench reports a one-way test's receiver
	none := stats.ComputeBandwidth(65536, 0, 0, 0)
	sent := stats.ComputeBandwidth(65536, 1600, 500*time.Millisecond, 100*time.Microsecond)

	var text bytes.Buffer
	if err := WriteBWRow(&text, recv, false); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(text.String()); len(f) != 5 || f[2] != "0.00" || f[3] != "200.00" {
		t.Errorf("text row %q, want BW peak 0.00 and the average 200.00", text.String())
	}

	sizes := []SizeResult{SizeFromBandwidth(recv), SizeFromBandwidth(none), SizeFromBandwidth(sent)}
	if !sizes[0].NoPeak() || sizes[1].NoPeak() || sizes[2].NoPeak() {
		t.Errorf("NoPeak: %v, %v, %v; want true, false, false", sizes[0].NoPeak(), sizes[1].NoPeak(), sizes[2].NoPeak())
	}
	r := Result{Test: "send_bw", Role: "server", Results: sizes,
		Threads: 1, ThreadResults: []ThreadResult{{Thread: 0, QPs: 1, Results: sizes[:1]}}}

	var whole, rows bytes.Buffer
	if err := WriteCSV(&whole, r); err != nil {
		t.Fatal(err)
	}
	cr := NewCSVRows(&rows, "send_bw", false, false)
	for _, s := range sizes {
		if err := cr.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if whole.String() != rows.String() {
		t.Errorf("WriteCSV:\n%s\nCSVRows:\n%s", whole.String(), rows.String())
	}
	recs, col := readCSV(t, &whole, 4, "a header and 3 sizes")
	for i, want := range []string{"", "0", "625"} {
		row := recs[i+1]
		if got := row[col["bw_peak_mbps"]]; got != want {
			t.Errorf("CSV size %d: bw_peak_mbps %q, want %q (row %q)", i, got, want, row)
		}
	}
	if avg := recs[1][col["bw_avg_mbps"]]; avg != "200" {
		t.Errorf("CSV: the receiver's bw_avg_mbps %q, want 200", avg)
	}

	doc, _ := jsonResults(t, r, 3, 1)
	for _, s := range []map[string]any{doc.Results[0], doc.Threads[0].Results[0]} {
		if _, ok := s["bw_peak_mbps"]; ok || s["bw_avg_mbps"] != 200.0 || s["iterations"] != 1600.0 {
			t.Errorf("JSON: the receiver's size %v, want no bw_peak_mbps, bw_avg_mbps 200", s)
		}
	}
	if p, ok := doc.Results[1]["bw_peak_mbps"]; !ok || p != 0.0 {
		t.Errorf("JSON: a size of nothing %v, want bw_peak_mbps 0", doc.Results[1])
	}
	if doc.Results[2]["bw_peak_mbps"] != 625.0 {
		t.Errorf("JSON: the sender's size %v, want bw_peak_mbps 625", doc.Results[2])
	}
}

// resultsDoc is WriteJSON's document as jsonResults reads it back: each
// size's object, the whole run's and each thread's.
type resultsDoc struct {
	Results []map[string]any `json:"results"`
	Threads []struct {
		Results []map[string]any `json:"results"`
	} `json:"thread_results"`
}

// jsonResults is r as WriteJSON writes it, and read back, which must
// have sizes sizes and threads threads.
func jsonResults(t *testing.T, r Result, sizes, threads int) (resultsDoc, []byte) {
	t.Helper()
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc resultsDoc
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil || len(doc.Results) != sizes || len(doc.Threads) != threads {
		t.Fatalf("JSON: %v:\n%s", err, j.String())
	}
	return doc, j.Bytes()
}
