//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestClientGivesUpBeforeAsking: a client whose own side fails its
// checks before it asks for its test (here a GID index past its table)
// tells the server why, so that a one-test server ends with its reason
// rather than wait for another client (a script's `server & client;
// wait` hung), and serve reports it and goes on.
func TestClientGivesUpBeforeAsking(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
		NumQPs: 1, TXDepth: 8, RXDepth: 1, CQModeration: 1}
	for _, once := range []bool{true, false} {
		l, ln := serverOnDevice(t, 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		served, reported := servingReports(ctx, ln, l, once)
		bad := l
		bad.GIDIndex = 100000
		_, cerr := bench.Client(ctx, ln.Addr().String(), spec, bad, nil)
		if cerr == nil {
			t.Fatal("a client with GID index 100000 ran its test")
		}
		var gave *bench.GaveUpError
		if once {
			select {
			case err := <-served:
				if !errors.As(err, &gave) || !strings.Contains(err.Error(), cerr.Error()) {
					t.Errorf("one-test server: %v; want a *GaveUpError with the client's reason %q", err, cerr)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the one-test server still waits 10 s after its client gave up (%v)", cerr)
			}
		} else {
			// serve goes on, and reports the client once: a real
			// client's test then runs.
			if _, err := bench.Client(ctx, ln.Addr().String(), spec, l, nil); err != nil {
				t.Errorf("a client after the one that gave up: %v", err)
			}
			// The server's side of the test ends after the client's.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if len(reported()) >= 2 || time.Now().After(deadline) {
					break
				}
			}
			reports := reported()
			gaveUp, ran := 0, 0
			for _, err := range reports {
				switch {
				case err == nil:
					ran++
				case errors.As(err, &gave) && strings.Contains(err.Error(), cerr.Error()):
					gaveUp++
				}
			}
			if len(reports) != 2 || gaveUp != 1 || ran != 1 {
				t.Errorf("serve's reports: %v; want the client that gave up's, with its reason, and the test's (nil)", reports)
			}
		}
		cancel()
		if !once {
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	}
}

// servingReports runs bench.Serve on ln (once: a one-test server) until
// ctx ends, and returns its end and a copy of what it has handed done so
// far: each test's error, nil for one that ran, and the reports of the
// clients that asked for none.
func servingReports(ctx context.Context, ln net.Listener, l bench.Local, once bool) (served <-chan error, reported func() []error) {
	var mu sync.Mutex
	var reports []error
	end := make(chan error, 1)
	go func() {
		end <- bench.Serve(ctx, ln, l, exchange.DefaultLimits(), once, nil, func(_ *bench.Result, err error) {
			mu.Lock()
			reports = append(reports, err)
			mu.Unlock()
		})
	}()
	return end, func() []error {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reports)
	}
}
