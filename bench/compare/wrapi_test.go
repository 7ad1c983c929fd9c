//go:build linux

package main

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestWRAPIRuns: where perftest's header says "ibv_wr* API : OFF" (it
// posts with ibv_post_send, as on rxe), the row's gorperf runs get
// --use_old_post_send as before, and with -wr-api, the default, gorperf
// also runs -reps times without it, on its own default post path: the
// JSON's row has gorperf_wr_api (each run, the medians) and its ratios to
// perftest beside the old keys, unchanged, and the table a "wr* ratio"
// column. -wr-api=false runs as before: no such key, no column.
func TestWRAPIRuns(t *testing.T) {
	dir := fakeTools(t, "ok")
	r := runCompare(t, dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	row := r.doc["rows"].([]any)[0].(map[string]any)
	g := row["gorperf"].(map[string]any)
	w, ok := row["gorperf_wr_api"].(map[string]any)
	if !ok {
		t.Fatalf("no gorperf_wr_api in the row: %v", row)
	}
	// The fake reports 20% more on the ibv_wr_* API: each of those runs
	// went without --use_old_post_send, and each of gorperf's with it.
	if len(w["runs"].([]any)) != 3 || w["failed_runs"] != 0.0 || len(g["runs"].([]any)) != 3 {
		t.Errorf("gorperf_wr_api: %d runs, %v failed; gorperf: %d runs", len(w["runs"].([]any)), w["failed_runs"], len(g["runs"].([]any)))
	}
	if d := w["bw_avg_mbps"].(float64)/g["bw_avg_mbps"].(float64) - 1.2; math.Abs(d) > 1e-9 {
		t.Errorf("the ibv_wr_* API's bandwidth %v, gorperf's with --use_old_post_send %v: want 1.2 times it", w["bw_avg_mbps"], g["bw_avg_mbps"])
	}
	if d := row["wr_api_bw_ratio"].(float64)/row["bw_ratio"].(float64) - 1.2; math.Abs(d) > 1e-9 {
		t.Errorf("wr_api_bw_ratio %v, bw_ratio %v: want 1.2 times it", row["wr_api_bw_ratio"], row["bw_ratio"])
	}
	if _, ok := row["wr_api_msg_rate_ratio"]; !ok || !strings.Contains(row["gorperf_params"].(string), "--use_old_post_send") {
		t.Errorf("no wr_api_msg_rate_ratio, or gorperf_params without --use_old_post_send: %v", row)
	}
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "wr* ratio") || !strings.Contains(lines[1], fmtRatio(row["wr_api_bw_ratio"].(float64))) {
		t.Errorf("the table has no wr* ratio column with %s:\n%s", fmtRatio(row["wr_api_bw_ratio"].(float64)), r.stdout)
	}

	r = runCompare(t, dir, "-wr-api=false")
	row = r.doc["rows"].([]any)[0].(map[string]any)
	for k := range row {
		if strings.Contains(k, "wr_api") {
			t.Errorf("-wr-api=false: the row has %s", k)
		}
	}
	if r.code != 0 || strings.Contains(r.stdout, "wr*") {
		t.Errorf("-wr-api=false: exit %d, the table:\n%s", r.code, r.stdout)
	}
}

func fmtRatio(v float64) string { return some(v).format("%.3f") }

