package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// TestRateUnknown: a size whose messages came but were not timed (a
// receiver that saw them all at once: bench gives it an Elapsed of 0)
// shows its rates as unknown in every format, not as rates of zero: its
// text row and its thread's have a dash (--cpu_util's column still
// last), and a note after the rows says why and to raise -n or use -D;
// its CSV cells are empty and its JSON, also a thread's part, has
// no bw_* or msg_rate_mpps; a pass mark is missed, saying so. The row
// read 0.00, the CSV 0 and the JSON 0, a rate measured as zero. A size
// that moved nothing keeps its zeros, and a timed size its figures.
func TestRateUnknown(t *testing.T) {
	untimed := stats.ComputeBandwidth(1024, 20, 0, 0)
	none := stats.ComputeBandwidth(1024, 0, 0, 0)
	timed := stats.ComputeBandwidth(1024, 20, time.Millisecond, 0)
	timed.PeakMBps = 0 // a one-way test's receiver
	if !untimed.RateUnknown() || none.RateUnknown() || timed.RateUnknown() {
		t.Fatalf("stats RateUnknown: %v, %v, %v; want true, false, false", untimed.RateUnknown(), none.RateUnknown(), timed.RateUnknown())
	}

	var text bytes.Buffer
	for _, b := range []stats.Bandwidth{untimed, timed} {
		if err := WriteBWRow(&text, b, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteRateUnknownNote(&text, []stats.Bandwidth{timed, untimed, untimed}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")
	if f := strings.Fields(lines[0]); len(lines) != 3 || len(f) != 5 || f[1] != "20" || f[2] != "0.00" || f[3] != "-" || f[4] != "-" {
		t.Fatalf("text rows and note:\n%s\nwant 20 iterations, - for the average and the rate, then the timed row, then one note", text.String())
	}
	if f := strings.Fields(lines[1]); len(f) != 5 || f[3] != "19.53" {
		t.Errorf("timed row %q, want its average, 19.53", lines[1])
	}
	if !strings.HasPrefix(lines[2], " -: ") || !strings.Contains(lines[2], "raise -n or use -D") {
		t.Errorf("note %q, want one that says to raise -n or use -D", lines[2])
	}
	var quiet bytes.Buffer
	if WriteRateUnknownNote(&quiet, []stats.Bandwidth{timed, none}); quiet.Len() != 0 {
		t.Errorf("note where every rate is known: %q, want none", quiet.String())
	}
	var cpu bytes.Buffer
	WriteCPURow(&cpu, func(w io.Writer) error { return WriteBWRow(w, untimed, false) }, stats.CPU{Wall: time.Second, HostUser: 196, HostIdle: 9804})
	if f := strings.Fields(cpu.String()); len(f) != 6 || f[5] != "1.96" {
		t.Errorf("row with --cpu_util's column %q, want the host's 1.96 sixth", cpu.String())
	}

	sizes := []SizeResult{SizeFromBandwidth(untimed), SizeFromBandwidth(none), SizeFromBandwidth(timed)}
	if !sizes[0].RateUnknown() || sizes[1].RateUnknown() || sizes[2].RateUnknown() {
		t.Errorf("RateUnknown: %v, %v, %v; want true, false, false", sizes[0].RateUnknown(), sizes[1].RateUnknown(), sizes[2].RateUnknown())
	}
	zero := 0
	r := Result{Test: "send_bw", Role: "server", Results: sizes[:1], Threads: 2, ThreadResults: []ThreadResult{
		{Thread: 0, QPs: 1, CPU: &zero, Results: sizes[:1]}, {Thread: 1, QPs: 1, Results: sizes[2:]}}}

	var th bytes.Buffer
	if err := WriteThreads(&th, r.ThreadResults, false); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(th.String(), "\n")
	if len(rows) < 6 || strings.Join(strings.Fields(rows[2]), " ") != "0 0 1 1024 - -" ||
		!strings.HasPrefix(strings.Fields(rows[3])[4], "19.53") || !strings.Contains(rows[4], "raise -n or use -D") {
		t.Errorf("threads' table, want thread 0's rates as -, thread 1's 19.53, then the note:\n%s", th.String())
	}

	var csv bytes.Buffer
	cr := NewCSVRows(&csv, "send_bw", false, false)
	for _, s := range sizes {
		if err := cr.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	recs, col := readCSV(t, &csv, 4, "a header and 3 sizes")
	for i, want := range []string{"", "0", "19.53125"} {
		if got := recs[i+1][col["bw_avg_mbps"]]; got != want {
			t.Errorf("CSV size %d: bw_avg_mbps %q, want %q (row %q)", i, got, want, recs[i+1])
		}
	}
	for _, c := range []string{"bw_peak_mbps", "bw_avg_gbps", "msg_rate_mpps"} {
		if got := recs[1][col[c]]; got != "" {
			t.Errorf("CSV: the untimed size's %s %q, want empty", c, got)
		}
	}

	doc, raw := jsonResults(t, r, 1, 2)
	for _, s := range []map[string]any{doc.Results[0], doc.Threads[0].Results[0]} {
		for _, k := range []string{"bw_peak_mbps", "bw_avg_mbps", "bw_avg_gbps", "msg_rate_mpps"} {
			if v, ok := s[k]; ok {
				t.Errorf("JSON: %s %v where the rate is unknown, want none: %v", k, v, s)
			}
		}
		if s["iterations"] != 20.0 {
			t.Errorf("JSON: iterations %v, want 20", s["iterations"])
		}
	}
	if _, ok := doc.Threads[1].Results[0]["bw_avg_mbps"]; !ok {
		t.Errorf("JSON: the timed thread's size has no bw_avg_mbps: %v", doc.Threads[1].Results[0])
	}
	var back Result
	if err := json.Unmarshal(raw, &back); err != nil || !back.Results[0].RateUnknown() {
		t.Errorf("JSON read back: %v, RateUnknown false; want true", err)
	}

	err := Limits{BW: 1}.Check(sizes[:1])
	if err == nil || !strings.Contains(err.Error(), "rates unknown") {
		t.Errorf("-w 1 on an untimed size: %v, want a miss that says the rates are unknown", err)
	}
}
