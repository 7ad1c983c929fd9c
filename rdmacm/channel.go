//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gorperf/gorperf/internal/fdwait"
)

// EventChannel is a channel of connection manager events (struct
// rdma_event_channel). Its file descriptor is non-blocking and GetEvent
// waits on it through the Go netpoller, so a waiting goroutine holds no
// thread and a context ends the wait.
type EventChannel struct {
	c  *C.struct_rdma_event_channel
	fd int            // c's, for Fd, which may race with Close
	w  *fdwait.Waiter // on a dup of the channel's fd

	// getSem holds one token while a GetEvent takes an event; Close takes
	// it, so that it waits for that GetEvent to leave, and keeps it.
	// Another GetEvent waits for it in a select, on its context and done.
	getSem chan struct{}
	done   chan struct{} // closed by Close

	// idMu guards ids and the setting of closed, so that Close, which
	// counts the IDs and sets closed under it, and CreateID and Migrate,
	// which check closed and add their ID under it, cannot interleave.
	idMu   sync.Mutex
	closed atomic.Bool
	ids    map[*C.struct_rdma_cm_id]*ID
	// listener says the channel is a Listener's (under idMu, set by
	// Listen): its Accept and GetRequest read every event on it and
	// drop those that are not requests, so CreateID and Migrate refuse
	// to put another ID on it, and GetEvent (so Await) refuses to take
	// the Listener's events.
	listener atomic.Bool

	// evMu is held while GetEvent reads an event (rdma_get_cm_event),
	// which uses the QP that CreateQP made for the event's ID, with no
	// lock of its own: it moves the QP to RTR and RTS on a
	// CONNECT_RESPONSE, to ERR on a REJECTED, and attaches it to the
	// group on a MULTICAST_JOIN. The QP's Close takes it, so that it
	// cannot free the QP meanwhile. Taken after an ID's chMu.
	evMu sync.Mutex
}

// CreateEventChannel opens an event channel (rdma_create_event_channel);
// if its fd cannot be waited on, it destroys it again
// (rdma_destroy_event_channel).
func CreateEventChannel() (*EventChannel, error) {
	c, err := C.rdma_create_event_channel()
	if c == nil {
		return nil, cmError("rdma_create_event_channel", err)
	}
	w, err := fdwait.New(int(c.fd), "rdma_cm")
	if err != nil {
		C.rdma_destroy_event_channel(c)
		return nil, err
	}
	return &EventChannel{c: c, fd: int(c.fd), w: w, getSem: make(chan struct{}, 1), done: make(chan struct{}),
		ids: map[*C.struct_rdma_cm_id]*ID{}}, nil
}

// Fd returns the channel's file descriptor, non-blocking, for callers who
// poll it themselves; -1 after Close.
func (ch *EventChannel) Fd() int {
	if ch.closed.Load() {
		return -1
	}
	return ch.fd
}

// GetEvent waits for the channel's next event, copies it out, names its
// IDs and then acknowledges it (rdma_get_cm_event, rdma_ack_cm_event), so
// the Event stays valid and holds up no rdma_destroy_id once returned. An
// ID's Close in another goroutine waits for that acknowledgement (it
// waits for its events'), so that the event names the ID it is for,
// which may be closed by the time GetEvent returns, and never another ID
// made since at the same address. It returns ctx's error if ctx ends
// first, and ErrClosed once the channel closes. Callers on one
// channel take its events one at a time: another caller's wait is
// queued, and ends with its own ctx or the channel's Close. On a
// Listener's channel (its ID's Channel) it fails with EINVAL: the
// Listener's Accept and GetRequest take those events.
func (ch *EventChannel) GetEvent(ctx context.Context) (*Event, error) {
	checkContext(ctx, "(*EventChannel).GetEvent")
	if ch.listener.Load() && !ch.closed.Load() {
		return nil, ch.listenersErr("rdma_get_cm_event", "no one else takes its events")
	}
	return ch.getEvent(ctx)
}

// getEvent is GetEvent without the check that the channel is not a
// Listener's, for the Listener's own reads.
func (ch *EventChannel) getEvent(ctx context.Context) (*Event, error) {
	select {
	case ch.getSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-ch.done:
		return nil, ErrClosed
	}
	defer func() { <-ch.getSem }()
	if ch.closed.Load() {
		return nil, ErrClosed
	}
	if h := getEventFault.Load(); h != nil {
		if errno := (*h)(ch); errno != 0 {
			return nil, errnoError("rdma_get_cm_event", int(errno))
		}
	}
	var g C.struct_gr_event
	var cev *C.struct_rdma_cm_event
	var errno C.int
	err := ch.w.Wait(ctx, func(uintptr) bool {
		ch.evMu.Lock()
		defer ch.evMu.Unlock()
		errno = C.gr_get_event(ch.c, &g, &cev)
		if h := qpUseHook.Load(); h != nil && errno == 0 {
			(*h)("event")
		}
		return errno != C.int(syscall.EAGAIN)
	})
	if cev != nil {
		// Acknowledged only once its IDs are named (lookup): until
		// then an rdma_destroy_id of the event's ID, in another
		// goroutine's ID.Close, waits, so that the ID, still in ids,
		// cannot be freed and its address given to a new ID, whose
		// event this one would then be taken for.
		defer C.rdma_ack_cm_event(cev)
	}
	if errors.Is(err, fdwait.ErrClosed) {
		return nil, ErrClosed
	} else if err != nil {
		return nil, err
	}
	if errno != 0 {
		return nil, errnoError("rdma_get_cm_event", int(errno))
	}
	ev := eventFromC(&g)
	if h := getEventHook.Load(); h != nil {
		(*h)(ch, ev)
	}
	return ch.lookup(ev, &g)
}

