//go:build linux && cgo

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// A missed limit still prints the whole report, then fails with exit
// status 3; with --json the document has the results and the miss as its
// error.
func TestFinishLimits(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := testOptions{Test: exchange.WriteBW, limits: report.Limits{BW: 1e6}}
	err := o.finish(f, "client", fakeBW(), nil)
	if exitCode(err) != exitLimit || !strings.Contains(err.Error(), "2 limits missed: 4096 bytes: bandwidth") {
		t.Errorf("finish = %v (exit %d), want two misses, exit %d", err, exitCode(err), exitLimit)
	}
	if !strings.Contains(out.String(), "#bytes") || !strings.Contains(out.String(), "65536") {
		t.Errorf("the table was not printed:\n%s", out)
	}

	f, out, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.WriteBW, JSON: true, limits: report.Limits{MsgRate: 0.01}}
	err = o.finish(f, "client", fakeBW(), nil)
	var r report.Result
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil || len(r.Results) != 2 || r.Error == nil || r.Error.Code != "limit" ||
		!strings.Contains(r.Error.Message, "65536 bytes: message rate") || exitCode(err) != exitLimit {
		t.Errorf("JSON %+v (%v), error %v\n%s", r, jerr, err, out)
	}

	// Limits that pass, and a run that was interrupted, which shows what
	// it measured and says so rather than judging it.
	f, _, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.SendLat, limits: report.Limits{Typical: 1e6, P99: 1e6}}
	if err := o.finish(f, "client", fakeLat(), nil); err != nil {
		t.Errorf("passing limits: %v", err)
	}
	res := fakeBW()
	res.Interrupted = true
	f, _, _ = newTestFactory(nil, nil)
	o = testOptions{Test: exchange.WriteBW, limits: report.Limits{BW: 1e6}}
	if err := o.finish(f, "client", res, nil); exitCode(err) != 130 {
		t.Errorf("interrupted: %v, want exit 130", err)
	}
	// Nor is a run the peer's Ctrl-C cut short judged: it fails, exit
	// 1, not 3 (a missed mark) nor 0, and says the mark was not judged.
	res = fakeBW()
	res.PeerInterrupted = true
	f, _, _ = newTestFactory(nil, nil)
	if err := o.finish(f, "client", res, nil); exitCode(err) != exitError || !strings.Contains(fmt.Sprint(err), "-w was not judged") {
		t.Errorf("the peer interrupted: %v (exit %d), want exit 1 and -w not judged", err, exitCode(err))
	}
}

// A run whose data did not validate fails after its report, and the
// --json document and --out_json's file both carry that error, which
// comes before any limit.
func TestFinishMismatch(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		f, out, _ := newTestFactory(nil, nil)
		file := t.TempDir() + "/out.json"
		o := testOptions{Test: exchange.WriteBW, JSON: jsonOut, limits: report.Limits{BW: 1e6}}
		jf, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		o.jsonFile = jf
		res := fakeBW()
		res.Mismatches = 2
		err = o.finish(f, "client", res, nil)
		if err == nil || !strings.Contains(err.Error(), "data validation failed: 2 QPs") || exitCode(err) == exitLimit {
			t.Errorf("--json %v: finish = %v, want the validation failure, not the limit", jsonOut, err)
		}
		docs := []string{file}
		if jsonOut {
			docs = append(docs, "stdout")
		}
		for _, d := range docs {
			b := out.Bytes()
			if d != "stdout" {
				if b, err = os.ReadFile(d); err != nil {
					t.Fatal(err)
				}
			}
			var r report.Result
			jerr := json.Unmarshal(b, &r)
			if d != "stdout" { // --out_json's: perftest's file, gorperf's document in it
				var file perftestFile
				jerr = json.Unmarshal(b, &file)
				r = file.Gorperf
			}
			if jerr != nil || r.Error == nil || !strings.Contains(r.Error.Message, "data validation failed") || len(r.Results) != 2 {
				t.Errorf("--json %v: %s's document %+v (%v), want the results and the validation error", jsonOut, d, r, jerr)
			}
		}
		if !jsonOut && !strings.Contains(out.String(), "#bytes") {
			t.Errorf("the table was not printed:\n%s", out)
		}
	}
}

