//go:build linux && cgo

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestServeJSONLines: serve --json writes a document for every test, on
// a line of its own (JSON Lines): a test's result naming its client
// (peer_addr), and a test that failed before it had a result, with the
// test where Admit saw it, the code and the client; one refused (by
// --max-size, say) names the test it asked for, code "refused". The old
// serve wrote indented documents, no peer_addr, and nothing at all for a
// test without a result; then a refused test's document had no test and
// code "failed".
func TestServeJSONLines(t *testing.T) {
	f, out, _ := newTestFactory(nil, nil)
	o := &serveOptions{}
	o.test.JSON, o.test.jsonLines, o.test.Device, o.test.IBPort, o.test.GIDIndex = true, true, "rxe0", 1, -1
	ok := fakeBW()
	ok.Peer = "198.18.0.2:40000"
	o.done(context.Background(), f, ok, nil)
	o.done(context.Background(), f, nil, bench.NameClient("198.18.0.2:40002", &bench.RefusedError{Spec: exchange.TestSpec{Test: exchange.SendBW},
		Err: errors.New("test exceeds the server's limits: message size 1 MiB exceeds this server's maximum of 64 KiB")}))
	// A test Admit took, that failed in its set-up.
	o.mu.Lock()
	o.admitted, o.noted = exchange.TestSpec{Test: exchange.ReadLat}, true
	o.mu.Unlock()
	o.done(context.Background(), f, nil, errors.New("client [2001:2::2]:40004: creating the QPs: cannot allocate memory"))
	// A connection that was no test writes nothing.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one a test:\n%s", len(lines), out)
	}
	want := []struct{ test, peer, code string }{
		{"write_bw", "198.18.0.2:40000", ""},
		{"send_bw", "198.18.0.2:40002", "refused"},
		{"read_lat", "[2001:2::2]:40004", "failed"},
	}
	for i, line := range lines {
		var r report.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v:\n%s", i+1, err, line)
		}
		code := ""
		if r.Error != nil {
			code = r.Error.Code
		}
		w := want[i]
		if r.Role != "server" || r.Test != w.test || r.PeerAddr != w.peer || code != w.code || r.Tool != "gorperf" {
			t.Errorf("line %d: role %q test %q peer_addr %q code %q, want server %q %q %q:\n%s",
				i+1, r.Role, r.Test, r.PeerAddr, code, w.test, w.peer, w.code, line)
		}
		if i > 0 && (r.Device != "rxe0" || r.Port != 1 || r.GIDIndex != -1) {
			t.Errorf("line %d: device %q port %d gid_index %d, want the command line's:\n%s", i+1, r.Device, r.Port, r.GIDIndex, line)
		}
	}
}

