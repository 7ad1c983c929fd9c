//go:build linux && cgo

package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
)

// Listener waits for connection requests on an address: an rdma_cm ID
// bound and listening, with its own event channel.
type Listener struct {
	id  *ID
	ch  *EventChannel
	cfg Config
	// bound is id's address, kept at Listen: Close may free id while
	// another goroutine asks.
	bound netip.AddrPort

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	// sem holds one token while a GetRequest takes a request, and Close
	// takes it to wait for that one to leave. Another GetRequest waits
	// for it in a select, so that its own ctx, or Close, ends the wait.
	sem chan struct{}
	// removed is the DEVICE_REMOVAL event's error once the device has
	// gone: the kernel has closed the listening ID, so no request comes
	// again, and every later GetRequest returns it (under sem).
	removed error

	// mu guards pending, ready, readyc and wake. pending holds the
	// requests that an Accept took and left unanswered because its
	// caller's context ended, or it returned, first (park): getRequest
	// hands them out
	// before it reads the channel, and Close rejects them. ready holds
	// the connections whose handshake an Accept began and whose caller's
	// context ended before it was over (keep): Accept hands them out
	// first, and Close closes them. readyc closes, and is made anew, when
	// one is kept, for an Accept that waits to take requests. wake, while
	// a getRequest waits in GetEvent, ends that wait so that it takes a
	// request parked, or a connection kept, meanwhile.
	mu      sync.Mutex
	pending []*ConnRequest
	ready   []*Conn
	readyc  chan struct{}
	wake    context.CancelFunc
	// handshakes counts the handshakes that Accepts began: Close waits
	// for them. A handshake is added under mu, and only before Close.
	handshakes sync.WaitGroup
	// slots holds a token for each handshake under way, and for each
	// request an Accept's taker takes for one: at most maxHandshakes.
	slots chan struct{}

	// closeMu serializes Close; closed is set once one has succeeded, so
	// that a Close that failed is tried again by the next.
	closeMu sync.Mutex
	closed  bool
}

// Listen binds addr ("host:port"; an empty host listens on every address,
// port 0 picks a free one) and listens on it (rdma_create_id,
// rdma_bind_addr, rdma_listen). Binding a specific address listens on its
// device only; an address that no RDMA device has (a loopback address,
// one of a netdev without RDMA) is refused with an error matching
// syscall.ENODEV, where rdma_bind_addr takes it and no request could
// come. The unspecified addresses listen on every device: 0.0.0.0 for
// IPv4 requests only, and :: for IPv6 and IPv4 alike unless the sysctl
// net.ipv6.bindv6only is set. An empty host is :: taking both whatever
// the sysctl says (RDMA_OPTION_ID_AFONLY 0), as net.Listen("tcp",
// ":port") does; its Addr is then [::]:port. cfg (nil for defaults)
// applies to every connection Accept makes; ctx bounds only the host's
// lookup. A UD listener (Config.UD) answers each lookup (LookupUD) and UD
// Dial in an Accept, with a Conn of its own that no event ends: the
// program must close each one itself (see Accept).
func Listen(ctx context.Context, addr string, cfg *Config) (*Listener, error) {
	checkContext(ctx, "Listen")
	return op(ctx, "listen", addr, cfg, listen)
}