// TestLimitsOnDevice runs tests with limits on rxe: a mark the run cannot
// miss passes, one it cannot meet fails with exit status 3 after the
// results, and each side judges its own result by its own flags. The
// cases run side by side (t.Parallel): no mark is near what rxe makes.
func TestLimitsOnDevice(t *testing.T) {
	srvDev, cliDev, addr := peers(t)
	ctx := testContext(t, 90*time.Second)
	for _, tc := range []struct {
		test     string
		cli, srv []string
		cliExit  int
		srvExit  int
		miss     string // in the failing side's message
	}{
		{"write-bw", []string{"-w", "0.001", "-y", "0.00001"}, nil, 0, 0, ""},
		{"write-bw", []string{"-w", "1e9"}, nil, exitLimit, 0, "4096 bytes: bandwidth"},
		{"send-bw", []string{"--report_gbits", "-w", "1e6"}, nil, exitLimit, 0, "Gbit/sec, below 1e+06"},
		// The server's own limit: it measured the same run and missed it.
		{"write-bw", nil, []string{"-y", "1e6"}, 0, exitLimit, "message rate"},
		{"read-lat", []string{"--limit_lat", "1e6", "--limit_p99", "1e6"}, nil, 0, 0, ""},
		{"read-lat", []string{"--limit_lat", "0.001"}, nil, exitLimit, 0, "4096 bytes: t_typical"},
		{"send-lat", []string{"--limit_p99", "0.001"}, nil, exitLimit, 0, "99% percentile"},
	} {
		t.Run(fmt.Sprint(tc.test, tc.cli, " server", tc.srv), func(t *testing.T) {
			t.Parallel()
			port := freshPort()
			srv, srvOut := startServer(t, ctx, srvDev, port, tc.test, tc.srv...)
			args := append([]string{tc.test, "-d", cliDev, "-p", port, "-s", "4096", "-n", "200", "--json"}, tc.cli...)
			cmd := gorperf(ctx, append(args, addr)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			code := procExit(err)
			srvCode := procExit(srv.Wait())
			if code != tc.cliExit || srvCode != tc.srvExit {
				t.Errorf("%v / server %v: exits %d and %d, want %d and %d\n%s%s\nserver:\n%s",
					args, tc.srv, code, srvCode, tc.cliExit, tc.srvExit, out, stderr.String(), srvOut)
				return
			}
			var r report.Result
			if err := json.Unmarshal(out, &r); err != nil || len(r.Results) != 1 || r.Results[0].Iterations != 200 {
				t.Errorf("%v: the result was not reported: %v\n%s", args, err, out)
				return
			}
			switch {
			case tc.cliExit == exitLimit:
				if r.Error == nil || r.Error.Code != "limit" || !strings.Contains(r.Error.Message, tc.miss) ||
					!strings.Contains(stderr.String(), "gorperf: "+r.Error.Message) {
					t.Errorf("%v: error %+v, stderr %q, want a limit miss with %q", args, r.Error, stderr.String(), tc.miss)
				}
			case tc.srvExit == exitLimit:
				srvErr := srv.Stderr.(*bytes.Buffer).String()
				if r.Error != nil || !strings.Contains(srvOut.String(), "#bytes") || !strings.Contains(srvErr, "gorperf: limit missed: 4096 bytes: "+tc.miss) {
					t.Errorf("%v: client error %+v; server:\n%s%s", args, r.Error, srvOut, srvErr)
				}
			default:
				if r.Error != nil {
					t.Errorf("%v: error %+v", args, r.Error)
				}
			}
		})
	}
}

// serverAndJSONClient runs a server with srvArgs and, once it listens, a
// client with cliArgs and --json, both on port; it returns the client's
// one-size result and what the server printed, failing the test if
// either fails.
func serverAndJSONClient(t *testing.T, ctx context.Context, port string, srvArgs, cliArgs []string) (report.Result, string) {
	t.Helper()
	srv, srvOut := start(t, ctx, append(srvArgs, "-p", port)...)
	waitListening(t, port)
	args := append([]string{cliArgs[0], "-p", port, "--json"}, cliArgs[1:]...)
	cmd := gorperf(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s%s", args, err, out, stderr.String())
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srvOut)
	}
	var r report.Result
	if err := json.Unmarshal(out, &r); err != nil || len(r.Results) != 1 {
		t.Fatalf("client JSON: %v\n%s", err, out)
	}
	return r, srvOut.String()
}