// TestClientAddr: the client a served test's failure names, where it
// names one.
func TestClientAddr(t *testing.T) {
	for in, want := range map[string]string{
		"client 198.18.0.2:40002: refused: x": "198.18.0.2:40002",
		"client [2001:2::2]:7: peer: y":       "[2001:2::2]:7",
		"refused: 4 QPs":                      "",
		"client gone: z":                      "",
	} {
		if got := clientAddr(errors.New(in)); got != want {
			t.Errorf("clientAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestServeUsageErrorJSONLine: serve's document of a mistake on its
// command line is on one line too, as its tests' are (JSON Lines); it
// was indented over many.
func TestServeUsageErrorJSONLine(t *testing.T) {
	f, out, errOut := newTestFactory(nil, nil)
	code := run(context.Background(), f, []string{"serve", "--bogus", "--json"})
	var r report.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || code != exitUsage || r.Error == nil || r.Error.Code != "usage" || r.Role != "server" {
		t.Fatalf("exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Errorf("%d lines, want one:\n%s", n, out)
	}
}

// TestPeerClosedCode: a peer that closed the control connection (it
// exited or was killed: exchange.ErrPeerClosed, as bench says of it at
// any step) is the JSON's code "peer", as getting-started says of a
// peer that failed or was stopped; it was "failed".
func TestPeerClosedCode(t *testing.T) {
	for _, err := range []error{
		exchange.ErrPeerClosed,
		fmt.Errorf("exchanging results with the peer: %w", exchange.PeerClosed(io.EOF)),
		fmt.Errorf("barrier 1: %w", exchange.PeerClosed(syscall.ECONNRESET)),
	} {
		if got := errorCode(err); got != "peer" {
			t.Errorf("errorCode(%v) = %q, want peer", err, got)
		}
	}
	if got := errorCode(errors.New("creating the QPs: no memory")); got != "failed" {
		t.Errorf("another error's code is %q, want failed", got)
	}
}

// TestUnknownCommandJSON: --json's one document on every path, also
// where the command (gorperf nosuch) or loopback's test (gorperf
// loopback nosuch) is unknown: the usage error's, exit status 2. Both
// printed nothing on stdout. A command without --json (completion) stays
// without a document.
func TestUnknownCommandJSON(t *testing.T) {
	for _, tc := range []struct {
		args []string
		role string
	}{
		{[]string{"nosuch", "--json"}, ""},
		{[]string{"loopback", "nosuch", "--json"}, "loopback"},
		{[]string{"--json", "nosuch"}, ""},
	} {
		r, errOut, ok := usageDocument(t, tc.args)
		if !ok {
			continue
		}
		if r.Role != tc.role || !strings.Contains(errOut, r.Error.Message) {
			t.Errorf("%q: role %q (want %q), message %q not the one said:\n%s", tc.args, r.Role, tc.role, r.Error.Message, errOut)
		}
	}
	f, out, _ := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"completion", "--bogus", "--json"}); code != exitUsage || out.Len() != 0 {
		t.Errorf("completion --bogus --json: exit %d, stdout %q; want 2 and nothing", code, out)
	}
}

// TestServerReportBothWithoutBidir: a server's --report-both is taken
// without -b, as getting-started says: its test is its client's, and
// where that is one-way the server says on stderr that it adds nothing
// (TestReportBothOneWay). A client's and loopback's still need -b. The
// server refused it ("add -b").
func TestServerReportBothWithoutBidir(t *testing.T) {
	if _, _, err := parseTest(t, exchange.SendBW, "--report-both"); err != nil {
		t.Errorf("server --report-both: %v", err)
	}
	if _, _, err := parseTest(t, exchange.SendBW, "--report-both", "198.18.0.1"); err == nil || !strings.Contains(err.Error(), "add -b") {
		t.Errorf("client --report-both without -b: %v, want add -b", err)
	}
	f, _, errOut := newTestFactory(nil, nil)
	if code := run(context.Background(), f, []string{"loopback", "send-bw", "--report-both"}); code != exitUsage || !strings.Contains(errOut.String(), "add -b") {
		t.Errorf("loopback --report-both without -b: exit %d, %s", code, errOut)
	}
}

// TestDevicesDoctorJSONTool: devices --json's and doctor --json's
// documents name the tool and its version, as a test's document does,
// also where they carry an error. They had schema_version alone.
func TestDevicesDoctorJSONTool(t *testing.T) {
	for _, args := range [][]string{
		{"devices", "--json"},
		{"devices", "--json", "--bogus"},
		{"doctor", "--json", "--bogus"},
	} {
		f, out, _ := newTestFactory(fakeDevices(), nil)
		run(context.Background(), f, args)
		var doc struct {
			SchemaVersion int `json:"schema_version"`
			Tool, Version string
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%q: %v\n%s", args, err, out)
		}
		if doc.SchemaVersion != 1 || doc.Tool != "gorperf" || doc.Version != Version {
			t.Errorf("%q: schema_version %d, tool %q, version %q; want 1, gorperf and %q", args, doc.SchemaVersion, doc.Tool, doc.Version, Version)
		}
	}
	var buf strings.Builder
	if err := writeFindingsJSON(&buf, []finding{{Level: levelOK, Msg: "fine"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"tool": "gorperf",`) || !strings.Contains(buf.String(), `"version": "`+Version+`",`) {
		t.Errorf("doctor's document lacks tool or version:\n%s", buf.String())
	}
}
