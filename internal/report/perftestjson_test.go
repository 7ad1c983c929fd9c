package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/internal/stats"
)

// perftest45Keys reads a file that perftest 4.5's --out_json wrote
// (testdata/perftest-4.5, captured from ib_*_bw and ib_*_lat on rxe),
// which is no JSON: keys unquoted, trailing commas. It returns the keys
// of its test_info and its results, in order, and the test's title.
func perftest45Keys(t *testing.T, name string) (info, results []string, title string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "perftest-4.5", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in *[]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "test_info: {":
			in = &info
		case line == "results: {":
			in = &results
		case strings.HasPrefix(line, "}"):
			in = nil
		case in != nil:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("%s: %q", name, line)
			}
			k = strings.TrimSpace(k) // 4.5's "TX_depth : 100"
			if k == "test" {
				title = strings.TrimSuffix(strings.TrimSpace(v), ",")
			}
			*in = append(*in, k)
		}
	}
	if err := sc.Err(); err != nil || len(info) == 0 || len(results) == 0 {
		t.Fatalf("%s: %v, test_info %q, results %q", name, err, info, results)
	}
	return info, results, title
}

// objectKeys returns the keys of the object under key in the JSON
// document b, in order.
func objectKeys(t *testing.T, b []byte, key string) []string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(top[key]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: %v %v, want an object", key, tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// upstreamInfo is what perftest since 24.01 adds to 4.5's test_info
// keys in a run on host memory: Use_ROCm_memory (4.5 wrote it only in a
// build with ROCm) and Use_MUSA_memory, before Data_ex_method.
func upstreamInfo(keys45 []string) []string {
	i := slices.Index(keys45, "Data_ex_method")
	return slices.Insert(slices.Clone(keys45), i, "Use_ROCm_memory", "Use_MUSA_memory")
}

func ptr[T any](v T) *T { return &v }

// fixtureRoCE is a Result of one side of a test over rxe, as the header
// of perftest 4.5's captured files gives it.
func fixtureRoCE(test, role, dev string) Result {
	r := Result{Version: "test", Test: test, Role: role, Device: dev, Port: 1, GIDIndex: 1, Connection: "RC", QPs: 1,
		MTU: 1024, Env: &Env{Netdev: "rxeveth0", ActiveMTU: 1024}}
	if !strings.HasPrefix(test, "read") && !strings.HasPrefix(test, "atomic") {
		r.MaxInline = ptr(0)
	} else {
		r.OutstandingReads = 128
	}
	return r
}

var (
	bw4096  = SizeResult{Bytes: 4096, Iterations: 100, BWPeakMBps: 28.391, BWAvgMBps: 16.3348, BWAvgGbps: 0.137, MsgRateMpps: 0.0041816}
	lat64   = SizeResult{Bytes: 64, Iterations: 100, TMinUs: 19.881, TMaxUs: 197.204, TTypicalUs: 26.2149, TAvgUs: 29.26, TStdevUs: 9.9, Percentile99Us: 197.2, Percentile999Us: 197.2, P50Us: 26, P90Us: 30, P99Us: 197, P999Us: 197, P9999Us: 197, MaxUs: 254}
	peerLat = SizeResult{Bytes: 64, Iterations: 100, MeasuredByPeer: true}
)

// TestPerftestJSONKeys: WritePerftestJSON writes valid JSON with the
// keys, in the order, of perftest's --out_json file for the same test and
// side, as perftest 4.5 wrote them in the VM (and perftest since 24.01
// with two keys more), and the same test title: bandwidth, latency, a
// sweep (-a: the last size), bidirectional, the receiving side of a send
// test, and a server of a latency test.
func TestPerftestJSONKeys(t *testing.T) {
	writeBW := func(role, dev string) Result {
		r := fixtureRoCE("write_bw", role, dev)
		r.CQModeration = 100
		if role == "client" {
			r.TXDepth = 100
		}
		r.Results = []SizeResult{bw4096}
		return r
	}
	gbit := writeBW("client", "rxe1") // under 0.1 Gbit/sec: six decimals
	gbit.Results = []SizeResult{{Bytes: 4096, Iterations: 100, BWPeakMBps: 10, BWAvgMBps: 5.96, BWAvgGbps: 0.05, MsgRateMpps: 0.0015}}
	writeLat := func(role, dev string) Result {
		r := fixtureRoCE("write_lat", role, dev)
		if role == "client" {
			r.TXDepth = 1
		}
		r.Results = []SizeResult{lat64}
		return r
	}
	readLat := fixtureRoCE("read_lat", "client", "rxe1")
	readLat.TXDepth, readLat.Results = 1, []SizeResult{lat64}
	sendLatSrv := fixtureRoCE("send_lat", "server", "rxe0")
	sendLatSrv.RXDepth, sendLatSrv.Results = 100, []SizeResult{lat64}
	sweep := fixtureRoCE("send_bw", "client", "rxe1")
	sweep.TXDepth, sweep.CQModeration = 100, 100
	for n := 2; n <= 1<<21; n *= 2 {
		sweep.Results = append(sweep.Results, SizeResult{Bytes: n, Iterations: 100, BWPeakMBps: 11.66, BWAvgMBps: 11.66, MsgRateMpps: 6e-6})
	}
	latSweep := fixtureRoCE("write_lat", "client", "rxe1")
	latSweep.TXDepth = 1
	for n := 2; n <= 1<<20; n *= 2 {
		s := lat64
		s.Bytes = n
		latSweep.Results = append(latSweep.Results, s)
	}
	bidi := func(test, role, dev string) Result {
		r := fixtureRoCE(test, role, dev)
		r.Bidirectional, r.TXDepth, r.CQModeration = true, 100, 100
		if test == "send_bw" {
			r.RXDepth = 100
		}
		s := bw4096
		s.Local, s.Remote = &bw4096, &bw4096
		r.Results = []SizeResult{s}
		return r
	}
	sendSrv := fixtureRoCE("send_bw", "server", "rxe0")
	sendSrv.RXDepth, sendSrv.CQModeration = 100, 100
	sendSrv.Results = []SizeResult{{Bytes: 4096, Iterations: 100, BWAvgMBps: 25.57, MsgRateMpps: 0.006546}} // no peak
	sendCli := fixtureRoCE("send_bw", "client", "rxe1")
	sendCli.TXDepth, sendCli.CQModeration, sendCli.Results = 100, 100, []SizeResult{bw4096}

	dur := writeBW("client", "rxe1") // -D: no peak, as perftest's
	dur.DurationS, dur.MarginS = 2, 1
	dur.Results = []SizeResult{{Bytes: 4096, Iterations: 14300, BWAvgMBps: 27.92, MsgRateMpps: 0.007147}}
	latDur := writeLat("client", "rxe1")
	latDur.DurationS, latDur.MarginS = 2, 1
	latDur.Results[0].Bytes = 2
	out := writeBW("client", "rxe1")
	latOut := writeLat("client", "rxe1")
	cpu := dur
	// CPU_util is the host's user share, not the process's time.
	cpu.Results = []SizeResult{{Bytes: 65536, Iterations: 896, BWAvgMBps: 27.98, MsgRateMpps: 0.000448, CPU: &CPU{UtilPct: 87.5, HostUserPct: 0.5}}}
	inf := writeBW("client", "rxe1") // --run_infinitely: the last interval, no peak
	inf.DurationS, inf.RunInfinitely, inf.Results = 1, true, []SizeResult{}
	inf.Intervals = []Interval{{EndS: 1, DurationS: 1, Iterations: 300}, {EndS: 2, DurationS: 1, Iterations: 288, BWAvgMBps: 17.96, MsgRateMpps: 0.000287}}
	atomic := fixtureRoCE("atomic_bw", "client", "rxe1")
	atomic.AtomicType, atomic.TXDepth, atomic.CQModeration = "FETCH_AND_ADD", 100, 100
	atomic.Results = []SizeResult{{Bytes: 8, Iterations: 100, BWPeakMBps: 0.18, BWAvgMBps: 0.12, MsgRateMpps: 0.015594}}
	readSrv := fixtureRoCE("read_bw", "server", "rxe0")
	readSrv.CQModeration, readSrv.Results = 1, []SizeResult{bw4096}
	readCli := fixtureRoCE("read_bw", "client", "rxe1")
	readCli.TXDepth, readCli.CQModeration, readCli.Results = 100, 100, []SizeResult{bw4096}
	list := writeBW("client", "rxe1")
	list.PostList, list.CQModeration = 4, 4

	for _, c := range []struct {
		fixture string
		r       Result
		o       PerftestJSON
		results map[string]string // values, as written, of some results
	}{
		{"write_bw.cli.txt", writeBW("client", "rxe1"), PerftestJSON{RelaxedOrdering: true},
			map[string]string{"MsgSize": "4096", "n_iterations": "100", "BW_peak": "28.39", "BW_average": "16.33", "MsgRate": "0.004182"}},
		{"write_bw.srv.txt", writeBW("server", "rxe0"), PerftestJSON{RelaxedOrdering: true}, nil},
		{"write_bw_gbit.cli.txt", gbit, PerftestJSON{RelaxedOrdering: true, Gbits: true},
			map[string]string{"BW_peak": "0.083886", "BW_average": "0.050000", "MsgRate": "0.001500"}},
		{"write_bw.cli.txt", writeBW("client", "rxe1"), PerftestJSON{RelaxedOrdering: true, Gbits: true},
			map[string]string{"BW_peak": "0.24", "BW_average": "0.14"}},
		{"write_lat.cli.txt", writeLat("client", "rxe1"), PerftestJSON{},
			map[string]string{"MsgSize": "64", "t_min": "19.88", "t_max": "197.20", "t_typical": "26.21", "t_avg": "29.26", "t_stdev": "9.90", "percentile_99.9": "197.20"}},
		{"write_lat.srv.txt", writeLat("server", "rxe0"), PerftestJSON{}, nil},
		{"read_lat.cli.txt", readLat, PerftestJSON{RelaxedOrdering: true}, nil},
		{"send_lat.srv.txt", sendLatSrv, PerftestJSON{RelaxedOrdering: true}, nil},
		{"send_bw_a.cli.txt", sweep, PerftestJSON{RelaxedOrdering: true},
			map[string]string{"MsgSize": "2097152", "BW_average": "11.66", "MsgRate": "0.000006"}},
		{"write_lat_a.cli.txt", latSweep, PerftestJSON{}, map[string]string{"MsgSize": "1048576"}},
		{"write_bw_b.cli.txt", bidi("write_bw", "client", "rxe1"), PerftestJSON{RelaxedOrdering: true}, map[string]string{"BW_average": "16.33"}},
		{"write_bw_b.srv.txt", bidi("write_bw", "server", "rxe0"), PerftestJSON{RelaxedOrdering: true}, nil},
		{"send_bw_b.cli.txt", bidi("send_bw", "client", "rxe1"), PerftestJSON{RelaxedOrdering: true}, nil},
		{"send_bw_b.srv.txt", bidi("send_bw", "server", "rxe0"), PerftestJSON{RelaxedOrdering: true}, nil},
		{"send_bw.srv.txt", sendSrv, PerftestJSON{RelaxedOrdering: true}, map[string]string{"BW_peak": "0.00", "BW_average": "25.57"}},
		{"send_bw.cli.txt", sendCli, PerftestJSON{RelaxedOrdering: true}, nil},
		{"write_bw_D.cli.txt", dur, PerftestJSON{RelaxedOrdering: true}, map[string]string{"BW_peak": "0.00", "n_iterations": "14300"}},
		{"write_lat_D.cli.txt", latDur, PerftestJSON{}, map[string]string{"t_avg": "33.19", "tps_average": "15066.21"}}, // the mean of all 100
		{"write_bw_out.cli.txt", out, PerftestJSON{RelaxedOrdering: true, Value: BWValue}, map[string]string{"bw_avg": "16.334800"}},
		{"write_lat_out.cli.txt", latOut, PerftestJSON{Value: LatValue}, map[string]string{"avg_lat": "29.260000"}},
		{"write_bw_cpu.cli.txt", cpu, PerftestJSON{RelaxedOrdering: true}, map[string]string{"CPU_util": "0.50"}},
		{"write_bw_inf.cli.txt", inf, PerftestJSON{RelaxedOrdering: true, MsgSize: 65536},
			map[string]string{"MsgSize": "65536", "n_iterations": "288", "BW_peak": "0.00", "BW_average": "17.96", "MsgRate": "0.000287"}},
		{"atomic_bw.cli.txt", atomic, PerftestJSON{RelaxedOrdering: true}, map[string]string{"MsgSize": "8"}},
		{"read_bw.srv.txt", readSrv, PerftestJSON{RelaxedOrdering: true}, nil},
		{"read_bw.cli.txt", readCli, PerftestJSON{RelaxedOrdering: true}, nil},
		{"write_bw_l.cli.txt", list, PerftestJSON{RelaxedOrdering: true}, nil},
	} {
		var buf bytes.Buffer
		if err := WritePerftestJSON(&buf, c.r, c.o); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if !json.Valid(b) {
			t.Fatalf("%s: not JSON:\n%s", c.fixture, b)
		}
		info45, results45, title := perftest45Keys(t, c.fixture)
		if got, want := objectKeys(t, b, "test_info"), upstreamInfo(info45); !slices.Equal(got, want) {
			t.Errorf("%s: test_info keys\n%q\nwant\n%q", c.fixture, got, want)
		}
		if got := objectKeys(t, b, "results"); !slices.Equal(got, results45) {
			t.Errorf("%s: results keys %q, want %q", c.fixture, got, results45)
		}
		var doc struct {
			Info    map[string]any             `json:"test_info"`
			Results map[string]json.RawMessage `json:"results"`
			Gorperf Result                     `json:"gorperf"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Info["test"] != title {
			t.Errorf("%s: test %q, want %q", c.fixture, doc.Info["test"], title)
		}
		for k, want := range c.results {
			if got := string(doc.Results[k]); got != want {
				t.Errorf("%s: results[%s] = %s, want %s", c.fixture, k, got, want)
			}
		}
		// gorperf's own document rides along, every size in it.
		if g := doc.Gorperf; g.Tool != Tool || g.SchemaVersion != SchemaVersion || g.Test != c.r.Test || len(g.Results) != len(c.r.Results) || len(g.Intervals) != len(c.r.Intervals) {
			t.Errorf("%s: gorperf's document %+v", c.fixture, g)
		}
	}
}

// TestPerftestJSONPeerMeasured: a side that kept no latency samples (a
// read_lat server: its client times the test) has the size and
// iterations only in its results; perftest's read_lat server writes no
// file.
func TestPerftestJSONPeerMeasured(t *testing.T) {
	r := fixtureRoCE("read_lat", "server", "rxe0")
	r.Results = []SizeResult{peerLat}
	var buf bytes.Buffer
	if err := WritePerftestJSON(&buf, r, PerftestJSON{}); err != nil {
		t.Fatal(err)
	}
	if got := objectKeys(t, buf.Bytes(), "results"); !slices.Equal(got, []string{"MsgSize", "n_iterations"}) {
		t.Errorf("results keys %q, want MsgSize and n_iterations", got)
	}
}

// TestPerftestJSONGolden pins the whole file of a write_bw client:
// perftest's layout, with the quoted keys of perftest since 24.01, and
// gorperf's document under "gorperf"; and that of a run that failed
// before it measured: perftest's objects, empty results, and the error
// in gorperf's document.
func TestPerftestJSONGolden(t *testing.T) {
	r := fixtureRoCE("write_bw", "client", "rxe1")
	r.TXDepth, r.CQModeration, r.Results = 100, 100, []SizeResult{bw4096}
	var buf bytes.Buffer
	if err := WritePerftestJSON(&buf, r, PerftestJSON{RelaxedOrdering: true}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "perftest_write_bw.json.golden", buf.Bytes())

	failed := Result{Version: "test", Test: "send_lat", Role: "client", Device: "rxe1", GIDIndex: -1,
		Error: &Error{Code: "usage", Message: "-s: 0 is not a message size"}}
	buf.Reset()
	if err := WritePerftestJSON(&buf, failed, PerftestJSON{}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "perftest_failed.json.golden", buf.Bytes())
}

// TestPerftestJSONLatDuration: a latency size of a duration (-D) built
// without its measuring window (no window_s) has, in perftest's file,
// t_avg and tps_average of its samples: the mean of all of them, the two
// largest too, and the iterations a second, an iteration two samples of
// a write's half round trip and one of a read's round trip; to within
// the rounding of the Result's t_avg, and from -U's samples exactly. It
// used to write t_avg of all but the two largest samples, and a rate of
// it.
func TestPerftestJSONLatDuration(t *testing.T) {
	samples := latSamples(20000)
	l, err := stats.Summarize(samples)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, v := range samples {
		sum += v
	}
	n := float64(len(samples))
	for _, test := range []string{"write_lat", "read_lat"} {
		per := sum // ns of an iteration's samples
		if test == "write_lat" {
			per *= 2
		}
		wantAvg, wantTPS := sum/n/1e3, n/(per/1e9)
		for _, withSamples := range []bool{false, true} {
			r := fixtureRoCE(test, "client", "rxe1")
			r.DurationS = 5
			s := SizeFromLatency(2, uint64(len(samples)), l)
			if withSamples {
				s.SamplesUs = SamplesUs(samples)
			}
			r.Results = []SizeResult{s}
			results := perftestFileResults(t, r)
			avg, _ := results["t_avg"].Float64()
			tps, _ := results["tps_average"].Float64()
			// Without samples, from the figures as measured (not rounded
			// to the nanosecond), the same sum; the file has two decimals
			// of each.
			if math.Abs(avg-wantAvg) > 0.005 || math.Abs(tps-wantTPS) > 0.005 {
				t.Errorf("%s, samples %v: t_avg %s, tps_average %s; want %.2f, %.2f", test, withSamples, results["t_avg"], results["tps_average"], wantAvg, wantTPS)
			}
		}
	}
}

// perftestFileResults returns the "results" object of r's perftest JSON
// file (WritePerftestJSON), its numbers as written.
func perftestFileResults(t *testing.T, r Result) map[string]json.Number {
	t.Helper()
	return perftestFileValue(t, r, PerftestJSON{})
}