// TestCountersOnDevice asks each side for its port counters (-W) on rxe:
// the client named ones, in its JSON, the server every one that moved, in
// its text. Both must have counted the test's own packets: at a path MTU
// of 1024 a 4 KiB send is 4 packets. A name the port does not have fails
// before the test, with the names it has.
func TestCountersOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	const iters, pkts = 200, 200 * 4
	r, srvOut := serverAndJSONClient(t, ctx, port, []string{"send-bw", "-d", srvDev, "-W", "all"},
		[]string{"send-bw", "-d", cliDev, "-s", "4096", "-m", "1024", "-n", fmt.Sprint(iters), "-W", "hw_counters/sent_pkts,rcvd_pkts,sent_pkts", addr})
	s := r.Results[0]
	// Named counters, each once, in the order given.
	if len(s.Counters) != 2 || s.Counters[0].Name != "hw_counters/sent_pkts" || s.Counters[1].Name != "hw_counters/rcvd_pkts" {
		t.Fatalf("counters %+v", s.Counters)
	}
	// The test's packets, and a few retransmissions at most; and
	// acknowledgements back.
	if sent := s.Counters[0].Delta; sent < pkts || sent > pkts+pkts/4 {
		t.Errorf("%d packets sent for %d messages of 4 packets", sent, iters)
	}
	if s.Counters[1].Delta == 0 || s.Counters[0].Reset || s.Counters[1].Reset {
		t.Errorf("%+v", s.Counters)
	}
	// The server's text: its table of what moved, with the packets it
	// received.
	so := srvOut
	if !strings.Contains(so, "Port counters of "+srvDev+" port 1, change during each size:") {
		t.Fatalf("server output lacks its counters:\n%s", so)
	}
	var rcvd uint64
	for line := range strings.Lines(so) {
		var size, n uint64
		if k, _ := fmt.Sscanf(line, " %d hw_counters/rcvd_pkts %d", &size, &n); k == 2 && size == 4096 {
			rcvd = n
		}
	}
	if rcvd < pkts {
		t.Errorf("server: %d packets received, want at least %d:\n%s", rcvd, pkts, so)
	}

	// A name the port lacks: the client fails at once, and says what
	// there is.
	cmd := gorperf(ctx, "send-bw", "-d", cliDev, "-p", port, "-W", "hw_counters/no_such", addr)
	msg, err := cmd.CombinedOutput()
	if procExit(err) != 1 || !strings.Contains(string(msg), `counter "hw_counters/no_such" of `+cliDev+" port 1: no such counter; the port has ") ||
		!strings.Contains(string(msg), "hw_counters/sent_pkts") {
		t.Errorf("-W hw_counters/no_such: %v\n%s", err, msg)
	}
}

// TestCountersFreshOnDevice: while traffic flows, two reads of a port's
// hw_counters in a row differ. The kernel answers a read within
// hw_counters/lifespan (10 ms) of the one that asked the driver from its
// cache, so a run shorter than that reported no change at all; Read now
// waits the lifespan out.
func TestCountersFreshOnDevice(t *testing.T) {
	srvDev, cliDev, _ := peers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, out := start(t, ctx, "loopback", "write-bw", "-d", cliDev, "--peer-dev", srvDev, "-s", "4096", "-D", "30")
	waitOutput(t, out, "GID index") // the QPs are connected: the writes start
	set, err := counters.Open("/sys", cliDev, 1, []string{"sent_pkts"})
	if err != nil {
		t.Fatal(err)
	}
	const name = "hw_counters/sent_pkts"
	// The first packets of a fresh VM can wait for the neighbour: wait
	// until the counter moves at all.
	first, err := set.Read()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s, err := set.Read()
		if err != nil {
			t.Fatal(err)
		}
		if s[name] > first[name] {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%s stays at %d while write-bw runs:\n%s", name, s[name], out)
		}
	}
	for range 5 {
		a, err := set.Read()
		if err != nil {
			t.Fatal(err)
		}
		b, err := set.Read()
		if err != nil {
			t.Fatal(err)
		}
		if b[name] <= a[name] {
			t.Errorf("%s read %d, then %d, while write-bw sends", name, a[name], b[name])
		}
	}
}

