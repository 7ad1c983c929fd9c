//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// waitInGetEvent waits until a GetEvent holds ch, for at most 10s.
func waitInGetEvent(t *testing.T, ch *rdmacm.EventChannel) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !rdmacm.Waiting(ch); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no GetEvent waits on the channel after 10s")
		}
	}
}

// secondWaiter runs wait, a second caller's wait with a 200ms deadline
// while another caller waits, and checks that it ends with
// DeadlineExceeded within 5 s (room for a VM under TCG on a loaded
// host), where it waited for the first caller's event (or Close), which
// its callers bring only after it returns.
func secondWaiter(t *testing.T, what string, wait func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	res := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		res <- wait(ctx)
	}()
	select {
	case err := <-res:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with a 200ms deadline while another waits: %v, want DeadlineExceeded", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s with a 200ms deadline while another waits: still waiting after %v", what, time.Since(start))
	}
}

// TestSecondAcceptOwnContext: a second Accept, or GetRequest, while one
// waits on the listener ends with its own context's deadline, where it
// waited for the first one's request or Close; Close then ends the first.
func TestSecondAcceptOwnContext(t *testing.T) {
	n := device(t)
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := l.Accept(context.Background())
		first <- err
	}()
	waitInGetEvent(t, l.ID().Channel())
	secondWaiter(t, "Accept", func(ctx context.Context) error {
		_, err := l.Accept(ctx)
		return err
	})
	secondWaiter(t, "GetRequest", func(ctx context.Context) error {
		_, err := l.GetRequest(ctx)
		return err
	})
	closeOK(t, l)
	select {
	case err := <-first:
		if !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("the first Accept after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first Accept still waits 5s after Close")
	}
}

// TestSecondGetEventOwnContext: a second GetEvent on a channel while one
// waits ends with its own context's deadline; Close ends the first.
func TestSecondGetEventOwnContext(t *testing.T) {
	device(t)
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := ch.GetEvent(context.Background())
		first <- err
	}()
	waitInGetEvent(t, ch)
	secondWaiter(t, "GetEvent", func(ctx context.Context) error {
		_, err := ch.GetEvent(ctx)
		return err
	})
	closeOK(t, ch)
	select {
	case err := <-first:
		if !errors.Is(err, rdmacm.ErrClosed) {
			t.Errorf("the first GetEvent after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first GetEvent still waits 5s after Close")
	}
	if _, err := ch.GetEvent(timeout(t, 10*time.Second)); !errors.Is(err, rdmacm.ErrClosed) {
		t.Errorf("GetEvent after Close: %v, want ErrClosed", err)
	}
	if fd := ch.Fd(); fd != -1 {
		t.Errorf("Fd after Close: %d, want -1", fd)
	}
}

// TestConnectErrorErrno: a CONNECT_ERROR that librdmacm makes itself, when
// it cannot move the dialer's QP to RTR (here the QP was moved to the
// error state first, from which only RESET leads on), carries the errno
// of that failure (EINVAL), where it had only status -1.
func TestConnectErrorErrno(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	ctx := timeout(t, 60*time.Second)
	acc := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c, err := l.Accept(actx)
		if c != nil {
			c.Close()
		}
		acc <- err
	}()
	_, id, _ := rdmatest.RoutedID(t, ctx, n.IP, l.Addr())
	qp := idQP(t, id)
	if err := qp.ToError(); err != nil {
		t.Fatal(err)
	}
	if err := id.Connect(&rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	_, err := id.Channel().Await(ctx, rdmacm.EventEstablished)
	var ee *rdmacm.EventError
	if !errors.As(err, &ee) || ee.Event != rdmacm.EventConnectError {
		t.Fatalf("Await after the reply to a QP in the error state: %v, want CONNECT_ERROR", err)
	}
	if !errors.Is(err, rdmacm.ErrConnect) || !errors.Is(err, syscall.EINVAL) || ee.Status != -int(syscall.EINVAL) {
		t.Errorf("CONNECT_ERROR: %v (status %d), want ErrConnect and EINVAL", err, ee.Status)
	}
	t.Logf("dialer: %v", err)
	closeOK(t, qp)
	closeOK(t, id) // the kernel rejects the connection it answered
	if err := <-acc; err == nil {
		t.Error("Accept of a connection whose dialer failed succeeded")
	}
}

