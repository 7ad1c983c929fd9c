//go:build linux

// Command compare runs gorperf and perftest side by side, with the same
// parameters on the same devices, and prints how gorperf compares: the
// ratio gorperf ÷ perftest for bandwidth and message rate, and the
// difference and ratio of t_typical and the 99th percentile for latency.
// It also writes the figures as JSON.
//
// `make compare` runs it inside the soft-RoCE VM (server on rxe0, client on
// rxe1, across a veth pair) where the host has no RDMA device, and on the
// host's devices where it has them:
//
//	go run ./bench/compare -server-dev mlx5_0 -client-dev mlx5_1 -addr 198.18.0.1 -gid 3
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

type config struct {
	gorperf              string
	serverDev, clientDev string
	addr                 string
	serverGID, clientGID int
	iters, latIters      int
	sizes                []int
	qps                  []int
	tests                []string
	port                 int
	out                  string
	env                  []string
}

// measure is one tool's result for one case.
type measure struct {
	BWAvgMBps       float64 `json:"bw_avg_mbps,omitempty"`
	MsgRateMpps     float64 `json:"msg_rate_mpps,omitempty"`
	TTypicalUs      float64 `json:"t_typical_us,omitempty"`
	P99Us           float64 `json:"p99_us,omitempty"`
	UserCPUNsPerMsg float64 `json:"user_cpu_ns_per_msg"`
	Err             string  `json:"error,omitempty"`
}

type row struct {
	Test     string  `json:"test"`
	Bytes    int     `json:"bytes"`
	QPs      int     `json:"qps"`
	Gorperf  measure `json:"gorperf"`
	Perftest measure `json:"perftest"`
	// BWRatio and MsgRateRatio are gorperf ÷ perftest; TypicalDiffUs and
	// P99DiffUs are gorperf − perftest, TypicalRatio and P99Ratio the ratios.
	BWRatio       float64 `json:"bw_ratio,omitempty"`
	MsgRateRatio  float64 `json:"msg_rate_ratio,omitempty"`
	TypicalDiffUs float64 `json:"t_typical_diff_us,omitempty"`
	TypicalRatio  float64 `json:"t_typical_ratio,omitempty"`
	P99DiffUs     float64 `json:"p99_diff_us,omitempty"`
	P99Ratio      float64 `json:"p99_ratio,omitempty"`
	CPURatio      float64 `json:"user_cpu_ratio,omitempty"`
}