// lookup names the IDs of ev, which GetEvent took and has not yet
// acknowledged, and makes the ID of a connection request, or refuses the
// request where the channel is closing.
func (ch *EventChannel) lookup(ev *Event, g *C.struct_gr_event) (*Event, error) {
	ch.idMu.Lock()
	defer ch.idMu.Unlock()
	if ch.closed.Load() {
		// Close has counted no IDs, and destroys the channel once this
		// GetEvent leaves, which it cannot do before: we hold getSem.
		// Not expected: the ID an event is for (a request's listening
		// ID) leaves ids only once rdma_destroy_id or rdma_migrate_id
		// has returned, which waits for this event's ack. Should it
		// happen, a request's new ID, which no one else knows, is
		// refused and destroyed now, while the channel it writes to on
		// rdma_destroy_id is still there (its destroy waits for no
		// ack: the request is its listening ID's event).
		if ev.Type == EventConnectRequest && g.listen_id != nil {
			C.rdma_reject(g.id, nil, 0)
			C.rdma_destroy_id(g.id)
		}
		return nil, ErrClosed
	}
	if ev.Type == EventConnectRequest && g.listen_id != nil {
		ev.ListenID = ch.ids[g.listen_id]
		ps := PortSpaceTCP
		if ev.ListenID != nil {
			ps = ev.ListenID.ps
		}
		ev.ID = newID(g.id, ch, ps, true)
		ch.ids[g.id] = ev.ID
	} else {
		ev.ID = ch.ids[g.id]
		if ev.ID != nil && ev.Type == EventConnectResponse {
			ev.ID.responded.Store(true)
		}
	}
	return ev, nil
}

// Close destroys the channel (rdma_destroy_event_channel). It fails with
// EBUSY while IDs use it, and wakes a GetEvent in progress with ErrClosed.
// Closing twice is a no-op.
func (ch *EventChannel) Close() error {
	ch.idMu.Lock()
	if ch.closed.Load() {
		ch.idMu.Unlock()
		return nil
	}
	if n := len(ch.ids); n > 0 {
		ch.idMu.Unlock()
		return fmt.Errorf("rdma_destroy_event_channel: %d IDs still use the channel, close them first: %w",
			n, os.NewSyscallError("rdma_destroy_event_channel", syscall.EBUSY))
	}
	// No ID uses the channel, and none can now: CreateID and Migrate
	// check closed under idMu.
	ch.closed.Store(true)
	ch.idMu.Unlock()
	close(ch.done)
	ch.w.Close()
	ch.getSem <- struct{}{} // a GetEvent in progress has left; the token stays taken
	C.rdma_destroy_event_channel(ch.c)
	ch.c = nil
	return nil
}

// getEventHook, if set, runs in GetEvent once it has taken an event, before
// it looks the event's ID up (for the tests).
var getEventHook atomic.Pointer[func(ch *EventChannel, ev *Event)]

// getEventFault, if set, runs in GetEvent before it reads; an errno it
// returns fails the read, as rdma_get_cm_event's own failure before it
// takes an event would (for the tests).
var getEventFault atomic.Pointer[func(ch *EventChannel) syscall.Errno]

// addIfOpen runs create, which makes or moves an ID onto the channel (verb
// names how, for the error), and adds the ID it returns, unless the
// channel is closed, or a Listener's: both under idMu, so that Close
// cannot destroy the channel between them.
func (ch *EventChannel) addIfOpen(verb string, create func(c *C.struct_rdma_event_channel) (*ID, error)) (*ID, error) {
	ch.idMu.Lock()
	defer ch.idMu.Unlock()
	if ch.closed.Load() {
		return nil, ErrClosed
	}
	if ch.listener.Load() {
		return nil, ch.listenersErr(verb, "it takes no other ID")
	}
	id, err := create(ch.c)
	if err != nil {
		return nil, err
	}
	ch.ids[id.c] = id
	return id, nil
}

// markListener makes the channel a Listener's: CreateID, Migrate and
// GetEvent refuse it from now on.
func (ch *EventChannel) markListener() {
	ch.idMu.Lock()
	ch.listener.Store(true)
	ch.idMu.Unlock()
}

// listenersErr is the EINVAL of verb on a Listener's channel, saying
// what the channel refuses.
func (ch *EventChannel) listenersErr(verb, refusal string) error {
	return fmt.Errorf("rdmacm: the event channel is a Listener's, whose Accept and GetRequest read every event on it "+
		"and drop all but the connection requests, so %s: use a channel of your own: %w",
		refusal, os.NewSyscallError(verb, syscall.EINVAL))
}

// remove forgets id, unless its address is already another ID's.
func (ch *EventChannel) remove(id *ID) {
	ch.idMu.Lock()
	if ch.ids[id.c] == id {
		delete(ch.ids, id.c)
	}
	ch.idMu.Unlock()
}
