//go:build linux && cgo

package rdmamsg_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestErrClosed: ErrClosed says it is rdmamsg's, where it said "rdmacm:
// object is closed", and still matches rdmacm.ErrClosed, net.ErrClosed
// and os.ErrClosed.
func TestErrClosed(t *testing.T) {
	if s := rdmamsg.ErrClosed.Error(); !strings.HasPrefix(s, "rdmamsg: ") {
		t.Errorf("ErrClosed says %q, want rdmamsg: ...", s)
	}
	err := fmt.Errorf("wrapped: %w", rdmamsg.ErrClosed)
	for _, target := range []error{rdmamsg.ErrClosed, rdmacm.ErrClosed, net.ErrClosed, os.ErrClosed} {
		if !errors.Is(err, target) {
			t.Errorf("ErrClosed does not match %v", target)
		}
	}
}

// TestCMErrorsSayRdmamsg: the errors of Dial, Listen and Accept that come
// from the connection manager say "rdmamsg: ", where they said "rdmacm:
// ", and match what they matched: a Dial nothing answers
// syscall.ECONNREFUSED and *rdmacm.RejectedError, a Listen at an address
// in use syscall.EADDRINUSE, an Accept after Close ErrClosed,
// rdmacm.ErrClosed and net.ErrClosed.
func TestCMErrorsSayRdmamsg(t *testing.T) {
	srv, cli := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srv.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A port where nothing listens: take l's, then close it.
	_, err = rdmamsg.Listen(ctx, l.Addr().String(), nil)
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.HasPrefix(err.Error(), "rdmamsg: listen "+l.Addr().String()+": ") {
		t.Errorf("Listen at an address in use: %v; want rdmamsg: listen %s: ..., matching EADDRINUSE", err, l.Addr())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = l.Accept(ctx)
	for _, target := range []error{rdmamsg.ErrClosed, rdmacm.ErrClosed, net.ErrClosed} {
		if !errors.Is(err, target) {
			t.Errorf("Accept after Close: %v, does not match %v", err, target)
		}
	}
	if err == nil || !strings.HasPrefix(err.Error(), "rdmamsg: ") {
		t.Errorf("Accept after Close: %v, want rdmamsg: ...", err)
	}
	nowhere := l.Addr().String()
	c, err := rdmamsg.Dial(ctx, nowhere, &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cli.IP.String()}})
	if err == nil {
		c.Close()
		t.Fatalf("Dial %s, where nothing listens, succeeded", nowhere)
	}
	var rej *rdmacm.RejectedError
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &rej) || !strings.HasPrefix(err.Error(), "rdmamsg: dial "+nowhere+": ") {
		t.Errorf("Dial %s, where nothing listens: %v; want rdmamsg: dial %s: ..., matching ECONNREFUSED and *rdmacm.RejectedError", nowhere, err, nowhere)
	}
	if strings.Contains(err.Error(), "rdmacm:") {
		t.Errorf("Dial %s: %q names rdmacm", nowhere, err)
	}
}
