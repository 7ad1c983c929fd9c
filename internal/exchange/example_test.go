package exchange_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// A client asks for write_bw; the server checks the request against its
// limits, and the two swap setups, meet at a barrier and swap results. Over
// TCP, nc would come from net.Dial and a net.Listener's Accept.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cnc, snc := net.Pipe()
	client, server := exchange.NewConn(cnc), exchange.NewConn(snc)
	defer client.Close()
	defer server.Close()

	setup := func(qpn uint32) exchange.Setup {
		ep := ibverbs.Endpoint{QPN: qpn, PSN: 1, MTU: ibverbs.MTU1024}
		return exchange.Setup{QPs: []exchange.QPInfo{{Endpoint: ep, RKey: 7, Addr: 1 << 20, Len: 65536}}}
	}

	go func() { // the server
		if _, err := exchange.Handshake(ctx, server, "gorperf 0.1.0"); err != nil {
			return
		}
		spec, err := server.RecvSpec(ctx)
		if err == nil {
			err = spec.CheckLimits(exchange.DefaultLimits())
		}
		if err != nil {
			server.SendError(ctx, err)
			return
		}
		peer, err := server.SwapSetup(ctx, setup(0x22))
		if err != nil || peer.Check(spec) != nil {
			return
		}
		server.Barrier(ctx, 1)
		server.SwapResult(ctx, exchange.Result{Iterations: 5000, Bytes: 5000 * 65536, Elapsed: time.Second})
	}()

	peer, err := exchange.Handshake(ctx, client, "gorperf 0.1.0")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("server runs", peer.Tool)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 65536,
		Iterations: 5000, NumQPs: 1, TXDepth: 128, RXDepth: 512, CQModeration: 100, PostList: 1}
	if err := client.Send(ctx, spec); err != nil {
		fmt.Println(err)
		return
	}
	remote, err := client.SwapSetup(ctx, setup(0x11))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("server QP:", remote.QPs[0].Endpoint.QPN)
	if err := client.Barrier(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.SwapResult(ctx, exchange.Result{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("server moved %d bytes in %v\n", res.Bytes, res.Elapsed)
	// Output:
	// server runs gorperf 0.1.0
	// server QP: 34
	// server moved 327680000 bytes in 1s
}

func ExampleTestSpec_CheckLimits() {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 8 << 20,
		Iterations: 1000, NumQPs: 16, TXDepth: 8192, CQModeration: 100}
	fmt.Println(spec.CheckLimits(exchange.DefaultLimits()))
	// Output:
	// test exceeds the server's limits: the test needs 1 TiB of registered memory (size 8388608 × depth 8192 × 16 QPs), more than this server's maximum of 4 GiB
}
