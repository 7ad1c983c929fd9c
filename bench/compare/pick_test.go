//go:build linux

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestPickPorts picks from a real report (`gorperf devices --json` in the
// rxe VM: rxe0 and rxe1, each with a link-local and an IPv4 RoCE v2 GID)
// and from edits of it.
func TestPickPorts(t *testing.T) {
	report, err := os.ReadFile("testdata/devices-rxe.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pickPorts(report)
	if err != nil {
		t.Fatal(err)
	}
	want := pick{serverDev: "rxe0", clientDev: "rxe1", serverGID: 1, clientGID: 1, addr: "198.18.0.1"}
	if p.why == "" {
		t.Error("no reason given")
	}
	p.why = ""
	if p != want {
		t.Errorf("picked %+v, want %+v", p, want)
	}

	// rxe1's port down: both sides on rxe0, and rxe1 named as passed over.
	i := bytes.LastIndex(report, []byte(`"state": "ACTIVE"`))
	down := append(append(append([]byte{}, report[:i]...), `"state": "DOWN"`...), report[i+len(`"state": "ACTIVE"`):]...)
	p, err = pickPorts(down)
	if err != nil {
		t.Fatal(err)
	}
	if p.serverDev != "rxe0" || p.clientDev != "rxe0" || !strings.Contains(p.why, "rxe1: port 1 is DOWN") {
		t.Errorf("with rxe1 down: %+v, want rxe0 for both and rxe1 passed over", p)
	}

	// No port usable: an error that says why of each device.
	none := bytes.ReplaceAll(report, []byte(`"state": "ACTIVE"`), []byte(`"state": "DOWN"`))
	if _, err := pickPorts(none); err == nil || !strings.Contains(err.Error(), "rxe0: port 1 is DOWN") || !strings.Contains(err.Error(), "rxe1: port 1 is DOWN") {
		t.Errorf("with both down: %v, want an error naming both", err)
	}

	// A report of another schema is refused rather than misread.
	other := bytes.Replace(report, []byte(`"schema_version": 1`), []byte(`"schema_version": 2`), 1)
	if _, err := pickPorts(other); err == nil {
		t.Error("schema_version 2 accepted")
	}
}
