//go:build linux && cgo

package bench_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestServeRefusesOnDevice: a bench client whose test is over serve's
// limits (here -q 65 against 64) is told the server's refusal, and
// nothing else, at once, and the server reports the refusal once: so
// with --threads 2, whose threads ask for 33 QPs and 32, only the first
// over the limits. The second thread waited in the server's lobby for
// the first, and was reported again, as a client that "went away while
// it waited its turn" once the client, its first thread refused,
// stopped it. A test within the limits then runs at once.
func TestServeRefusesOnDevice(t *testing.T) {
	var mu sync.Mutex
	var done []error
	ctx, l, addr := serving(t, exchange.DefaultLimits(), func(_ *bench.Result, err error) {
		mu.Lock()
		done = append(done, err)
		mu.Unlock()
	})
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100, TXDepth: 16, NumQPs: 65}
	const singles, groups = 5, 3
	ask := func(name string, spec exchange.TestSpec, want string) {
		t.Helper()
		began := time.Now()
		_, err := bench.Client(ctx, addr, spec, l, nil)
		took := time.Since(began)
		var pe *exchange.PeerError
		switch {
		case err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &pe):
			t.Errorf("%s: %v; want the server's refusal: %q", name, err, want)
		case strings.Contains(err.Error(), "exited or was killed"):
			t.Errorf("%s: %v; want no word of the server's exit", name, err)
		case took > 5*time.Second:
			t.Errorf("%s: refused after %v; want it at once", name, took)
		}
	}
	for i := range singles {
		ask(fmt.Sprintf("-q 65, %d", i), spec, "65 QPs exceed this server's maximum of 64")
	}
	for i := range groups {
		threads := spec
		threads.Threads = 2
		ask(fmt.Sprintf("-q 65 --threads 2, %d", i), threads, "a test of 2 threads of at least 65 QPs (thread 0 has 33) exceeds this server's maximum of 64 QPs")
	}
	fits := spec
	fits.NumQPs = 1
	began := time.Now()
	if r, err := bench.Client(ctx, addr, fits, l, nil); err != nil || len(r.Sizes) != 1 {
		t.Errorf("a test within the limits after the refusals: %v", err)
	} else if took := time.Since(began); took > 5*time.Second {
		t.Errorf("a test within the limits after the refusals took %v", took)
	}
	time.Sleep(time.Second) // any report late
	mu.Lock()
	defer mu.Unlock()
	refused := 0
	for _, err := range done {
		switch {
		case err == nil:
		case strings.Contains(err.Error(), "refused") && errors.Is(err, exchange.ErrOverLimit):
			refused++
		default:
			t.Errorf("serve reported %v; want only the refusals", err)
		}
	}
	if want := singles + groups; refused != want || len(done) != want+1 {
		t.Errorf("serve reported %d refusals and %d in all: %q; want %d refusals, one a test, and the test that ran", refused, len(done), done, want)
	}
}
