//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// sameVerbGoroutines is how many goroutines call one verb of one ID at
// once in the same-verb tests.
const sameVerbGoroutines = 4

// atOnce runs call(i) in n goroutines, started together, and returns
// each one's error.
func atOnce(n int, call func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = call(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// winners returns the indexes of the calls that succeeded, and an error
// for any failure that is not the kernel's refusal of a second call
// (EINVAL).
func winners(what string, errs []error) ([]int, error) {
	var won []int
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, i)
		case !errors.Is(err, syscall.EINVAL):
			return won, fmt.Errorf("%s %d: %v, want success or EINVAL", what, i, err)
		}
	}
	return won, nil
}

// oneWinner is winners, for a verb that the kernel lets succeed once on
// an ID: exactly one call succeeds.
func oneWinner(what string, errs []error) (int, error) {
	won, err := winners(what, errs)
	if err != nil {
		return 0, err
	}
	if len(won) != 1 {
		return 0, fmt.Errorf("%d of %d calls of %s succeeded (%v), want 1", len(won), len(errs), what, errs)
	}
	return won[0], nil
}

// awaitFor waits on ch for an event of type want for id; an event of
// another ID or type is an error.
func awaitFor(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID, want rdmacm.EventType) (*rdmacm.Event, error) {
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for %s: %w", want, err)
	}
	if ev.Type != want || ev.ID != id {
		return ev, fmt.Errorf("event %s for %p, want %s for %p", ev, ev.ID, want, id)
	}
	return ev, nil
}

// noMoreEvents checks that ch has no event for d.
func noMoreEvents(ch *rdmacm.EventChannel, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if ev, err := ch.GetEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("an event after the verb's outcome: %v, %v; want none", ev, err)
	}
	return nil
}

// TestSameVerbAddrRoute: goroutines that call the same verb of one ID at
// once (BindAddr, ResolveAddr, ResolveRoute, Listen), each with its own
// arguments, round after round: no crash, no race report (-race), one
// call succeeds and the others fail with EINVAL (the kernel takes the
// verb once per ID), the ID's addresses are the winner's, one outcome
// event comes and no other, and the ID closes. (It passed on the code
// before the ID serialized its verbs as well: the kernel takes each of
// these once an ID, under its own lock, and librdmacm writes the ID only
// after the kernel has taken the call.)
func TestSameVerbAddrRoute(t *testing.T) {
	n := device(t)
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	type verb struct {
		name string
		// setup readies a new ID for the verb.
		setup func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID) error
		call  func(id *rdmacm.ID, round, i int) error
		// check checks the ID after the winner's call, and takes the
		// outcome event where there is one.
		check func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID, round, won int) error
	}
	// The ports are distinct for each goroutine, so that the ID's
	// address says which call it came from.
	port := func(round, i int) uint16 { return uint16(20000 + (round%1000)*8 + i) }
	resolveAddr := func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID) error {
		if err := id.ResolveAddr(netip.AddrPortFrom(n.IP, 0), netip.AddrPortFrom(n.IP, 7471), 2*time.Second); err != nil {
			return err
		}
		_, err := awaitFor(ctx, ch, id, rdmacm.EventAddrResolved)
		return err
	}
	verbs := []verb{
		{
			name: "BindAddr",
			call: func(id *rdmacm.ID, round, i int) error {
				return id.BindAddr(netip.AddrPortFrom(n.IP, port(round, i)))
			},
			check: func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID, round, won int) error {
				if got, want := id.LocalAddr(), netip.AddrPortFrom(n.IP, port(round, won)); got != want {
					return fmt.Errorf("LocalAddr %v, want the winner's %v", got, want)
				}
				return nil
			},
		},
		{
			name: "ResolveAddr",
			call: func(id *rdmacm.ID, round, i int) error {
				return id.ResolveAddr(netip.AddrPortFrom(n.IP, 0), netip.AddrPortFrom(n.IP, port(round, i)), 2*time.Second)
			},
			check: func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID, round, won int) error {
				if _, err := awaitFor(ctx, ch, id, rdmacm.EventAddrResolved); err != nil {
					return err
				}
				if got, want := id.RemoteAddr(), netip.AddrPortFrom(n.IP, port(round, won)); got != want {
					return fmt.Errorf("RemoteAddr %v, want the winner's %v", got, want)
				}
				if got := id.LocalAddr(); got.Addr() != n.IP {
					return fmt.Errorf("LocalAddr %v, want on %v", got, n.IP)
				}
				return nil
			},
		},
		{
			name:  "ResolveRoute",
			setup: resolveAddr,
			call:  func(id *rdmacm.ID, round, i int) error { return id.ResolveRoute(2 * time.Second) },
			check: func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID, round, won int) error {
				if _, err := awaitFor(ctx, ch, id, rdmacm.EventRouteResolved); err != nil {
					return err
				}
				if got, want := id.RemoteAddr(), netip.AddrPortFrom(n.IP, 7471); got != want {
					return fmt.Errorf("RemoteAddr %v, want %v", got, want)
				}
				return nil
			},
		},
		{
			name: "Listen",
			setup: func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID) error {
				return id.BindAddr(netip.AddrPortFrom(n.IP, 0))
			},
			call: func(id *rdmacm.ID, round, i int) error { return id.Listen(i + 1) },
			check: func(ctx context.Context, ch *rdmacm.EventChannel, id *rdmacm.ID, round, won int) error {
				if got := id.LocalAddr(); got.Addr() != n.IP || got.Port() == 0 {
					return fmt.Errorf("LocalAddr %v, want on %v with a port", got, n.IP)
				}
				return nil
			},
		},
	}
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			ctx := timeout(t, 120*time.Second)
			ch, err := rdmacm.CreateEventChannel()
			if err != nil {
				t.Fatal(err)
			}
			defer closeOK(t, ch)
			winnersSeen := make([]int, sameVerbGoroutines)
			for round := range rounds {
				err := func() error {
					id, err := ch.CreateID(rdmacm.PortSpaceTCP)
					if err != nil {
						return err
					}
					defer func() {
						if err := id.Close(); err != nil {
							t.Errorf("round %d: Close: %v", round, err)
						}
					}()
					if v.setup != nil {
						if err := v.setup(ctx, ch, id); err != nil {
							return fmt.Errorf("setup: %w", err)
						}
					}
					errs := atOnce(sameVerbGoroutines, func(i int) error { return v.call(id, round, i) })
					won, err := oneWinner(v.name, errs)
					if err != nil {
						return err
					}
					winnersSeen[won]++
					return v.check(ctx, ch, id, round, won)
				}()
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if err := noMoreEvents(ch, 100*time.Millisecond); err != nil {
				t.Error(err)
			}
			t.Logf("winners by goroutine: %v", winnersSeen)
		})
	}
}

