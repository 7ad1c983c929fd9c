//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// perftestFile is --out_json's file: perftest's test_info and results,
// and gorperf's --json document under "gorperf".
type perftestFile struct {
	Info    map[string]any `json:"test_info"`
	Results map[string]any `json:"results"`
	Gorperf report.Result  `json:"gorperf"`
}

// readPerftestFile reads and parses --out_json's file, failing t where it
// cannot, or where gorperf's document is not in it.
func readPerftestFile(t *testing.T, name string) perftestFile {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var f perftestFile
	if err := json.Unmarshal(b, &f); err != nil || f.Info == nil || f.Results == nil || f.Gorperf.Tool != report.Tool {
		t.Fatalf("%s: %v: not perftest's layout with gorperf's document:\n%s", name, err, b)
	}
	return f
}

// TestOutJSONPerftestLayout: --out_json's file is perftest's, key for
// key: a script that reads BW_average or t_avg out of perftest's
// perftest_out.json reads gorperf's; a sweep's holds its last size, as
// perftest's, which writes the file again after each; --report_gbits and
// --output change its figures as they do perftest's. It used to hold
// --json's document, without one of perftest's keys.
func TestOutJSONPerftestLayout(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		o    testOptions
		keys []string
	}{
		{"bw", testOptions{Test: exchange.WriteBW}, []string{"MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate"}},
		{"gbits", testOptions{Test: exchange.WriteBW, Gbits: true}, []string{"MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate"}},
		{"output", testOptions{Test: exchange.WriteBW, value: report.BWValue, Output: "bandwidth"}, []string{"bw_avg"}},
		{"lat", testOptions{Test: exchange.SendLat}, []string{"MsgSize", "n_iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"}},
	} {
		name := filepath.Join(dir, c.name+".json")
		f, _, _ := newTestFactory(nil, nil)
		c.o.OutJSON, c.o.OutJSONFile = true, name
		if err := c.o.openJSONFile(); err != nil {
			t.Fatal(err)
		}
		res := fakeBW()
		if c.o.Test == exchange.SendLat {
			res = fakeLat()
		}
		if err := c.o.finish(f, "client", res, nil); err != nil {
			t.Fatal(err)
		}
		file := readPerftestFile(t, name)
		if len(file.Results) != len(c.keys) {
			t.Errorf("%s: results %v, want the keys %q", c.name, file.Results, c.keys)
		}
		for _, k := range c.keys {
			if v, ok := file.Results[k].(float64); !ok || v <= 0 {
				t.Errorf("%s: results[%s] = %v, want a positive number", c.name, k, file.Results[k])
			}
		}
		last := res.Sizes[len(res.Sizes)-1]
		switch c.name {
		case "bw", "gbits":
			if file.Info["test"] != "RDMA_Write_BW_Test" || file.Results["MsgSize"] != float64(last.Size) {
				t.Errorf("%s: test %v, MsgSize %v; want RDMA_Write_BW_Test and the last size, %d", c.name, file.Info["test"], file.Results["MsgSize"], last.Size)
			}
			want := last.BW.AvgMBps
			if c.o.Gbits {
				_, want = last.BW.Gbps()
			}
			if got := file.Results["BW_average"].(float64); got < want-0.005 || got > want+0.005 {
				t.Errorf("%s: BW_average %v, want %.2f", c.name, got, want)
			}
		case "lat":
			if file.Info["test"] != "Send_Latency_Test" || file.Results["t_avg"].(float64) < 20 {
				t.Errorf("lat: test %v, t_avg %v", file.Info["test"], file.Results["t_avg"])
			}
		}
		if g := file.Gorperf; g.Test != c.o.Test.String() || len(g.Results) != len(res.Sizes) {
			t.Errorf("%s: gorperf's document %+v, want every size", c.name, g)
		}
	}
	// A run that failed before its device: empty results, the error in
	// gorperf's document.
	name := filepath.Join(dir, "fail.json")
	f, _, _ := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"write-bw", "-d", "nosuchdev0", "--out_json_file", name, "127.0.0.1"}); code == 0 {
		t.Error("a failed run: exit 0")
	}
	if file := readPerftestFile(t, name); len(file.Results) != 0 || file.Gorperf.Error == nil || file.Info["test"] != "RDMA_Write_BW_Test" {
		t.Errorf("the failed run's file %+v", file)
	}
}
