//go:build linux && cgo

package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// parseTest runs a test command's flag handling and returns the spec it
// would ask the server for.
func parseTest(t *testing.T, test exchange.Test, args ...string) (exchange.TestSpec, *testOptions, error) {
	t.Helper()
	f, _, _ := newTestFactory(nil, nil)
	var got *testOptions
	cmd := newCmdTest(f, test, false, func(o *testOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(flagError)
	if err := cmd.Execute(); err != nil {
		return exchange.TestSpec{}, nil, err
	}
	s, err := got.spec()
	return s, got, err
}

func TestTestFlagDefaults(t *testing.T) {
	for _, tc := range []struct {
		test           exchange.Test
		size           uint32
		iters          uint64
		tx, cqmod, inl uint32
	}{
		{exchange.WriteBW, 65536, 5000, 128, 1, 0}, // above 8 KiB: a completion per message
		{exchange.SendBW, 65536, 5000, 128, 1, 0},
		{exchange.WriteLat, 2, 1000, 1, 1, 220},
		{exchange.ReadLat, 2, 1000, 1, 1, 0},
		{exchange.AtomicBW, 8, 5000, 128, 100, 0},
		{exchange.AtomicLat, 8, 1000, 1, 1, 0},
	} {
		s, o, err := parseTest(t, tc.test, "host")
		if err != nil {
			t.Fatalf("%v: %v", tc.test, err)
		}
		if s.Size != tc.size || s.Iterations != tc.iters || s.TXDepth != tc.tx || s.CQModeration != tc.cqmod || s.Inline != tc.inl {
			t.Errorf("%v defaults: size %d iters %d tx %d cqmod %d inline %d", tc.test, s.Size, s.Iterations, s.TXDepth, s.CQModeration, s.Inline)
		}
		if o.Host != "host" || o.Port != exchange.DefaultPort || o.GIDIndex != -1 || s.ConnType != ibverbs.QPTypeRC || s.NumQPs != 1 {
			t.Errorf("%v: host %q port %d gid %d conn %v qps %d", tc.test, o.Host, o.Port, o.GIDIndex, s.ConnType, s.NumQPs)
		}
	}
}

// TestTestFlagDependentDefaults checks the defaults that perftest derives
// from other flags.
func TestTestFlagDependentDefaults(t *testing.T) {
	for _, tc := range []struct {
		test          exchange.Test
		args          []string
		tx, rx, cqmod uint32
	}{
		{exchange.WriteBW, []string{"-s", "8192"}, 128, 512, 100},          // at the limit: moderated
		{exchange.WriteBW, []string{"-s", "8193"}, 128, 512, 1},            // above it: not
		{exchange.WriteBW, []string{"-s", "8193", "-e"}, 128, 512, 100},    // but with events, as perftest
		{exchange.WriteBW, []string{"-a"}, 128, 512, 100},                  // all sizes: moderated
		{exchange.WriteBW, []string{"-s", "64", "-l", "16"}, 128, 512, 16}, // one completion per list
		{exchange.WriteBW, []string{"-s", "64", "-n", "50"}, 50, 50, 50},   // depths at most -n
		{exchange.SendBW, []string{"-s", "64", "-n", "300"}, 128, 300, 100},
		{exchange.WriteBW, []string{"-s", "64", "-D", "3"}, 128, 512, 100},  // -D: no iterations to cap at
		{exchange.WriteBW, []string{"-s", "65536", "-Q", "8"}, 128, 512, 8}, // -Q given: kept
		{exchange.WriteBW, []string{"-s", "64", "-t", "32"}, 32, 512, 32},
		// -Q given, but -n shrank the TX depth below it: shrunk with it, as perftest
		{exchange.WriteBW, []string{"-s", "2", "-n", "5", "-Q", "100"}, 5, 5, 5},
		{exchange.WriteBW, []string{"-s", "2", "-n", "5", "-t", "64", "-Q", "32"}, 5, 5, 5},
		{exchange.SendLat, []string{"-s", "64"}, 1, 512, 1},                              // spare receives, as perftest
		{exchange.SendLat, []string{"-s", "64", "-n", "100"}, 1, 100, 1},                 // at most -n
		{exchange.SendBW, []string{"-s", "64", "-n", "100", "-r", "256"}, 100, 100, 100}, // given, and still at most -n
	} {
		s, _, err := parseTest(t, tc.test, append(tc.args, "host")...)
		if err != nil {
			t.Fatalf("%v %v: %v", tc.test, tc.args, err)
		}
		if s.TXDepth != tc.tx || s.RXDepth != tc.rx || s.CQModeration != tc.cqmod {
			t.Errorf("%v %v: tx %d rx %d cqmod %d, want %d %d %d", tc.test, tc.args,
				s.TXDepth, s.RXDepth, s.CQModeration, tc.tx, tc.rx, tc.cqmod)
		}
	}
}

func TestTestFlagsPerftestLetters(t *testing.T) {
	s, o, err := parseTest(t, exchange.SendBW, "-d", "mlx5_1", "-i", "2", "-x", "3", "-s", "1024", "-n", "77",
		"-q", "4", "-b", "-c", "UD", "-I", "64", "-t", "64", "-r", "72", "-Q", "8", "-l", "16", "--recv-post-list", "24", "-m", "2048",
		"-p", "20000", "-F", "--report-gbits", "--tclass", "106", "--sl", "3", "--validate", "--use_old_post_send", "--disable_pcie_relaxed", "-e", "--use_srq", "198.18.0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 1024, Iterations: 77, NumQPs: 4,
		Bidirectional: true, TXDepth: 64, RXDepth: 72, CQModeration: 8, PostList: 16, RecvPostList: 24, Inline: 64,
		MTU: ibverbs.MTU2048, TrafficClass: 106, SL: 3, ValidateData: true, OldPostSend: true, NoRelaxedOrdering: true, Events: true, SRQ: true}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("spec\n got %+v\nwant %+v", s, want)
	}
	// -o is the reads' and atomics'.
	if s, _, err = parseTest(t, exchange.ReadBW, "-o", "4", "h"); err != nil || s.OutReads != 4 {
		t.Errorf("read-bw -o 4: outstanding reads %d, %v", s.OutReads, err)
	}
	if o.Device != "mlx5_1" || o.IBPort != 2 || o.GIDIndex != 3 || o.Port != 20000 || !o.Gbits || o.Host != "198.18.0.1" {
		t.Errorf("local options %+v", o)
	}
	// --source_ip picks the GID of one address.
	if _, o, err = parseTest(t, exchange.WriteBW, "-R", "--source_ip", "::ffff:198.18.0.2", "h"); err != nil {
		t.Fatal(err)
	}
	if r, err := o.gidRule(); err != nil || r.Addr != netip.MustParseAddr("198.18.0.2") || r.Prefix.IsValid() || r.Family != 4 {
		t.Errorf("--source_ip: rule %+v, %v", r, err)
	}
	// --bind_source_ip binds the control connection and, unless -x picks
	// the GID, picks it as --source_ip does.
	if _, o, err = parseTest(t, exchange.SendBW, "--bind-source-ip", "198.18.0.2", "h"); err != nil {
		t.Fatal(err)
	}
	if l, err := o.local(); err != nil || l.BindAddr != netip.MustParseAddr("198.18.0.2") || l.GIDRule.Addr != netip.MustParseAddr("198.18.0.2") {
		t.Errorf("--bind_source_ip: bind %v, rule %+v, %v", l.BindAddr, l.GIDRule, err)
	}
	if _, o, err = parseTest(t, exchange.SendBW, "--bind_source_ip", "198.18.0.2", "-x", "3", "h"); err != nil {
		t.Fatal(err)
	}
	if l, err := o.local(); err != nil || !l.BindAddr.IsValid() || l.GIDRule != (ibverbs.GIDRule{}) || l.GIDIndex != 3 {
		t.Errorf("--bind_source_ip -x 3: bind %v, rule %+v, index %d, %v", l.BindAddr, l.GIDRule, l.GIDIndex, err)
	}
	// -g makes the test UD; -M takes perftest's 16 bytes, or an address.
	s, o, err = parseTest(t, exchange.SendLat, "-g", "-M", "255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0", "h")
	if err != nil || !s.Multicast || s.ConnType != ibverbs.QPTypeUD {
		t.Fatalf("-g: %+v, %v", s, err)
	}
	if l, err := o.local(); err != nil || l.Group != netip.MustParseAddr("ff01:0:2:c985::") {
		t.Errorf("-M in perftest's form: group %v, %v", l.Group, err)
	}
	// A UD bandwidth test without -s sends the largest datagram, -m's or
	// 4096 bytes (testRun lowers it to the port's MTU).
	if s, o, err = parseTest(t, exchange.SendBW, "-g", "-m", "1024", "h"); err != nil || s.Size != 1024 || !o.udSize {
		t.Errorf("send_bw -g -m 1024: size %d (MTU's %v), %v", s.Size, o.udSize, err)
	}
	if s, o, err = parseTest(t, exchange.SendBW, "-c", "UD", "h"); err != nil || s.Size != 4096 || !o.udSize || s.CQModeration != 100 {
		t.Errorf("send_bw -c UD: size %d (MTU's %v), -Q %d, %v", s.Size, o.udSize, s.CQModeration, err)
	}
	if s, o, err = parseTest(t, exchange.SendBW, "-c", "UD", "-s", "64", "h"); err != nil || s.Size != 64 || o.udSize {
		t.Errorf("send_bw -c UD -s 64: size %d (MTU's %v), %v", s.Size, o.udSize, err)
	}
	if _, o, err = parseTest(t, exchange.SendBW, "-g", "-s", "512", "-M", "::ffff:239.1.2.3", "h"); err != nil {
		t.Fatal(err)
	}
	if l, err := o.local(); err != nil || l.Group != netip.MustParseAddr("239.1.2.3") {
		t.Errorf("-M as a GID: group %v, %v", l.Group, err)
	}
	// perftest's other spellings: -S, -T, --ipv6, and -N, which changes
	// nothing.
	s, o, err = parseTest(t, exchange.WriteBW, "-S", "5", "-T", "72", "--ipv6", "-N", "h")
	if err != nil || s.SL != 5 || s.TrafficClass != 72 || !o.NoPeak {
		t.Errorf("-S 5 -T 72 --ipv6 -N: %+v, %v", s, err)
	}
	if r, err := o.gidRule(); err != nil || r.Family != 6 {
		t.Errorf("--ipv6: rule %+v, %v", r, err)
	}
	// --flow_label travels in the spec (hexadecimal as perftest reads
	// it); --pkey_index stays on this side. With -R labels apply to UD
	// only.
	s, o, err = parseTest(t, exchange.SendBW, "--flow-label", "0x1, 65536", "--flow_label", "0xfffff", "--pkey_index", "2", "h")
	if err != nil || !slices.Equal(s.FlowLabels, []uint32{1, 65536, 0xfffff}) {
		t.Errorf("--flow_label: %+v, %v", s, err)
	} else if l, err := o.local(); err != nil || l.PKeyIndex != 2 {
		t.Errorf("--pkey_index 2: %+v, %v", l, err)
	}
	if s, _, err := parseTest(t, exchange.SendBW, "-R", "-c", "UD", "-s", "1024", "--flow_label", "5", "h"); err != nil || s.FlowLabel(3) != 5 {
		t.Errorf("-R -c UD --flow_label 5: %+v, %v", s, err)
	}
	if s, _, err := parseTest(t, exchange.WriteBW, "h"); err != nil || s.FlowLabels != nil {
		t.Errorf("no --flow_label: %+v, %v", s, err)
	}
	// perftest's sample lists; the long names in either spelling.
	if _, o, err := parseTest(t, exchange.ReadLat, "-U", "--report_histogram", "h"); err != nil || !o.Unsorted || !o.Sorted {
		t.Errorf("-U --report_histogram: %+v, %v", o, err)
	}
	// The rate limit is this side's own; its burst defaults later, to
	// the TX depth.
	if _, o, err := parseTest(t, exchange.SendBW, "--rate-limit", "2.5", "--rate_units", "M", "h"); err != nil {
		t.Error(err)
	} else if l, err := o.local(); err != nil || l.Rate != (bench.RateLimit{Rate: 2.5, Unit: bench.RateMiBs}) {
		t.Errorf("--rate-limit 2.5 --rate_units M: %+v, %v", l.Rate, err)
	}
	// Options without the rate flags (serve's) limit nothing.
	if r, err := (&testOptions{}).rate(); err != nil || r != (bench.RateLimit{}) {
		t.Errorf("no rate flags: %+v, %v", r, err)
	}
	// What each side reports of itself stays on that side.
	if _, o, err := parseTest(t, exchange.WriteLat, "--cpu-util", "-W", "sent_pkts,counters/port_xmit_data", "h"); err != nil ||
		!o.CPUUtil || !slices.Equal(o.Counters, []string{"sent_pkts", "counters/port_xmit_data"}) {
		t.Errorf("--cpu-util -W: %+v, %v", o, err)
	}
	// Spaces around -W's names, as "a, b" has them, are not the names'.
	if _, o, err := parseTest(t, exchange.WriteBW, "-W", " sent_pkts, counters/port_xmit_data ", "h"); err != nil {
		t.Error(err)
	} else if l, err := o.local(); err != nil || !slices.Equal(l.Counters, []string{"sent_pkts", "counters/port_xmit_data"}) {
		t.Errorf(`-W " sent_pkts, counters/port_xmit_data ": %q, %v`, l.Counters, err)
	}
	// -D replaces -n; --run_infinitely reports every 5 s by default.
	s, _, err = parseTest(t, exchange.WriteBW, "-D", "7", "h")
	if err != nil || s.Duration != 7 || s.Iterations != 0 {
		t.Errorf("-D 7: %+v, %v", s, err)
	}
	if _, o, err := parseTest(t, exchange.ReadLat, "--latency-gap", "250", "h"); err != nil {
		t.Error(err)
	} else if l, err := o.local(); err != nil || l.LatencyGap != 250*time.Microsecond {
		t.Errorf("--latency-gap 250: %v, %v", l.LatencyGap, err)
	}
	if _, o, err := parseTest(t, exchange.SendLat, "-e", "-X", "3", "h"); err != nil {
		t.Error(err)
	} else if l, err := o.local(); err != nil || l.CompVector != 3 {
		t.Errorf("-e -X 3: vector %d, %v", l.CompVector, err)
	}
	for args, want := range map[string]int{"": 0, "--retry_count=0": -1, "--retry-count=5": 5, "--retry_count=7": 7} {
		a := []string{"h"}
		if args != "" {
			a = []string{args, "h"}
		}
		if _, o, err := parseTest(t, exchange.ReadBW, a...); err != nil {
			t.Error(err)
		} else if l, err := o.local(); err != nil || l.RetryCount != want {
			t.Errorf("%q: Local.RetryCount %d, %v; want %d", args, l.RetryCount, err, want)
		}
	}
	if s, _, err := parseTest(t, exchange.SendBW, "--mr-per-qp", "h"); err != nil || !s.MRPerQP {
		t.Errorf("--mr-per-qp: %+v, %v", s, err)
	}
	if s, _, err := parseTest(t, exchange.AtomicBW, "--perform-warm-up", "h"); err != nil || !s.WarmUp {
		t.Errorf("--perform-warm-up: %+v, %v", s, err)
	}
	// -f: perftest's margin, a quarter of -D by default.
	for _, c := range []struct {
		args   []string
		margin uint32
	}{{[]string{"-D", "8"}, 2}, {[]string{"-D", "3"}, 0}, {[]string{"-D", "8", "-f", "1"}, 1}, {[]string{"--margin", "0", "-D", "10"}, 0}, {nil, 0}} {
		if s, _, err := parseTest(t, exchange.SendBW, append(c.args, "h")...); err != nil || s.Margin != c.margin {
			t.Errorf("%v: margin %d, %v; want %d", c.args, s.Margin, err, c.margin)
		}
	}
	s, _, err = parseTest(t, exchange.WriteBW, "--run_infinitely", "h")
	if err != nil || !s.RunInfinitely || s.Duration != 5 {
		t.Errorf("--run_infinitely: %+v, %v", s, err)
	}
	// Limits stay on this side; -w is in the report's unit.
	_, o, err = parseTest(t, exchange.ReadBW, "-w", "9.5", "--limit-msgrate", "0.25", "--report_gbits", "h")
	if err != nil || o.limits != (report.Limits{BW: 9.5, Gbits: true, MsgRate: 0.25}) {
		t.Errorf("-w 9.5 --limit-msgrate 0.25 --report_gbits: %+v, %v", o.limits, err)
	}
	_, o, err = parseTest(t, exchange.SendLat, "--limit_lat", "3.5", "--limit-p99", "12", "h")
	if err != nil || o.limits != (report.Limits{Typical: 3.5, P99: 12}) {
		t.Errorf("--limit_lat 3.5 --limit-p99 12: %+v, %v", o.limits, err)
	}
	if _, o, err := parseTest(t, exchange.ReadBW, "--report_both", "-b", "--json", "h"); err != nil || !o.ReportBoth {
		t.Errorf("--report_both -b --json: %+v, %v", o, err)
	}
	// --out_json_file names --out_json's file and implies it.
	if _, o, err := parseTest(t, exchange.WriteBW, "--out-json-file", "r.json", "h"); err != nil || !o.OutJSON || o.OutJSONFile != "r.json" {
		t.Errorf("--out-json-file r.json: %+v, %v", o, err)
	}
	if _, o, err := parseTest(t, exchange.WriteBW, "--out_json", "h"); err != nil || !o.OutJSON || o.OutJSONFile != "perftest_out.json" {
		t.Errorf("--out_json: %+v, %v", o, err)
	}
	// Immediate data, with perftest's names for the write and the send
	// tests; write_lat may then sleep on events.
	for _, c := range []struct {
		test exchange.Test
		args []string
	}{
		{exchange.WriteBW, []string{"--write_with_imm"}},
		{exchange.WriteLat, []string{"--write-with-imm", "-e"}},
		{exchange.SendBW, []string{"--send_with_imm", "-c", "UD", "-s", "1024"}},
		{exchange.SendLat, []string{"--send-with-imm"}},
	} {
		if s, _, err := parseTest(t, c.test, append(c.args, "h")...); err != nil || !s.Immediate || !s.Receives() {
			t.Errorf("%v %v: %+v, %v", c.test, c.args, s, err)
		}
	}
	s, _, err = parseTest(t, exchange.AtomicBW, "-A", "CMP_AND_SWAP", "h")
	if err != nil || s.Atomic != exchange.CmpSwap {
		t.Errorf("-A CMP_AND_SWAP: %v, %v", s.Atomic, err)
	}
}

// Every flag given a bad value is a usage error (exit status 2) that
// names the flag.
func TestTestFlagErrors(t *testing.T) {
	var all strings.Builder
	for _, tc := range []struct {
		test exchange.Test
		args []string
		want string
	}{
		{exchange.WriteBW, []string{"-s", "abc"}, `invalid argument "abc" for "-s, --size"`},
		{exchange.WriteBW, []string{"-s", "0"}, "size"},
		{exchange.WriteBW, []string{"-s", "4294967296"}, "-s, --size"},
		{exchange.WriteBW, []string{"-n", "-1"}, `"-n, --iters"`},
		{exchange.WriteLat, []string{"-n", "4"}, "-n 4: at least 5 iterations, as perftest's"},
		{exchange.WriteBW, []string{"-n", "0"}, "-n 0: at least 5 iterations"},
		{exchange.WriteBW, []string{"-q", "0"}, "QP"},
		{exchange.WriteBW, []string{"-c", "XRC"}, "-c XRC: perftest's XRC (eXtended Reliable Connected) QPs are not offered"},
		{exchange.WriteBW, []string{"-c", "RCX"}, "-c: invalid connection type"},
		{exchange.ReadBW, []string{"-c", "UC"}, "read_bw takes RC, not UC"},
		{exchange.WriteBW, []string{"-c", "UD"}, "write_bw takes RC or UC, not UD"},
		{exchange.AtomicLat, []string{"-c", "UD"}, "atomic_lat takes RC, not UD"},
		{exchange.WriteBW, []string{"-m", "1500"}, "-m: invalid MTU 1500"},
		{exchange.WriteBW, []string{"-p", "70000"}, "-p: port 70000"},
		{exchange.WriteBW, []string{"-i", "0"}, "-i: port 0"},
		{exchange.WriteBW, []string{"-x", "300"}, "-x: GID index 300"},
		{exchange.WriteBW, []string{"-t", "0"}, "TX"},
		{exchange.WriteBW, []string{"--json", "--csv"}, "exclude each other"},
		{exchange.WriteBW, []string{"--gid-family", "5"}, "--gid-family"},
		{exchange.WriteBW, []string{"--gid-subnet", "nonsense"}, "--gid-subnet"},
		{exchange.WriteBW, []string{"--peer-timeout", "0"}, "--peer-timeout"},
		{exchange.SendLat, []string{"--peer-timeout", "9300000000"}, "--peer-timeout: want 1 to 86400 seconds (a day), got 9300000000"},
		{exchange.AtomicBW, []string{"-A", "XOR"}, "-A"},
		{exchange.WriteLat, []string{"-b"}, "bidirectional"},
		{exchange.WriteLat, []string{"-e"}, "cannot wait on completion events"},
		{exchange.WriteLat, []string{"--output", "bandwidth"}, "write_lat reports latency"},
		{exchange.WriteBW, []string{"-u", "0"}, "never time out"},
		{exchange.WriteBW, []string{"--threads", "3", "-q", "2"}, "--threads 3: each thread needs a QP of its own"},
		{exchange.SendBW, []string{"--threads", "2", "-g"}, "--threads: multicast (-g) runs on one QP"},
		{exchange.ReadBW, []string{"--threads", "300"}, "--threads 300: at most 256"},
		{exchange.AtomicBW, []string{"--threads", "0"}, "--threads 0: want 1 or more"},
		{exchange.WriteLat, []string{"--threads", "2"}, "unknown flag: --threads"},
		{exchange.ReadLat, []string{"-u", "32"}, "out of range 1-31"},
		{exchange.SendBW, []string{"--output", "latency"}, "send_bw reports bandwidth or message_rate"},
		{exchange.ReadBW, []string{"--output", "gbits"}, "want bandwidth, message_rate or latency"},
		{exchange.ReadLat, []string{"--output", "latency", "--json"}, "excludes --json"},
		{exchange.WriteBW, []string{"--no-such-flag"}, "unknown flag"},
		{exchange.WriteBW, []string{"-w", "-1"}, "must be 0 (none) or more, got -1"},
		{exchange.SendBW, []string{"-y", "NaN"}, "got NaN"},
		{exchange.ReadLat, []string{"--limit_p99", "-0.5"}, "got -0.5"},
		{exchange.WriteBW, []string{"-w", "100", "--run_infinitely"}, "--run_infinitely has none"},
		{exchange.WriteLat, []string{"-w", "100"}, "unknown shorthand flag: 'w'"},
		{exchange.WriteBW, []string{"--limit_lat", "3"}, "unknown flag: --limit_lat"},
		{exchange.WriteBW, []string{"--use-srq"}, "unknown flag: --use-srq"},
		{exchange.ReadBW, []string{"--ipv6", "--gid-family", "4"}, "ask for different families"},
		{exchange.SendLat, []string{"-N"}, "unknown shorthand flag: 'N'"},
		{exchange.WriteBW, []string{"--burst_size", "8"}, "--burst_size needs --rate_limit"},
		{exchange.WriteBW, []string{"--rate_limit", "-1"}, "want a rate above 0"},
		{exchange.SendBW, []string{"--rate_limit", "10", "--rate_units", "G"}, "want M (MiB/s), g (Gbit/s) or p"},
		{exchange.ReadBW, []string{"--rate_limit", "10", "--rate_limit_type", "HW"}, "(SW) only"},
		{exchange.WriteLat, []string{"--rate_limit", "1"}, "unknown flag: --rate_limit"},
		{exchange.WriteBW, []string{"--reversed", "-b"}, "--reversed is for a one-way bandwidth test"},
		{exchange.SendLat, []string{"--reversed"}, "unknown flag: --reversed"},
		{exchange.SendBW, []string{"--flow_label", "1,0x100000"}, `"0x100000" is not a flow label, a number from 0 to 0xfffff`},
		{exchange.ReadBW, []string{"--flow_label", "x"}, `"x" is not a flow label`},
		{exchange.WriteBW, []string{"-R", "--flow_label", "1"}, "rdma_cm resolves the path"},
		{exchange.ReadLat, []string{"-L", "3"}, "unknown shorthand flag: 'L'"},
		{exchange.WriteLat, []string{"-C"}, "-C: gorperf times with the monotonic clock"},
		{exchange.SendLat, []string{"-U", "--csv"}, "CSV has one row a size"},
		{exchange.ReadBW, []string{"-U"}, "unknown shorthand flag: 'U'"},
		{exchange.SendBW, []string{"-R", "-c", "UD", "--pkey_index", "1"}, "--pkey_index only without -R"},
		{exchange.SendBW, []string{"--perform_warm_up"}, "unknown flag: --perform_warm_up: only write-bw, read-bw and atomic-bw have it; perftest's ib_send_bw accepts it and does nothing with it"},
		{exchange.WriteBW, []string{"--ipv"}, "option '--ipv' is ambiguous; possibilities: --ipv6 --ipv6-addr"},
		{exchange.ReadLat, []string{"--mr_per_qp"}, "unknown flag: --mr_per_qp"},
		{exchange.SendLat, []string{"--latency_gap", "1000001"}, "at most 1000000 µs"},
		{exchange.WriteBW, []string{"--retry_count", "8"}, "--retry_count 8: want 0 to 7"},
		{exchange.SendBW, []string{"-X", "1"}, "-X picks the interrupt of completion events: add -e"},
		{exchange.SendBW, []string{"-e", "--vector", "-2"}, "-X: completion vector -2"},
		{exchange.WriteBW, []string{"--latency_gap", "10"}, "unknown flag: --latency_gap"},
		{exchange.WriteBW, []string{"--perform_warm_up", "--write_with_imm"}, "writes with immediate data"},
		{exchange.SendLat, []string{"-D", "4", "-f", "2"}, "leaves nothing of 4 s to measure"},
		// -D 0 was read as no -D: a run of -n iterations, exit 0.
		{exchange.WriteBW, []string{"-D", "0", "-s", "4096"}, "-D 0: want a duration of 1 second or more, as perftest's (leave out -D for a run of -n iterations)"},
		{exchange.SendLat, []string{"--duration", "0"}, "-D 0: want a duration of 1 second or more"},
		{exchange.ReadBW, []string{"--duration=0", "--run_infinitely"}, "(leave out -D for a report every 5 s)"},
		{exchange.WriteBW, []string{"-D", "-1"}, `invalid argument "-1" for "-D, --duration"`},
		{exchange.AtomicBW, []string{"-D", "3s"}, `invalid argument "3s" for "-D, --duration"`},
		{exchange.WriteBW, []string{"--report-both"}, "add -b"},
		{exchange.SendBW, []string{"--report_both", "-b", "--csv"}, "CSV and --output have one figure a size"},
		{exchange.WriteLat, []string{"--report-both"}, "unknown flag: --report-both"},
		{exchange.ReadBW, []string{"--write_with_imm"}, "unknown flag: --write_with_imm"},
		{exchange.WriteBW, []string{"--send_with_imm"}, "unknown flag: --send_with_imm"},
		{exchange.WriteBW, []string{"--write_with_imm", "-r", "0"}, "RX depth 0 for write_bw"},
		{exchange.WriteBW, []string{"--source_ip", "198.18.0.1", "-x", "1"}, "leave out -x and --gid-subnet"},
		{exchange.WriteBW, []string{"--source_ip", "198.18.0"}, "--source_ip: ParseAddr"},
		// -x names the GID: the flags of the automatic choice beside it
		// would be ignored.
		{exchange.WriteBW, []string{"-x", "3", "--gid-subnet", "10.0.0.0/8", "--gid-netdev", "eth9", "--gid-family", "6"},
			"-x 3 names the GID: leave it out, or leave out --gid-family, --gid-subnet and --gid-netdev (for the automatic choice)"},
		{exchange.SendLat, []string{"-x", "0", "--bind_source_ip", "198.18.0.2", "--gid-netdev", "eth0"}, "leave out --gid-netdev (for"},
		// The GID of --source_ip's address (or --bind_source_ip's) cannot
		// be of another family, nor on another netdev than its zone's.
		{exchange.WriteBW, []string{"--source_ip", "198.18.0.1", "--gid-family", "6"}, "--source_ip 198.18.0.1 is an IPv4 address, and --gid-family 6 asks for an IPv6 GID: give one"},
		{exchange.SendBW, []string{"--source_ip", "fd00::2", "--gid-family", "4"}, "is an IPv6 address, and --gid-family 4 asks for an IPv4 GID"},
		{exchange.ReadLat, []string{"--bind_source_ip", "198.18.0.2", "--ipv6"}, "--bind_source_ip 198.18.0.2 is an IPv4 address, and --ipv6 asks for an IPv6 GID: the GID follows --bind_source_ip unless -x or --gid-subnet picks it"},
		{exchange.WriteLat, []string{"--source_ip", "fe80::1%eth0", "--gid-netdev", "eth1"}, "--source_ip fe80::1%eth0 is an address of eth0, and --gid-netdev asks for a GID of eth1"},
		{exchange.SendBW, []string{"-g", "-c", "RC"}, "multicast is for the send tests over UD"},
		{exchange.SendBW, []string{"-g", "-q", "2", "-s", "512"}, "(not 2 QPs)"},
		{exchange.SendBW, []string{"-g", "-b", "-s", "512"}, "(not bidirectional)"},
		{exchange.SendLat, []string{"-g", "-M", "198.18.0.1"}, "-M 198.18.0.1 is not a multicast address"},
		{exchange.SendBW, []string{"-g", "-M", "255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:256", "-s", "512"}, "byte 16, \"256\""},
		{exchange.SendBW, []string{"-g", "-M", "239.255.0", "-s", "512"}, "-M: ParseAddr"},
		{exchange.WriteBW, []string{"-g"}, "unknown shorthand flag: 'g'"},
		{exchange.WriteBW, []string{"--mmap-offset", "4096"}, "add --mmap"},
		{exchange.ReadBW, []string{"--mmap", "f", "--mmap-offset", "100"}, "--mmap-offset 100: want 0 or more, a multiple of the page size"},
		{exchange.SendLat, []string{"--mmap", "f", "--use_hugepages"}, "choose one"},
		{exchange.SendBW, []string{"--payload_file_path", "f", "--validate"}, "leave out --payload_file_path"},
		{exchange.WriteBW, []string{"--bind_source_ip", "198.18.0.2", "--source_ip", "198.18.0.3"}, "give one"},
		{exchange.ReadLat, []string{"--bind_source_ip", "198.18.0"}, "--bind_source_ip: ParseAddr"},
		{exchange.WriteLat, []string{"--payload-file-path", "/nonexistent/payload"}, "--payload_file_path: open /nonexistent/payload: no such file or directory"},
		{exchange.ReadLat, []string{"--ipv6_addr", "--bind_source_ip", "198.18.0.2"}, "--bind_source_ip 198.18.0.2 is an IPv4 address"},
		{exchange.WriteLat, []string{"-y", "1"}, "-y is --limit_msgrate, which only write-bw, read-bw, send-bw and atomic-bw have"},
		{exchange.ReadBW, []string{"--limit_p99", "3"}, "unknown flag: --limit_p99: only write-lat, read-lat, send-lat and atomic-lat have it"},
		{exchange.SendBW, []string{"--odp"}, "perftest's --odp (on-demand paging"},
		{exchange.WriteBW, []string{"-z"}, "perftest's -z, --comm_rdma_cm"},
		{exchange.ReadLat, []string{"--use-null-mr"}, "only mlx5 implements null memory regions"},
		{exchange.WriteBW, []string{"--use_cuda", "0"}, "accelerator or device memory"},
		{exchange.SendBW, []string{"-B", "00:11:22:33:44:55"}, "raw Ethernet tests"},
		// perftest's -j is --source_ip, a name gorperf has for another flag.
		{exchange.WriteBW, []string{"-j", "198.18.0.2"}, "perftest's -j, --source_ip belongs to perftest's raw Ethernet tests"},
		{exchange.SendBW, []string{"--inline_recv", "64"}, "experimental verbs of Mellanox OFED"},
		{exchange.WriteBW, []string{"--cqe_poll", "16"}, "up to 64 completions a poll"},
		{exchange.SendBW, []string{"--connectionless"}, "run a gorperf -g pair"},
		{exchange.ReadLat, []string{"--tph_mem", "pm"}, "PCIe TLP processing hints"},
		{exchange.WriteBW, []string{"--unsolicited_write"}, "EFA direct-verbs"},
		{exchange.WriteLat, []string{"--com_rdma_cm"}, "the spelling of perftest's help"},
		{exchange.WriteBW, []string{"--pin_cores", "1", "--numa_node", "0"}, "--pin_cores and --numa_node both choose the CPUs: give one"},
		{exchange.SendLat, []string{"--numa_node", "0", "--disable_numa"}, "choose one"},
		{exchange.ReadBW, []string{"--pin_cores", "3-1"}, `--pin_cores: CPU list "3-1": the range "3-1" runs backwards`},
		{exchange.AtomicLat, []string{"--pin-cores", "0,x"}, `"x" is not a CPU number`},
		{exchange.WriteLat, []string{"--numa_node", "-2"}, "--numa_node -2: want a node number"},
		{exchange.WriteBW, []string{"--recv_post_list", "8"}, "not write_bw without immediate data"},
		{exchange.SendBW, []string{"--recv-post-list", "600", "-r", "512"}, "receive post list 600 exceeds the RX depth 512"},
		{exchange.ReadBW, []string{"--recv_post_list", "8"}, "unknown flag: --recv_post_list"},
		{exchange.SendLat, []string{"--recv_post_list", "8"}, "unknown flag: --recv_post_list"},
		{exchange.WriteBW, []string{"-s", "64k"}, "upper case"},
		{exchange.ReadBW, []string{"-s", "8G"}, "want a number of bytes"},
		{exchange.WriteBW, []string{"-R", "--threads", "2", "-p", "65535"}, "give -p 65534 or less"},
		{exchange.ReadLat, []string{"--run_infinitely"}, "only write-bw, read-bw, send-bw and atomic-bw have it"},
		// -o is the reads' and atomics', as perftest's ("only available
		// on READ verb"): elsewhere it was taken and ignored.
		{exchange.WriteBW, []string{"-o", "4"}, "-o is --outs, which only read-bw, read-lat, atomic-bw and atomic-lat have"},
		{exchange.SendLat, []string{"--outs", "4"}, "unknown flag: --outs: only read-bw, read-lat, atomic-bw and atomic-lat have it"},
		// -r is the tests' that can post receives: perftest refuses it for
		// reads and atomics, where it sized a receive queue never used.
		{exchange.ReadBW, []string{"-r", "64"}, "-r is --rx-depth, which only write-bw, write-lat, send-bw and send-lat have"},
		{exchange.AtomicLat, []string{"--rx-depth", "64"}, "unknown flag: --rx-depth: only write-bw"},
		// -Q 0 ran as 1; perftest's range is 1 to 1024, given whatever -t.
		{exchange.WriteBW, []string{"-Q", "0"}, "-Q 0: CQ moderation is 1 to 1024 completions, as perftest's"},
		{exchange.SendBW, []string{"-Q", "1025", "-t", "2000"}, "-Q 1025: CQ moderation is 1 to 1024"},
		// -l 0 ran as 1.
		{exchange.WriteBW, []string{"-l", "0"}, "-l 0: want a post list of 1 request or more"},
		// A flag given twice: perftest's "Duplicated argument", where
		// the last was taken.
		{exchange.WriteBW, []string{"-s", "64", "-s", "4096"}, `invalid argument "4096" for "-s, --size" flag: given twice (first "64")`},
		{exchange.SendLat, []string{"--size", "64", "-s", "64"}, "given twice"},
		{exchange.ReadBW, []string{"-b", "--bidirectional"}, `invalid argument "true" for "-b, --bidirectional" flag: given twice`},
		{exchange.WriteLat, []string{"--tclass", "3", "--tclass=4"}, "given twice"},
		// --tclass and -T set one value: the last was taken.
		{exchange.WriteBW, []string{"--tclass", "96", "-T", "32"}, `invalid argument "32" for "-T, --tos" flag: --tclass gave this value already ("96")`},
		{exchange.SendLat, []string{"--tos", "32", "--tclass", "32"}, `for "--tclass" flag: --tos gave this value already`},
		// Out of range: strconv's bare "value out of range" before.
		{exchange.WriteBW, []string{"-T", "300"}, `invalid argument "300" for "-T, --tos" flag: want a number from 0 to 255`},
		{exchange.SendBW, []string{"--tclass", "256"}, `"--tclass" flag: want a number from 0 to 255`},
		{exchange.ReadLat, []string{"-S", "16"}, `"-S, --sl" flag: want a number from 0 to 15`},
		{exchange.SendBW, []string{"--pkey_index", "70000"}, "want a number from 0 to 65535"},
		{exchange.ReadBW, []string{"-o", "256"}, "want a number from 0 to 255"},
		{exchange.WriteBW, []string{"-q", "-1"}, `invalid argument "-1" for "-q, --qp" flag: want a number from 0 to 65535`},
		// perftest's PP rate limiter's, not its raw Ethernet tests'.
		{exchange.SendBW, []string{"--typical_pkt_size", "1024"}, "perftest's --typical_pkt_size (the packet size of a burst of its PP rate limiter) is not offered: it only works with perftest's hardware packet-pacing rate limiter"},
		{exchange.AtomicBW, []string{"-s", "16"}, "atomic_bw moves 8 bytes: -s must be 8 or left out, and -a has no sizes to sweep"},
		{exchange.AtomicLat, []string{"-a"}, "atomic_lat moves 8 bytes: -s must be 8 or left out, and -a has no sizes to sweep"},
	} {
		// The whole message a user sees goes to the golden file.
		f, _, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, append(append([]string{testCmdName(tc.test)}, tc.args...), "host"))
		fmt.Fprintf(&all, "$ gorperf %s %s host\nexit %d\n%s\n", testCmdName(tc.test), strings.Join(tc.args, " "), code, errOut)
		_, o, err := parseTest(t, tc.test, append(tc.args, "host")...)
		if err == nil && o != nil {
			_, err = o.local()
		}
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != exitUsage {
			t.Errorf("%v %v: %v (%T), want a usage error", tc.test, tc.args, err, err)
			continue
		}
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
			t.Errorf("%v %v: %q lacks %q", tc.test, tc.args, err, tc.want)
		}
	}
	// The other commands' flags too.
	for _, args := range [][]string{
		{"serve", "--max-memory", "lots"},
		{"serve", "-p", "0"},
		{"serve", "--peer-timeout", "0"},
		{"serve", "--peer-timeout", "86401"},
		{"serve", "--retry_count", "9"},
		{"serve", "-u", "0"},
		{"serve", "-X", "-1"},
		{"serve", "--mmap-offset", "-4096", "--mmap", "f"},
		{"serve", "--rate_limit", "-5"},
		{"serve", "--pin_cores", "0-"},
		{"serve", "-j", "198.18.0.2"},
		{"serve", "-i", "0"},
		{"serve", "-x", "256"},
		{"serve", "--gid-family", "5"},
		{"serve", "-x", "1", "--gid-family", "4"},
		{"serve", "-p", "20000", "--port", "20001"},      // given twice
		{"serve", "--max-qps", "70000"},                  // a uint16
		{"loopback", "write-bw", "-n", "20", "-n", "30"}, // given twice
		{"doctor", "--tclass", "300"},
		{"doctor", "-i", "-1"},
		{"devices", "--bogus"},
		{"loopback", "write-bw", "-s", "x"},
		{"loopback", "write-bw", "extra-arg"},
	} {
		f, _, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, args)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
		fmt.Fprintf(&all, "$ gorperf %s\nexit %d\n%s\n", strings.Join(args, " "), code, errOut)
	}
	golden(t, "flag_errors.golden", []byte(all.String()))
	// -R with UC is a mistake of the command line, as -c DC is
	// (TestUCRdmaCMIsUsage).
	if _, _, err := parseTest(t, exchange.WriteBW, "-R", "-c", "UC", "h"); !errors.As(err, new(*usageError)) {
		t.Errorf("-R -c UC: %v, want a usage error", err)
	}
}