// TestCPUUtilOnDevice asks both sides of a write_bw for their CPU time
// (--cpu_util) on rxe: the client polls, so its process keeps a CPU busy
// for the run, and its figures add up; the server is passive (the writes
// land without it) and uses a small share of what the client does.
func TestCPUUtilOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	const iters = 2000
	r, srvOut := serverAndJSONClient(t, ctx, port, []string{"write-bw", "-d", srvDev, "--cpu_util"},
		[]string{"write-bw", "-d", cliDev, "-s", "4096", "-n", fmt.Sprint(iters), "--cpu-util", addr})
	if r.Results[0].CPU == nil {
		t.Fatalf("client JSON without CPU: %+v", r)
	}
	s := r.Results[0]
	c := *s.CPU
	t.Logf("client: %+v", c)
	// The run's own stretch: at least the loop's time, and not much more.
	loop := float64(s.Iterations) / (s.MsgRateMpps * 1e6)
	if c.WallS < loop*0.99 || c.WallS > loop+1 {
		t.Errorf("CPU over %.3f s for a loop of %.3f s", c.WallS, loop)
	}
	// A polling loop keeps its CPU busy, in the kernel (rxe's post) or not.
	if c.UtilPct < 50 || c.UtilPct > 100*float64(runtime.NumCPU())+1 {
		t.Errorf("client CPU_Util %.1f%%", c.UtilPct)
	}
	if d := c.UserUsPerMsg*iters/1e6 - c.UserS; d*d > 1e-12 || c.SysUsPerMsg*iters/1e6-c.SysS > 1e-6 {
		t.Errorf("per message %.3f + %.3f µs for %d messages, totals %.6f + %.6f s", c.UserUsPerMsg, c.SysUsPerMsg, iters, c.UserS, c.SysS)
	}
	if pct := 100 * (c.UserS + c.SysS) / c.WallS; pct-c.UtilPct > 0.01 || c.UtilPct-pct > 0.01 {
		t.Errorf("CPU_Util %.2f%%, totals say %.2f%%", c.UtilPct, pct)
	}
	// The server's text table.
	so := srvOut
	_, table, ok := strings.Cut(so, " CPU time of this process during each size")
	if !ok {
		t.Fatalf("server output lacks its CPU time:\n%s", so)
	}
	var size int
	var user, sys, util float64
	for line := range strings.Lines(table) {
		if k, _ := fmt.Sscanf(line, " %d %g %g %g", &size, &user, &sys, &util); k == 4 {
			break
		}
		size = 0
	}
	if size != 4096 || util >= c.UtilPct/2 {
		t.Errorf("server: CPU_Util %.2f%% (client %.2f%%):\n%s", util, c.UtilPct, so)
	}

	// A latency test's server answers every message and polls as busily
	// as the client: its time a message is its time over the round trips.
	srv, latOut := startServer(t, ctx, srvDev, port, "send-lat", "--cpu_util", "--json")
	if out, err := gorperf(ctx, "send-lat", "-d", cliDev, "-p", port, "-n", "500", addr).CombinedOutput(); err != nil {
		t.Fatalf("send-lat client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("send-lat server: %v\n%s", err, latOut)
	}
	r = report.Result{}
	if err := json.Unmarshal([]byte(latOut.String()), &r); err != nil || len(r.Results) != 1 || r.Results[0].CPU == nil {
		t.Fatalf("send-lat server JSON: %v\n%s", err, latOut)
	}
	if c := *r.Results[0].CPU; c.UtilPct < 50 || c.UserUsPerMsg+c.SysUsPerMsg < 1e6*(c.UserS+c.SysS)/500*0.99 {
		t.Errorf("send-lat server: %+v", c)
	}
	// It times the round trips too, as perftest's server does.
	if s := r.Results[0]; s.TTypicalUs <= 0 || s.TMinUs > s.TTypicalUs || s.Percentile99Us < s.TTypicalUs {
		t.Errorf("send-lat server: t_min %.2f, t_typical %.2f, 99%% %.2f µs", s.TMinUs, s.TTypicalUs, s.Percentile99Us)
	}
}

// TestRateLimitOnDevice limits the sender (--rate_limit) far below what
// rxe does unlimited (25 MB/s and more at 4 KiB): the measured rate is
// the limit's, in each unit, and the sending side's header and JSON say so.
func TestRateLimitOnDevice(t *testing.T) {
	for _, tc := range []struct {
		test string
		args []string
		// the figure the limit fixes: average MB/sec or Mpps
		mbps, mpps float64
	}{
		{"write-bw", []string{"-s", "4096", "-n", "600", "--rate_limit", "2", "--rate_units", "M"}, 2, 0},
		{"send-bw", []string{"-s", "64", "-n", "1000", "-q", "2", "--rate_limit", "1000", "--rate_units", "p", "--burst_size", "4"}, 0, 0.001},
		{"read-bw", []string{"-s", "4096", "-n", "500", "--rate_limit", "0.016"}, 0.016e9 / 8 / (1 << 20), 0},
	} {
		t.Run(tc.test, func(t *testing.T) {
			r := pair(t, tc.test, tc.args...)
			s := r.Results[0]
			got, want := s.BWAvgMBps, tc.mbps
			if tc.mpps != 0 {
				got, want = s.MsgRateMpps, tc.mpps
			}
			t.Logf("%v: %g, limit %g", tc.args, got, want)
			// The bucket starts with one message: the average is the
			// limit's, less what the loop's own pace loses, which on
			// an emulated VM under load is up to a third (0.00072 of
			// 0.001 seen, in a run of 0.3 s): the limit is the upper
			// bound, and the lower one, 0.6 of the limit, catches a
			// limiter at half its rate, which measures 0.5 of it and
			// a little more (the bucket's first message), so that a
			// bound of 0.5 let it pass. Each run lasts a second or
			// more at the limit, so that a right one falls under the
			// bound only after stalls of 650 ms or more in all (where
			// send-bw's 300 messages, 0.3 s, had 180 ms to spare under
			// a bound of 0.5, once at 0.72 of the limit).
			if got > want*1.05 || got < want*0.6 {
				t.Errorf("%v: %g, want %g", tc.args, got, want)
			}
			if !strings.Contains(r.RateLimit, "(SW)") {
				t.Errorf("rate_limit %q in the JSON", r.RateLimit)
			}
		})
	}
}

