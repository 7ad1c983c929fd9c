//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// echoListener is a TCP service on loopback that sends back every byte
// it is sent, as an echo service does; it ends with the test.
func echoListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

var echoSpec = exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 4096, Iterations: 100,
	NumQPs: 1, TXDepth: 16, CQModeration: 4}

// wantNotGorperf checks that err is a client's of the echo service at
// addr: not a gorperf server, said of the server at addr, where it was
// a bare "unexpected message: expected Setup, got Spec".
func wantNotGorperf(t *testing.T, addr string, err error) {
	t.Helper()
	if !errors.Is(err, exchange.ErrNotGorperf) || !strings.HasPrefix(err.Error(), "server at "+addr+": peer does not speak the gorperf protocol") ||
		!strings.Contains(err.Error(), "own test back") {
		t.Errorf("a client of an echo service: %v; want ErrNotGorperf, of the server at %s", err, addr)
	}
}

// TestEchoedSpec: the reflected hello passes the handshake (its magic and
// version are this side's), and the TestSpec that comes back where the
// server's Setup was wanted says the peer is no gorperf server.
func TestEchoedSpec(t *testing.T) {
	addr := echoListener(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := exchange.NewConn(nc)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := exchange.Handshake(ctx, c, Tool); err != nil {
		t.Fatalf("the echoed hello: %v", err)
	}
	if err := c.Send(ctx, echoSpec); err != nil {
		t.Fatal(err)
	}
	_, err = c.SwapSetup(ctx, exchange.Setup{})
	wantNotGorperf(t, addr, echoed(addr, err))
	if err := echoed(addr, io.EOF); err != io.EOF {
		t.Errorf("echoed(EOF) = %v", err)
	}
	// With -R the echo sends the client's own error message back, which
	// the client takes for the peer's: the error names the echo alone.
	ue := &exchange.UnexpectedError{Want: exchange.TypeSync, Got: exchange.TypeSpec}
	own := fmt.Errorf("peer: barrier 0: %w; this side then found: barrier 0: %w", ue, ue)
	if err := echoed(addr, own); strings.Contains(err.Error(), "peer: barrier") || strings.Contains(err.Error(), "this side then found") {
		t.Errorf("echoed(the client's own error, echoed back) = %v; want the echo named alone", err)
	}
}

// TestClientOfEchoService runs a client against an echo service: it
// fails saying that the peer does not speak the gorperf protocol.
func TestClientOfEchoService(t *testing.T) {
	info := rdmatest.Device(t)
	addr := echoListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Client(ctx, addr, echoSpec, Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}, nil)
	wantNotGorperf(t, addr, err)
}
