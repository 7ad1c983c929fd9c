//go:build linux && cgo

package cli

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestSizeSuffixes: -s takes perftest's K and M (upper case, 1024 and
// 1048576) and its strtol's bases; `gorperf write-bw -s 64K` was a usage
// error where ib_write_bw -s 64K sends 65536 bytes. A lower-case k, which
// perftest's strtol stops at (64 bytes for 64k), and any other suffix
// are refused, not read as a smaller size.
func TestSizeSuffixes(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want uint32
	}{
		{"64K", 65536},
		{"1M", 1 << 20},
		{"8M", 8 << 20},
		{"4096", 4096},
		{"0x10K", 16 << 10},
		{"1K", 1024},
	} {
		s, _, err := parseTest(t, exchange.WriteBW, "-s", tc.arg, "h")
		if err != nil || s.Size != tc.want {
			t.Errorf("-s %s: size %d, %v; want %d", tc.arg, s.Size, err, tc.want)
		}
	}
	// Loopback's flags are the tests' own.
	f, _, _ := newTestFactory(nil, nil)
	var got *testOptions
	cmd := newCmdTest(f, exchange.SendBW, true, func(o *testOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-s", "2K"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err != nil || got.Size != 2048 {
		t.Errorf("loopback send-bw -s 2K: %v, size %v", err, got)
	}
	for _, tc := range []struct{ arg, want string }{
		{"64k", "upper case"},
		{"1G", "want a number of bytes"},
		{"K", "want a number of bytes"},
		{"-1K", "want a number of bytes"},
		{"4096M", "4096M is more than 4294967295 bytes"},
		{"4194304K", "more than 4294967295 bytes"},
		{"4294967296", "more than 4294967295 bytes"},
	} {
		_, _, err := parseTest(t, exchange.WriteBW, "-s", tc.arg, "h")
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `for "-s, --size" flag`) {
			t.Errorf("-s %s: %v, want a usage error of -s with %q", tc.arg, err, tc.want)
		}
	}
}

// TestCQModClamped: a -Q above the TX depth, given or default, is lowered
// to it, as perftest's force_dependecies does, silently; it was refused
// ("CQ moderation 500 exceeds the TX depth 128").
func TestCQModClamped(t *testing.T) {
	for _, tc := range []struct {
		test      exchange.Test
		args      []string
		tx, cqmod uint32
	}{
		{exchange.WriteBW, []string{"-Q", "500", "-t", "128"}, 128, 128},
		{exchange.WriteBW, []string{"-Q", "1024"}, 128, 128},
		{exchange.SendBW, []string{"-s", "64", "-Q", "64", "-t", "16"}, 16, 16},
		{exchange.ReadBW, []string{"-Q", "8", "-t", "16"}, 16, 8}, // within: kept
		{exchange.SendLat, []string{"-Q", "10"}, 1, 1},
		{exchange.WriteBW, []string{"-s", "64", "-l", "8", "-Q", "16", "-t", "8"}, 8, 8},
	} {
		s, _, err := parseTest(t, tc.test, append(tc.args, "h")...)
		if err != nil || s.TXDepth != tc.tx || s.CQModeration != tc.cqmod {
			t.Errorf("%v %v: tx %d cqmod %d, %v; want %d %d", tc.test, tc.args, s.TXDepth, s.CQModeration, err, tc.tx, tc.cqmod)
		}
	}
}

// TestMarginWithoutDuration: -f without -D, or with --run_infinitely, is
// taken and leaves nothing out, as perftest's (whose margin only a run of
// fixed duration uses); it was a usage error.
func TestMarginWithoutDuration(t *testing.T) {
	for _, tc := range []struct {
		test   exchange.Test
		args   []string
		margin uint32
	}{
		{exchange.WriteBW, []string{"-f", "1"}, 0},
		{exchange.SendLat, []string{"-f", "2", "-n", "100"}, 0},
		{exchange.ReadBW, []string{"-f", "1", "--run_infinitely"}, 0},
		{exchange.ReadBW, []string{"-f", "1", "--run_infinitely", "-D", "2"}, 0},
		{exchange.WriteBW, []string{"-f", "1", "-D", "8"}, 1}, // with -D it counts
	} {
		s, _, err := parseTest(t, tc.test, append(tc.args, "h")...)
		if err != nil || s.Margin != tc.margin {
			t.Errorf("%v %v: margin %d, %v; want %d", tc.test, tc.args, s.Margin, err, tc.margin)
		}
	}
}