// TestSameVerbConnect: goroutines that Connect one routed ID at once,
// each with its own private data, QP number and depths: one succeeds, and
// the listener's one CONNECT_REQUEST carries that call's parameters, all
// of them (librdmacm keeps the depths in the ID, where another Connect
// may set them before the first sends them). On the code before the ID
// serialized its verbs it failed in one of two runs in the VM: in round
// 24 the request carried the winner's private data and QP number with
// another call's depth (2, 4 where the winner sent 2, 2); the window is
// a few instructions wide, and it passed 150 rounds in the other run.
func TestSameVerbConnect(t *testing.T) {
	n := device(t)
	rounds := 150
	if testing.Short() {
		rounds = 10
	}
	ctx := timeout(t, 180*time.Second)
	lch, lid := rawListener(t, n.IP)
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ch)
	for round := range rounds {
		err := func() error {
			id, err := ch.CreateID(rdmacm.PortSpaceTCP)
			if err != nil {
				return err
			}
			defer func() {
				if err := id.Close(); err != nil {
					t.Errorf("round %d: Close: %v", round, err)
				}
			}()
			if err := id.ResolveAddr(netip.AddrPortFrom(n.IP, 0), lid.LocalAddr(), 2*time.Second); err != nil {
				return err
			}
			if _, err := awaitFor(ctx, ch, id, rdmacm.EventAddrResolved); err != nil {
				return err
			}
			if err := id.ResolveRoute(2 * time.Second); err != nil {
				return err
			}
			if _, err := awaitFor(ctx, ch, id, rdmacm.EventRouteResolved); err != nil {
				return err
			}
			errs := atOnce(sameVerbGoroutines, func(i int) error {
				return id.Connect(&rdmacm.ConnParam{
					PrivateData: []byte{byte(i), byte(round)},
					QPNum:       uint32(0x100 + i), InitiatorDepth: uint8(i + 1), ResponderResources: uint8(i + 1),
					RetryCount: 7, RNRRetryCount: 7,
				})
			})
			won, err := oneWinner("Connect", errs)
			if err != nil {
				return err
			}
			req, err := lch.Await(ctx, rdmacm.EventConnectRequest)
			if err != nil {
				return err
			}
			defer req.ID.Close()
			req.ID.Reject(nil)
			p := req.Param
			if pd := req.PrivateData(); len(pd) < 2 || int(pd[0]) != won || int(pd[1]) != round%256 {
				return fmt.Errorf("request's private data %v, want the winner's (%d) [%d %d]", pd, won, won, round%256)
			}
			if p.QPNum != uint32(0x100+won) || int(p.InitiatorDepth) != won+1 || int(p.ResponderResources) != won+1 {
				return fmt.Errorf("the winner (%d) sent QP %#x and depths %d, %d; the request has QP %#x and depths %d, %d",
					won, 0x100+won, won+1, won+1, p.QPNum, p.InitiatorDepth, p.ResponderResources)
			}
			if _, err := awaitFor(ctx, ch, id, rdmacm.EventRejected); err != nil {
				return err
			}
			return nil
		}()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestSameVerbAccept: goroutines that Accept one connection request at
// once: one succeeds and the others fail with EINVAL, and the connection
// is up: for a UD request with a QP from CreateQP, the QP stays in RTS
// and the client gets ESTABLISHED; for an RC request with a QP made
// outside the ID (ConnParam.QPNum), the client gets CONNECT_RESPONSE,
// Establishes, the server gets ESTABLISHED and a message goes each way.
// Accept after a successful Accept, one at a time, is refused as well.
// On the old code, which let every Accept reach librdmacm, both failed
// in every round, at once or one at a time: librdmacm answered the
// kernel's refusal of a second UD Accept by moving the QP to ERR, and
// the kernel answered a second RC Accept by rejecting the connection,
// so that the client's CONNECT_RESPONSE was followed by a REJ and its
// InitQPAttr failed (EINVAL); after that, in some rounds, the Close of
// the request's ID hung in rdma_destroy_id until the test's timeout.
func TestSameVerbAccept(t *testing.T) {
	n := device(t)
	rounds := 5
	for _, concurrent := range []bool{true, false} {
		mode := map[bool]string{true: "concurrent", false: "sequential"}[concurrent]
		accept := func(id *rdmacm.ID, p func() *rdmacm.ConnParam) []error {
			if concurrent {
				return atOnce(sameVerbGoroutines, func(int) error { return id.Accept(p()) })
			}
			errs := make([]error, sameVerbGoroutines)
			for i := range errs {
				errs[i] = id.Accept(p())
			}
			return errs
		}
		t.Run("UD/"+mode, func(t *testing.T) {
			ctx := timeout(t, 60*time.Second)
			lch, lid := newID(t, rdmacm.PortSpaceUDP)
			if err := lid.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
				t.Fatal(err)
			}
			if err := lid.Listen(0); err != nil {
				t.Fatal(err)
			}
			for round := range rounds {
				t.Run(fmt.Sprint(round), func(t *testing.T) {
					cch, cid := newID(t, rdmacm.PortSpaceUDP)
					if err := cid.ResolveAddr(netip.AddrPortFrom(n.IP, 0), lid.LocalAddr(), 2*time.Second); err != nil {
						t.Fatal(err)
					}
					if _, err := cch.Await(ctx, rdmacm.EventAddrResolved); err != nil {
						t.Fatal(err)
					}
					if err := cid.ResolveRoute(2 * time.Second); err != nil {
						t.Fatal(err)
					}
					if _, err := cch.Await(ctx, rdmacm.EventRouteResolved); err != nil {
						t.Fatal(err)
					}
					if err := cid.Connect(nil); err != nil {
						t.Fatal(err)
					}
					req, err := lch.Await(ctx, rdmacm.EventConnectRequest)
					if err != nil {
						t.Fatal(err)
					}
					sid := req.ID
					t.Cleanup(func() { closeOK(t, sid) })
					sqp := idQP(t, sid)
					errs := accept(sid, func() *rdmacm.ConnParam { return nil })
					if _, err := oneWinner("Accept", errs); err != nil {
						t.Error(err)
					}
					if s, err := sqp.State(); err != nil || s != ibverbs.QPStateRTS {
						t.Errorf("the server's QP after the Accepts: %s, %v; want RTS", s, err)
					}
					if ev, err := cch.Await(ctx, rdmacm.EventEstablished); err != nil || ev.UD.QPNum != sqp.Num() {
						t.Fatalf("client: %v, %v; want ESTABLISHED naming the server's QP %#x", ev, err, sqp.Num())
					}
				})
			}
		})
		t.Run("RC/"+mode, func(t *testing.T) {
			for round := range rounds {
				t.Run(fmt.Sprint(round), func(t *testing.T) {
					ctx := timeout(t, 30*time.Second)
					o := connectOwn(t, ctx, n)
					sid := o.await(ctx)
					sqp, scq, sm := ownQP(t, sid)
					moveQP(t, sid, sqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
					errs := accept(sid, func() *rdmacm.ConnParam {
						return &rdmacm.ConnParam{QPNum: sqp.Num(), RNRRetryCount: 7}
					})
					if _, err := oneWinner("Accept", errs); err != nil {
						t.Error(err)
					}
					ev, err := o.cid.Channel().GetEvent(ctx)
					if err != nil || ev.Type != rdmacm.EventConnectResponse {
						t.Fatalf("client: %v, %v; want CONNECT_RESPONSE", ev, err)
					}
					moveQP(t, o.cid, o.cqp, ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
					if err := o.cid.Establish(); err != nil {
						t.Fatalf("Establish: %v", err)
					}
					if ev, err := o.lch.Await(ctx, rdmacm.EventEstablished); err != nil || ev.ID != sid {
						t.Fatalf("server: %v, %v; want ESTABLISHED for its ID", ev, err)
					}
					exchange(t, "from the client", o.cqp, o.ccq, o.cm, sqp, scq, sm)
					exchange(t, "from the server", sqp, scq, sm, o.cqp, o.ccq, o.cm)
				})
			}
		})
	}
}
