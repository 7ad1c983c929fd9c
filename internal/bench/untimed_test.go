//go:build linux && cgo

package bench_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestReceiverUntimed: a receiver that comes to its loop after the
// sender's messages have all landed (here held back 300 ms; in a run of
// few messages, -n 20 of UD's over --threads 2, or RC's -n 5, a thread
// that polls late) takes them in one poll and has no time to rate them
// over. Its row, each thread's and their sum's, shows the rates as
// unknown, a dash (the threads' table with a note to raise -n or use
// -D), and its JSON leaves them out; it counts every message. The sender's figures are measured
// as ever. The rows read 0.00 MB/sec: a rate of zero for messages that
// came.
func TestReceiverUntimed(t *testing.T) {
	defer bench.SetBeforeLoop(func(client bool) {
		if !client {
			time.Sleep(300 * time.Millisecond)
		}
	})()
	for _, c := range []struct {
		name string
		spec exchange.TestSpec
	}{
		{"UD, 2 threads, -n 20", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 512, Iterations: 20,
			TXDepth: 20, RXDepth: 20, CQModeration: 20, NumQPs: 2, Threads: 2}},
		{"RC, -n 5", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 65536, Iterations: 5,
			TXDepth: 5, RXDepth: 5, CQModeration: 1, NumQPs: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr, sr := loopback(t, c.spec)
			want := c.spec.Iterations * uint64(c.spec.NumQPs)
			if b := cr.Sizes[0].BW; b.Iterations != want || !(b.AvgMBps > 0) {
				t.Errorf("client: %d messages at %.2f MB/s, want %d at a rate measured", b.Iterations, b.AvgMBps, want)
			}
			b := sr.Sizes[0].BW
			var row bytes.Buffer
			report.WriteBWRow(&row, b, false)
			if f := strings.Fields(row.String()); len(f) != 5 || f[1] != strconv.FormatUint(want, 10) || f[3] != "-" || f[4] != "-" {
				t.Errorf("server's row %q, want %d messages and - for the average and the rate", row.String(), want)
			}
			if b.Iterations != want {
				t.Errorf("server: %d messages, want %d", b.Iterations, want)
			}
			js, err := json.Marshal(report.SizeFromBandwidth(b))
			if err != nil || bytes.Contains(js, []byte("bw_avg_mbps")) || bytes.Contains(js, []byte("msg_rate_mpps")) {
				t.Errorf("server's JSON size %s (%v), want no rates", js, err)
			}
			if len(sr.Threads) == 0 {
				return
			}
			var trs []report.ThreadResult
			for _, th := range sr.Threads {
				tr := report.ThreadResult{Thread: th.Thread, QPs: th.QPs}
				for _, b := range th.Sizes {
					tr.Results = append(tr.Results, report.SizeFromBandwidth(b))
				}
				trs = append(trs, tr)
			}
			var table bytes.Buffer
			report.WriteThreads(&table, trs, false)
			lines := strings.Split(table.String(), "\n")
			for i := range sr.Threads {
				if f := strings.Fields(lines[2+i]); len(f) != 6 || f[4] != "-" || f[5] != "-" {
					t.Errorf("server's thread %d row %q, want - for its average and rate:\n%s", i, lines[2+i], table.String())
				}
			}
			if !strings.Contains(table.String(), "raise -n or use -D") {
				t.Errorf("server's threads' table, want a note to raise -n or use -D:\n%s", table.String())
			}
		})
	}
}

// TestReceiverBacklog: a poll takes at most 64 completions, so a
// receiver that comes late to more than that (here RC send_bw -n 400
// with 512 receives posted, held back 300 ms) takes them in several
// polls, µs apart. They all came before its clock could start: its rate
// is unknown, or where the sender was slow enough that some came after,
// that of those, no faster than the sender. The old receiver timed all
// but the first 64 over the µs of the polls: 1444 MB/s against the
// sender's 14. Not held back, the same run still gets a rate.
func TestReceiverBacklog(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 400,
		TXDepth: 128, RXDepth: 512, CQModeration: 1, NumQPs: 1}
	for _, held := range []bool{true, false} {
		t.Run(map[bool]string{true: "held back", false: "not held"}[held], func(t *testing.T) {
			if held {
				defer bench.SetBeforeLoop(func(client bool) {
					if !client {
						time.Sleep(300 * time.Millisecond)
					}
				})()
			}
			cr, sr := loopback(t, spec)
			c, s := cr.Sizes[0].BW, sr.Sizes[0].BW
			if c.Iterations != spec.Iterations || !(c.AvgMBps > 0) || s.Iterations != spec.Iterations {
				t.Fatalf("client: %d messages at %.2f MB/s, server: %d; want %d, the client's at a rate measured",
					c.Iterations, c.AvgMBps, s.Iterations, spec.Iterations)
			}
			t.Logf("client: %.2f MB/s; server: %.2f MB/s, rate unknown %v", c.AvgMBps, s.AvgMBps, s.RateUnknown())
			if s.RateUnknown() {
				if !held {
					t.Errorf("server: rate unknown, want one measured (client: %.2f MB/s)", c.AvgMBps)
				}
				return
			}
			// A receiver that keeps up runs at the sender's rate; with
			// room for timing noise, never far above it.
			if s.AvgMBps > 2*c.AvgMBps {
				t.Errorf("server: %.2f MB/s, client: %.2f MB/s; want the server's unknown or no faster than the client's", s.AvgMBps, c.AvgMBps)
			}
		})
	}
}