// TestDeepRXDepth: over UD and UC the send tests' (and the writes with
// immediate data) default RX depth is -n, at most 16000, as perftest's
// force_dependecies sets it, where gorperf kept 512; within what serve
// accepts with its default limits (a depth of 8192, and the memory it
// counts) and a receive CQ, depth × QPs, that soft-RoCE can make (32767
// entries), and never below 512. A -r given, -D, RC and a write without
// receives keep their depth.
func TestDeepRXDepth(t *testing.T) {
	for _, tc := range []struct {
		test exchange.Test
		args []string
		rx   uint32
	}{
		{exchange.SendBW, []string{"-c", "UD"}, 5000},
		{exchange.SendBW, []string{"-c", "UC"}, 5000},
		{exchange.SendBW, []string{"-g", "-s", "1024"}, 5000}, // -g is UD
		{exchange.SendLat, []string{"-c", "UD"}, 1000},
		{exchange.SendLat, []string{"-c", "uc", "-n", "3000"}, 3000},
		{exchange.WriteBW, []string{"-c", "UC", "--write_with_imm"}, 5000},
		{exchange.WriteLat, []string{"-c", "UC", "--write_with_imm", "-n", "600"}, 600},
		{exchange.SendBW, []string{"-c", "UD", "-n", "20000"}, 8192},   // perftest's 16000, serve's 8192
		{exchange.SendBW, []string{"-c", "UC", "-q", "8", "-b"}, 4095}, // 64 KiB × 8 QPs × 2 directions: 4 GiB at 4096; a CQ of 32767 at 4095
		{exchange.SendBW, []string{"-c", "UC", "-a"}, 512},             // 8 MiB: 4 GiB at 512 already
		{exchange.SendBW, []string{"-c", "UC", "-a", "-q", "2"}, 512},  // over even at 512: left to the server, as before
		{exchange.SendBW, []string{"-c", "UC", "--threads", "2", "-q", "8"}, 5000},
		{exchange.SendBW, []string{"-c", "UD", "-q", "8"}, 4095},                    // a receive CQ of 8 × 4095 entries: soft-RoCE's 32767 at most
		{exchange.SendBW, []string{"-c", "UD", "-q", "4", "-n", "20000"}, 8191},     // and 32764
		{exchange.SendBW, []string{"-c", "UC", "--threads", "4", "-q", "32"}, 2048}, // 64 KiB × 8 QPs a thread × 4 threads: 4 GiB at 2048
		{exchange.SendBW, []string{"-c", "UD", "-q", "64"}, 512},                    // never below 512
		{exchange.SendBW, []string{"-c", "UD", "-n", "300"}, 300},                   // at most -n
		{exchange.SendBW, []string{"-c", "UD", "-n", "512"}, 512},
		{exchange.SendBW, []string{"-c", "UD", "-r", "512"}, 512},   // given
		{exchange.SendBW, []string{"-c", "UD", "-r", "1024"}, 1024}, // given
		{exchange.SendBW, []string{"-c", "UD", "-D", "2"}, 512},     // no iterations
		{exchange.SendBW, []string{"-c", "UC", "--run_infinitely"}, 512},
		{exchange.SendBW, nil, 512}, // RC
		{exchange.WriteBW, []string{"-c", "UC"}, 512},
	} {
		s, _, err := parseTest(t, tc.test, append(tc.args, "h")...)
		if err != nil || s.RXDepth != tc.rx {
			t.Errorf("%v %v: rx %d, %v; want %d", tc.test, tc.args, s.RXDepth, err, tc.rx)
			continue
		}
		// The spec says which depth a server may lower: the deep default's.
		if given := slices.Contains(tc.args, "-r"); given && s.RXDepthDefault || !given && s.RXDepth > defRXDepth && !s.RXDepthDefault {
			t.Errorf("%v %v: RX depth %d, RXDepthDefault %v", tc.test, tc.args, s.RXDepth, s.RXDepthDefault)
		}
		if s.RXDepth <= defRXDepth || s.Threads > 1 {
			continue
		}
		if err := s.CheckLimits(exchange.DefaultLimits()); err != nil {
			t.Errorf("%v %v: serve's default limits refuse RX depth %d: %v", tc.test, tc.args, s.RXDepth, err)
		}
		if n := uint64(s.RXDepth) * uint64(s.NumQPs); n > exchange.MaxRecvCQ {
			t.Errorf("%v %v: a receive CQ of %d entries", tc.test, tc.args, n)
		}
		if s.RXDepth < ucMaxRX && uint64(s.RXDepth) < s.Iterations && !slices.Contains(tc.args, "-r") {
			// Lowered to fit: one more would not.
			s.RXDepth++
			if err := s.CheckLimits(exchange.DefaultLimits()); !errors.Is(err, exchange.ErrOverLimit) && uint64(s.RXDepth)*uint64(s.NumQPs) <= exchange.MaxRecvCQ {
				t.Errorf("%v %v: RX depth %d fits serve's default limits and soft-RoCE's CQ too: %v", tc.test, tc.args, s.RXDepth, err)
			}
		}
	}
}

