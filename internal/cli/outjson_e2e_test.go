//go:build linux && cgo

package cli

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestOutJSONPerftestOnDevice: write-bw and write-lat with --out_json
// write, on each side, perftest's file, which parses as JSON and has
// perftest's keys with figures of the run: a bandwidth and message rate,
// a peak at least the average, latencies in order, on both sides; the
// server of read-lat, which keeps no samples, has the size and
// iterations only.
// The file used to hold --json's document, without perftest's keys.
func TestOutJSONPerftestOnDevice(t *testing.T) {
	srvDev, cliDev, addr, _, ctx := setUpPeers(t, 120*time.Second)
	dir := t.TempDir()
	for _, c := range []struct {
		test, title string
		args        []string
		keys        []string // of the client's results
	}{
		{"write-bw", "RDMA_Write_BW_Test", []string{"-s", "4096", "-n", "200"}, []string{"MsgSize", "n_iterations", "BW_peak", "BW_average", "MsgRate"}},
		{"write-lat", "RDMA_Write_Latency_Test", []string{"-s", "64", "-n", "100"}, []string{"MsgSize", "n_iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"}},
	} {
		port := freshPort()
		cliFile, srvFile := filepath.Join(dir, c.test+".client.json"), filepath.Join(dir, c.test+".server.json")
		srv, srvOut := startServer(t, ctx, srvDev, port, c.test, "--out_json", "--out_json_file="+srvFile)
		args := append([]string{c.test, "-d", cliDev, "-p", port, "--out_json", "--out_json_file=" + cliFile}, c.args...)
		if out, err := gorperf(ctx, append(args, addr)...).CombinedOutput(); err != nil {
			t.Fatalf("%s client: %v\n%s", c.test, err, out)
		}
		if err := srv.Wait(); err != nil {
			t.Fatalf("%s server: %v\n%s", c.test, err, srvOut)
		}
		cli, srvf := readPerftestFile(t, cliFile), readPerftestFile(t, srvFile)
		for _, f := range []struct {
			side, dev string
			file      perftestFile
		}{{"client", cliDev, cli}, {"server", srvDev, srvf}} {
			info := f.file.Info
			if info["test"] != c.title || info["Device"] != f.dev || info["Connection_type"] != "RC" || info["Number_of_qps"] != 1.0 ||
				info["Link_type"] != "Ethernet" || info["Mtu"] == nil || info["GID_index"] == nil || info["Data_ex_method"] != "Ethernet" {
				t.Errorf("%s %s: test_info %v", c.test, f.side, info)
			}
			if f.file.Gorperf.Role != f.side {
				t.Errorf("%s %s: gorperf's document's role %q", c.test, f.side, f.file.Gorperf.Role)
			}
		}
		iters, size := map[string]float64{"write-bw": 200, "write-lat": 100}[c.test], map[string]float64{"write-bw": 4096, "write-lat": 64}[c.test]
		// Both sides: write-bw's server reports the client's figures, as
		// perftest's; write-lat's times its own half of the ping-pong.
		for side, res := range map[string]map[string]any{"client": cli.Results, "server": srvf.Results} {
			var keys []string
			for k := range res {
				keys = append(keys, k)
			}
			sorted := slices.Clone(c.keys)
			slices.Sort(keys)
			slices.Sort(sorted)
			if !slices.Equal(keys, sorted) {
				t.Errorf("%s %s: results keys %q, want %q", c.test, side, keys, c.keys)
			}
			num := func(k string) float64 { v, _ := res[k].(float64); return v }
			if num("MsgSize") != size || num("n_iterations") != iters {
				t.Errorf("%s %s: MsgSize %v, n_iterations %v; want %v, %v", c.test, side, res["MsgSize"], res["n_iterations"], size, iters)
			}
			switch c.test {
			case "write-bw":
				if num("BW_average") <= 0 || num("BW_peak") < num("BW_average") || num("MsgRate") <= 0 {
					t.Errorf("write-bw %s: results %v, want an average, a peak at least it, a rate", side, res)
				}
			case "write-lat":
				if !(0 < num("t_min") && num("t_min") <= num("t_typical") && num("t_typical") <= num("t_max") &&
					num("t_min") <= num("t_avg") && num("t_avg") <= num("t_max") && num("percentile_99") <= num("percentile_99.9")) {
					t.Errorf("write-lat %s: latencies out of order: %v", side, res)
				}
			}
		}
	}

	// read-lat's server only lets its memory be read and keeps no
	// samples: its results have the size and iterations only (perftest's
	// writes no file there).
	port := freshPort()
	srvFile := filepath.Join(dir, "read-lat.server.json")
	srv, srvOut := startServer(t, ctx, srvDev, port, "read-lat", "--out_json_file", srvFile)
	if out, err := gorperf(ctx, "read-lat", "-d", cliDev, "-p", port, "-n", "100", addr).CombinedOutput(); err != nil {
		t.Fatalf("read-lat client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("read-lat server: %v\n%s", err, srvOut)
	}
	if res := readPerftestFile(t, srvFile).Results; len(res) != 2 || res["MsgSize"] != 2.0 || res["n_iterations"] != 100.0 {
		t.Errorf("read-lat server: results %v, want MsgSize 2 and n_iterations 100 only", res)
	}
}
