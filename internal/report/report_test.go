package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

// checkGolden compares got with testdata/name, or rewrites the file when
// the test runs with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// roceGID is ::ffff:198.18.0.1, a RoCE v2 IPv4 GID.
var roceGID = [16]byte{10: 0xff, 11: 0xff, 12: 198, 13: 18, 14: 0, 15: 1}

func writeBWHeader() Header {
	return Header{
		Test:         "RDMA_Write BW Test",
		Device:       "rxe0",
		Port:         1,
		NumQPs:       1,
		Transport:    "IB",
		Connection:   "RC",
		TXDepth:      128,
		CQModeration: 1,
		Mtu:          1024,
		LinkType:     "Ethernet",
		GIDIndex:     1,
		GIDReason:    "RoCE v2, IPv4 198.18.0.1 on rxeveth0: first routable IPv4 RoCE v2 entry",
		DataEx:       "Ethernet",
		ShowRKey:     true,
		Local:        []Endpoint{{QPN: 0x11, PSN: 0x9f1c3a, RKey: 0x1234, VAddr: 0x7f1234567000, GID: FormatGID(roceGID)}},
		Remote:       []Endpoint{{QPN: 0x12, PSN: 0x42, RKey: 0xabcdef01, VAddr: 0x7f0000001000, GID: FormatGID([16]byte{10: 0xff, 11: 0xff, 12: 198, 13: 18, 14: 0, 15: 2})}},
	}
}

func TestWriteHeader(t *testing.T) {
	tests := []struct {
		golden string
		h      Header
	}{
		{"header_write_bw.golden", writeBWHeader()},
		{
			// Bidirectional send with post lists: both depths and the
			// post list, in perftest's order; gorperf's flow labels.
			"header_send_bw_bidi.golden",
			Header{
				Test: "Send Bidirectional Post List BW Test", Device: "rxe0", Port: 1, NumQPs: 1,
				Transport: "IB", Connection: "RC", TXDepth: 128, PostList: 4, RXDepth: 512, CQModeration: 4,
				Mtu: 1024, LinkType: "Ethernet", GIDIndex: 1, DataEx: "Ethernet", UsingSRQ: true,
				RateLimit: "2 MiB/sec, bursts of 128 (SW)", FlowLabels: []uint32{0, 1, 0xabcde},
			},
		},
		{
			// InfiniBand send latency with events on two QPs: LIDs, no
			// GID, no RKey, both depths.
			"header_send_lat_ib.golden",
			Header{
				Test: "Send Latency Test", Events: true, Device: "mlx5_0", Port: 1, NumQPs: 2,
				Transport: "IB", Connection: "UD", UsingSRQ: true, PCIeRelaxOrder: true,
				TXDepth: 1, RXDepth: 512, Mtu: 4096, LinkType: "IB", GIDIndex: -1,
				MaxInline: 236, RdmaCM: true, DataEx: "rdma_cm",
				Local:  []Endpoint{{LID: 1, QPN: 0x4a, PSN: 0}, {LID: 1, QPN: 0x4b, PSN: 0x1}},
				Remote: []Endpoint{{LID: 0x1f, QPN: 0x123456, PSN: 0xffffff}, {LID: 0x1f, QPN: 0x123457, PSN: 0x10}},
			},
		},
		{
			// A read test prints outstanding reads and OUT; no endpoints yet.
			"header_read_bw_noaddr.golden",
			Header{
				Test: "RDMA_Read BW Test", Dual: true, Device: "rxe0", NumQPs: 1,
				Transport: "IB", Connection: "RC", TXDepth: 128, CQModeration: 100,
				Mtu: 1024, LinkType: "Ethernet", GIDIndex: 0, OutstandingReads: 16,
			},
		},
		{
			"header_read_bw.golden",
			Header{
				Test: "RDMA_Read BW Test", Device: "rxe0", NumQPs: 1,
				Transport: "IB", Connection: "RC", TXDepth: 128, CQModeration: 100,
				Mtu: 1024, LinkType: "Ethernet", GIDIndex: 3, OutstandingReads: 16, ShowRKey: true,
				Local:  []Endpoint{{QPN: 0x11, PSN: 0x1, OutReads: 16, RKey: 0x1, VAddr: 0x1000, GID: FormatGID(roceGID)}},
				Remote: []Endpoint{{QPN: 0x12, PSN: 0x2, OutReads: 16, RKey: 0x2, VAddr: 0x2000, GID: FormatGID(roceGID)}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteHeader(&buf, tt.h); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.golden, buf.Bytes())
		})
	}
}

