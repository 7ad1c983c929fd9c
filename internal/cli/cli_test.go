package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeDevices is a RoCE device as rxe shows it, and an InfiniBand HCA.
func fakeDevices() []deviceReport {
	return []deviceReport{{
		Name: "rxe0", NodeGUID: "505400fffe123456", NodeType: "CA", Transport: "InfiniBand", FWVer: "0.0.0", NUMANode: -1,
		Ports: []portReport{{
			Port: 1, State: "ACTIVE", PhysState: "LINK_UP", ActiveMTU: 1024, MaxMTU: 4096,
			LinkLayer: "Ethernet", Gbps: 2.5, Lanes: 1,
			GIDs: []gidReport{
				{Index: 0, GID: "fe80::5054:ff:fe12:3456", Type: "RoCE v2", Netdev: "rxeveth0", IP: "fe80::5054:ff:fe12:3456"},
				{Index: 1, GID: "::ffff:198.18.0.1", Type: "RoCE v2", Netdev: "rxeveth0", IP: "198.18.0.1"},
			},
			DefaultGID: &gidChoice{Index: 1, Reason: "first routable IPv4 RoCE v2 entry"},
		}},
	}, {
		Name: "mlx5_0", NodeGUID: "0c42a10300a1b2c3", NodeType: "CA", Transport: "InfiniBand", FWVer: "28.39.1002", NUMANode: 1,
		Ports: []portReport{{
			Port: 1, State: "ACTIVE", PhysState: "LINK_UP", ActiveMTU: 4096, MaxMTU: 4096,
			LinkLayer: "InfiniBand", Gbps: 103.125, Lanes: 4, LID: 7,
			GIDs: []gidReport{{Index: 0, GID: "fe80::c42:a103:a1:b2c3", Type: "IB"}},
		}},
	}}
}

// testNow is the time of day of newTestFactory's Factory: documents
// written a moment apart are the same.
var testNow = time.Date(2026, 12, 7, 8, 40, 1, 123456789, time.UTC)

// newTestFactory returns a Factory whose output lands in the buffers.
func newTestFactory(devs []deviceReport, err error) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &Factory{
		IO:      &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Devices: func(string) ([]deviceReport, error) { return devs, err },
		Root:    "/nonexistent",
		Now:     func() time.Time { return testNow },
	}, &out, &errOut
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{usageErrorf("bad flag"), 2},
		{fmt.Errorf("wrapped: %w", usageErrorf("bad flag")), 2},
		{&silentError{1}, 1},
		{fmt.Errorf("serving: %w", &interruptedError{"interrupted"}), 130},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		devs       []deviceReport
		err        error
		code       int
		out, stder string // substrings expected
	}{
		{"version", []string{"--version"}, nil, nil, 0, "gorperf dev", ""},
		{"help", []string{"--help"}, nil, nil, 0, "devices", ""},
		{"no args shows help", nil, nil, nil, 0, "Available Commands", ""},
		{"unknown command", []string{"bogus"}, nil, nil, 2, "", `gorperf: unknown command "bogus" for "gorperf"` + "\n"},
		{"typo", []string{"devics"}, nil, nil, 2, "", `gorperf: unknown command "devics" for "gorperf": did you mean devices?`},
		{"prefix", []string{"read"}, nil, nil, 2, "", `did you mean read-bw or read-lat?`},
		{"unknown flag", []string{"devices", "--bogus"}, nil, nil, 2, "", "gorperf: unknown flag: --bogus\nRun 'gorperf devices --help'"},
		{"bad flag value", []string{"doctor", "-i", "x"}, nil, nil, 2, "", "invalid argument"},
		{"negative port", []string{"doctor", "-i", "-1"}, nil, nil, 2, "", "invalid port -1"},
		{"stray argument", []string{"devices", "rxe0"}, nil, nil, 2, "", "takes no arguments"},
		{"runtime error", []string{"devices", "-d", "nope"}, nil, errors.New(`no RDMA device named "nope" (devices: rxe0)`), 1, "", `gorperf: no RDMA device named "nope" (devices: rxe0)`},
		{"no devices", []string{"devices"}, nil, nil, 1, "", "gorperf: no RDMA devices found: load the NIC's RDMA driver"},
		{"devices", []string{"devices"}, fakeDevices(), nil, 0, "rxe0", ""},
		{"doctor fails", []string{"doctor"}, nil, nil, 1, "[FAIL] no RDMA devices found", ""},
		{"doctor json", []string{"doctor", "--json"}, nil, nil, 1, `"level": "fail",
      "message": "no RDMA devices found",`, ""},
		{"doctor json usage", []string{"doctor", "--json", "--bogus"}, nil, nil, 2, `"findings": [],`, "unknown flag: --bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, out, errOut := newTestFactory(tc.devs, tc.err)
			code := run(context.Background(), f, tc.args)
			if code != tc.code {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out)
			}
			if !strings.Contains(errOut.String(), tc.stder) {
				t.Errorf("stderr lacks %q:\n%s", tc.stder, errOut)
			}
			if tc.stder == "" && errOut.Len() > 0 {
				t.Errorf("unexpected stderr:\n%s", errOut)
			}
		})
	}
}

