package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// windowSamples returns n samples of ns nanoseconds each, which cover
// n*ns: less than a window that also holds gorperf's pauses.
func windowSamples(t *testing.T, n int, ns float64) stats.Latency {
	t.Helper()
	s := make([]float64, n)
	for i := range s {
		s[i] = ns
	}
	l, err := stats.Summarize(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLatWindowTable: the latency table of a run of a duration (-D) has
// perftest's figures (print_report_lat_duration): t_avg the measuring
// window over the rtt_factor and the iterations, tps the iterations over
// the window, so that iterations ÷ tps is the window, whatever the
// samples, which leave out gorperf's pauses, add up to. The figures are
// a review's: read_lat's client ran 37080 iterations in a window of 2 s,
// its samples a mean of 48.592 µs (1.80 s in all), and the row claimed
// about 20580 a second; write_lat's 7911 in 2 s, with 4370.83 a second
// claimed (1.81 s).
func TestLatWindowTable(t *testing.T) {
	read := windowSamples(t, 37080, 48592)
	write := windowSamples(t, 7911, 1.81e9/7911/2) // half round trips
	var buf bytes.Buffer
	WriteLatDurHeader(&buf)
	WriteLatWindowRow(&buf, 2, LatDur{Iterations: 37080, Window: 2 * time.Second}, read)
	WriteLatWindowRow(&buf, 2, LatDur{Iterations: 7911, Window: 2 * time.Second, Halves: true}, write)
	WriteLatWindowRow(&buf, 2, LatDur{Iterations: 37080, Window: 2 * time.Second}, stats.Latency{})
	want := " #bytes        #iterations       t_avg[usec]    tps average\n" +
		" 2             37080            53.94          18540.00\n" +
		" 2             7911            126.41         3955.50\n" +
		" 2       measured by the peer: this side keeps no latency samples\n"
	if buf.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", buf.String(), want)
	}
	for _, line := range strings.Split(buf.String(), "\n")[1:3] {
		f := strings.Fields(line)
		iters, _ := strconv.ParseFloat(f[1], 64)
		tps, _ := strconv.ParseFloat(f[3], 64)
		if w := iters / tps; w < 1.9999 || w > 2.0001 {
			t.Errorf("%q: iterations ÷ tps = %.4f s, want the window, 2 s", line, w)
		}
	}

	// perftest's --output latency prints the same t_avg.
	buf.Reset()
	if err := WriteLatWindowValue(&buf, LatDur{Iterations: 37080, Window: 2 * time.Second}, read); err != nil || buf.String() != "53.937433\n" {
		t.Errorf("--output latency: %q, %v", buf.String(), err)
	}
	buf.Reset()
	if err := WriteLatWindowValue(&buf, LatDur{Iterations: 1, Window: time.Second}, stats.Latency{}); err != nil || buf.Len() != 0 {
		t.Errorf("--output latency of the side the peer measures: %q, %v", buf.String(), err)
	}

	// No window or no iterations: no figure, where perftest's division
	// gives inf or nan.
	for _, d := range []LatDur{{Iterations: 10}, {Window: time.Second}} {
		if avg, tps := d.Figures(); avg != 0 || tps != 0 {
			t.Errorf("%+v: %g, %g; want 0, 0", d, avg, tps)
		}
	}
	for name, write := range map[string]func(w failWriter) error{
		"WriteLatDurHeader": func(w failWriter) error { return WriteLatDurHeader(w) },
		"WriteLatWindowRow": func(w failWriter) error {
			return WriteLatWindowRow(w, 2, LatDur{Iterations: 4, Window: time.Second}, read)
		},
		"WriteLatWindowValue": func(w failWriter) error {
			return WriteLatWindowValue(w, LatDur{Iterations: 4, Window: time.Second}, read)
		},
	} {
		if err := write(failWriter{}); !errors.Is(err, errWrite) {
			t.Errorf("%s to a failing writer = %v, want %v", name, err, errWrite)
		}
	}
}

// TestLatWindowJSON: a latency size of a duration has, in --json, the
// window's figures beside the samples' t_avg_us (window_s,
// window_t_avg_us, tps_average), and perftest's --out_json file has the
// window's t_avg and tps_average, as the text's row; the side the peer
// measures has none.
func TestLatWindowJSON(t *testing.T) {
	read := windowSamples(t, 37080, 48592)
	d := LatDur{Iterations: 37080, Window: 2 * time.Second}
	s := SizeFromLatencyWindow(2, d, read)
	if s.WindowS != 2 || s.WindowTAvgUs != 53.937 || s.TPSAverage != 18540 || s.TAvgUs != 48.592 || s.Iterations != 37080 {
		t.Errorf("size: %+v", s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"window_s":2,`, `"window_t_avg_us":53.937,`, `"tps_average":18540}`, `"t_avg_us":48.592,`} {
		if !bytes.Contains(b, []byte(f)) {
			t.Errorf("JSON without %s: %s", f, b)
		}
	}
	// A window of whole nanoseconds prints as they do: Duration.Seconds
	// gave 1.9978823239999999.
	odd := SizeFromLatencyWindow(2, LatDur{Iterations: 37080, Window: 1997882324}, read)
	if b, _ := json.Marshal(odd); !bytes.Contains(b, []byte(`"window_s":1.997882324,`)) {
		t.Errorf("window of 1997882324 ns: %s", b)
	}
	peer := SizeFromLatencyWindow(2, d, stats.Latency{})
	if b, _ := json.Marshal(peer); bytes.Contains(b, []byte("window")) || bytes.Contains(b, []byte("tps")) {
		t.Errorf("the side the peer measures: %s", b)
	}

	var row bytes.Buffer
	WriteLatWindowRow(&row, 2, d, read)
	f := strings.Fields(row.String())
	r := fixtureRoCE("read_lat", "client", "rxe1")
	r.DurationS, r.Results = 2, []SizeResult{s}
	results := perftestFileResults(t, r)
	if avg, tps := results["t_avg"].String(), results["tps_average"].String(); avg != f[2] || tps != f[3] {
		t.Errorf("--out_json: t_avg %s, tps_average %s; the text's row %q", avg, tps, row.String())
	}
}