// TestReversedOnDevice: with --reversed the server writes, so the client's
// port takes the data's packets and sends only acknowledgements; without
// it, the other way round.
func TestReversedOnDevice(t *testing.T) {
	const iters, pkts = 300, 300 * 4 // 4 KiB at a path MTU of 1024
	for _, reversed := range []bool{false, true} {
		args := []string{"-s", "4096", "-m", "1024", "-n", fmt.Sprint(iters), "-W", "sent_pkts,rcvd_pkts"}
		if reversed {
			args = append(args, "--reversed")
		}
		r := pair(t, "write-bw", args...)
		c := r.Results[0].Counters
		if len(c) != 2 {
			t.Fatalf("%v: counters %+v", args, c)
		}
		data, acks := c[0].Delta, c[1].Delta // sent, received
		if reversed {
			data, acks = acks, data
		}
		if data < pkts || acks > data/2 {
			t.Errorf("%v: the client sent %d packets and received %d; want the data's %d one way", args, c[0].Delta, c[1].Delta, pkts)
		}
		if r.Results[0].Iterations != iters || r.Reversed != reversed {
			t.Errorf("%v: %d iterations, reversed %v", args, r.Results[0].Iterations, r.Reversed)
		}
	}
}

// TestSamplesOnDevice: -U gives every sample of a real run, one per
// iteration but the last, perftest's iters-1, whose extremes are the run's: t_min, and max_us (t_max, as
// perftest's, leaves out the two largest samples).
func TestSamplesOnDevice(t *testing.T) {
	r := pair(t, "read-lat", "-n", "50", "-U")
	s := r.Results[0]
	if uint64(len(s.SamplesUs))+1 != s.Iterations || s.Iterations != 50 {
		t.Fatalf("%d samples for %d iterations, want 49 for 50", len(s.SamplesUs), s.Iterations)
	}
	if lo, hi := slices.Min(s.SamplesUs), slices.Max(s.SamplesUs); math.Abs(lo-s.TMinUs) > 1e-3 || math.Abs(hi-s.MaxUs) > 1e-3 {
		t.Errorf("samples from %g to %g µs, t_min %g, max %g", lo, hi, s.TMinUs, s.MaxUs)
	}
}

// TestServeRateLimitOnDevice: `gorperf serve --rate_limit` limits what the
// server sends, here the writes of a --reversed client's test, which the
// client reports.
func TestServeRateLimitOnDevice(t *testing.T) {
	srvDev, cliDev, addr, port, ctx := setUpPeers(t, 90*time.Second)
	srv, srvOut := startServer(t, ctx, srvDev, port, "serve", "--rate_limit", "2", "--rate_units", "M")
	out, err := gorperf(ctx, "write-bw", "-d", cliDev, "-p", port, "--reversed", "-s", "4096", "-n", "600", "--json", addr).Output()
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	if err != nil {
		t.Fatalf("client: %v\n%s\nserver:\n%s", err, out, srvOut)
	}
	var r report.Result
	if err := json.Unmarshal(out, &r); err != nil || len(r.Results) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	// As in TestRateLimitOnDevice: the limit is the upper bound, 0.6 of
	// it the lower, under a limiter at half its rate, and 800 ms of
	// stalls away for a right one in this run of 1.2 s (0.9 of it left a
	// stall of 130 ms, where a loaded VM has measured 0.72 of a limit).
	if got := r.Results[0].BWAvgMBps; got > 2*1.05 || got < 2*0.6 {
		t.Errorf("the rate-limited server wrote at %g MB/s, want 2", got)
	}
	if !strings.Contains(srvOut.String(), "Rate limit") {
		t.Errorf("the server's header lacks its rate limit:\n%s", srvOut)
	}
}
