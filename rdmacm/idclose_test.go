//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// zeroIsClosed is nil for a query's non-zero answer, and ErrClosed for
// its zero one, which an ID's query gives once its Close has begun.
func zeroIsClosed(zero bool) error {
	if zero {
		return rdmacm.ErrClosed
	}
	return nil
}

// idCall is one kind of call of an ID, for TestIDCloseRace.
type idCall struct {
	name string
	ps   rdmacm.PortSpace
	// reopens: a Close may refuse with EBUSY (a QP the call made is
	// open) and the ID stays open, so that a call after that Close's
	// start need not fail.
	reopens bool
	call    func(id *rdmacm.ID) error
}

// TestIDCloseRace: an ID's methods may run while another goroutine
// Closes the ID. For each kind of call (the queries, each verb),
// goroutines call it in a loop on an ID bound to the device's address
// while the test Closes the ID, round after round: no crash, no race
// report (built with -race), a call that begins once Close has begun
// (IDClosing) returns an error matching ErrClosed (a query, its zero
// value), and so does every call once Close has returned. A second Close
// is a no-op, and the channels close (no ID is left on them). On the old
// code, whose Close destroyed the ID and set its pointer to nil with no
// synchronisation, the race detector reported Close's write against
// LocalAddr, RemoteAddr, PortNum, Raw and Context, and BindAddr passed
// librdmacm the pointer Close had set to nil (SIGSEGV). Two of the
// kinds, run from several goroutines, also found CreateQP beside the
// Close of the QP it made (SIGSEGV) and Migrate beside Migrate (the ID's
// rdma_destroy_id then failed with EINVAL), which the ID now serializes.
func TestIDCloseRace(t *testing.T) {
	n := device(t)
	dst := netip.AddrPortFrom(n.IP, 7471)
	group := netip.MustParseAddr(testGroup)
	ch2, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ch2) })

	// For CreateQP: a PD and a CQ on the device, from a first ID's
	// Context (librdmacm's, which stays open).
	var pd *ibverbs.PD
	var cq *ibverbs.CQ
	{
		_, id0 := newID(t, rdmacm.PortSpaceTCP)
		if err := id0.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
			t.Fatal(err)
		}
		dctx, err := id0.Context()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, dctx) })
		if pd, err = dctx.AllocPD(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, pd) })
		if cq, err = dctx.CreateCQ(16, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, cq) })
	}

	calls := []idCall{
		{name: "LocalAddr", call: func(id *rdmacm.ID) error { return zeroIsClosed(!id.LocalAddr().IsValid()) }},
		{name: "RemoteAddr", call: func(id *rdmacm.ID) error {
			// A bound ID has no peer: the answer is always zero, and
			// the call is what counts.
			id.RemoteAddr()
			return rdmacm.ErrClosed
		}},
		{name: "PortNum", call: func(id *rdmacm.ID) error { return zeroIsClosed(id.PortNum() == 0) }},
		{name: "Raw", call: func(id *rdmacm.ID) error { return zeroIsClosed(id.Raw() == nil) }},
		{name: "Context", call: func(id *rdmacm.ID) error {
			ctx, err := id.Context()
			if err == nil {
				ctx.Close()
			}
			return err
		}},
		{name: "BindAddr", call: func(id *rdmacm.ID) error { return id.BindAddr(netip.AddrPortFrom(n.IP, 0)) }},
		{name: "SetTOS", call: func(id *rdmacm.ID) error { return id.SetTOS(0) }},
		{name: "SetAckTimeout", call: func(id *rdmacm.ID) error { return id.SetAckTimeout(14) }},
		{name: "ResolveAddr", call: func(id *rdmacm.ID) error { return id.ResolveAddr(netip.AddrPort{}, dst, time.Second) }},
		{name: "ResolveRoute", call: func(id *rdmacm.ID) error { return id.ResolveRoute(time.Second) }},
		{name: "Listen", call: func(id *rdmacm.ID) error { return id.Listen(0) }},
		{name: "Connect", call: func(id *rdmacm.ID) error { return id.Connect(&rdmacm.ConnParam{QPNum: 1}) }},
		{name: "Accept", call: func(id *rdmacm.ID) error { return id.Accept(&rdmacm.ConnParam{QPNum: 1}) }},
		{name: "Reject", call: func(id *rdmacm.ID) error { return id.Reject(nil) }},
		{name: "Disconnect", call: func(id *rdmacm.ID) error { return id.Disconnect() }},
		{name: "InitQPAttr", call: func(id *rdmacm.ID) error {
			_, _, err := id.InitQPAttr(ibverbs.QPStateInit)
			return err
		}},
		{name: "Establish", call: func(id *rdmacm.ID) error { return id.Establish() }},
		{name: "Notify", call: func(id *rdmacm.ID) error { return id.Notify(ibverbs.EventCommEst) }},
		{name: "Multicast", ps: rdmacm.PortSpaceUDP, call: func(id *rdmacm.ID) error {
			if err := id.JoinMulticast(group, false); err != nil {
				return err
			}
			return id.LeaveMulticast(group)
		}},
		{name: "Migrate"}, // to ch2 and back: call set below, with the subtest's channel
		{name: "CreateQP", reopens: true, call: func(id *rdmacm.ID) error {
			qp, err := id.CreateQP(pd, ibverbs.QPInit{SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err == nil {
				err = qp.Close()
			}
			return err
		}},
	}
	// Each round's start delay is its number mod 8 calls: 32 rounds take
	// each of the 8 four times. (Each round costs some 70 ms of CI's
	// emulated VM, mostly the ID's creation and destruction: 60 rounds
	// made this the package's slowest test, 62 s of CI.)
	const goroutines = 4
	rounds := 32
	if testing.Short() {
		rounds = 10
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			ch, err := rdmacm.CreateEventChannel()
			if err != nil {
				t.Fatal(err)
			}
			defer closeOK(t, ch)
			if c.name == "Migrate" {
				c.call = func(id *rdmacm.ID) error {
					to := ch2
					if id.Channel() == ch2 {
						to = ch
					}
					return id.Migrate(to)
				}
			}
			for round := range rounds {
				if err := closeRace(ch, c, netip.AddrPortFrom(n.IP, 0), goroutines, round); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
		})
	}
}

