//go:build linux && cgo

package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReceiverNoPeakOnDevice: the receiving side of a one-way send test
// times no windows, and has no peak in any format, as an interval of
// --run_infinitely: a send-bw server of two threads prints 0.00 under BW
// peak, as perftest's does, and its JSON (--out_json's gorperf document)
// has no bw_peak_mbps, in the sum or a thread's part (perftest's BW_peak
// there is 0.00, as in perftest's file), while its client, the
// sender, has its peak; loopback write-bw --write_with_imm --reversed,
// whose client receives, leaves the CSV's bw_peak_mbps empty. The
// receiver gave its average as its peak in all three.
func TestReceiverNoPeakOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 120*time.Second)
	file := filepath.Join(t.TempDir(), "server.json")
	r, srvOut := serverAndJSONClient(t, ctx, port, []string{"send-bw", "-d", srvDev, "--out_json_file", file},
		[]string{"send-bw", "-d", cliDev, "-s", "4096", "-n", "2000", "--threads", "2", addr})
	if s := r.Results[0]; s.BWAvgMBps <= 0 || s.BWPeakMBps < s.BWAvgMBps {
		t.Errorf("the client, the sender: peak %v, average %v; want a peak, at least the average", s.BWPeakMBps, s.BWAvgMBps)
	}

	var row []string // the server's row of the size, in its text
	for _, line := range strings.Split(srvOut, "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[0] == "4096" {
			row = f
		}
	}
	if len(row) != 5 {
		t.Fatalf("no row of 4096 bytes in the server's text:\n%s", srvOut)
	}
	if avg, err := strconv.ParseFloat(row[3], 64); row[2] != "0.00" || err != nil || avg <= 0 {
		t.Errorf("the server's row %q, want BW peak 0.00 and an average:\n%s", row, srvOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pf struct { // perftest's, with gorperf's document in it
		Results map[string]any `json:"results"`
		Gorperf struct {
			Role          string           `json:"role"`
			Results       []map[string]any `json:"results"`
			ThreadResults []struct {
				Results []map[string]any `json:"results"`
			} `json:"thread_results"`
		} `json:"gorperf"`
	}
	doc := &pf.Gorperf
	if err := json.Unmarshal(b, &pf); err != nil || doc.Role != "server" || len(doc.Results) != 1 || len(doc.ThreadResults) != 2 {
		t.Fatalf("the server's JSON: %v:\n%s", err, b)
	}
	if peak, avg := pf.Results["BW_peak"], pf.Results["BW_average"]; peak != 0.0 || avg == nil || avg == 0.0 {
		t.Errorf("the server's perftest results: BW_peak %v, BW_average %v; want perftest's 0.00 and an average", peak, avg)
	}
	sizes := []map[string]any{doc.Results[0], doc.ThreadResults[0].Results[0], doc.ThreadResults[1].Results[0]}
	for i, s := range sizes {
		if avg, _ := s["bw_avg_mbps"].(float64); avg <= 0 {
			t.Errorf("the server's JSON, size %d (0 the sum, then the threads'): no average: %v", i, s)
		}
		if p, ok := s["bw_peak_mbps"]; ok {
			t.Errorf("the server's JSON, size %d (0 the sum, then the threads'): bw_peak_mbps %v, want none", i, p)
		}
	}

	out, err := gorperf(ctx, "loopback", "write-bw", "--write_with_imm", "--reversed", "--csv", "-s", "4096", "-n", "1000", "-d", cliDev).Output()
	if err != nil {
		t.Fatalf("loopback: %v\n%s", err, out)
	}
	recs, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("loopback CSV: %v:\n%s", err, out)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	if peak, avg := recs[1][col["bw_peak_mbps"]], recs[1][col["bw_avg_mbps"]]; peak != "" || avg == "" || avg == "0" {
		t.Errorf("loopback --reversed's CSV, the client receiving: bw_peak_mbps %q, bw_avg_mbps %q; want no peak and an average:\n%s", peak, avg, out)
	}
}