// The address line of the task's example, checked by hand against C's
// printf rather than against a golden file.
func TestAddressLine(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHeader(&buf, writeBWHeader()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		" local address: LID 0000 QPN 0x0011 PSN 0x9f1c3a RKey 0x001234 VAddr 0x007f1234567000\n",
		" GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:01\n",
		" remote address: LID 0000 QPN 0x0012 PSN 0x0042 RKey 0xabcdef01 VAddr 0x007f0000001000\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("header lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestCHex(t *testing.T) {
	tests := []struct {
		v     uint64
		width int
		want  string
	}{
		{0, 4, "0000"},
		{1, 4, "0x01"},
		{0x11, 6, "0x0011"},
		{0x9f1c3a, 6, "0x9f1c3a"},
		{0x1234567, 6, "0x1234567"},
		{0x1234, 8, "0x001234"},
		{0x7f1234567000, 16, "0x007f1234567000"},
		{0, 0, "0"},
	}
	for _, tt := range tests {
		if got := cHex(tt.v, tt.width); got != tt.want {
			t.Errorf("cHex(%#x, %d) = %q, want %q", tt.v, tt.width, got, tt.want)
		}
	}
}

func TestFormatGID(t *testing.T) {
	tests := []struct {
		gid  [16]byte
		want string
	}{
		{roceGID, "00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:01"},
		{[16]byte{0xfe, 0x80, 15: 9}, "254:128:00:00:00:00:00:00:00:00:00:00:00:00:00:09"},
		{[16]byte{}, "00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00"},
	}
	for _, tt := range tests {
		if got := FormatGID(tt.gid); got != tt.want {
			t.Errorf("FormatGID(%v) = %q, want %q", tt.gid, got, tt.want)
		}
	}
}

// bwResults is a fixed bandwidth sweep.
func bwResults() []stats.Bandwidth {
	return []stats.Bandwidth{
		stats.ComputeBandwidth(2, 5000, 25*time.Millisecond, 2*time.Microsecond),
		stats.ComputeBandwidth(4096, 5000, 40*time.Millisecond, 5*time.Microsecond),
		stats.ComputeBandwidth(65536, 5000, time.Second, 100*time.Microsecond),
		stats.ComputeBandwidth(8388608, 5000, 3500*time.Millisecond, 0),
	}
}

func TestBWTable(t *testing.T) {
	for _, gbits := range []bool{false, true} {
		var buf bytes.Buffer
		check := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		check(WriteBWHeader(&buf, gbits))
		for _, b := range bwResults() {
			check(WriteBWRow(&buf, b, gbits))
		}
		check(WriteRule(&buf))
		name := "bw_table_mb.golden"
		if gbits {
			name = "bw_table_gb.golden"
		}
		checkGolden(t, name, buf.Bytes())
	}
}

// TestBWRowExt: under 0.1 Gb/sec average, --report_gbits rows have
// perftest's six decimals (REPORT_FMT_EXT), byte for byte as perftest's
// printf gives them; at 0.1 and above, and in MB/sec, the usual two.
func TestBWRowExt(t *testing.T) {
	for _, c := range []struct {
		b     stats.Bandwidth
		gbits bool
		want  string
	}{
		// 2 bytes, 5000 in 25 ms: 0.0032 Gb/sec average, 0.008 peak.
		{bwResults()[0], true, " 2          5000           0.008000            0.003200            0.200000\n"},
		{bwResults()[0], false, " 2          5000             0.95               0.38   \t\t   0.200000\n"},
		// 0.1 Gb/sec exactly: 12500 bytes a message, 1000 a second.
		{stats.ComputeBandwidth(12500, 1000, time.Second, 0), true, " 12500      1000             0.10               0.10   \t\t   0.001000\n"},
	} {
		var buf bytes.Buffer
		if err := WriteBWRow(&buf, c.b, c.gbits); err != nil {
			t.Fatal(err)
		}
		if buf.String() != c.want {
			t.Errorf("%d bytes, gbits %v: row\n%q, want\n%q", c.b.Bytes, c.gbits, buf.String(), c.want)
		}
	}
}

// latSamples returns n deterministic latency samples in nanoseconds: a
// body between 2 and 3 us and a sparse tail up to about 40 us.
func latSamples(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		v := 2000 + float64((i*7919)%1000)
		if i%97 == 0 {
			v += float64((i*104729)%20000) + 5000
		}
		if i == n/2 {
			v = 40123.4
		}
		s[i] = v
	}
	return s
}

func latSummary(t *testing.T) stats.Latency {
	t.Helper()
	l, err := stats.Summarize(latSamples(999))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLatTable(t *testing.T) {
	l := latSummary(t)
	var buf bytes.Buffer
	for _, err := range []error{
		WriteLatHeader(&buf),
		WriteLatRow(&buf, 2, 1000, l),
		WriteRule(&buf),
		WritePercentiles(&buf, l),
		WriteHistogram(&buf, stats.NewHistogram(latSamples(999), 12), 40),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "lat_table.golden", buf.Bytes())
}

// TestLatTablePassive: the side of a latency test that keeps no samples
// says that the peer measured each size, under the same header, instead
// of a row and percentiles of zeros.
func TestLatTablePassive(t *testing.T) {
	var buf bytes.Buffer
	for _, err := range []error{
		WriteLatHeader(&buf),
		WriteLatRow(&buf, 2, 0, stats.Latency{}),
		WriteLatRow(&buf, 4, 0, stats.Latency{}),
		WriteRule(&buf),
		WritePercentiles(&buf, stats.Latency{}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "lat_table_passive.golden", buf.Bytes())
	if strings.Contains(buf.String(), "0.00") {
		t.Errorf("figures of zero:\n%s", buf.String())
	}
}

// TestLatColumnsAsPerftest: the table's columns and the JSON fields named
// after perftest's are perftest's, which leave out the two largest
// samples, here the outliers 100 and 1000 µs: t_max is 100, the mean and
// stdev are those of 1..10 µs. The true maximum is on the percentile line
// and in max_us.
func TestLatColumnsAsPerftest(t *testing.T) {
	var ns []float64
	for _, us := range []float64{1000, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100} {
		ns = append(ns, us*nsPerUsec)
	}
	l, err := stats.Summarize(ns)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteLatRow(&buf, 2, 12, l); err != nil {
		t.Fatal(err)
	}
	// t_min t_max t_typical t_avg t_stdev 99% 99.9%
	if got, want := strings.Fields(buf.String())[2:], []string{"1.00", "100.00", "5.50", "5.50", "2.87", "100.00", "100.00"}; !slices.Equal(got, want) {
		t.Errorf("row %q: columns %q, want %q", buf.String(), got, want)
	}
	buf.Reset()
	if err := WritePercentiles(&buf, l); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "  max: 1000.00 [usec]") {
		t.Errorf("percentile line %q lacks the maximum", buf.String())
	}
	s := SizeFromLatency(2, 12, l)
	if s.TMinUs != 1 || s.TMaxUs != 100 || s.TTypicalUs != 5.5 || s.TAvgUs != 5.5 || s.TStdevUs != 2.872 ||
		s.Percentile99Us != 100 || s.Percentile999Us != 100 || s.MaxUs != 1000 || s.P99Us != 1000 {
		t.Errorf("JSON size %+v", s)
	}
}

// TestLatencyZeroFields: a latency size of one sample, or of samples all
// alike, has a t_stdev of 0, which JSON gives as 0 and CSV as a 0 cell,
// as every other latency figure, rather than leaving it out; the passive
// side's size still has none.
func TestLatencyZeroFields(t *testing.T) {
	for _, samples := range [][]float64{{2500}, {2500, 2500, 2500, 2500}} {
		l, err := stats.Summarize(samples)
		if err != nil {
			t.Fatal(err)
		}
		s := SizeFromLatency(2, uint64(len(samples)), l)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, f := range csvHeader[7:] { // t_min_us on
			if _, ok := doc[f]; !ok {
				t.Errorf("%d samples: JSON %s lacks %s", len(samples), b, f)
			}
		}
		if v, ok := doc["t_stdev_us"]; !ok || v != 0.0 {
			t.Errorf("%d samples: t_stdev_us %v", len(samples), v)
		}
		if strings.Contains(string(b), "bw_") || strings.Contains(string(b), "measured_by_peer") {
			t.Errorf("%d samples: JSON %s", len(samples), b)
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, Result{Test: "send_lat", Results: []SizeResult{s}}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("send_lat,2,%d,,,,,2.5,2.5,2.5,2.5,0,2.5,2.5,2.5,2.5,2.5,2.5,2.5,2.5", len(samples))
		if row := strings.Split(buf.String(), "\n")[1]; row != want {
			t.Errorf("CSV row %q, want %q", row, want)
		}
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, Result{Test: "send_lat", Results: []SizeResult{SizeFromLatency(2, 0, stats.Latency{})}}); err != nil {
		t.Fatal(err)
	}
	if row := strings.Split(buf.String(), "\n")[1]; row != "send_lat,2,0,,,,,,,,,,,,,,,,," {
		t.Errorf("passive CSV row %q", row)
	}
}

// TestJSONPassiveLatency: a size the peer measured has no latency fields
// at all, not zeros, and says the peer measured it.
func TestJSONPassiveLatency(t *testing.T) {
	b, err := json.Marshal(SizeFromLatency(64, 0, stats.Latency{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"bytes":64,"iterations":0,"measured_by_peer":true}`; string(b) != want {
		t.Errorf("passive size %s, want %s", b, want)
	}
	b, err = json.Marshal(SizeFromLatency(2, 1000, latSummary(t)))
	if err != nil || strings.Contains(string(b), "measured_by_peer") || !strings.Contains(string(b), `"t_typical_us"`) {
		t.Errorf("measured size %s, %v", b, err)
	}
}

// TestWriteSamples: perftest's -U and -H format, in µs from ns samples.
func TestWriteSamples(t *testing.T) {
	var buf bytes.Buffer
	// perftest's printf("%d, %g\n"): six significant digits, C's %g.
	if err := WriteSamples(&buf, []float64{2500, 1000.5, 123456, 1234.567891, 1234567891, 0.0123}); err != nil {
		t.Fatal(err)
	}
	if want := "#, usec\n1, 2.5\n2, 1.0005\n3, 123.456\n4, 1.23457\n5, 1.23457e+06\n6, 1.23e-05\n"; buf.String() != want {
		t.Errorf("WriteSamples wrote %q, want %q", buf.String(), want)
	}
}

func bwResult() Result {
	r := Result{
		Version: "0.1.0", Test: "write_bw", Role: "client", Device: "rxe0", Port: 1,
		GIDIndex: 1, GIDReason: "first routable IPv4 RoCE v2 entry", Connection: "RC", QPs: 1,
		TXDepth: 128, CQModeration: 100, PostList: 8, MTU: 1024, MaxInline: new(0),
	}
	for _, b := range bwResults() {
		r.Results = append(r.Results, SizeFromBandwidth(b))
	}
	return r
}

func latResult(t *testing.T) Result {
	return Result{
		Version: "0.1.0", Test: "send_lat", Role: "server", Device: "rxe0", Port: 1,
		GIDIndex: 1, Connection: "UD", QPs: 1, RdmaCM: true,
		RXDepth: 512, MTU: 4096, MaxInline: new(236), SL: 3, TrafficClass: 96,
		Results: []SizeResult{SizeFromLatency(2, 1000, latSummary(t))},
	}
}

func infiniteResult() Result {
	t0 := time.Unix(1700000000, 0)
	acc := stats.NewAccumulator(t0)
	r := Result{
		Version: "0.1.0", Test: "write_bw", Role: "client", Device: "rxe0", Port: 1,
		GIDIndex: 1, Connection: "RC", QPs: 2, Bidirectional: true, Interrupted: true,
		DurationS: 5, RunInfinitely: true, TXDepth: 128, CQModeration: 100, MTU: 1024, MaxInline: new(0),
	}
	for i := 1; i <= 3; i++ {
		acc.Add(uint64(65536*1000*i), uint64(1000*i))
		end := time.Duration(i) * 5 * time.Second
		r.Intervals = append(r.Intervals, IntervalFromBandwidth(end, acc.Snapshot(t0.Add(end))))
	}
	return r
}

func errorResult() Result {
	return Result{
		Version: "0.1.0", Test: "write_bw", Role: "client", Device: "mlx5_9", Port: 1,
		GIDIndex: -1, Connection: "RC", QPs: 1,
		Error: &Error{Code: "device_not_found", Message: `no RDMA device named "mlx5_9"`},
	}
}

func TestWriteJSON(t *testing.T) {
	tests := []struct {
		golden string
		r      Result
	}{
		{"write_bw.json.golden", bwResult()},
		{"send_lat.json.golden", latResult(t)},
		{"infinite.json.golden", infiniteResult()},
		{"error.json.golden", errorResult()},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, tt.r); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(buf.Bytes()) {
				t.Fatalf("invalid JSON:\n%s", buf.Bytes())
			}
			checkGolden(t, tt.golden, buf.Bytes())
		})
	}
}

// TestJSONSettings: the settings that shape the figures are in the
// document where the test has them: max_inline where it is given, 0
// too, and left out where not (a read or atomic test, which has
// outstanding_reads instead); the others where not zero.
func TestJSONSettings(t *testing.T) {
	keys := func(r Result) map[string]any {
		t.Helper()
		var buf bytes.Buffer
		if err := WriteJSON(&buf, r); err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, buf.Bytes())
		}
		return doc
	}
	atomic := keys(Result{Test: "atomic_bw", DurationS: 10, MarginS: 2, TXDepth: 128, CQModeration: 100, MTU: 1024,
		OutstandingReads: 16, AtomicType: "CMP_AND_SWAP"})
	for k, v := range map[string]any{"duration_s": 10.0, "margin_s": 2.0, "tx_depth": 128.0, "cq_moderation": 100.0,
		"mtu": 1024.0, "outstanding_reads": 16.0, "atomic_type": "CMP_AND_SWAP"} {
		if atomic[k] != v {
			t.Errorf("%s = %v, want %v", k, atomic[k], v)
		}
	}
	for _, k := range []string{"max_inline", "post_list", "rx_depth", "run_infinitely", "sl", "traffic_class"} {
		if v, ok := atomic[k]; ok {
			t.Errorf("an atomic test's document has %s %v", k, v)
		}
	}
	if v, ok := keys(Result{Test: "write_bw", MaxInline: new(0)})["max_inline"]; !ok || v != 0.0 {
		t.Errorf("max_inline of 0: %v, %v; want it there, as 0", v, ok)
	}
}

func TestWriteJSONErrorOnly(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Result{Error: &Error{Code: "usage", Message: "bad flag"}}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, buf.Bytes())
	}
	if v := doc["schema_version"]; v != float64(SchemaVersion) {
		t.Errorf("schema_version = %v, want %d", v, SchemaVersion)
	}
	if v := doc["tool"]; v != "gorperf" {
		t.Errorf("tool = %v, want gorperf", v)
	}
	if res, ok := doc["results"].([]any); !ok || len(res) != 0 {
		t.Errorf("results = %#v, want []", doc["results"])
	}
	e, _ := doc["error"].(map[string]any)
	if e["code"] != "usage" || e["message"] != "bad flag" {
		t.Errorf("error = %#v", doc["error"])
	}
	if _, ok := doc["intervals"]; ok {
		t.Errorf("intervals present in an error-only document")
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	in := latResult(t)
	in.Results[0].Counters = []Counter{{Name: "hw_counters/sent_pkts", Delta: 2000}, {Name: "counters/port_xmit_data", Reset: true},
		{Name: "counters/port_rcv_data", Delta: 7, Saturated: true}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	var out Result
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	in.SchemaVersion, in.Tool = SchemaVersion, Tool
	in.Results[0].exact = nil // the unrounded figures are perftest's file's, not the JSON's
	if !reflect.DeepEqual(out.Results[0], in.Results[0]) || out.Test != in.Test || out.SchemaVersion != 1 || out.Tool != "gorperf" ||
		out.MaxInline == nil || *out.MaxInline != *in.MaxInline || out.RXDepth != in.RXDepth || out.SL != in.SL {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

// TestZeroBandwidth: a bandwidth size where nothing completed (an
// interrupted run of fixed duration) still has its bandwidth fields, as
// zeros, in the JSON and the CSV, where a latency size has none.
func TestZeroBandwidth(t *testing.T) {
	zero := SizeFromBandwidth(stats.Bandwidth{Bytes: 4096})
	b, err := json.Marshal(zero)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bytes":4096,"iterations":0,"bw_peak_mbps":0,"bw_avg_mbps":0,"bw_avg_gbps":0,"msg_rate_mpps":0}`
	if string(b) != want {
		t.Errorf("zero bandwidth %s, want %s", b, want)
	}
	// Nested, as a bidirectional test's directions and a thread's sizes.
	r := Result{Test: "write_bw", Results: []SizeResult{zero}, ThreadResults: []ThreadResult{{Results: []SizeResult{zero}}}}
	r.Results[0].Local = &zero
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `"bw_avg_mbps": 0`); n != 3 {
		t.Errorf("%d zero bandwidths in the document, want 3:\n%s", n, buf.String())
	}
	for _, l := range []SizeResult{SizeFromLatency(2, 1000, latSummary(t)), SizeFromLatency(2, 0, stats.Latency{})} {
		if b, err := json.Marshal(l); err != nil || strings.Contains(string(b), "bw_") || strings.Contains(string(b), "msg_rate") {
			t.Errorf("latency size %s, %v", b, err)
		}
	}
	buf.Reset()
	if err := WriteCSV(&buf, Result{Test: "write_bw", Results: []SizeResult{zero}}); err != nil {
		t.Fatal(err)
	}
	if row := strings.Split(buf.String(), "\n")[1]; row != "write_bw,4096,0,0,0,0,0,,,,,,,,,,,,," {
		t.Errorf("CSV row %q", row)
	}
}

func TestWriteJSONRejectsNaN(t *testing.T) {
	r := Result{Results: []SizeResult{{Bytes: 2, TAvgUs: math.NaN()}}}
	if err := WriteJSON(&bytes.Buffer{}, r); err == nil {
		t.Error("WriteJSON with a NaN: no error")
	}
}

func TestWriteCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCSV(&buf, bwResult()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "write_bw.csv.golden", buf.Bytes())

	buf.Reset()
	if err := WriteCSV(&buf, latResult(t)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "send_lat.csv.golden", buf.Bytes())

	buf.Reset()
	if err := WriteCSV(&buf, errorResult()); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), strings.Join(csvHeader, ",")+"\n"; got != want {
		t.Errorf("CSV without results = %q, want the header row %q", got, want)
	}
}

// TestCSVRows: CSVRows writes nothing before the first size, then the
// header row with it and a row a size, each as it comes: after every
// size the start of what WriteCSV writes of the sizes so far, and after
// the last all of it, byte for byte (bandwidth, latency, with CPU
// figures); a write that fails is its error.
func TestCSVRows(t *testing.T) {
	withCPU := bwResult()
	for i := range withCPU.Results {
		withCPU.Results[i].CPU = CPUFrom(stats.CPU{User: time.Duration(i+1) * time.Millisecond, Wall: 25 * time.Millisecond, Messages: 5000})
	}
	for _, r := range []Result{bwResult(), latResult(t), withCPU} {
		var want bytes.Buffer
		if err := WriteCSV(&want, r); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		c := NewCSVRows(&got, r.Test, hasWindow(r), hasCPU(r.Results))
		if got.Len() != 0 || c.Rows() != 0 {
			t.Errorf("%s: before a size, %d rows: %q", r.Test, c.Rows(), got.String())
		}
		for i, s := range r.Results {
			if err := c.Write(s); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(want.String(), got.String()) || strings.Count(got.String(), "\n") != i+2 || c.Rows() != i+1 {
				t.Errorf("%s: after %d sizes, %d rows:\n%s\nwant the header and %d rows of\n%s", r.Test, i+1, c.Rows(), got.String(), i+1, want.String())
			}
		}
		if got.String() != want.String() {
			t.Errorf("%s: written a size at a time\n%s\nwant\n%s", r.Test, got.String(), want.String())
		}
	}
	if err := NewCSVRows(failWriter{}, "write_bw", false, false).Write(bwResult().Results[0]); !errors.Is(err, errWrite) {
		t.Errorf("a failed write: %v", err)
	}
}

// failWriter fails every write.
type failWriter struct{}

var errWrite = errors.New("write failed")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteErrors(t *testing.T) {
	l := latSummary(t)
	writes := map[string]func(w failWriter) error{
		"WriteHeader":      func(w failWriter) error { return WriteHeader(w, writeBWHeader()) },
		"WriteBWHeader":    func(w failWriter) error { return WriteBWHeader(w, false) },
		"WriteBWRow":       func(w failWriter) error { return WriteBWRow(w, bwResults()[0], true) },
		"WriteLatHeader":   func(w failWriter) error { return WriteLatHeader(w) },
		"WriteLatRow":      func(w failWriter) error { return WriteLatRow(w, 2, 1000, l) },
		"WriteRule":        func(w failWriter) error { return WriteRule(w) },
		"WritePercentiles": func(w failWriter) error { return WritePercentiles(w, l) },
		"WriteHistogram":   func(w failWriter) error { return WriteHistogram(w, stats.NewHistogram([]float64{1, 2}, 2), 10) },
		"WriteSamples":     func(w failWriter) error { return WriteSamples(w, []float64{1, 2}) },
		"WriteJSON":        func(w failWriter) error { return WriteJSON(w, bwResult()) },
		"WriteCSV":         func(w failWriter) error { return WriteCSV(w, bwResult()) },
	}
	for name, write := range writes {
		if err := write(failWriter{}); !errors.Is(err, errWrite) {
			t.Errorf("%s to a failing writer = %v, want %v", name, err, errWrite)
		}
	}
}

func TestValue(t *testing.T) {
	for in, want := range map[string]Value{"bandwidth": BWValue, "message_rate": MsgRateValue, "latency": LatValue} {
		if v, err := ParseValue(in); v != want || err != nil {
			t.Errorf("ParseValue(%q) = %v, %v; want %v", in, v, err, want)
		}
	}
	if v, err := ParseValue("Bandwidth"); err == nil || v != NoValue {
		t.Errorf("ParseValue(Bandwidth) = %v, %v; want an error", v, err)
	}
	b := stats.Bandwidth{AvgMBps: 1000, MsgRateMpps: 0.25}
	var out bytes.Buffer
	WriteBWValue(&out, BWValue, b, false)
	WriteBWValue(&out, BWValue, b, true)
	WriteBWValue(&out, MsgRateValue, b, true)
	// stats' latencies are in nanoseconds; the figure is in µs. A side
	// without samples (the peer measured) prints nothing.
	WriteLatValue(&out, stats.Latency{N: 3, Avg: 1500, Typical: 1200})
	WriteLatValue(&out, stats.Latency{})
	// 1000 MB/s (2^20 bytes) is 8.388608 Gbit/s.
	if want := "1000.000000\n8.388608\n0.250000\n1.500000\n"; out.String() != want {
		t.Errorf("values:\n%s\nwant:\n%s", out.String(), want)
	}
}

// withCounters is bwResult with port counters on its sizes, as -W gives
// them: the second size has one more, one that was reset and one that
// saturated after it moved; the first, one stuck at its maximum.
func withCounters() Result {
	r := bwResult()
	r.Results = r.Results[:2]
	r.Results[0].Counters = []Counter{{Name: "hw_counters/sent_pkts", Delta: 5000}, {Name: "hw_counters/rcvd_pkts", Delta: 60},
		{Name: "counters/port_xmit_data", Saturated: true}}
	r.Results[1].Counters = []Counter{{Name: "hw_counters/sent_pkts", Delta: 20000}, {Name: "hw_counters/rcvd_pkts", Reset: true},
		{Name: "hw_counters/completer_retry_err", Delta: 3}, {Name: "counters/port_xmit_data", Delta: 1200, Saturated: true}}
	return r
}

func TestCounters(t *testing.T) {
	r := withCounters()
	var buf bytes.Buffer
	if err := WriteCounters(&buf, "rxe1", 1, r.Results, false); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "counters.golden", buf.Bytes())

	// The CSV has a column a counter, in the order they first appear, with
	// an empty cell where a size lacks one, it was reset or saturated.
	buf.Reset()
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := strings.Join(csvHeader, ",") + ",hw_counters/sent_pkts,hw_counters/rcvd_pkts,counters/port_xmit_data,hw_counters/completer_retry_err"; lines[0] != want {
		t.Errorf("CSV header %q\nwant %q", lines[0], want)
	}
	if !strings.HasSuffix(lines[1], ",5000,60,,") || !strings.HasSuffix(lines[2], ",20000,,,3") {
		t.Errorf("CSV rows:\n%s", buf.String())
	}

	// Nothing asked for: nothing written. Every counter asked for (all)
	// and none moved: said so.
	buf.Reset()
	if err := WriteCounters(&buf, "rxe1", 1, bwResult().Results, false); err != nil || buf.Len() != 0 {
		t.Errorf("no counters: %q, %v", buf.String(), err)
	}
	if err := WriteCounters(&buf, "rxe1", 1, bwResult().Results[:1], true); err != nil || !strings.Contains(buf.String(), " 2          (none moved)\n") {
		t.Errorf("all, none moved: %q, %v", buf.String(), err)
	}
}

func TestCPU(t *testing.T) {
	r := bwResult()
	r.Results = r.Results[:2]
	r.Results[0].CPU = CPUFrom(stats.CPU{User: 2 * time.Millisecond, System: 18 * time.Millisecond, Wall: 25 * time.Millisecond, Messages: 5000,
		HostUser: 30, HostIdle: 170})
	var buf bytes.Buffer
	if err := WriteCPU(&buf, r.Results); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "cpu.golden", buf.Bytes())

	// JSON: per message, the share of a CPU, and the totals behind them.
	if c := *r.Results[0].CPU; c.UserUsPerMsg != 0.4 || c.SysUsPerMsg != 3.6 || c.UtilPct != 80 || c.WallS != 0.025 {
		t.Errorf("CPU %+v", c)
	}
	// CSV: four columns before the counters', empty for a size without:
	// the process's, then the host's user share (perftest's CPU_Util[%]).
	r.Results[1].Counters = []Counter{{Name: "hw_counters/sent_pkts", Delta: 7}}
	buf.Reset()
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if want := strings.Join(csvHeader, ",") + ",cpu_user_us_per_msg,cpu_sys_us_per_msg,cpu_util_pct,cpu_host_user_pct,hw_counters/sent_pkts"; lines[0] != want {
		t.Errorf("CSV header %q\nwant %q", lines[0], want)
	}
	if !strings.HasSuffix(lines[1], ",0.4,3.6,80,15,") || !strings.HasSuffix(lines[2], ",,,,,7") {
		t.Errorf("CSV rows:\n%s", buf.String())
	}
	// Nothing measured: nothing written, no columns.
	buf.Reset()
	if err := WriteCPU(&buf, bwResult().Results); err != nil || buf.Len() != 0 {
		t.Errorf("no CPU: %q, %v", buf.String(), err)
	}
}