func listen(ctx context.Context, addr string, cfg *Config) (*Listener, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ap, err := lookupAddrPort(ctx, addr, netip.IPv6Unspecified())
	if err != nil {
		return nil, err
	}
	ch, err := CreateEventChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(cfg.portSpace())
	if err != nil {
		ch.Close()
		return nil, err
	}
	if host, _, _ := net.SplitHostPort(addr); host == "" {
		// An empty host takes IPv4 too, whatever net.ipv6.bindv6only
		// says, as package net's does.
		if err := id.setAFOnly(false); err != nil {
			return nil, errors.Join(err, id.Close(), ch.Close())
		}
	}
	if err := id.bindAddr(ap); err != nil {
		return nil, errors.Join(withAddr(ap, addr, err), id.Close(), ch.Close())
	}
	// rdma_bind_addr takes a specific address that no RDMA device has
	// (127.0.0.1, ::1) and leaves the ID on no device: rdma_listen then
	// succeeds, and no request can ever come.
	if !ap.Addr().IsUnspecified() && !id.onDevice() {
		wild := "0.0.0.0"
		if ap.Addr().Is6() {
			wild = "::"
		}
		return nil, errors.Join(fmt.Errorf("no RDMA device has address %s (listen on an address of an RDMA device's netdev, or on %s for every device): %w",
			ap.Addr(), wild, syscall.ENODEV), id.Close(), ch.Close())
	}
	if err := id.checkPrivateData("rdma_accept", len(cfg.PrivateData), cmReply); err != nil {
		return nil, errors.Join(err, id.Close(), ch.Close())
	}
	if err := id.Listen(cfg.Backlog); err != nil {
		return nil, errors.Join(err, id.Close(), ch.Close())
	}
	// getRequest reads the requests from ch, and drops its other
	// events: the ID stays on it (Migrate refuses), and no other ID
	// joins it (CreateID and Migrate refuse).
	id.listening = true
	ch.markListener()
	l := &Listener{id: id, ch: ch, cfg: *cfg, bound: id.LocalAddr(), sem: make(chan struct{}, 1), readyc: make(chan struct{}),
		slots: make(chan struct{}, maxHandshakes)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// Addr returns the address and port the listener is bound to, during and
// after Close too.
func (l *Listener) Addr() netip.AddrPort { return l.bound }

// ID returns the listening rdma_cm identifier. Its events belong to the
// Listener, whose Accept and GetRequest take the connection requests:
// the channel's GetEvent and Await refuse (syscall.EINVAL). It stays on
// that channel: its Migrate refuses (syscall.EINVAL). The channel is the
// Listener's alone: Accept and GetRequest read every event on it and drop
// all but the requests (and DEVICE_REMOVAL), so CreateID on it, and
// Migrate of another ID onto it, refuse too (syscall.EINVAL): put IDs of
// your own on a channel of your own.
func (l *Listener) ID() *ID { return l.id }

// Accept waits for a connection request and accepts it with the
// listener's Config: GetRequest, then ConnRequest.Accept. If making the
// connection's resources fails, the request is rejected. Close ends it
// with ErrClosed, also once it has answered a request and waits for the
// peer to complete the connection; where a handshake's own failure (a
// peer's *RejectedError, Config.Prepare's error) ends it once Close has
// begun, the error matches both.
//
// As a TCP listener's accept never waits on one client's handshake,
// Accept does not wait on one peer's: while the handshakes it has begun
// are under way, it goes on taking requests and begins their handshakes
// too, each in a goroutine of its own, and returns the first connection
// made (one kept, see below, included), so that a peer that got the
// reply and never completes (it went away, and its CM never said so: the
// kernel sends the reply again until it gives up, after about a minute)
// holds up no other. At most 64 handshakes are under way on a listener
// at once (the Accepts' together); further requests wait in the
// backlog. A failure of one peer's (it refused the reply, went away: a
// *RejectedError, an *EventError, ErrDisconnected) ends the Accept that
// began its handshake, if that Accept still waits, and that Accept only:
// a server calls Accept again, as in ExampleListen. A server that wants
// each request to itself (to look at its private data, answer it with a
// Config of its own) takes requests with GetRequest and accepts each in
// a goroutine of its own, as package rdmamsg's Listener does.
//
// ctx bounds the wait for a connection, not the handshakes: once Accept
// has taken a request, its ctx no longer changes what the peer gets, as
// a TCP listener's backlog holds connections that no Accept has returned
// yet. When ctx ends once Accept has taken a request but before it
// begins to answer it, Accept returns ctx's error and leaves the request
// unanswered for the next Accept or GetRequest, as it leaves one it took
// as it returned another connection. The handshakes it began (the
// connection's resources are being made, or the reply has gone out) go
// on after it has returned, for ctx's end as for another connection's,
// bounded by the listener's Config.Timeout (where that is zero, the wait
// for ESTABLISHED by DefaultConnectTimeout) and by Close; one that
// succeeds is kept, and the next Accept returns that connection before
// it takes another request. The peer may have gone meanwhile: a
// connection so kept may come with Done closed. A handshake that fails
// then is freed, and its error dropped, as another Accept's would end
// that Accept only. Close rejects the requests left unanswered, ends the
// handshakes under way, and closes the connections kept that no Accept
// has returned.
//
// For a UD listener, each Conn that Accept returns holds a QP, its CQs
// and a PD until closed, and no event ends it: Done never closes. Close
// each one when done with it (when the peer's lookup, or UD Dial, has
// no more use for it: the program's own protocol tells).
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	checkContext(ctx, "(*Listener).Accept")
	c, err := l.accept(ctx)
	if err != nil {
		return nil, &OpError{Op: "accept", Addr: l.bound.String(), Err: err}
	}
	return c, nil
}

// maxHandshakes bounds the handshakes under way on a listener, the
// Accepts' together (Listener.slots), so that a flood of requests whose
// peers never complete makes no more goroutines.
const maxHandshakes = 64

// acceptRun is one Accept's, shared with the handshakes it began: their
// outcomes while it waits, and once it has returned (gone), none: a
// handshake then keeps its connection for the next Accept (keep), or
// frees it and drops its error.
type acceptRun struct {
	mu      sync.Mutex
	gone    bool
	results []acceptResult
	// notify holds a token once a result has come.
	notify chan struct{}
}

type acceptResult struct {
	c   *Conn
	err error
	// cancelled says the listener's Close cancelled the handshake,
	// which err says (context.Canceled), and so ended it.
	cancelled bool
}

// closingError is a handshake's error, err, that an Accept returns once
// the listener's Close has begun: it matches ErrClosed and err's chain (a
// *RejectedError, an *EventError, Config.Prepare's error), unless Close's
// cancellation of the handshake is all that ended it (cancelled), whose
// context.Canceled is Close's doing, not the caller's ctx's: then only
// ErrClosed, with err's words.
type closingError struct {
	err       error
	cancelled bool
}

func (e *closingError) Error() string { return ErrClosed.Error() + " (" + e.err.Error() + ")" }

func (e *closingError) Unwrap() []error {
	if e.cancelled {
		return []error{ErrClosed}
	}
	return []error{ErrClosed, e.err}
}

// taken is what Accept's taker (take) hands it: a request, a connection
// kept, or why it can take no more.
type taken struct {
	r   *ConnRequest
	c   *Conn
	err error
}

// accept is Accept. A goroutine of its own (take) takes the requests,
// and the connections kept, while it waits; it returns once that one
// has ended, and leaves the handshakes still under way to go on.
func (l *Listener) accept(ctx context.Context) (*Conn, error) {
	run := &acceptRun{notify: make(chan struct{}, 1)}
	tctx, stopTaking := context.WithCancel(ctx)
	next := make(chan taken)
	takerDone := make(chan struct{})
	go l.take(tctx, next, takerDone)
	defer func() {
		// The taker leaves what it takes from now on for the next
		// Accept (hand); the handshakes left, and what came from those
		// that ended meanwhile, are kept or dropped as after ctx's end.
		stopTaking()
		<-takerDone
		run.mu.Lock()
		run.gone = true
		left := run.results
		run.results = nil
		run.mu.Unlock()
		for _, x := range left {
			if x.c != nil {
				l.keep(x.c)
			}
		}
	}()
	// outcome takes the first handshake's outcome that has come.
	outcome := func() (acceptResult, bool) {
		run.mu.Lock()
		defer run.mu.Unlock()
		if len(run.results) == 0 {
			return acceptResult{}, false
		}
		x := run.results[0]
		run.results[0] = acceptResult{}
		run.results = run.results[1:]
		if x.err != nil && l.ctx.Err() != nil {
			x.err = &closingError{err: x.err, cancelled: x.cancelled}
		}
		return x, true
	}
	for {
		if x, ok := outcome(); ok {
			return x.c, x.err
		}
		select {
		case <-run.notify:
		case t := <-next:
			if t.err != nil {
				return nil, t.err
			}
			if t.c != nil {
				return t.c, nil
			}
			if h := takenHook.Load(); h != nil {
				(*h)(l)
			}
			// Not answered yet: a caller that has given up leaves
			// the request for the next, unless Close has begun.
			if err := ctx.Err(); err != nil && l.park(t.r) {
				<-l.slots
				return nil, err
			}
			if !l.begin(ctx, run, t.r) {
				<-l.slots
				return nil, errors.Join(ErrClosed, t.r.refuse())
			}
		case <-ctx.Done():
			// A connection made meanwhile is returned rather than
			// kept.
			if x, ok := outcome(); ok && x.err == nil {
				return x.c, nil
			}
			return nil, ctx.Err()
		}
	}
}

// take is Accept's taker: it takes requests (getRequest), each once a
// handshake's slot is free, and the connections kept, and hands them to
// the Accept on next, until ctx ends (the Accept's own ends, or it has
// returned) or getRequest fails. It holds a slot while it takes a
// request, and passes it on with the request. It closes done when it
// returns.
func (l *Listener) take(ctx context.Context, next chan<- taken, done chan<- struct{}) {
	defer close(done)
	for {
		l.mu.Lock()
		c := l.takeReady()
		readyc := l.readyc
		l.mu.Unlock()
		if c != nil {
			if !l.hand(ctx, next, taken{c: c}) {
				return
			}
			continue
		}
		select {
		case l.slots <- struct{}{}:
		case <-readyc:
			continue
		case <-l.ctx.Done():
			l.hand(ctx, next, taken{err: ErrClosed})
			return
		case <-ctx.Done():
			return
		}
		r, c, err := l.getRequest(ctx, true)
		if r == nil {
			<-l.slots
		}
		if !l.hand(ctx, next, taken{r, c, err}) || err != nil {
			return
		}
	}
}

// hand hands t to the Accept waiting on next and reports whether it did.
// Where ctx ends first, the Accept has returned, or its ctx has ended: a
// request is left for the next Accept (park), or refused after Close,
// and a connection kept.
func (l *Listener) hand(ctx context.Context, next chan<- taken, t taken) bool {
	select {
	case next <- t:
		return true
	case <-ctx.Done():
	}
	switch {
	case t.r != nil:
		if !l.park(t.r) {
			t.r.refuse()
		}
		<-l.slots
	case t.c != nil:
		l.keep(t.c)
	}
	return false
}

// begin begins r's handshake in a goroutine of its own, which holds the
// slot the taker took for r until it ends, bounded by the listener's
// life, not by ctx, whose values it keeps. Its outcome goes to run,
// unless run's Accept has returned. After Close it begins none, and
// reports false.
func (l *Listener) begin(ctx context.Context, run *acceptRun, r *ConnRequest) bool {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(l.ctx, cancel)
	l.mu.Lock()
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		stop()
		cancel()
		return false
	}
	l.handshakes.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.handshakes.Done()
		x := func() acceptResult {
			defer func() { <-l.slots }()
			defer cancel()
			defer stop()
			c, err := r.accept(hctx, nil)
			// hctx ends before cancel only at Close.
			return acceptResult{c: c, err: err, cancelled: err != nil && hctx.Err() != nil && errors.Is(err, context.Canceled)}
		}()
		c := x.c
		run.mu.Lock()
		kept := run.gone
		if !kept {
			run.results = append(run.results, x)
			select {
			case run.notify <- struct{}{}:
			default:
			}
		}
		run.mu.Unlock()
		if kept && c != nil {
			l.keep(c)
		}
	}()
	return true
}

