//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestChecksSentAsErrorMsg: a server that finds what both sides check
// alike of the swapped Setups (incompatible GIDs; a UD size over the
// path MTU) tells its client in an ErrorMsg with the check's code
// (CodeGIDMismatch, CodeUDSize), the message that follows its Setup,
// never in a Result's Error. A Result's error has no code: a peer that
// found the same would not know it for the same check (withPeerWord's
// sameCheck), and where the check's failure came in a Result it would be
// the peer's copy, from the peer's point of view. Both checks run before
// the first size's barrier (connect, sizes); a Result is sent only after
// a size's loop. This test pins that: a check moved into the loop fails
// it. The client is played by a connection that speaks the protocol up
// to its Setup, which names the GID (the other IP family from the
// server's) or the path MTU (256, under a UD size of 1024) to refuse.
func TestChecksSentAsErrorMsg(t *testing.T) {
	info := rdmatest.Device(t)
	l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
	other := func(g ibverbs.GID) ibverbs.GID {
		// A GID of the other IP family: an IPv4-mapped one for an
		// IPv6 GID, a link-local IPv6 one for an IPv4-mapped GID.
		s := "::ffff:198.18.99.1"
		if g.Addr().Is4() {
			s = "fe80::99"
		}
		o, err := ibverbs.ParseGID(s)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name  string
		spec  exchange.TestSpec
		setup func(server exchange.QPInfo) exchange.QPInfo // the client's, from the server's
		code  exchange.ErrorCode
		text  string
	}{
		{"GIDs", exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
			NumQPs: 1, TXDepth: 8, CQModeration: 4},
			func(q exchange.QPInfo) exchange.QPInfo {
				q.Endpoint.GID = other(q.Endpoint.GID)
				return q
			}, exchange.CodeGIDMismatch, "incompatible GIDs: this side's is index "},
		{"UD size", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 1024, Iterations: 10,
			NumQPs: 1, TXDepth: 8, RXDepth: 8, CQModeration: 4},
			func(q exchange.QPInfo) exchange.QPInfo {
				q.Endpoint.MTU = ibverbs.MTU256
				return q
			}, exchange.CodeUDSize, "a UD message is at most the path MTU, 256 bytes here, not 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close() // a one-test Serve hands it back open
			served := make(chan error, 1)
			go bench.Serve(ctx, ln, l, exchange.DefaultLimits(), true, nil, func(_ *bench.Result, err error) { served <- err })
			c := dialServer(t, ctx, ln.Addr().String(), "check client")
			defer c.Close()
			if err := c.Send(ctx, tc.spec); err != nil {
				t.Fatal(err)
			}
			stop := c.KeepAlive(100 * time.Millisecond)
			defer stop()
			srv, err := c.RecvSetup(ctx)
			if err != nil {
				t.Fatalf("the server's Setup: %v", err)
			}
			if len(srv.QPs) != 1 || srv.QPs[0].Endpoint.GID.IsZero() {
				t.Skipf("the server's Setup %+v names no GID (not RoCE)", srv.QPs)
			}
			q := tc.setup(srv.QPs[0])
			if err := c.Send(ctx, exchange.Setup{QPs: []exchange.QPInfo{q}, Env: srv.Env}); err != nil {
				t.Fatal(err)
			}
			m, err := c.Recv(ctx)
			var pe *exchange.PeerError
			switch {
			case err == nil:
				t.Errorf("after the Setups the server sent a %v (%+v), want an ErrorMsg of code %v", m.Type(), m, tc.code)
			case !errors.As(err, &pe):
				t.Errorf("after the Setups: %v, want the server's ErrorMsg of code %v", err, tc.code)
			case pe.Code != tc.code || !strings.Contains(pe.Text, tc.text):
				t.Errorf("the server's ErrorMsg: code %v, %q; want code %v, %q", pe.Code, pe.Text, tc.code, tc.text)
			}
			select {
			case err := <-served:
				var ce exchange.Coder
				if !errors.As(err, &ce) || ce.ErrorCode() != tc.code {
					t.Errorf("the server's error %v is not the check of code %v", err, tc.code)
				}
			case <-ctx.Done():
				t.Fatal("the server never ended")
			}
		})
	}
}