// TestRdmaCMThreadsPort: with -R each thread's rdma_cm connection takes
// -p plus its number, so -p and --threads that put the last past 65535
// are a usage error, where the thread's port overflowed at run time.
func TestRdmaCMThreadsPort(t *testing.T) {
	_, _, err := parseTest(t, exchange.WriteBW, "-R", "--threads", "4", "-p", "65533", "h")
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-R --threads 4: each thread's rdma_cm connection listens on a port of its own, -p to -p+3") ||
		!strings.Contains(err.Error(), "give -p 65532 or less") {
		t.Errorf("-R --threads 4 -p 65533: %v, want a usage error", err)
	}
	for _, args := range [][]string{
		{"-R", "--threads", "4", "-p", "65532"},
		{"--threads", "4", "-p", "65535"}, // without -R the threads share the control port
		{"-R", "-p", "65535"},
	} {
		if _, _, err := parseTest(t, exchange.WriteBW, append(args, "h")...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestRunInfinitelyBandwidthOnly: --run_infinitely is a flag of the
// bandwidth tests alone, as perftest's ("exists only in BW tests"), so a
// latency test refuses it as a flag other tests have, naming them; it
// took the flag and refused it as an invalid test. -a's help there does
// not name it.
func TestRunInfinitelyBandwidthOnly(t *testing.T) {
	for tt := exchange.WriteBW; tt <= exchange.AtomicLat; tt++ {
		for _, loopback := range []bool{false, true} {
			fs := newCmdTest(nil, tt, loopback, nil).Flags()
			inf, all := fs.Lookup("run_infinitely"), fs.Lookup("all")
			if (inf != nil) == tt.IsLatency() {
				t.Errorf("%v (loopback %v): --run_infinitely %v", tt, loopback, inf != nil)
			}
			// The atomic tests' -a is refused: its help says so alone.
			if strings.Contains(all.Usage, "run_infinitely") == (tt.IsLatency() || tt.IsAtomic()) {
				t.Errorf("%v (loopback %v): -a's help %q", tt, loopback, all.Usage)
			}
		}
	}
	for _, args := range [][]string{{"write-lat", "h", "--run_infinitely"}, {"loopback", "send-lat", "--run-infinitely"}} {
		f, _, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, args)
		if want := "unknown flag: " + args[len(args)-1] + ": only write-bw, read-bw, send-bw and atomic-bw have it"; code != exitUsage || !strings.Contains(errOut.String(), want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, errOut, exitUsage, want)
		}
	}
}

// parseServe parses serve's flags into the serveOptions it returns.
func parseServe(t *testing.T, args ...string) (*serveOptions, error) {
	t.Helper()
	f, _, _ := newTestFactory(nil, nil)
	o := &serveOptions{}
	cmd := newServeCmd(f, o)
	if err := cmd.ParseFlags(args); err != nil {
		return o, err
	}
	return o, nil
}

// TestServeFlagsAsTests: serve takes the tests' spellings of the flags it
// shares with them (--pin-cores, --rate-limit, --payload-file-path were
// unknown flags), their automatic GID's selectors (it had -x alone), and
// range-checks -i and -x before it opens anything: `serve -i 0` exited 1
// from the device, now 2 as a test's does.
func TestServeFlagsAsTests(t *testing.T) {
	payload := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payload, []byte("0xaaaaaaaa"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseServe(t, "--pin-cores", "0", "--rate-limit", "2", "--rate-units", "M", "--payload-file-path", payload,
		"--gid-subnet", "198.18.0.0/15", "--gid-family", "4", "--gid-netdev", "eth9", "--retry-count", "3", "--bind-source-ip", "198.18.0.1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := o.test.local()
	if err != nil {
		t.Fatal(err)
	}
	want := ibverbs.GIDRule{Family: 4, Netdev: "eth9", Prefix: netip.MustParsePrefix("198.18.0.0/15")}
	if l.GIDRule != want || len(o.test.cpus) != 1 || l.Rate.Rate != 2 || len(l.Payload) == 0 || l.RetryCount != 3 {
		t.Errorf("serve's Local: rule %+v (want %+v), cpus %v, rate %+v, payload %d bytes, retry %d", l.GIDRule, want, o.test.cpus, l.Rate, len(l.Payload), l.RetryCount)
	}
	if o.test.BindIP != "198.18.0.1" {
		t.Errorf("--bind-source-ip: %q", o.test.BindIP)
	}
	// --source-ip and --ipv6 pick the GID as a test's do.
	if o, err = parseServe(t, "--source-ip", "fd00::2", "--ipv6"); err != nil {
		t.Fatal(err)
	}
	if l, err := o.test.local(); err != nil || l.GIDRule != (ibverbs.GIDRule{Family: 6, Addr: netip.MustParseAddr("fd00::2")}) {
		t.Errorf("--source-ip fd00::2 --ipv6: rule %+v, %v", l.GIDRule, err)
	}
	// --bind_source_ip alone picks the GID of its address, as a test's.
	if o, err = parseServe(t, "--bind_source_ip", "198.18.0.2"); err != nil {
		t.Fatal(err)
	}
	if l, err := o.test.local(); err != nil || l.GIDRule.Addr != netip.MustParseAddr("198.18.0.2") {
		t.Errorf("--bind_source_ip 198.18.0.2: rule %+v, %v", l.GIDRule, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-i", "0"}, "-i: port 0 out of range 1-255"},
		{[]string{"-i", "256"}, "-i: port 256 out of range 1-255"},
		{[]string{"-x", "256"}, "-x: GID index 256 out of range 0-255"},
		{[]string{"-x", "-2"}, "-x: GID index -2 out of range 0-255"},
		{[]string{"--gid-family", "5"}, "--gid-family: want 4 or 6, got 5"},
		{[]string{"--gid-subnet", "nonsense"}, "--gid-subnet"},
		{[]string{"--source_ip", "198.18.0.1", "-x", "1"}, "leave out -x and --gid-subnet"},
		{[]string{"--ipv6", "--gid-family", "4"}, "ask for different families"},
		{[]string{"--ipv6-addr", "--bind_source_ip", "198.18.0.2"}, "--bind_source_ip 198.18.0.2 is an IPv4 address"},
	} {
		f, _, errOut := newTestFactory(nil, nil)
		code := run(context.Background(), f, append([]string{"serve"}, tc.args...))
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	// A prefix with host bits is its subnet, as the header says it.
	o, err = parseServe(t, "--gid-subnet", "198.18.0.1/15")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := o.test.local(); err != nil || l.GIDRule.Prefix != netip.MustParsePrefix("198.18.0.0/15") {
		t.Errorf("--gid-subnet 198.18.0.1/15: rule %+v, %v; want the prefix 198.18.0.0/15", l.GIDRule, err)
	}
}

// TestGroupHelp: -M's help says what bench's groupOf does: a client joins
// the address after its -M, given or default, unlike perftest's client.
func TestGroupHelp(t *testing.T) {
	f, _, _ := newTestFactory(nil, nil)
	for _, u := range []string{
		newCmdTest(nil, exchange.SendBW, false, nil).Flags().Lookup("MGID").Usage,
		newServeCmd(f, &serveOptions{}).Flags().Lookup("MGID").Usage,
	} {
		if strings.Contains(u, "this side's multicast group") || !strings.Contains(u, "a client's the address after it") || !strings.Contains(u, "given or default") {
			t.Errorf("-M's help: %q", u)
		}
	}
}