// TestPerftestConnTypes: perftest's connection types that gorperf lacks
// (-c DC, XRC, SRD, RawEth, in any case) are refused with the reason and
// gorperf's types, as its left-out flags are, not as a typo.
func TestPerftestConnTypes(t *testing.T) {
	for _, tc := range []struct {
		test exchange.Test
		c    string
		want string
	}{
		{exchange.WriteBW, "DC", "-c DC: perftest's DC (Dynamically Connected) QPs are made with a vendor's direct verbs (mlx5dv or hnsdv), which gorperf does not offer"},
		{exchange.AtomicLat, "dc", "-c dc: perftest's DC (Dynamically Connected)"},
		{exchange.SendBW, "XRC", "-c XRC: perftest's XRC (eXtended Reliable Connected) QPs are not offered: soft-RoCE, on which gorperf is tested, has no XRC"},
		{exchange.ReadLat, "SRD", "-c SRD: perftest's SRD (EFA's Scalable Reliable Datagram) QPs are made with EFA's direct verbs (efadv)"},
		{exchange.SendLat, "RawEth", "-c RawEth: perftest's RawEth is the connection type of its raw Ethernet tests"},
	} {
		_, _, err := parseTest(t, tc.test, "-c", tc.c, "host")
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v -c %s: %v (%T), want a usage error", tc.test, tc.c, err, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.HasSuffix(msg, "; gorperf's are RC, UC and UD, as the test allows") {
			t.Errorf("%v -c %s: %q, want it to contain %q and to end with gorperf's types", tc.test, tc.c, msg, tc.want)
		}
	}
	// gorperf's own types are still taken in any case.
	if s, _, err := parseTest(t, exchange.SendBW, "-c", "ud", "host"); err != nil || s.ConnType != ibverbs.QPTypeUD {
		t.Errorf("-c ud: %v, %v", s.ConnType, err)
	}
}

