//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/exchange"
)

// TestRefusedHintNamesABusyServer: a client whose connection is refused
// for its 3 s of retries says that a server for one test may be busy
// with another client's, which stops listening once its test begins, and
// that gorperf serve queues clients. It said that nobody listens there,
// which a busy server's client took at its word. It only waits out the
// retries, beside the other tests that mostly wait (t.Parallel).
func TestRefusedHintNamesABusyServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused, as a busy server for one test refuses
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spec := exchange.TestSpec{Test: exchange.WriteBW, Size: 64, Iterations: 100, NumQPs: 1, TXDepth: 1, CQModeration: 1}
	// client dials before it opens a device: no device is needed.
	res, err := client(ctx, addr, spec, Local{}, nil)
	if res != nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("client to %s, where nothing listens: %v, %v; want ECONNREFUSED", addr, res, err)
	}
	msg := err.Error()
	for _, want := range []string{
		"connecting to the gorperf server at " + addr + ": nothing accepted the connection there within 3s",
		"no server is running there, or a server for one test is busy with another client's",
		"run gorperf serve there, which queues its clients",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "nobody listens") || strings.Contains(msg, "\n") {
		t.Errorf("%q: want one line, and no word that the server is not there", msg)
	}
}