// GetRequest waits for the next connection request (the CONNECT_REQUEST
// event, as rdma_get_request) and moves its ID to an event channel of its
// own (rdma_migrate_id). The caller must Accept or Reject it. A caller
// that answers through the request's ID instead (a QP of its own, see
// InitQPAttr) closes that channel with the ID: the ID's Close (or its
// Migrate to another channel) closes it. It returns
// ctx's error when ctx ends first, and ErrClosed after Close. A request
// that an Accept took and left unanswered (its ctx ended, or it returned
// another connection, first) comes first. Callers take requests one at
// a time: another's wait ends with its own ctx too. Once the
// device has gone (DEVICE_REMOVAL), it and every later call return an
// error matching ErrDeviceRemoved: no request can come again.
func (l *Listener) GetRequest(ctx context.Context) (*ConnRequest, error) {
	checkContext(ctx, "(*Listener).GetRequest")
	r, _, err := l.getRequest(ctx, false)
	if err != nil {
		return nil, &OpError{Op: "accept", Addr: l.bound.String(), Err: err}
	}
	return r, nil
}

// getRequest is GetRequest; with conns, as Accept's, it returns a
// connection kept (keep) instead where there is one, first.
func (l *Listener) getRequest(ctx context.Context, conns bool) (*ConnRequest, *Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.ctx, cancel)
	defer stop()
	// One caller at a time takes requests; the others wait here, each
	// until its own ctx ends (or Close, which cancels it), or, for
	// Accept, until a connection is kept.
	for {
		var readyc chan struct{}
		if conns {
			l.mu.Lock()
			if c := l.takeReady(); c != nil {
				l.mu.Unlock()
				return nil, c, nil
			}
			readyc = l.readyc
			l.mu.Unlock()
		}
		select {
		case l.sem <- struct{}{}:
		case <-readyc:
			continue
		case <-ctx.Done():
			if l.ctx.Err() != nil {
				return nil, nil, ErrClosed
			}
			return nil, nil, ctx.Err()
		}
		break
	}
	defer func() { <-l.sem }()
	for {
		if l.ctx.Err() != nil {
			return nil, nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// A connection kept, then a request parked, is taken first;
		// one kept or parked while this waits in GetEvent ends the
		// wait (wake), and is taken next.
		wctx, wake := context.WithCancel(ctx)
		l.mu.Lock()
		if conns {
			if c := l.takeReady(); c != nil {
				l.mu.Unlock()
				wake()
				return nil, c, nil
			}
		}
		if len(l.pending) > 0 {
			r := l.pending[0]
			l.pending = l.pending[1:]
			l.mu.Unlock()
			wake()
			return r, nil, nil
		}
		l.wake = wake
		l.mu.Unlock()
		if l.removed != nil {
			wake()
			return nil, nil, l.removed
		}
		ev, err := l.ch.getEvent(wctx)
		l.mu.Lock()
		l.wake = nil
		l.mu.Unlock()
		woken := wctx.Err() != nil && ctx.Err() == nil
		wake()
		if err != nil {
			if l.ctx.Err() != nil {
				return nil, nil, ErrClosed
			}
			if woken {
				continue
			}
			if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				// ctx ended as a wake ended the wait: GetEvent
				// said Canceled for the wake, where ctx's error
				// is DeadlineExceeded, say.
				return nil, nil, cerr
			}
			return nil, nil, err
		}
		switch ev.Type {
		case EventConnectRequest:
		case EventDeviceRemoval:
			l.removed = eventError(ev)
			return nil, nil, l.removed
		default:
			continue
		}
		ch, err := CreateEventChannel()
		if err == nil {
			if err = ev.ID.Migrate(ch); err != nil {
				ch.Close()
			}
		}
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("taking a connection request: %w", err), ev.ID.Reject(nil), ev.ID.Close())
		}
		ev.ID.ownCh = ch
		return &ConnRequest{id: ev.ID, l: l, ev: ev}, nil, nil
	}
}