func TestSamplesUs(t *testing.T) {
	got := SamplesUs([]float64{1500, 20, 1e6})
	if want := []float64{1.5, 0.02, 1000}; !slices.Equal(got, want) {
		t.Errorf("SamplesUs = %v, want %v", got, want)
	}
	if got := SamplesUs(nil); len(got) != 0 {
		t.Errorf("SamplesUs(nil) = %v", got)
	}
}

// TestWriteThreads: each thread's part, size by size, with its CPU and a
// thread that failed; in Gb/s with gbits; nothing for one thread.
func TestWriteThreads(t *testing.T) {
	cpu := 3
	size := func(bytes int, iters uint64) SizeResult {
		return SizeFromBandwidth(stats.ComputeBandwidth(bytes, iters, time.Second, 0))
	}
	threads := []ThreadResult{
		{Thread: 0, QPs: 2, CPU: &cpu, Results: []SizeResult{size(4096, 1000), size(8192, 500)}},
		{Thread: 1, QPs: 1, Results: []SizeResult{size(4096, 2000)}, Error: "the peer failed: boom"},
	}
	var buf bytes.Buffer
	if err := WriteThreads(&buf, threads, false); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "threads.golden", buf.Bytes())
	buf.Reset()
	WriteThreads(&buf, threads, true)
	if !strings.Contains(buf.String(), "BW average[Gb/sec]") || !strings.Contains(buf.String(), " 0.03 ") {
		t.Errorf("in Gb/s:\n%s", buf.String())
	}
	buf.Reset()
	if WriteThreads(&buf, threads[:1], false); buf.Len() != 0 {
		t.Errorf("one thread: %q", buf.String())
	}
}

