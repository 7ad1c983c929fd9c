//go:build linux && cgo

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestOutJSONFileFailsInDocument: --json's document carries the failure
// to write --out_json's file (a full disk: /dev/full), which is written
// first; it said "error": null, the exit status 1.
func TestOutJSONFileFailsInDocument(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip(err)
	}
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, JSON: true, OutJSON: true, OutJSONFile: "/dev/full"}
	if err := o.openJSONFile(); err != nil {
		t.Fatal(err)
	}
	err := o.finish(f, "client", fakeBW(), nil)
	if err == nil || !strings.Contains(err.Error(), "writing the JSON result to /dev/full") {
		t.Fatalf("finish = %v, want the file's failure", err)
	}
	var r report.Result
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("%v:\n%s", jerr, out)
	}
	if r.Error == nil || r.Error.Message != err.Error() || r.Error.Code != "failed" || len(r.Results) != 2 {
		t.Errorf("the document's error %+v, %d results; want %q and the results", r.Error, len(r.Results), err)
	}
}

// TestOutJSONFileReplacedWhole: --out_json's file is checked before the
// run but keeps what it held until the run's document replaces it whole,
// so that a run that ends before it writes (killed, here one whose file
// is closed unwritten) leaves the last run's file, not an empty one; one
// that writes leaves its document and nothing beside it, in the mode the
// file had. os.Create emptied it at the start, and the file it was
// written to first was named beside it from the start (.NAME.PID-0.tmp),
// left there by a run that was killed.
func TestOutJSONFileReplacedWhole(t *testing.T) {
	t.Run("unnamed", func(t *testing.T) { testOutJSONFileReplacedWhole(t, true) })
	t.Run("no O_TMPFILE", func(t *testing.T) {
		defer func(f int) { unnamedFlag = f }(unnamedFlag)
		unnamedFlag = 0
		testOutJSONFileReplacedWhole(t, false)
	})
	// Without /proc, an unnamed file could not be named at the end (its
	// document was lost): it is named at once.
	t.Run("no /proc", func(t *testing.T) {
		defer func(d string) { procDir = d }(procDir)
		procDir = filepath.Join(t.TempDir(), "nosuch")
		testOutJSONFileReplacedWhole(t, false)
	})
}

func testOutJSONFileReplacedWhole(t *testing.T, unnamed bool) {
	dir := t.TempDir()
	name := filepath.Join(dir, "perftest_out.json")
	const old = `{"old": true}`
	if err := os.WriteFile(name, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	o := testOptions{Test: exchange.WriteBW, OutJSON: true, OutJSONFile: name}
	if err := o.openJSONFile(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != old {
		t.Errorf("once opened, the file holds %q, want the last run's %q", b, old)
	}
	// Until it is written, the document's own file has no name: a run
	// killed now (SIGKILL) leaves nothing beside the file. Without
	// O_TMPFILE, it is named beside it.
	if ents, _ := os.ReadDir(dir); unnamed && len(ents) != 1 || !unnamed && len(ents) != 2 {
		t.Errorf("once opened, files beside it: %v", ents)
	}
	o.closeJSONFile() // the run ended before its document
	if b, _ := os.ReadFile(name); string(b) != old {
		t.Errorf("after a run without a document, the file holds %q, want %q", b, old)
	}
	f, _, _ := newTestFactory(nil, nil)
	o = testOptions{Test: exchange.WriteBW, OutJSON: true, OutJSONFile: name}
	if err := o.openJSONFile(); err != nil {
		t.Fatal(err)
	}
	if err := o.finish(f, "client", fakeBW(), nil); err != nil {
		t.Fatal(err)
	}
	if r := readPerftestFile(t, name).Gorperf; r.Test != "write_bw" || len(r.Results) != 2 {
		t.Errorf("the file's document %+v", r)
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the file's mode: %v, %v; want 0640, as it was", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left beside it: %v", ents)
	}
	// A directory that is not there fails before the run, naming the
	// file asked for.
	o = testOptions{Test: exchange.WriteBW, OutJSON: true, OutJSONFile: filepath.Join(dir, "nosuch", "x.json")}
	if err := o.openJSONFile(); err == nil || err.Error() != "--out_json_file: open "+o.OutJSONFile+": no such file or directory" {
		t.Errorf("openJSONFile in no directory = %v", err)
	}
}