// takeReady takes the first connection kept, if any; the caller holds mu.
func (l *Listener) takeReady() *Conn {
	if len(l.ready) == 0 {
		return nil
	}
	c := l.ready[0]
	l.ready[0] = nil
	l.ready = l.ready[1:]
	return c
}

// keep holds c, a connection whose handshake an Accept began and whose
// caller gave up meanwhile, for the next Accept, and wakes an Accept
// waiting for a request; after Close, which closes those kept, it closes
// c.
func (l *Listener) keep(c *Conn) {
	l.mu.Lock()
	// Close cancels l.ctx before it takes the connections kept, under mu.
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		c.Close()
		return
	}
	l.ready = append(l.ready, c)
	close(l.readyc)
	l.readyc = make(chan struct{})
	if l.wake != nil {
		l.wake()
	}
	l.mu.Unlock()
}

// takenHook, if set, runs in Accept once it has taken a request, before
// it answers it (for the tests).
var takenHook atomic.Pointer[func(l *Listener)]

// park keeps r, a request that Accept took and did not answer because
// its caller's context ended, or it returned first, for the next
// getRequest, and reports
// whether it did: after Close, which rejects the requests parked, it
// does not, and r is refused.
func (l *Listener) park(r *ConnRequest) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Close cancels l.ctx before it takes the requests parked, under mu.
	if l.ctx.Err() != nil {
		return false
	}
	r.done = false
	l.pending = append(l.pending, r)
	if l.wake != nil {
		l.wake()
	}
	return true
}