// sampledSummary is the latency of 4,000 samples of which a store kept one
// in four.
func sampledSummary(t *testing.T) stats.Latency {
	t.Helper()
	all := latSamples(4000)
	var tl stats.Tally
	var kept []float64
	for i, v := range all {
		tl.Add(v)
		if i%4 == 0 {
			kept = append(kept, v)
		}
	}
	l, err := stats.SummarizeKept(kept, 4, tl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLatTableSampled: a run that kept one sample in so many says so
// under its percentile line, and which figures are of the samples kept;
// its JSON has sampled_every and samples_kept, which a run that kept them
// all leaves out (TestJSONGolden's send_lat.json.golden has neither).
func TestLatTableSampled(t *testing.T) {
	l := sampledSummary(t)
	var buf bytes.Buffer
	for _, err := range []error{
		WriteLatHeader(&buf),
		WriteLatRow(&buf, 2, uint64(l.N), l),
		WriteRule(&buf),
		WritePercentiles(&buf, l),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "lat_table_sampled.golden", buf.Bytes())
	if !strings.Contains(buf.String(), " sampled: 1 in 4 samples kept (1000 of 4000)") {
		t.Errorf("no note of the sampling:\n%s", buf.String())
	}
	b, err := json.Marshal(SizeFromLatency(2, uint64(l.N), l))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["sampled_every"] != 4.0 || doc["samples_kept"] != 1000.0 || doc["iterations"] != 4000.0 {
		t.Errorf("sampled size %s", b)
	}
	b, err = json.Marshal(SizeFromLatency(2, 1000, latSummary(t)))
	if err != nil || strings.Contains(string(b), "sampled_every") || strings.Contains(string(b), "samples_kept") {
		t.Errorf("size that kept every sample: %s, %v", b, err)
	}
	buf.Reset()
	if err := WritePercentiles(&buf, latSummary(t)); err != nil || strings.Contains(buf.String(), "sampled") {
		t.Errorf("percentiles of every sample: %q, %v", buf.String(), err)
	}
}

// TestBidiRow: a bidirectional row, as perftest's print_full_bw_report,
// has both directions' figures but this side's iterations, and this
// side's average, not the total's, decides the six decimals: here each
// direction sends 0.06 Gb/sec (under 0.1), together 0.12.
func TestBidiRow(t *testing.T) {
	local := stats.ComputeBandwidth(7500, 1000, time.Second, 0) // 0.06 Gb/sec
	remote := stats.ComputeBandwidth(7500, 1000, time.Second, 0)
	total := stats.ComputeBandwidth(7500, 2000, time.Second, 0)
	total.AvgMBps, total.MsgRateMpps = local.AvgMBps+remote.AvgMBps, local.MsgRateMpps+remote.MsgRateMpps
	var buf bytes.Buffer
	if err := WriteBidiRow(&buf, total, local, true); err != nil {
		t.Fatal(err)
	}
	if want := " 7500       1000           0.120000            0.120000            0.002000\n"; buf.String() != want {
		t.Errorf("row\n%q, want\n%q", buf.String(), want)
	}
}

// TestWriteCSVIntervals: a run's intervals (--run_infinitely) are rows
// before its result, with their end and length in two columns more,
// last, which the result's row leaves empty; a run of intervals that
// ended none has the columns and no such rows, and one of no intervals
// neither.
func TestWriteCSVIntervals(t *testing.T) {
	r := bwResult()
	r.Results = r.Results[:1]
	b := stats.ComputeBandwidth(r.Results[0].Bytes, 2500, 500*time.Millisecond, 0)
	r.Intervals = []Interval{IntervalFromBandwidth(time.Second, b), IntervalFromBandwidth(1500*time.Millisecond, stats.Bandwidth{Bytes: b.Bytes})}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	size := fmt.Sprint(r.Results[0].Bytes)
	_, gbps := b.Gbps()
	empties := strings.Repeat(",", len(csvHeader)-7)
	want := []string{
		strings.Join(csvHeader, ",") + ",interval_end_s,interval_duration_s",
		fmt.Sprintf("%s,%s,2500,,%s,%s,%s%s,1,0.5", r.Test, size, csvFloat(b.AvgMBps), csvFloat(gbps), csvFloat(b.MsgRateMpps), empties),
		fmt.Sprintf("%s,%s,0,,0,0,0%s,1.5,0", r.Test, size, empties),
	}
	if len(lines) != 4 || !slices.Equal(lines[:3], want) || !strings.HasSuffix(lines[3], ",,") {
		t.Errorf("CSV:\n%s\nwant it to begin with\n%s", buf.String(), strings.Join(want, "\n"))
	}
	r.Intervals = []Interval{}
	buf.Reset()
	WriteCSV(&buf, r)
	if lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[0], ",interval_end_s,interval_duration_s") {
		t.Errorf("no interval ended:\n%s", buf.String())
	}
	r.Intervals = nil
	buf.Reset()
	WriteCSV(&buf, r)
	if strings.Contains(buf.String(), "interval") {
		t.Errorf("no intervals:\n%s", buf.String())
	}
}

// TestWriteJSONLine: serve's documents are JSON Lines, one compact
// document a line that a line-oriented reader takes line by line, each
// the same as WriteJSON's, and a server's names its client (peer_addr).
// WriteJSON was the only writer: its documents span lines.
func TestWriteJSONLine(t *testing.T) {
	var buf bytes.Buffer
	docs := []Result{latResult(t), {Role: "server", PeerAddr: "198.18.0.2:40000", Error: &Error{Code: "refused", Message: "refused: too big"}}}
	for _, r := range docs {
		if err := WriteJSONLine(&buf, r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(docs) {
		t.Fatalf("%d lines for %d documents:\n%s", len(lines), len(docs), buf.String())
	}
	for i, line := range lines {
		var got, want map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v:\n%s", i+1, err, line)
		}
		var ind bytes.Buffer
		if err := WriteJSON(&ind, docs[i]); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ind.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d differs from WriteJSON's document:\n%s\n%s", i+1, line, ind.Bytes())
		}
	}
	if !strings.Contains(lines[1], `"peer_addr":"198.18.0.2:40000"`) || strings.Contains(lines[0], "peer_addr") {
		t.Errorf("peer_addr: want it on the server's document only:\n%s", buf.String())
	}
}

// TestCPUColumn: --cpu_util's column in perftest's results tables,
// byte for byte as perftest 4.5's RESULT_EXT_CPU_UTIL and
// REPORT_EXT_CPU_UTIL add it to the column line and the row: the host's
// user share (perftest's calc_cpu_util), not the process's time.
func TestCPUColumn(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCPUColumns(&buf, func(w io.Writer) error { return WriteBWHeader(w, false) }); err != nil {
		t.Fatal(err)
	}
	if want := " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]    CPU_Util[%]\n"; buf.String() != want {
		t.Errorf("column line %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	b := stats.Bandwidth{Bytes: 4096, Iterations: 14400, AvgMBps: 27.33, MsgRateMpps: 0.006996}
	c := stats.CPU{User: time.Second, Wall: time.Second, HostUser: 196, HostIdle: 9804} // the process: 100%
	if err := WriteCPURow(&buf, func(w io.Writer) error { return WriteBWRow(w, b, false) }, c); err != nil {
		t.Fatal(err)
	}
	if want := " 4096       14400            0.00               27.33  \t\t   0.006996\t    1.96\n"; buf.String() != want {
		t.Errorf("row %q\nwant %q", buf.String(), want)
	}
	if f := strings.Fields(buf.String()); len(f) != 6 || f[5] != "1.96" {
		t.Errorf("row's fields %q, want the host's 1.96 sixth", f)
	}
	buf.Reset()
	if err := WriteCPUColumns(&buf, WriteLatHeader); err != nil || !strings.HasSuffix(buf.String(), "percentile[usec]     CPU_Util[%]\n") {
		t.Errorf("latency column line %q, %v", buf.String(), err)
	}
	if r := CPUFrom(c); r.HostUserPct != 1.96 || r.UtilPct != 100 {
		t.Errorf("CPUFrom: host %v%%, process %v%%", r.HostUserPct, r.UtilPct)
	}
}
