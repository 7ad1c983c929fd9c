//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestGIDAddr: a link-local GID's address for rdma_cm carries its
// netdev as the zone, which the kernel needs to bind or send from it;
// other addresses come as they are.
func TestGIDAddr(t *testing.T) {
	gid := func(s string) ibverbs.GID {
		return ibverbs.GID(netip.MustParseAddr(s).As16())
	}
	for _, tc := range []struct {
		e    ibverbs.GIDEntry
		want string
	}{
		{ibverbs.GIDEntry{GID: gid("fe80::1"), Netdev: "eth0"}, "fe80::1%eth0"},
		{ibverbs.GIDEntry{GID: gid("fe80::1")}, "fe80::1"},
		{ibverbs.GIDEntry{GID: gid("2001:2::1"), Netdev: "eth0"}, "2001:2::1"},
		{ibverbs.GIDEntry{GID: gid("::ffff:198.18.0.1"), Netdev: "eth0"}, "198.18.0.1"},
	} {
		if got := bench.GIDAddr(tc.e).String(); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.e, got, tc.want)
		}
	}
}

// TestLinkLocalCM runs a test through rdma_cm on the device's link-local
// RoCE v2 GID (-R -x with its index), on one device: both sides bind and
// connect with the GID's netdev as the zone, where the kernel refused the
// address without one.
func TestLinkLocalCM(t *testing.T) {
	info := rdmatest.Device(t)
	ll := rdmatest.LinkLocalGID(t, info.Name, info.Port)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100,
		TXDepth: 16, CQModeration: 4, NumQPs: 2, RdmaCM: true}
	c, _ := loopback(t, spec, func(l *bench.Local, client bool) {
		l.GIDIndex = ll.Index
		if client {
			l.CMHost = bench.GIDAddr(ll).String()
		}
	})
	if n := c.Sizes[0].BW.Iterations; n != 200 {
		t.Errorf("%d messages, want 200", n)
	}
}

// TestCMClientFailureEndsAccept: a client whose rdma_cm dials fail (here
// to a port nobody listens on) says why over the control connection,
// and the server, accepting, ends at once with that reason, where it
// waited out Accept's 30 s without reading it. A test that succeeds
// (the client's Setup may come before the server's last Accept returns)
// still does, many times over.
func TestCMClientFailureEndsAccept(t *testing.T) {
	host := gidHost(t)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
		TXDepth: 4, CQModeration: 1, NumQPs: 2, RdmaCM: true}
	start := time.Now()
	_, _, cerr, serr := tryLoopback(t, spec, func(l *bench.Local, client bool) {
		if client {
			l.CMHost, l.CMPort = host, 7 // the server listens on the control port
		}
	})
	took := time.Since(start)
	t.Logf("client: %v\nserver: %v\n%v", cerr, serr, took)
	if cerr == nil || serr == nil {
		t.Fatalf("client %v, server %v: want both to fail", cerr, serr)
	}
	var pe *exchange.PeerError
	if !errors.As(serr, &pe) || !strings.Contains(serr.Error(), "while this side accepted its rdma_cm connections") {
		t.Errorf("the server's error is not the client's reason: %v", serr)
	}
	if took > 10*time.Second {
		t.Errorf("the server took %v", took)
	}
	for i := range 10 {
		c, _ := loopback(t, spec, func(l *bench.Local, client bool) {
			if client {
				l.CMHost = host
			}
		})
		if n := c.Sizes[0].BW.Iterations; n != 20 {
			t.Fatalf("run %d: %d messages, want 20", i, n)
		}
	}
}

// TestCMListenTakenSaidOnce: a server whose rdma_cm port is taken fails
// to listen, and tells its client, which fails on that word; the server
// says its own failure alone. The client sent the server's word back,
// and the server printed it as the client's: "the client said: offer of
// path MTU: peer: rdmacm: listen ...: address already in use; this side
// then found: ...".
func TestCMListenTakenSaidOnce(t *testing.T) {
	host := gidHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := rdmacm.Listen(ctx, net.JoinHostPort(host, "0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := int(held.Addr().Port())
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
		TXDepth: 4, CQModeration: 1, NumQPs: 1, RdmaCM: true}
	_, _, cerr, serr := tryLoopback(t, spec, func(l *bench.Local, client bool) {
		l.CMPort = port
		if client {
			l.CMHost = host
		}
	})
	var pe *exchange.PeerError
	if cerr == nil || !errors.As(cerr, &pe) || !strings.Contains(cerr.Error(), "address already in use") {
		t.Errorf("the client's error: %v; want the server's word, its port in use", cerr)
	}
	if serr == nil || !strings.Contains(serr.Error(), "address already in use") ||
		strings.Contains(serr.Error(), "said:") || strings.Contains(serr.Error(), "this side then found") || errors.As(serr, &pe) {
		t.Errorf("the server's error: %v; want its own failure alone", serr)
	}
}