// Close stops listening and destroys the listening ID and its channel
// (rdma_destroy_id, rdma_destroy_event_channel). A GetRequest or Accept
// waiting returns ErrClosed. Requests that an Accept took and left
// unanswered (see Accept) are rejected (rdma_reject): their peers' Dial
// fails with a *RejectedError. Handshakes that Accepts began end (the
// peer's Dial fails, or its connection ends at once), and Close waits
// for them, and for a Config.Prepare they are in; connections that an
// Accept's handshake made after that Accept returned, and that no
// Accept has returned, are closed (their peers get DISCONNECTED).
// Connections Accept returned, and requests GetRequest returned, stay.
// If Close fails, the next Close tries again what failed; once one has
// returned nil, closing again is a no-op.
func (l *Listener) Close() error {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if l.closed {
		return nil
	}
	l.mu.Lock()
	l.cancel() // under mu: no handshake is added after
	parked := l.pending
	l.pending = nil
	l.mu.Unlock()
	var errs []error
	for _, r := range parked {
		errs = append(errs, r.refuse())
	}
	// A handshake that succeeds now finds l.ctx ended and closes its
	// connection itself (keep).
	l.handshakes.Wait()
	l.mu.Lock()
	kept := l.ready
	l.ready = nil
	l.mu.Unlock()
	for _, c := range kept {
		errs = append(errs, c.Close())
	}
	l.sem <- struct{}{} // a GetRequest in progress has left
	defer func() { <-l.sem }()
	err := errors.Join(append(errs, l.id.Close(), l.ch.Close())...)
	l.closed = err == nil
	return err
}

