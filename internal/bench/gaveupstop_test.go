//go:build linux && cgo

package bench_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestGaveUpDuringStoppedTest: a client that gives up before it asks for
// its test while serve runs another's, and serve is stopped before that
// test ends, is still reported to done. The lobby held its report until
// serve's next turn, which the stop ended first: serve --json printed no
// document for it and left it out of its count (reviewer R5).
func TestGaveUpDuringStoppedTest(t *testing.T) {
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 10,
		NumQPs: 1, TXDepth: 8, RXDepth: 1, CQModeration: 1}
	inTest, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	defer bench.SetBeforeLoop(func(client bool) {
		if !client {
			once.Do(func() { close(inTest) })
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
	})()
	l, ln := serverOnDevice(t, 5*time.Second)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served, reported := servingReports(ctx, ln, l, false)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	go bench.Client(cctx, ln.Addr().String(), spec, l, nil)
	select {
	case <-inTest:
	case <-time.After(20 * time.Second):
		t.Fatal("the first client's test did not start in 20 s")
	}
	bad := l
	bad.GIDIndex = 100000
	if _, err := bench.Client(cctx, ln.Addr().String(), spec, bad, nil); err == nil {
		t.Fatal("a client with GID index 100000 ran its test")
	}
	// The lobby reads the give-up while the test runs.
	time.Sleep(500 * time.Millisecond)
	stop()
	close(release)
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("serve still runs 20 s after its stop")
	}
	reports := reported()
	var gave *bench.GaveUpError
	n := 0
	for _, err := range reports {
		if errors.As(err, &gave) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("done was told of %d clients that gave up, of %d reports (%v); want 1", n, len(reports), reports)
	}
}