// spin busy-waits for a lead of round i: up to 60µs, by even rounds on
// one side, by odd ones on the other.
func spin(i int) {
	if i%2 != 0 {
		return
	}
	d := time.Duration(i/2%30) * 2 * time.Microsecond
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// TestCloseRacesCreateID: a channel's Close racing CreateID, Migrate and Fd
// either refuses (EBUSY) or ends them (ErrClosed): never does an ID join a
// channel that Close has destroyed, and never does Fd read a freed one.
func TestCloseRacesCreateID(t *testing.T) {
	device(t)
	newChannel := func() *rdmacm.EventChannel {
		ch, err := rdmacm.CreateEventChannel()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	const rounds = 300
	var both, created, closed int
	for i := 0; i < rounds && !t.Failed(); i++ {
		ch := newChannel()
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			id       *rdmacm.ID
			idErr    error
			closeErr error
		)
		wg.Add(3)
		// One starts a little after the other, by a lead that sweeps
		// across rounds, so that some Closes come first, some
		// CreateIDs, and some of each meet in the middle.
		go func() { defer wg.Done(); <-start; spin(i); id, idErr = ch.CreateID(rdmacm.PortSpaceTCP) }()
		go func() { defer wg.Done(); <-start; spin(i + 1); closeErr = ch.Close() }()
		go func() { defer wg.Done(); <-start; _ = ch.Fd() }()
		close(start)
		wg.Wait()
		switch {
		case idErr == nil && closeErr == nil:
			both++
			t.Errorf("round %d: CreateID made an ID (on %p) on a channel that Close destroyed", i, id.Channel())
			id.Close()
			continue
		case idErr == nil:
			created++
			if !errors.Is(closeErr, syscall.EBUSY) {
				t.Errorf("round %d: Close beside a new ID: %v, want EBUSY", i, closeErr)
			}
			if id.Channel() != ch {
				t.Errorf("round %d: the ID is on %p, not %p", i, id.Channel(), ch)
			}
			closeOK(t, id)
			closeOK(t, ch)
		default:
			closed++
			if !errors.Is(idErr, rdmacm.ErrClosed) || closeErr != nil {
				t.Errorf("round %d: CreateID %v, Close %v; want ErrClosed and nil", i, idErr, closeErr)
			}
		}
	}
	t.Logf("CreateID against Close: %d made, %d closed first, %d both", created, closed, both)

	var moved, refused int
	for i := 0; i < rounds && !t.Failed(); i++ {
		from, to := newChannel(), newChannel()
		id, err := from.CreateID(rdmacm.PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			migErr   error
			closeErr error
		)
		wg.Add(2)
		go func() { defer wg.Done(); <-start; spin(i); migErr = id.Migrate(to) }()
		go func() { defer wg.Done(); <-start; spin(i + 1); closeErr = to.Close() }()
		close(start)
		wg.Wait()
		switch {
		case migErr == nil && closeErr == nil:
			t.Errorf("round %d: Migrate moved the ID onto a channel that Close destroyed", i)
			continue
		case migErr == nil:
			moved++
			if !errors.Is(closeErr, syscall.EBUSY) || id.Channel() != to {
				t.Errorf("round %d: Close beside a migrated ID: %v, the ID on %p (want EBUSY, %p)", i, closeErr, id.Channel(), to)
			}
			closeOK(t, from) // the ID has left it
			closeOK(t, id)
			closeOK(t, to)
		default:
			refused++
			if !errors.Is(migErr, rdmacm.ErrClosed) || closeErr != nil || id.Channel() != from {
				t.Errorf("round %d: Migrate %v, Close %v, the ID on %p; want ErrClosed, nil, %p", i, migErr, closeErr, id.Channel(), from)
			}
			closeOK(t, id)
			closeOK(t, from)
		}
	}
	t.Logf("Migrate against Close: %d moved, %d refused", moved, refused)
}

// TestAwaitRejectsConnectRequest: Await on a channel shared with a
// listening ID, given a connection request, rejects it (the dialer gets a
// *RejectedError) and frees its ID, so that the channel closes once the
// listening ID has, where the request's ID, out of reach, held it open
// (EBUSY) for good.
func TestAwaitRejectsConnectRequest(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 60*time.Second)
	ch, lid := rawListener(t, n.IP)
	dialed := dialAndClose(ctx, lid.LocalAddr().String(), n.IP)
	_, err := ch.Await(ctx, rdmacm.EventEstablished)
	var ee *rdmacm.EventError
	if !errors.As(err, &ee) || ee.Event != rdmacm.EventConnectRequest {
		t.Errorf("Await(ESTABLISHED) on a listening ID's channel: %v, want an error for CONNECT_REQUEST", err)
	}
	var rej *rdmacm.RejectedError
	if err := <-dialed; !errors.As(err, &rej) {
		t.Errorf("Dial: %v, want a *RejectedError", err)
	}
	closeOK(t, lid)
	if err := ch.Close(); err != nil {
		t.Errorf("closing the channel once its listening ID has closed: %v", err)
	}
}

