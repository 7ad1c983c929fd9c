//go:build linux && cgo

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// fewSamples is a write_lat client's result of 6 samples, unsorted, in
// ns, of which -H lists the 4 smallest.
func fewSamples() *bench.Result {
	samples := []float64{2345.6789, 2100, 9999.5, 2200.25, 2050.125, 3000}
	l, _ := stats.Summarize(samples)
	return &bench.Result{Spec: exchange.TestSpec{Test: exchange.WriteLat}, Role: "client", Header: fakeHeader("RDMA_Write Latency Test"),
		Sizes: []bench.SizeResult{{Size: 2, Lat: l, Samples: samples, IsLatency: true, Iterations: 7}}}
}

// TestSampleListsLayout: with -U and -H the text is in perftest's order
// (print_report_lat): the column line, the lists, the rule and the
// column line again, then the row, which is so the line after the last
// column line; gorperf's percentile line follows the closing rule. The
// samples are printed as C's %g prints them (six significant digits).
func TestSampleListsLayout(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteLat, Unsorted: true, Sorted: true}
	if err := o.finish(f, "client", fewSamples(), nil); err != nil {
		t.Fatal(err)
	}
	var columns strings.Builder
	report.WriteLatHeader(&columns)
	var rule strings.Builder
	report.WriteRule(&rule)
	col, ru := strings.TrimSuffix(columns.String(), "\n"), strings.TrimSuffix(rule.String(), "\n")
	want := []string{col,
		"#, usec", "1, 2.34568", "2, 2.1", "3, 9.9995", "4, 2.20025", "5, 2.05012", "6, 3",
		"#, usec", "1, 2.05012", "2, 2.1", "3, 2.20025", "4, 2.34568",
		ru, col, "ROW", ru, "PERCENTILES"}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i, w := range want {
		switch w {
		case "ROW":
			if f := strings.Fields(got[i]); len(f) != 9 || f[0] != "2" || f[1] != "7" {
				t.Errorf("line %d %q, want the row of 2 bytes", i+1, got[i])
			}
		case "PERCENTILES":
			if !strings.HasPrefix(got[i], " p50: ") {
				t.Errorf("line %d %q, want the percentiles", i+1, got[i])
			}
		default:
			if got[i] != w {
				t.Errorf("line %d %q, want %q", i+1, got[i], w)
			}
		}
	}
}

// TestSampleListsWithOutput: -U with --output=latency lists the samples
// before the figure, as perftest's (where they were dropped); -H too.
func TestSampleListsWithOutput(t *testing.T) {
	for _, tc := range []struct {
		o    testOptions
		want string
	}{
		{testOptions{Test: exchange.WriteLat, Unsorted: true},
			"#, usec\n1, 2.34568\n2, 2.1\n3, 9.9995\n4, 2.20025\n5, 2.05012\n6, 3\n"},
		{testOptions{Test: exchange.WriteLat, Sorted: true},
			"#, usec\n1, 2.05012\n2, 2.1\n3, 2.20025\n4, 2.34568\n"},
		{testOptions{Test: exchange.WriteLat}, ""},
	} {
		f, out, _ := newTestFactory(nil, nil)
		o := tc.o
		o.value = report.LatValue
		res := fewSamples()
		if err := o.finish(f, "client", res, nil); err != nil {
			t.Fatal(err)
		}
		var value strings.Builder
		report.WriteLatValue(&value, res.Sizes[0].Lat)
		if want := tc.want + value.String(); out.String() != want {
			t.Errorf("-U %v -H %v --output=latency:\n%s\nwant\n%s", o.Unsorted, o.Sorted, out, want)
		}
	}
}

// TestCPUUtilColumn: --cpu_util's CPU_Util[%] is the sixth column of a
// bandwidth row, the host's user share as perftest's, under the column
// line's CPU_Util[%]; the table of this process's time after the results
// keeps its own figures (process[%]); perftest's JSON file has the
// host's share as CPU_util and gorperf's JSON both.
func TestCPUUtilColumn(t *testing.T) {
	res := fakeBW()
	for i := range res.Sizes {
		// The process kept a CPU busy (100%); the host was 1.96% in user mode.
		res.Sizes[i].CPU = &stats.CPU{User: time.Second, Wall: time.Second, Messages: 5000, HostUser: 196, HostIdle: 9804}
	}
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, CPUUtil: true}
	if err := o.finish(f, "client", res, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasSuffix(lines[0], "MsgRate[Mpps]    CPU_Util[%]") {
		t.Errorf("column line %q", lines[0])
	}
	for _, row := range lines[1:3] {
		if f := strings.Fields(row); len(f) != 6 || f[5] != "1.96" {
			t.Errorf("row %q, want the host's 1.96 sixth", row)
		}
	}
	if !strings.Contains(out.String(), "process[%]") || !strings.Contains(out.String(), "100.00\n") {
		t.Errorf("the process's table:\n%s", out)
	}

	r := jsonResult("client", res, nil)
	var file strings.Builder
	if err := report.WritePerftestJSON(&file, r, report.PerftestJSON{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(file.String(), `"CPU_util": 1.96`) || !strings.Contains(file.String(), `"host_user_pct": 1.96`) ||
		!strings.Contains(file.String(), `"util_pct": 100`) {
		t.Errorf("perftest's JSON:\n%s", file.String())
	}
}
