//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// serveAndDial runs a one-test server and a client with the given local
// sides and returns what the client told a server of its own that only
// listens (told: the client's reason, where it connected to give it;
// asked: it asked for a test instead), and the two sides' errors.
// Neither may wait for the other: each must fail on its own.
func serveAndDial(t *testing.T, srvLocal, cliLocal bench.Local) (told *exchange.PeerError, asked bool, srvErr, cliErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() { done <- bench.Serve(ctx, ln, srvLocal, exchange.DefaultLimits(), true, nil, nil) }()
	select {
	case srvErr = <-done:
	case <-ctx.Done():
		t.Fatalf("the server with %+v waited for a client instead of failing", srvLocal)
	}

	// The client, against a listener of its own that greets a caller
	// and reads what it asks.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	type heard struct {
		told  *exchange.PeerError
		asked bool
	}
	got := make(chan heard, 1)
	go func() {
		nc, err := probe.Accept()
		if err != nil { // closed: no caller
			got <- heard{}
			return
		}
		defer nc.Close()
		c := exchange.NewConn(nc)
		var h heard
		if _, err := exchange.Handshake(ctx, c, "probe"); err == nil {
			_, err = c.RecvSpec(ctx)
			errors.As(err, &h.told)
			h.asked = err == nil
		}
		got <- h
	}()
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10, NumQPs: 1, TXDepth: 10, CQModeration: 1}
	_, cliErr = bench.Client(ctx, probe.Addr().String(), spec, cliLocal, nil)
	probe.Close()
	h := <-got
	return h.told, h.asked, srvErr, cliErr
}

// checkTold checks that a client that failed with cliErr before it asked
// for its test told its server so (told) in those words, and asked for
// no test.
func checkTold(t *testing.T, what string, cliErr error, told *exchange.PeerError, asked bool) {
	t.Helper()
	switch {
	case asked:
		t.Errorf("%s: the client asked the server for its test", what)
	case told == nil || cliErr == nil || told.Text != cliErr.Error():
		t.Errorf("%s: the client told its server %v; want its own error, %v", what, told, cliErr)
	}
}

// TestBadLocalSideFailsAtOnce checks that a device that is not there fails
// a server before it waits for a client, and a client before it asks the
// server for its test: it tells the server why instead, so that a server
// for one test ends too. It needs no device: on a host without one, the
// error says so.
func TestBadLocalSideFailsAtOnce(t *testing.T) {
	l := bench.Local{Device: "no-such-device", GIDIndex: -1}
	told, asked, srvErr, cliErr := serveAndDial(t, l, l)
	for side, err := range map[string]error{"server": srvErr, "client": cliErr} {
		if err == nil {
			t.Errorf("%s with device %q: no error", side, l.Device)
		} else if !strings.Contains(err.Error(), "no-such-device") && !strings.Contains(err.Error(), "no RDMA devices") {
			t.Errorf("%s: %q names neither the device nor its absence", side, err)
		}
	}
	checkTold(t, "device "+l.Device, cliErr, told, asked)
}

// TestBadPortOrGIDFailsAtOnce checks a real device with a port it lacks,
// a GID index past its table, an empty slot and a RoCE v1 entry, each
// failing with its own reason. soft-RoCE has no RoCE v1 entry, so that
// case runs only on a device with one; TestCheckGivenGID covers its
// refusal, and an IB entry's, without a device.
func TestBadPortOrGIDFailsAtOnce(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	good := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
	if err := bench.Check(good); err != nil {
		t.Fatalf("Check(%+v): %v", good, err)
	}
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	table, err := ctx.GIDTable(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	type badLocal struct {
		l    bench.Local
		want string // in both sides' errors
	}
	bad := map[string]badLocal{
		"port":           {bench.Local{Device: info.Name, Port: 9, GIDIndex: -1}, "invalid port 9"},
		"past the table": {bench.Local{Device: info.Name, Port: info.Port, GIDIndex: pa.GIDTableLen}, "out of range"},
	}
	used := map[int]bool{}
	for _, e := range table {
		used[e.Index] = true
		if e.Type == ibverbs.GIDTypeRoCEv1 && pa.LinkLayer == ibverbs.LinkLayerEthernet {
			bad["RoCE v1"] = badLocal{bench.Local{Device: info.Name, Port: info.Port, GIDIndex: e.Index}, "not RoCE v2"}
		}
	}
	for i := range pa.GIDTableLen {
		if !used[i] && pa.LinkLayer == ibverbs.LinkLayerEthernet {
			bad["empty"] = badLocal{bench.Local{Device: info.Name, Port: info.Port, GIDIndex: i}, "is empty"}
			break
		}
	}
	if pa.LinkLayer == ibverbs.LinkLayerEthernet && bad["empty"].want == "" {
		t.Errorf("%s port %d: no empty slot among %d to give -x", info.Name, info.Port, pa.GIDTableLen)
	}
	for name, b := range bad {
		told, asked, srvErr, cliErr := serveAndDial(t, b.l, b.l)
		if srvErr == nil || cliErr == nil {
			t.Errorf("%s %+v: server %v, client %v; want both to fail", name, b.l, srvErr, cliErr)
			continue
		}
		checkTold(t, name, cliErr, told, asked)
		for side, err := range map[string]error{"server": srvErr, "client": cliErr} {
			if !strings.Contains(err.Error(), b.want) {
				t.Errorf("%s %+v: the %s's %q lacks %q", name, b.l, side, err, b.want)
			}
		}
	}
}

// TestDialWaitsForALateServer checks that a client started before its
// server connects once the server listens, and that with nobody there it
// gives up with ECONNREFUSED after its retry time.
func TestDialWaitsForALateServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if _, err := bench.DialServer(ctx, "", addr, netip.Addr{}, 0); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("no server, no retry: %v, want ECONNREFUSED", err)
	}
	late := make(chan net.Listener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
		}
		late <- ln
	}()
	nc, err := bench.DialServer(ctx, "", addr, netip.Addr{}, 10*time.Second)
	if ln := <-late; ln != nil {
		defer ln.Close()
	}
	if err != nil {
		t.Fatalf("a server that listens 300 ms late: %v", err)
	}
	nc.Close()
}