// ConnRequest is a connection request a Listener took: its own ID (on its
// own event channel) and what the peer sent. Accept or Reject it.
type ConnRequest struct {
	id   *ID
	l    *Listener
	ev   *Event
	done bool
}

// PrivateData returns the private data of the request, padded with zeros
// by the CM (to 56 bytes for RC over InfiniBand and RoCE).
func (r *ConnRequest) PrivateData() []byte { return r.ev.PrivateData() }

// Param returns the request's connection parameters.
func (r *ConnRequest) Param() ConnParam { return r.ev.Param }

// ID returns the request's rdma_cm identifier.
func (r *ConnRequest) ID() *ID { return r.id }

// RemoteAddr returns the requester's address and port (rdma_get_peer_addr,
// rdma_get_dst_port).
func (r *ConnRequest) RemoteAddr() netip.AddrPort { return r.id.RemoteAddr() }

// LocalAddr returns the address and port the request came to
// (rdma_get_local_addr, rdma_get_src_port).
func (r *ConnRequest) LocalAddr() netip.AddrPort { return r.id.LocalAddr() }

// Accept makes the connection's PD, CQs and QP on the device the request
// came through and accepts (rdma_create_qp, rdma_accept), then waits for
// ESTABLISHED (RC; a UD request is answered at once). With
// Config.PathMTU, on an InfiniBand or RoCE device, the QP is made with
// ibv_create_qp instead, and Accept moves it to RTR, its path MTU
// capped, and RTS (rdma_init_qp_attr, ibv_modify_qp) before it replies;
// an iWARP device's connection ignores PathMTU. cfg nil takes the listener's. On
// failure the request is rejected and freed. Where the requester gave up
// first (its Dial ended), the error matches ErrDisconnected, and not the
// EINVAL of the verb that found it.
//
// The Conn reads its ID's events from the channel GetRequest made for
// it, and closes that channel with the ID. A request whose ID moved to
// another channel (ID.Migrate) is refused at once, with an error matching
// syscall.EINVAL, and rejected and freed: that channel is the caller's,
// to read and close, and may carry other IDs' events, which the Conn
// would take. Answer such a request through its ID (ID.Accept, with a
// QP of the caller's), or do not move it.
func (r *ConnRequest) Accept(ctx context.Context, cfg *Config) (*Conn, error) {
	checkContext(ctx, "(*ConnRequest).Accept")
	c, err := r.accept(ctx, cfg)
	if err != nil {
		return nil, &OpError{Op: "accept", Addr: r.l.bound.String(), Err: err}
	}
	return c, nil
}