// TestPerftestOnlyFlags: the flags flagError calls perftest's alone are
// flags of no gorperf test, so that the explanation never hides a flag
// gorperf has gained since; and each letter names a flag of the table.
func TestPerftestOnlyFlags(t *testing.T) {
	for _, loopback := range []bool{false, true} {
		for tt := exchange.WriteBW; tt <= exchange.AtomicLat; tt++ {
			f := newCmdTest(nil, tt, loopback, nil).Flags()
			for name := range perftestOnly {
				if fl := f.Lookup(name); fl != nil {
					t.Errorf("perftestOnly has --%s, which %v has (--%s)", name, tt, fl.Name)
				}
			}
			for c := range perftestShort {
				if fl := f.ShorthandLookup(c); fl != nil {
					t.Errorf("perftestShort has -%s, which %v has (--%s)", c, tt, fl.Name)
				}
			}
			for c := range perftestLetterOnly {
				if fl := f.ShorthandLookup(c); fl != nil {
					t.Errorf("perftestLetterOnly has -%s, which %v has (--%s)", c, tt, fl.Name)
				}
				if _, ok := perftestShort[c]; ok {
					t.Errorf("-%s is in perftestShort and perftestLetterOnly", c)
				}
			}
		}
	}
	for c, long := range perftestShort {
		if _, ok := perftestOnly[long]; !ok {
			t.Errorf("-%s names --%s, which perftestOnly lacks", c, long)
		}
	}
}

