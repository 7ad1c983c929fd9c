//go:build linux && cgo

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestErrorAfterResultsSaysPartial: an error that ends a run after some
// sizes were measured, the peer killed (kill -9) say, says after its own
// words that the results are what was measured until then, as a run the
// peer's Ctrl-C cut short does, in text, CSV and the JSON document's
// error; before, a killed peer's partial row looked like a whole size's.
// The error keeps its code and its exit status; an error before any
// figure says nothing of results.
func TestErrorAfterResultsSaysPartial(t *testing.T) {
	const note = "the results above are what was measured until then"
	for _, format := range []string{"text", "json", "csv"} {
		f, out, _ := newTestFactory(nil, nil)
		o := testOptions{Test: exchange.WriteBW, JSON: format == "json", CSV: format == "csv"}
		err := o.finish(f, "client", fakeBW(), exchange.ErrPeerClosed)
		want := exchange.ErrPeerClosed.Error() + "; " + note
		if format == "json" {
			want = strings.Replace(want, "the results above are", "the results are", 1)
		}
		if fmt.Sprint(err) != want || !errors.Is(err, exchange.ErrPeerClosed) || exitCode(err) != exitError || errorCode(err) != "peer" {
			t.Errorf("%s: finish = %v (exit %d, code %q), want %q, exit 1, code peer", format, err, exitCode(err), errorCode(err), want)
		}
		if format != "json" {
			continue
		}
		var r report.Result
		if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil || len(r.Results) != 2 || r.Error == nil || r.Error.Code != "peer" || r.Error.Message != want {
			t.Errorf("JSON (%v) %+v, want the results and the error %q with code peer:\n%s", jerr, r, want, out)
		}
	}
	f, _, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW}
	res := fakeBW()
	res.Sizes = []bench.SizeResult{}
	if err := o.finish(f, "client", res, exchange.ErrPeerClosed); strings.Contains(fmt.Sprint(err), "results") {
		t.Errorf("no figures: finish = %v, want the error alone", err)
	}
}

// TestOutJSONFileSaysResultsAre: --out_json's file of a run reported in
// text holds the results, so its error's message says "the results are",
// not "the results above are" as the text's error does.
func TestOutJSONFileSaysResultsAre(t *testing.T) {
	f, _, _ := newTestFactory(nil, nil)
	fh, err := os.Create(filepath.Join(t.TempDir(), "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions{Test: exchange.WriteBW, jsonFile: fh}
	err = o.finish(f, "client", fakeBW(), exchange.ErrPeerClosed)
	if want := exchange.ErrPeerClosed.Error() + "; the results above are what was measured until then"; fmt.Sprint(err) != want {
		t.Errorf("finish = %v, want %q", err, want)
	}
	b, rerr := os.ReadFile(fh.Name())
	var doc struct {
		Gorperf report.Result `json:"gorperf"`
	}
	if jerr := json.Unmarshal(b, &doc); rerr != nil || jerr != nil || doc.Gorperf.Error == nil {
		t.Fatalf("%v %v:\n%s", rerr, jerr, b)
	}
	if got, want := doc.Gorperf.Error.Message, exchange.ErrPeerClosed.Error()+"; the results are what was measured until then"; got != want || doc.Gorperf.Error.Code != "peer" {
		t.Errorf("the file's error: %q (code %q), want %q, code peer", got, doc.Gorperf.Error.Code, want)
	}
}