func main() {
	var c config
	var sizes, qps, tests string
	flag.StringVar(&c.gorperf, "gorperf", "build/gorperf", "the gorperf binary")
	flag.StringVar(&c.serverDev, "server-dev", os.Getenv("RXE_DEV"), "server's RDMA device")
	flag.StringVar(&c.clientDev, "client-dev", firstNonEmpty(os.Getenv("RXE_DEV2"), os.Getenv("RXE_DEV")), "client's RDMA device")
	flag.StringVar(&c.addr, "addr", firstNonEmpty(os.Getenv("RXE_IP"), "127.0.0.1"), "server's address")
	flag.IntVar(&c.serverGID, "server-gid", atoi(os.Getenv("RXE_GID_INDEX"), 1), "server's GID index (perftest -x)")
	flag.IntVar(&c.clientGID, "client-gid", atoi(firstNonEmpty(os.Getenv("RXE_GID_INDEX2"), os.Getenv("RXE_GID_INDEX")), 1), "client's GID index")
	flag.IntVar(&c.iters, "n", 2000, "iterations of bandwidth tests")
	flag.IntVar(&c.latIters, "lat-n", 1000, "iterations of latency tests")
	flag.StringVar(&sizes, "sizes", "2,64,4096,65536", "message sizes")
	flag.StringVar(&qps, "qps", "1,2,4,8", "QP counts for the write_bw scaling runs")
	flag.StringVar(&tests, "tests", "write_bw,read_bw,send_bw,write_lat,read_lat,send_lat", "tests")
	flag.IntVar(&c.port, "port", 18600, "first TCP port to use")
	flag.StringVar(&c.out, "json", "build/compare.json", "where to write the JSON")
	godebug := flag.String("godebug", "", "GODEBUG for gorperf, e.g. asyncpreemptoff=1")
	flag.Parse()
	c.sizes, c.qps, c.tests = ints(sizes), ints(qps), strings.Split(tests, ",")
	if *godebug != "" {
		c.env = append(c.env, "GODEBUG="+*godebug)
	}
	if c.serverDev == "" {
		fmt.Fprintln(os.Stderr, "compare: no device: pass -server-dev and -client-dev (or run in the rxe VM)")
		os.Exit(2)
	}
	var rows []row
	for _, t := range c.tests {
		for _, s := range c.sizes {
			rows = append(rows, c.compare(t, s, 1))
		}
	}
	for _, q := range c.qps {
		rows = append(rows, c.compare("write_bw", 65536, q))
	}
	printTable(os.Stdout, rows)
	doc := map[string]any{"schema_version": 1, "date": time.Now().UTC().Format(time.RFC3339),
		"server_device": c.serverDev, "client_device": c.clientDev, "godebug": *godebug, "rows": rows}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(c.out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
	fmt.Printf("\nJSON: %s\n", c.out)
}

func (c *config) compare(test string, size, qps int) row {
	r := row{Test: test, Bytes: size, QPs: qps}
	r.Perftest = c.run(false, test, size, qps)
	r.Gorperf = c.run(true, test, size, qps)
	g, p := r.Gorperf, r.Perftest
	if g.Err != "" || p.Err != "" {
		return r
	}
	if strings.HasSuffix(test, "_bw") {
		r.BWRatio = ratio(g.BWAvgMBps, p.BWAvgMBps)
		r.MsgRateRatio = ratio(g.MsgRateMpps, p.MsgRateMpps)
	} else {
		r.TypicalDiffUs = g.TTypicalUs - p.TTypicalUs
		r.TypicalRatio = ratio(g.TTypicalUs, p.TTypicalUs)
		r.P99DiffUs = g.P99Us - p.P99Us
		r.P99Ratio = ratio(g.P99Us, p.P99Us)
	}
	r.CPURatio = ratio(g.UserCPUNsPerMsg, p.UserCPUNsPerMsg)
	return r
}

// run runs one tool's server and client and parses the client's result.
func (c *config) run(gorperf bool, test string, size, qps int) measure {
	c.port++
	port := strconv.Itoa(c.port)
	lat := strings.HasSuffix(test, "_lat")
	n := c.iters
	if lat {
		n = c.latIters
	}
	common := []string{"-s", strconv.Itoa(size), "-n", strconv.Itoa(n), "-p", port}
	if qps > 1 {
		common = append(common, "-q", strconv.Itoa(qps))
	}
	var srv, cli *exec.Cmd
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if gorperf {
		name := strings.ReplaceAll(test, "_", "-")
		srv = exec.CommandContext(ctx, c.gorperf, append([]string{name, "-d", c.serverDev, "-x", strconv.Itoa(c.serverGID)}, common...)...)
		cli = exec.CommandContext(ctx, c.gorperf, append(append([]string{name, "-d", c.clientDev, "-x", strconv.Itoa(c.clientGID), "--json"}, common...), c.addr)...)
		srv.Env = append(os.Environ(), c.env...)
		cli.Env = srv.Env
	} else {
		srv = exec.CommandContext(ctx, "ib_"+test, append([]string{"-d", c.serverDev, "-x", strconv.Itoa(c.serverGID), "-F"}, common...)...)
		cli = exec.CommandContext(ctx, "ib_"+test, append(append([]string{"-d", c.clientDev, "-x", strconv.Itoa(c.clientGID), "-F"}, common...), c.addr)...)
	}
	var srvOut, out, errb bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	cli.Stdout, cli.Stderr = &out, &errb
	if err := srv.Start(); err != nil {
		return measure{Err: err.Error()}
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	if !listening(c.port, 10*time.Second) {
		return measure{Err: "the server did not listen: " + lastLine(srvOut.String())}
	}
	if err := cli.Run(); err != nil {
		msg := lastLine(errb.String() + out.String())
		var doc struct{ Error *struct{ Message string } }
		if json.Unmarshal(out.Bytes(), &doc) == nil && doc.Error != nil {
			msg = doc.Error.Message
		}
		return measure{Err: fmt.Sprintf("%v: %s", err, msg)}
	}
	msgs := float64(n * qps)
	m, err := parse(gorperf, lat, out.Bytes())
	if err != nil {
		return measure{Err: err.Error()}
	}
	for _, v := range []float64{m.BWAvgMBps, m.MsgRateMpps, m.TTypicalUs, m.P99Us} {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return measure{Err: "printed a non-finite figure (perftest's cycle-counter calibration fails at times under emulation)"}
		}
	}
	m.UserCPUNsPerMsg = float64(cli.ProcessState.UserTime().Nanoseconds()) / msgs
	return m
}

// listening waits until something listens on the TCP port, reading
// /proc/net/tcp{,6}: connecting to find out would be a client to the server.
func listening(port int, d time.Duration) bool {
	hexPort := fmt.Sprintf(":%04X", port)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if fs := strings.Fields(l); len(fs) > 3 && strings.HasSuffix(fs[1], hexPort) && fs[3] == "0A" {
					return true
				}
			}
		}
	}
	return false
}