// TestNoJSONWithoutFlag: a command that has no --json (completion)
// writes no JSON document for its usage error, where it wrote a test's.
func TestNoJSONWithoutFlag(t *testing.T) {
	for _, args := range [][]string{{"completion", "--json"}, {"completion", "bash", "--json"}} {
		f, out, errOut := newTestFactory(nil, nil)
		if code := run(context.Background(), f, args); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "unknown flag") {
			t.Errorf("%v: exit status %d, stdout %q, stderr %q; want 2, nothing, the usage error", args, code, out, errOut)
		}
	}
}

func TestDevicesText(t *testing.T) {
	var b bytes.Buffer
	if err := writeDevicesText(&b, fakeDevices()); err != nil {
		t.Fatal(err)
	}
	golden(t, "devices.golden", b.Bytes())
}

func TestDevicesTextNoGID(t *testing.T) {
	d := fakeDevices()[:1]
	d[0].Ports[0].GIDs = nil
	d[0].Ports[0].DefaultGID = nil
	d[0].Ports[0].NoGIDReason = "no GID matches any routable RoCE v2 GID, IPv4 preferred"
	var b bytes.Buffer
	if err := writeDevicesText(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GID table empty", "default GID: none: no GID matches"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &b)
		}
	}
}

func TestDevicesJSON(t *testing.T) {
	f, out, _ := newTestFactory(fakeDevices(), nil)
	if code := run(context.Background(), f, []string{"devices", "--json"}); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	var doc struct {
		SchemaVersion *int `json:"schema_version"`
		Devices       []struct {
			Name, NodeGUID string
			Ports          []struct {
				State      string
				ActiveMTU  int     `json:"active_mtu"`
				SpeedGbps  float64 `json:"speed_gbps"`
				GIDs       []map[string]any
				DefaultGID *struct {
					Index  int
					Reason string
				} `json:"default_gid"`
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.SchemaVersion == nil || *doc.SchemaVersion != 1 {
		t.Errorf("schema_version missing or not 1:\n%s", out)
	}
	if len(doc.Devices) != 2 || doc.Devices[0].Name != "rxe0" {
		t.Fatalf("devices: %+v", doc.Devices)
	}
	p := doc.Devices[0].Ports[0]
	if p.State != "ACTIVE" || p.ActiveMTU != 1024 || p.SpeedGbps != 2.5 || len(p.GIDs) != 2 {
		t.Errorf("port: %+v", p)
	}
	if p.GIDs[1]["ip"] != "198.18.0.1" || p.GIDs[1]["type"] != "RoCE v2" || p.GIDs[1]["netdev"] != "rxeveth0" {
		t.Errorf("GID 1: %v", p.GIDs[1])
	}
	if p.DefaultGID == nil || p.DefaultGID.Index != 1 || p.DefaultGID.Reason == "" {
		t.Errorf("default_gid: %+v", p.DefaultGID)
	}
	if ib := doc.Devices[1].Ports[0]; ib.DefaultGID != nil {
		t.Errorf("InfiniBand port has a default_gid: %+v", ib.DefaultGID)
	}
	// Every key is present even when empty: "gids": [], "default_gid": null.
	var b bytes.Buffer
	if err := writeDevicesJSON(&b, []deviceReport{{Name: "x", Ports: []portReport{{Port: 1}}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"gids": []`, `"default_gid": null`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, &b)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// noAddrs is an Addrs func for hosts without the netdev.
func noAddrs(string) ([]netip.Prefix, error) { return nil, errors.New("no such network interface") }

// TestInterruptedError: a run stopped before it had a result is an
// interruption in the JSON too.
func TestInterruptedError(t *testing.T) {
	if err := (&interruptedError{"interrupted before a client asked for a test"}); errorCode(err) != "interrupted" || !errors.Is(err, context.Canceled) {
		t.Errorf("errorCode(%v) = %q, want interrupted", err, errorCode(err))
	}
	// A server stopped in set-up tells its client so (CodeAborted): the
	// client was not interrupted, its peer was.
	peer := fmt.Errorf("setting up: %w", &exchange.PeerError{Code: exchange.CodeAborted, Text: "the server was interrupted"})
	if got := errorCode(peer); got != "peer" || !errors.Is(peer, context.Canceled) {
		t.Errorf("errorCode(%v) = %q, want peer", peer, got)
	}
	// A peer that went silent (stopped: SIGSTOP, or its host or the
	// network gone) is the peer's failure too, as the docs say, and a
	// peer that closed without a word.
	for _, err := range []error{
		fmt.Errorf("client 198.18.0.2:41234: waiting for the peer's run and its result: %w", &exchange.SilenceError{After: 10 * time.Second}),
		fmt.Errorf("receiving: %w", exchange.ErrPeerClosed),
	} {
		if got := errorCode(err); got != "peer" {
			t.Errorf("errorCode(%v) = %q, want peer", err, got)
		}
	}
}

// TestWantsJSON: every spelling of true that a bool flag takes asks for
// JSON, and the last --json given counts.
func TestWantsJSON(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"write-bw", "--json"}, true},
		{[]string{"write-bw", "--json=true"}, true},
		{[]string{"write-bw", "--json=1"}, true},
		{[]string{"write-bw", "--json=t"}, true},
		{[]string{"write-bw", "--json=T"}, true},
		{[]string{"write-bw", "--json=TRUE"}, true},
		{[]string{"write-bw", "--json=True"}, true},
		{[]string{"write-bw", "--json=false"}, false},
		{[]string{"write-bw", "--json=0"}, false},
		{[]string{"write-bw", "--json", "--json=f"}, false},
		{[]string{"write-bw", "--json=F", "--json"}, true},
		{[]string{"write-bw", "--json=maybe"}, false},
		{[]string{"write-bw", "--", "--json"}, false},
		{[]string{"write-bw"}, false},
	} {
		if got := wantsJSON(nil, tc.args); got != tc.want {
			t.Errorf("wantsJSON(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestMinProcs(t *testing.T) {
	for _, tc := range []struct {
		env       string
		cur, want int
	}{
		{"", 1, 2}, // pinned to one CPU: a second P
		{"", 2, 2},
		{"", 16, 16},
		{"1", 1, 1}, // the user's choice stands
		{"4", 4, 4},
	} {
		if got := minProcs(tc.env, tc.cur); got != tc.want {
			t.Errorf("minProcs(%q, %d) = %d, want %d", tc.env, tc.cur, got, tc.want)
		}
	}
}

// TestInvokedAs: started under a perftest name (a link to gorperf), gorperf
// runs that test; under its own name, or one that only looks like a
// test's, its command line as given.
func TestInvokedAs(t *testing.T) {
	for _, tc := range []struct {
		argv0 string
		args  []string
		want  []string
	}{
		{"/usr/local/bin/ib_write_bw", []string{"-s", "64", "198.18.0.1"}, []string{"ib_write_bw", "-s", "64", "198.18.0.1"}},
		{"ib_atomic_lat", nil, []string{"ib_atomic_lat"}},
		{"/usr/bin/gorperf", []string{"write-bw"}, []string{"write-bw"}},
		{"./write_bw", []string{"-a"}, []string{"-a"}},
		{"ib_ib_write_bw", []string{"-a"}, []string{"-a"}},
		{"ib_write_bw_2", nil, nil},
		{"ib_", nil, nil},
	} {
		if got := invokedAs(tc.argv0, tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("invokedAs(%q, %q) = %q, want %q", tc.argv0, tc.args, got, tc.want)
		}
	}
}