// onNoDevice reports whether err says an ID is on no device.
func onNoDevice(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "not bound to a device") || strings.Contains(msg, "on no device") ||
		strings.Contains(msg, "no RDMA device has")
}

// closeRace runs one round of TestIDCloseRace: an ID of c's port space
// on ch, bound to src, goroutines calling c in a loop, and the ID's Close
// meanwhile.
func closeRace(ch *rdmacm.EventChannel, c idCall, src netip.AddrPort, goroutines, round int) error {
	ps := c.ps
	if ps == 0 {
		ps = rdmacm.PortSpaceTCP
	}
	id, err := ch.CreateID(ps)
	if err != nil {
		return err
	}
	if err := id.BindAddr(src); err != nil {
		id.Close()
		return err
	}
	var (
		wg       sync.WaitGroup
		returned atomic.Bool // Close has returned nil
		calls    atomic.Int64
		mu       sync.Mutex
		bad      []error
	)
	fail := func(err error) {
		mu.Lock()
		if len(bad) < 5 {
			bad = append(bad, err)
		}
		mu.Unlock()
	}
	start := make(chan struct{})
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				after := returned.Load()
				closing := rdmacm.IDClosing(id) && !c.reopens
				err := c.call(id)
				calls.Add(1)
				if (closing || after) && !errors.Is(err, rdmacm.ErrClosed) {
					fail(fmt.Errorf("%s begun once Close had begun (returned: %v): %v, want ErrClosed", c.name, after, err))
				}
				// The ID is bound to the device's address throughout:
				// a call under way when Close began must not be told
				// otherwise (its second look at the ID, once Close had
				// begun, found no device).
				if err != nil && onNoDevice(err) {
					fail(fmt.Errorf("%s on an ID bound to %v: %v", c.name, src, err))
				}
				if after {
					return
				}
			}
		}()
	}
	close(start)
	// Let the calls get under way, longer in some rounds than others.
	for calls.Load() < int64(round%8) {
		time.Sleep(10 * time.Microsecond)
	}
	for {
		err := id.Close()
		if err == nil {
			break
		}
		if !c.reopens || !errors.Is(err, syscall.EBUSY) {
			returned.Store(true)
			wg.Wait()
			return fmt.Errorf("Close: %v", err)
		}
		time.Sleep(10 * time.Microsecond) // the QP's maker closes it
	}
	returned.Store(true)
	wg.Wait()
	if err := id.Close(); err != nil {
		return fmt.Errorf("second Close: %v", err)
	}
	return errors.Join(bad...)
}
