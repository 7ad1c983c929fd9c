//go:build linux && cgo

package bench

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestClientSizeOverDeviceBeforeDial: a client whose message size is
// over its device's maximum fails before it dials, saying so, where it
// dialed first and, with nothing listening, reported only the
// connection's failure after its 3 s of retries.
func TestClientSizeOverDeviceBeforeDial(t *testing.T) {
	info := rdmatest.Device(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there
	spec := echoSpec
	spec.Size = 3000000000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = Client(ctx, addr, spec, Local{Device: info.Name, Port: info.Port, GIDIndex: -1}, nil)
	if err == nil || !strings.Contains(err.Error(), "message size 3000000000 is over "+info.Name+"'s maximum") || strings.Contains(err.Error(), "connecting") {
		t.Errorf("-s 3000000000 with nothing listening: %v; want the device's maximum, before any dial", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("it failed after %v", d)
	}
}