func parse(gorperf, lat bool, out []byte) (measure, error) {
	if gorperf {
		var r struct {
			Results []measure                 `json:"results"`
			Error   *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return measure{}, err
		}
		if r.Error != nil || len(r.Results) == 0 {
			return measure{}, fmt.Errorf("gorperf: no result")
		}
		return r.Results[0], nil
	}
	// perftest: the line after the column header.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if !strings.Contains(l, "#bytes") || i+1 >= len(lines) {
			continue
		}
		f := strings.Fields(lines[i+1])
		num := func(k int) float64 {
			if k >= len(f) {
				return 0
			}
			v, _ := strconv.ParseFloat(f[k], 64)
			return v
		}
		if lat {
			// #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
			return measure{TTypicalUs: num(4), P99Us: num(7)}, nil
		}
		// #bytes #iterations BW_peak BW_average MsgRate
		return measure{BWAvgMBps: num(3), MsgRateMpps: num(4)}, nil
	}
	return measure{}, fmt.Errorf("perftest printed no result: %s", lastLine(string(out)))
}

func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test\tbytes\tqps\tgorperf\tperftest\tratio\tmsg rate ratio\tΔ typical µs\tΔ p99 µs\tCPU/msg ratio\t")
	for _, r := range rows {
		if e := firstNonEmpty(r.Gorperf.Err, r.Perftest.Err); e != "" {
			fmt.Fprintf(tw, "%s\t%d\t%d\tERROR: %s\t\t\t\t\t\t\t\n", r.Test, r.Bytes, r.QPs, e)
			continue
		}
		if strings.HasSuffix(r.Test, "_bw") {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f MB/s\t%.2f MB/s\t%.3f\t%.3f\t\t\t%.2f\t\n", r.Test, r.Bytes, r.QPs,
				r.Gorperf.BWAvgMBps, r.Perftest.BWAvgMBps, r.BWRatio, r.MsgRateRatio, r.CPURatio)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f µs\t%.2f µs\t%.3f\t\t%+.2f\t%+.2f\t%.2f\t\n", r.Test, r.Bytes, r.QPs,
				r.Gorperf.TTypicalUs, r.Perftest.TTypicalUs, r.TypicalRatio, r.TypicalDiffUs, r.P99DiffUs, r.CPURatio)
		}
	}
	tw.Flush()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func atoi(s string, def int) int {
	if v, err := strconv.Atoi(s); err == nil {
		return v
	}
	return def
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}