// TestWRAPIRunsFailed: where every run on the ibv_wr_* API fails, the
// row keeps its ratios of gorperf with --use_old_post_send, the table
// says ERROR under wr* ratio and gives the error, the JSON has it, and
// compare exits 1, as for any tool that failed every run of a row.
func TestWRAPIRunsFailed(t *testing.T) {
	r := runCompare(t, fakeTools(t, "wrfail"))
	row := r.doc["rows"].([]any)[0].(map[string]any)
	w := row["gorperf_wr_api"].(map[string]any)
	if _, ok := row["bw_ratio"].(float64); !ok || w["error"] == nil || w["failed_runs"] != 3.0 || row["wr_api_bw_ratio"] != nil {
		t.Errorf("bw_ratio %v, gorperf_wr_api's error %v, %v failed runs, wr_api_bw_ratio %v", row["bw_ratio"], w["error"], w["failed_runs"], row["wr_api_bw_ratio"])
	}
	if r.code != 1 || !strings.Contains(r.stdout, "ERROR under wr* ratio") || !strings.Contains(r.stdout, "ibv_wr_complete: invalid argument") {
		t.Errorf("exit %d, want 1, and the table with the error:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r.doc["failed_runs"] != 3.0 {
		t.Errorf("the document's failed_runs: %v, want the 3 runs on the ibv_wr_* API", r.doc["failed_runs"])
	}
}

// TestWRAPIArgs: the flags of gorperf's runs on the ibv_wr_* API are the
// row's without --use_old_post_send, and there are none where gorperf
// already posts as perftest does through the ibv_wr_* API.
func TestWRAPIArgs(t *testing.T) {
	args := []string{"-l", "16", "--use_old_post_send", "-t", "128", "--threads", "2"}
	got, ok := wrAPIArgs(args)
	if !ok || !slices.Equal(got, []string{"-l", "16", "-t", "128", "--threads", "2"}) || args[2] != "--use_old_post_send" {
		t.Errorf("wrAPIArgs(%q) = %q, %v", args, got, ok)
	}
	if _, ok := wrAPIArgs([]string{"-t", "128"}); ok {
		t.Error("runs on the ibv_wr_* API where perftest used it too")
	}
}

// TestWRAPIRatioGorperfFailed: where gorperf with --use_old_post_send
// failed every run of a row but its runs on the ibv_wr_* API did not, the
// row's ERROR line still has its wr* ratio under that heading, as the JSON
// has it, with the failed ones among those runs marked and listed; where
// they failed every run too, ERROR is under it and their error is listed
// under the table, as in a row without an ERROR.
func TestWRAPIRatioGorperfFailed(t *testing.T) {
	ok := row{Test: "write_bw", Bytes: 2, QPs: 1, BWRatio: some(0.9), WRAPIBWRatio: some(1.1),
		Gorperf: stat{measure: measure{BWAvgMBps: 9}}, Perftest: stat{measure: measure{BWAvgMBps: 10}},
		GorperfWRAPI: &stat{measure: measure{BWAvgMBps: 11}}}
	bad := stat{measure: measure{Err: "every run failed: ibv_post_send: x"}, FailedRuns: 2,
		Runs: []measure{{Err: "ibv_post_send: x"}, {Err: "ibv_post_send: x"}}}
	wrOK := row{Test: "write_bw", Bytes: 64, QPs: 1, WRAPIBWRatio: some(1.2), Gorperf: bad,
		Perftest: stat{measure: measure{BWAvgMBps: 10}},
		GorperfWRAPI: &stat{measure: measure{BWAvgMBps: 12}, FailedRuns: 1,
			Runs: []measure{{BWAvgMBps: 12}, {Err: "ibv_wr_complete: y"}}}}
	wrBad := row{Test: "write_bw", Bytes: 4096, QPs: 1, Gorperf: bad,
		Perftest: stat{measure: measure{BWAvgMBps: 10}},
		GorperfWRAPI: &stat{measure: measure{Err: "every run failed: ibv_wr_complete: z"}, FailedRuns: 2,
			Runs: []measure{{Err: "ibv_wr_complete: z"}, {Err: "ibv_wr_complete: z"}}}}
	var b strings.Builder
	printTable(&b, []row{ok, wrOK, wrBad})
	out := b.String()
	lines := strings.Split(out, "\n")
	// tabwriter right-aligns: the wr* cell ends where its heading does,
	// counted in characters, and is the line's last field.
	end := len([]rune(strings.TrimRight(lines[0], " ")))
	for i, want := range []string{"1.100", "1.200 [1/2]", "ERROR"} {
		l := strings.TrimRight(lines[i+1], " ")
		if !strings.HasSuffix(l, want) || len([]rune(l)) != end {
			t.Errorf("line %d ends %q at %d, want %q at %d (under wr* ratio):\n%s", i+1, l, len([]rune(l)), want, end, out)
		}
	}
	for _, want := range []string{
		"ERROR: gorperf: every run failed: ibv_post_send: x",
		"  write_bw 64 B, 1 QPs, gorperf on the ibv_wr_* API run 2 of 2: ibv_wr_complete: y",
		"ERROR under wr* ratio: every run of gorperf on the ibv_wr_* API failed:\n  write_bw 4096 B, 1 QPs: every run failed: ibv_wr_complete: z",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
}
