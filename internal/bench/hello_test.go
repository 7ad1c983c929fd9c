//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// greet greets a listener that never accepts (a server stopped or
// hung) or that closes (reset: a one-test server that took another
// client), as a client does, and returns its address and the
// handshake's error.
func greet(t *testing.T, reset bool) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	nc, err := net.Dial("tcp", addr) // into the backlog: nobody accepts
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	wait := 300 * time.Millisecond // the stopped server's hello never comes
	if reset {
		time.AfterFunc(100*time.Millisecond, func() { ln.Close() })
		wait = 5 * time.Second // the reset comes first, however late
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err = exchange.Handshake(ctx, exchange.NewConn(nc), "gorperf test")
	return addr, err
}

// TestHelloError: a client whose server sends no hello in the
// handshake's time (a server stopped or hung: the connection waits in
// its backlog) is told so, not "receiving: context deadline exceeded",
// and not that the server may be busy with another client, which a
// server greets while a test runs; one whose connection the server reset
// before its hello (a one-test server that took another client) too.
// Other errors keep their words.
func TestHelloError(t *testing.T) {
	addr, err := greet(t, false)
	got := helloError(addr, err)
	want := "server at " + addr + ": no hello from the server within 20 s: it may be stopped or hung, or flooded with connections"
	if got.Error() != want || !errors.Is(got, context.DeadlineExceeded) {
		t.Errorf("stopped server: %v, want %s", got, want)
	}
	addr, err = greet(t, true)
	if got := helloError(addr, err); !strings.Contains(got.Error(), "server at "+addr+": the server closed the connection before its hello: it may have taken another client") ||
		!errors.Is(got, syscall.ECONNRESET) {
		t.Errorf("reset: %v (from %v)", got, err)
	}
	other := errors.New("peer does not speak the gorperf protocol")
	if got := helloError(addr, other); got.Error() != "server at "+addr+": "+other.Error() || !errors.Is(got, other) {
		t.Errorf("helloError(%v) = %v", other, got)
	}
}

// tcpPair is a TCP connection on loopback: the end that dialled and the
// end accepted, each closed when the test ends.
func tcpPair(t *testing.T) (nc, sc *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return c.(*net.TCPConn), a.(*net.TCPConn)
}

// TestUnbegun: a side whose first step with the peer fails because the
// peer closed the connection (EOF, or reset) says that the peer closed it
// before the test began, naming the peer, and wraps the error; other
// failures keep their words. The client of a server killed while it
// waited its turn said "receiving: EOF".
func TestUnbegun(t *testing.T) {
	for _, reset := range []bool{false, true} {
		nc, sc := tcpPair(t)
		if reset {
			sc.SetLinger(0)
		}
		sc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := exchange.NewConn(nc).SwapSetup(ctx, exchange.Setup{})
		if err == nil {
			t.Fatal("a Setup swap with a closed peer succeeded")
		}
		for role, peer := range map[string]string{"client": "server", "server": "client"} {
			got := unbegun(role, err)
			want := "the " + peer + " closed the connection before the test began (it exited or was killed): " + err.Error()
			if got.Error() != want || !errors.Is(got, err) {
				t.Errorf("reset %v, %s: %v; want %s", reset, role, got, want)
			}
			// The JSON's code "peer", as a peer's closing later
			// has (exchange.ErrPeerClosed): it was "failed".
			if !errors.Is(got, exchange.ErrPeerClosed) {
				t.Errorf("reset %v, %s: %v is no exchange.ErrPeerClosed", reset, role, got)
			}
		}
	}
	other := fmt.Errorf("receiving: %w", context.DeadlineExceeded)
	if got := unbegun("client", other); got != other {
		t.Errorf("unbegun(%v) = %v", other, got)
	}
	if got := unbegun("client", nil); got != nil {
		t.Errorf("unbegun(nil) = %v", got)
	}
}

// TestPeerWordRefused: a side whose first step fails for a connection
// the peer reset, where the peer said why before it closed (a server
// that refused the test as it asked: it sends its Error and closes at
// once, the client's first Alive unread, so the close is a reset), says
// what the peer said, and what it then found, not that the peer "exited
// or was killed" (unbegun), which it did not. It said both. A peer that
// closed without a word is still said to have exited or been killed.
func TestPeerWordRefused(t *testing.T) {
	const refusal = "test exceeds the server's limits: 65 QPs exceed this server's maximum of 64"
	for _, word := range []bool{true, false} {
		nc, sc := tcpPair(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c := exchange.NewConn(nc)
		if err := c.Send(ctx, exchange.Alive{}); err != nil { // the client's first Alive, never read
			t.Fatal(err)
		}
		if word {
			if err := exchange.NewConn(sc).SendError(ctx, errors.New(refusal)); err != nil {
				t.Fatal(err)
			}
		}
		sc.SetLinger(0)
		sc.Close()
		// The client, still opening its device, then sends its Setup,
		// which the reset fails.
		var sendErr error
		for deadline := time.Now().Add(3 * time.Second); sendErr == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			sendErr = c.Send(ctx, exchange.Setup{})
		}
		if !closedByPeer(sendErr) {
			t.Fatalf("word %v: the Setup sent after the reset: %v; want a reset or a broken pipe", word, sendErr)
		}
		got := peerWord(c, "client", unbegun("client", sendErr))
		const killed = "the server closed the connection before the test began (it exited or was killed)"
		var pe *exchange.PeerError
		switch {
		case !word:
			if !strings.HasPrefix(got.Error(), killed) || !errors.Is(got, sendErr) {
				t.Errorf("a server reset without a word: %v; want %q", got, killed)
			}
		case !errors.As(got, &pe) || pe.Text != refusal || !errors.Is(got, sendErr):
			t.Errorf("a server that refused the test and reset: %v; want the refusal, wrapping %v", got, sendErr)
		case strings.Contains(got.Error(), "exited or was killed"):
			t.Errorf("a server that refused the test and reset: %v; want no word of its exit", got)
		case got.Error() != "the server said: "+refusal+"; this side then found: "+sendErr.Error():
			t.Errorf("a server that refused the test and reset: %v; want the refusal, then %v", got, sendErr)
		}
	}
}
