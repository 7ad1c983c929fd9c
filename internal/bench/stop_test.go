//go:build linux && cgo

package bench_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/internal/stats"
)

// String is the outcome, short, for the tests' messages.
func (o sideOutcome) String() string {
	if o.r == nil {
		return fmt.Sprintf("error %v, no result", o.err)
	}
	return fmt.Sprintf("error %v, interrupted %v, %d sizes %v, %d mismatches", o.err, o.r.Interrupted, len(o.r.Sizes), o.r.Sizes, o.r.Mismatches)
}

// sideOutcome is what one side of stopPair returned, and when.
type sideOutcome struct {
	r    *bench.Result
	err  error
	at   time.Time
	ivs  []uint64 // the messages of each interval it reported (RunInfinitely)
	role string
}

// stopPair runs spec between a one-test server and a client in this
// process, as loopback does, and stops one side (stopClient: the client)
// after stopAfter, as Ctrl-C does, by ending its context. It returns the
// two sides' outcomes and the moment of the stop.
func stopPair(t *testing.T, spec exchange.TestSpec, stopClient bool, stopAfter time.Duration, tweak func(l *bench.Local)) (c, s sideOutcome, stopped time.Time) {
	t.Helper()
	info := rdmatest.Device(t)
	guard, cancelGuard := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelGuard()
	cctx, stopC := context.WithCancel(guard)
	defer stopC()
	sctx, stopS := context.WithCancel(guard)
	defer stopS()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	local := func(o *sideOutcome) bench.Local {
		l := bench.Local{Device: info.Name, Port: info.Port, GIDIndex: -1, IdleTimeout: 5 * time.Second}
		if tweak != nil {
			tweak(&l)
		}
		l.Interval = func(_ time.Duration, b stats.Bandwidth) {
			mu.Lock()
			o.ivs = append(o.ivs, b.Iterations)
			mu.Unlock()
		}
		return l
	}
	c.role, s.role = "client", "server"
	srv := make(chan struct{})
	go func() {
		defer close(srv)
		err := bench.Serve(sctx, ln, local(&s), exchange.DefaultLimits(), true, nil, func(r *bench.Result, err error) { s.r, s.err = r, err })
		if s.err == nil {
			s.err = err
		}
		s.at = time.Now()
	}()
	stop := stopS
	if stopClient {
		stop = stopC
	}
	timer := time.AfterFunc(stopAfter, func() {
		mu.Lock()
		stopped = time.Now()
		mu.Unlock()
		stop()
	})
	defer timer.Stop()
	c.r, c.err = bench.Client(cctx, ln.Addr().String(), spec, local(&c), nil)
	c.at = time.Now()
	<-srv
	mu.Lock()
	defer mu.Unlock()
	return c, s, stopped
}
