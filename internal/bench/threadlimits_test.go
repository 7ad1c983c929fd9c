//go:build linux && cgo

package bench_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestServeThreadSharesOnDevice: a server of at most 8 QPs (serve
// --max-qps 8) runs -q 7 --threads 3, whose threads take 3, 2 and 2 QPs,
// and refuses -q 9 --threads 3 (3 QPs each: the last can be of no test
// of fewer than 9). It refused -q 7 too, counting thread 0's 3 QPs three
// times, 9.
func TestServeThreadSharesOnDevice(t *testing.T) {
	lim := exchange.DefaultLimits()
	lim.MaxQPs = 8
	ctx, l, addr := serving(t, lim, nil)
	spec := exchange.TestSpec{Test: exchange.WriteBW, ConnType: ibverbs.QPTypeRC, Size: 64, Iterations: 100, TXDepth: 16,
		CQModeration: 4, PostList: 1, NumQPs: 7, Threads: 3}
	r, err := bench.Client(ctx, addr, spec, l, nil)
	if err != nil {
		t.Fatalf("-q 7 --threads 3 under 8 QPs: %v", err)
	}
	if r.Header.NumQPs != 7 || len(r.Threads) != 3 || r.Sizes[0].BW.Iterations != 700 {
		t.Errorf("-q 7 --threads 3: %d QPs, %d threads, %d messages; want 7, 3 and 700", r.Header.NumQPs, len(r.Threads), r.Sizes[0].BW.Iterations)
	}
	spec.NumQPs = 9
	want := "a test of 3 threads of at least 9 QPs (thread 2 has 3) exceeds this server's maximum of 8 QPs"
	if _, err := bench.Client(ctx, addr, spec, l, nil); !errors.Is(err, exchange.ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Errorf("-q 9 --threads 3 under 8 QPs: %v; want %q", err, want)
	}
}