// TestEventErrorSentinels: each failure event matches its own sentinel
// (MULTICAST_ERROR ErrMulticast, not ErrConnect), and an event that ends
// no operation matches none, where all of them matched ErrConnect.
func TestEventErrorSentinels(t *testing.T) {
	sentinels := []error{rdmacm.ErrAddrResolve, rdmacm.ErrRouteResolve, rdmacm.ErrUnreachable,
		rdmacm.ErrConnect, rdmacm.ErrMulticast, rdmacm.ErrDisconnected, rdmacm.ErrDeviceRemoved}
	for _, c := range []struct {
		ev   rdmacm.EventType
		want error
	}{
		{rdmacm.EventAddrError, rdmacm.ErrAddrResolve},
		{rdmacm.EventRouteError, rdmacm.ErrRouteResolve},
		{rdmacm.EventUnreachable, rdmacm.ErrUnreachable},
		{rdmacm.EventConnectError, rdmacm.ErrConnect},
		{rdmacm.EventMulticastError, rdmacm.ErrMulticast},
		{rdmacm.EventDisconnected, rdmacm.ErrDisconnected},
		{rdmacm.EventDeviceRemoval, rdmacm.ErrDeviceRemoved},
		{rdmacm.EventConnectRequest, nil},
		{rdmacm.EventEstablished, nil},
		{rdmacm.EventAddrResolved, nil},
	} {
		err := error(&rdmacm.EventError{Event: c.ev, Status: -int(syscall.ENOMEM)})
		for _, s := range sentinels {
			if got := errors.Is(err, s); got != (s == c.want) {
				t.Errorf("%s: errors.Is(%v, %q) = %v", c.ev, err, s, got)
			}
		}
		if !errors.Is(err, syscall.ENOMEM) {
			t.Errorf("%s: %v does not match its errno", c.ev, err)
		}
		if c.want == nil && !strings.HasPrefix(err.Error(), "unexpected event (RDMA_CM_EVENT_"+c.ev.String()) {
			t.Errorf("%s: %q", c.ev, err)
		}
	}
}

// TestCloseWhileGetEventTakesRequest: the listening ID's Close while a
// GetEvent has taken a connection request but not yet named its IDs
// (held there by a hook) waits for that GetEvent, as rdma_destroy_id
// waits for the acks of the ID's events, and the channel's Close
// meanwhile fails with EBUSY, the listening ID being still on it. The
// GetEvent then returns the request, with its new ID and the listening
// ID, for the caller to answer and close, and the channel closes after:
// no ID is left on a destroyed channel. (Before GetEvent named the IDs
// before the ack, the listening ID's Close returned at once, and the
// channel's Close counted no ID while GetEvent went on to make the
// request's; 3b059bc had GetEvent refuse the request then.)
func TestCloseWhileGetEventTakesRequest(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 60*time.Second)
	ch, lid := rawListener(t, n.IP)
	var once sync.Once
	taken, resume := make(chan struct{}), make(chan struct{})
	restore := rdmacm.SetGetEventHook(func(c *rdmacm.EventChannel, ev *rdmacm.Event) {
		if c != ch || ev.Type != rdmacm.EventConnectRequest {
			return
		}
		once.Do(func() {
			close(taken)
			select {
			case <-resume:
			case <-time.After(20 * time.Second):
			}
		})
	})
	defer restore()

	type result struct {
		ev  *rdmacm.Event
		err error
	}
	got := make(chan result, 1)
	go func() {
		ev, err := ch.GetEvent(ctx)
		got <- result{ev, err}
	}()
	dialed := make(chan error, 1)
	go func() {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		c, err := rdmacm.Dial(dctx, lid.LocalAddr().String(), &rdmacm.Config{SrcAddr: n.IP.String()})
		if c != nil {
			c.Close()
		}
		dialed <- err
	}()
	select {
	case <-taken:
	case r := <-got:
		t.Fatalf("GetEvent ended before it took the connection request: %v %v", r.ev, r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("no connection request reached GetEvent in 20s")
	}
	lidClosed := make(chan error, 1)
	go func() { lidClosed <- lid.Close() }()
	select {
	case err := <-lidClosed:
		lidClosed <- err
		t.Errorf("the listening ID's Close returned (%v) while GetEvent held its connection request", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := ch.Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("the channel's Close while GetEvent holds a connection request of its listening ID: %v, want EBUSY", err)
	}
	close(resume)
	var r result
	select {
	case r = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("GetEvent still runs 20s after the hook let it go on")
	}
	select {
	case err := <-lidClosed:
		if err != nil {
			t.Errorf("the listening ID's Close: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the listening ID's Close still runs 20s after GetEvent returned")
	}
	if r.err != nil {
		t.Fatalf("GetEvent: %v, want the connection request", r.err)
	}
	if r.ev.Type != rdmacm.EventConnectRequest || r.ev.ID == nil || r.ev.ListenID != lid {
		t.Errorf("GetEvent: %s, ID %p, listening ID %p (want %p)", r.ev.Type, r.ev.ID, r.ev.ListenID, lid)
	}
	if r.ev.ID != nil {
		if err := r.ev.ID.Reject(nil); err != nil {
			t.Errorf("rejecting the request: %v", err)
		}
		closeOK(t, r.ev.ID)
	}
	closeOK(t, ch)
	var rej *rdmacm.RejectedError
	if err := <-dialed; !errors.As(err, &rej) {
		t.Errorf("Dial: %v, want a *RejectedError", err)
	} else {
		t.Logf("Dial: %v", err)
	}
}
