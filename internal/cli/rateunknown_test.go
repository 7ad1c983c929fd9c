//go:build linux && cgo

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/stats"
)

// TestTablesRateUnknown: a bandwidth table with a size whose receiver
// timed none of its messages (every one had come by its first poll:
// bench gives it no time, so no rates) shows a dash for its rates, not
// 0.00, and a line after the rows, before the rule, that says why and
// to raise -n or use -D; a table whose rates are all known has no such
// line.
func TestTablesRateUnknown(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, Iterations: 20}
	untimed := bench.SizeResult{Size: 1024, BW: stats.ComputeBandwidth(1024, 20, 0, 0)}
	timed := bench.SizeResult{Size: 2048, BW: stats.ComputeBandwidth(2048, 20, time.Millisecond, 0)}
	var buf bytes.Buffer
	writeTables(&buf, &bench.Result{Spec: spec, Sizes: []bench.SizeResult{untimed, timed}}, &testOptions{}, 0)
	lines := strings.Split(buf.String(), "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[0], " #bytes") ||
		strings.Join(strings.Fields(lines[1]), " ") != "1024 20 0.00 - -" ||
		!strings.HasPrefix(lines[3], " -: ") || !strings.Contains(lines[3], "raise -n or use -D") ||
		!strings.HasPrefix(lines[4], "-----") {
		t.Errorf("table:\n%s\nwant the untimed row's rates as -, the timed row, the note, then the rule", buf.String())
	}
	buf.Reset()
	writeTables(&buf, &bench.Result{Spec: spec, Sizes: []bench.SizeResult{timed}}, &testOptions{}, 0)
	if strings.Contains(buf.String(), "raise -n") {
		t.Errorf("table of known rates has the note:\n%s", buf.String())
	}
}