// accept is Accept.
func (r *ConnRequest) accept(ctx context.Context, cfg *Config) (*Conn, error) {
	if r.done {
		return nil, ErrClosed
	}
	r.done = true
	if cfg == nil {
		cfg = &r.l.cfg
	}
	ctx, cancel := cfg.handshake(ctx)
	defer cancel()
	ch := r.id.ch.Load()
	refuse := func(err error) (*Conn, error) {
		return nil, errors.Join(err, r.refuse())
	}
	// The Conn's watch, and the wait for ESTABLISHED, read every event
	// on the ID's channel: on a caller's they would take, and act on,
	// other IDs' events. Claimed, the ID can no longer move.
	if !r.id.claim() {
		return refuse(fmt.Errorf("the request's ID moved to a channel of the caller's (Migrate): a Conn reads its ID's events "+
			"from a channel of its own; answer it through the ID (ID.Accept): %w", syscall.EINVAL))
	}
	if cfg.UD != (r.id.ps == PortSpaceUDP) {
		return refuse(fmt.Errorf("Config.UD is %v on a %s request", cfg.UD, r.id.ps))
	}
	if err := r.id.checkPrivateData("rdma_accept", len(cfg.PrivateData), cmReply); err != nil {
		return refuse(err)
	}
	// A caller that has given up (its context ended, or its Listener's
	// Close ended Accept) rejects the request rather than answer it and
	// then leave the peer with a connection that is torn down at once.
	if err := ctx.Err(); err != nil {
		return refuse(fmt.Errorf("accepting: %w", err))
	}
	if cfg.AckTimeout != 0 && !cfg.UD {
		if err := r.id.SetAckTimeout(cfg.AckTimeout); err != nil {
			return refuse(err)
		}
	}
	c, err := newConn(r.id, cfg, nil)
	if err != nil {
		return nil, err
	}
	c.param, c.udParam = r.ev.Param, r.ev.UD
	if err := c.prepare(cfg); err != nil {
		err = r.id.peersReason(err) // before the Reject, which ends the request
		r.id.Reject(nil)
		return nil, errors.Join(err, c.teardown())
	}
	if err := ctx.Err(); err != nil {
		r.id.Reject(nil)
		return nil, errors.Join(fmt.Errorf("accepting: %w", err), c.teardown())
	}
	p, err := c.connParam(cfg, &r.ev.Param)
	if err != nil {
		r.id.Reject(nil)
		return nil, errors.Join(err, c.teardown())
	}
	if c.ownQP {
		// rdma_accept brings a QP it made to RTS before it replies;
		// the Conn's own (Config.PathMTU) it moves itself, with the
		// depths the reply says.
		err := c.acceptDepths(p, &r.ev.Param)
		if err == nil {
			err = c.readyQP(cfg, p.ResponderResources, p.InitiatorDepth)
		}
		if err != nil {
			err = r.id.peersReason(err) // before the Reject, which ends the request
			r.id.Reject(nil)
			return nil, errors.Join(err, c.teardown())
		}
		p.QPNum, p.SRQ = c.qp.Num(), cfg.SRQ != nil
	}
	if err := r.id.Accept(p); err != nil {
		return nil, errors.Join(r.id.peersReason(err), c.teardown())
	}
	// rdma_accept has brought the QP to RTS; the peer sends only after
	// the reply and its own transitions, by when the timer is set.
	if err := c.setRNRTimer(cfg); err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	if !cfg.UD {
		if _, err := awaitConnect(ctx, ch, EventEstablished, "the peer did not confirm the connection (no ESTABLISHED)"); err != nil {
			return nil, errors.Join(fmt.Errorf("accepting: %w", err), c.teardown())
		}
	}
	c.start()
	return c, nil
}

// Reject refuses the request, sending privateData to the peer (at most
// 148 bytes for RC, 136 for UD, over InfiniBand and RoCE), and frees it
// (rdma_reject, rdma_destroy_id). The peer's Dial fails with a
// *RejectedError. Private data that does not fit is refused with EINVAL,
// and the request is left as it was. The channel GetRequest made for the
// request closes with it; a channel of the caller's that the request's
// ID moved to (Migrate) stays open.
func (r *ConnRequest) Reject(privateData []byte) error {
	if r.done {
		return ErrClosed
	}
	if err := r.id.checkPrivateData("rdma_reject", len(privateData), cmReject); err != nil {
		return err
	}
	r.done = true
	// The ID's Close closes the channel GetRequest made for it; one
	// the caller moved it to (Migrate) is the caller's, and stays.
	return errors.Join(r.id.Reject(privateData), r.id.Close())
}

// refuse rejects the request, without private data and whatever
// rdma_reject says (the peer may have given up), and frees it, as Reject.
func (r *ConnRequest) refuse() error {
	r.done = true
	r.id.Reject(nil)
	return r.id.Close()
}