// TestIPv6AddrIPv4Server: --ipv6-addr with a server given as an IPv4
// address is refused before anything is opened.
func TestIPv6AddrIPv4Server(t *testing.T) {
	_, o, err := parseTest(t, exchange.SendBW, "--ipv6-addr", "198.18.0.1")
	if err == nil {
		_, err = o.local()
	}
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "the server 198.18.0.1 is an IPv4 address") {
		t.Errorf("got %v, want a usage error naming the IPv4 server", err)
	}
	if _, o, err := parseTest(t, exchange.SendBW, "--ipv6-addr", "::ffff:198.18.0.1"); err != nil {
		t.Fatal(err)
	} else if _, err := o.local(); err == nil || !strings.Contains(err.Error(), "IPv4 address") {
		t.Errorf("an IPv4-mapped server: %v, want refused", err)
	}
}

// TestTestVersionFlag: a test's -V prints gorperf's version and runs
// nothing, as perftest's does.
func TestTestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"write-bw", "-V"}, {"loopback", "read-lat", "--version"}, {"send-lat", "-V", "198.18.0.1"}} {
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != 0 || out.String() != "gorperf "+Version+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// TestPerftestSpellings: perftest's misspelled --report-histogrm is -H, and
// perftest 26.04's --data_validation is --validate.
func TestPerftestSpellings(t *testing.T) {
	if _, o, err := parseTest(t, exchange.SendLat, "--report-histogrm", "h"); err != nil || !o.Sorted {
		t.Errorf("--report-histogrm: %v, -H %v", err, o != nil && o.Sorted)
	}
	if s, _, err := parseTest(t, exchange.WriteBW, "--data_validation", "h"); err != nil || !s.ValidateData {
		t.Errorf("--data_validation: %v, validate %v", err, s.ValidateData)
	}
}

// TestEmptyServerArgument: an empty server argument ("$SERVER" unset) is
// a usage error, exit 2, with --json's document too; it started a server,
// waiting for a client that was never coming.
func TestEmptyServerArgument(t *testing.T) {
	for _, args := range [][]string{{"write-bw", ""}, {"send-lat", "-s", "64", " ", "--json"}} {
		f, out, errOut := newTestFactory(nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := run(ctx, f, args)
		cancel()
		if code != exitUsage || !strings.Contains(errOut.String(), "the server argument is empty (an unset variable?)") {
			t.Errorf("%q: exit %d, want %d; stderr:\n%s", args, code, exitUsage, errOut)
		}
		if strings.Contains(errOut.String(), "waiting for a client") {
			t.Errorf("%q: started a server:\n%s", args, errOut)
		}
		if args[len(args)-1] == "--json" && !strings.Contains(out.String(), `"code": "usage"`) {
			t.Errorf("%q: JSON:\n%s", args, out)
		}
	}
}

// TestInlineDefaults: the inline size is perftest's default
// (ctx_set_max_inline): 220 bytes for write-lat, 236 for send-lat over
// RC or UC and 188 over UD (-g's too); send-lat had write-lat's 220. The
// other tests send nothing inline unless -I says so.
func TestInlineDefaults(t *testing.T) {
	for _, tc := range []struct {
		test exchange.Test
		args []string
		want uint32
	}{
		{exchange.WriteLat, nil, 220},
		{exchange.WriteLat, []string{"-c", "UC"}, 220},
		{exchange.WriteLat, []string{"--write_with_imm"}, 220},
		{exchange.SendLat, nil, 236},
		{exchange.SendLat, []string{"-c", "UC"}, 236},
		{exchange.SendLat, []string{"-c", "ud"}, 188},
		{exchange.SendLat, []string{"-g"}, 188},
		{exchange.SendLat, []string{"-c", "UD", "-I", "64"}, 64},
		{exchange.SendBW, nil, 0},
		{exchange.SendBW, []string{"-c", "UD"}, 0},
		{exchange.WriteBW, nil, 0},
		{exchange.ReadLat, nil, 0},
		{exchange.AtomicLat, nil, 0},
	} {
		s, _, err := parseTest(t, tc.test, append(tc.args, "host")...)
		if err != nil {
			t.Fatalf("%v %q: %v", tc.test, tc.args, err)
		}
		if s.Inline != tc.want {
			t.Errorf("%v %q: inline %d, want %d", tc.test, tc.args, s.Inline, tc.want)
		}
	}
}
