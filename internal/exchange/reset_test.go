package exchange

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotGorperfReset: a peer that connects and resets the connection
// before its hello (a port scanner's connect and RST, SO_LINGER 0) is
// ErrNotGorperf, "closed (reset) before its hello", as one that closes
// it is, where the reset came out as a bare "read: connection reset by
// peer".
func TestNotGorperfReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer ln.Close()
	reset := make(chan struct{})
	go func() {
		defer close(reset)
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		c.(*net.TCPConn).SetLinger(0) // Close sends a RST
		c.Close()
	}()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	<-reset
	time.Sleep(100 * time.Millisecond) // for the RST, which loopback delivers at once
	// Hello goes nowhere: a send on the reset socket could take the
	// socket's error (EPIPE) before the receive sees ECONNRESET.
	_, err = Handshake(timeout(t, 10*time.Second), NewConn(sendless{nc}), "gorperf")
	if !errors.Is(err, ErrNotGorperf) || !strings.Contains(err.Error(), "closed (reset) before its hello") {
		t.Fatalf("Handshake = %v; want ErrNotGorperf, closed (reset) before its hello", err)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Handshake = %v; want it to match ECONNRESET too", err)
	}
	t.Log(err)
}

// sendless is a net.Conn whose writes go nowhere.
type sendless struct{ net.Conn }

func (sendless) Write(p []byte) (int, error) { return len(p), nil }
