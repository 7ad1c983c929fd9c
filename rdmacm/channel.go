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
	c *C.struct_rdma_event_channel
	w *fdwait.Waiter // on a dup of the channel's fd

	closed atomic.Bool
	getMu  sync.Mutex // held by GetEvent, so Close waits for it to leave

	idMu sync.Mutex
	ids  map[*C.struct_rdma_cm_id]*ID
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
	return &EventChannel{c: c, w: w, ids: map[*C.struct_rdma_cm_id]*ID{}}, nil
}

// Fd returns the channel's file descriptor, non-blocking, for callers who
// poll it themselves; -1 after Close.
func (ch *EventChannel) Fd() int {
	if ch.closed.Load() {
		return -1
	}
	return int(ch.c.fd)
}

// GetEvent waits for the channel's next event, copies it out and
// acknowledges it (rdma_get_cm_event, rdma_ack_cm_event), so the Event
// stays valid and never holds up rdma_destroy_id. It returns ctx's error if
// ctx ends first, and ErrClosed once the channel closes. One goroutine at a
// time should wait on a channel.
func (ch *EventChannel) GetEvent(ctx context.Context) (*Event, error) {
	ch.getMu.Lock()
	defer ch.getMu.Unlock()
	if ch.closed.Load() {
		return nil, ErrClosed
	}
	var g C.struct_gr_event
	var errno C.int
	err := ch.w.Wait(ctx, func(uintptr) bool {
		errno = C.gr_get_event(ch.c, &g)
		return errno != C.int(syscall.EAGAIN)
	})
	if errors.Is(err, fdwait.ErrClosed) {
		return nil, ErrClosed
	} else if err != nil {
		return nil, err
	}
	if errno != 0 {
		return nil, errnoError("rdma_get_cm_event", int(errno))
	}
	ev := eventFromC(&g)
	ch.idMu.Lock()
	defer ch.idMu.Unlock()
	if ev.Type == EventConnectRequest && g.listen_id != nil {
		ev.ListenID = ch.ids[g.listen_id]
		ps := PortSpaceTCP
		if ev.ListenID != nil {
			ps = ev.ListenID.ps
		}
		ev.ID = &ID{c: g.id, ch: ch, ps: ps, request: true}
		ch.ids[g.id] = ev.ID
	} else {
		ev.ID = ch.ids[g.id]
	}
	return ev, nil
}

// Close destroys the channel (rdma_destroy_event_channel). It fails with
// EBUSY while IDs use it, and wakes a GetEvent in progress with ErrClosed.
// Closing twice is a no-op.
func (ch *EventChannel) Close() error {
	if ch.closed.Load() {
		return nil
	}
	ch.idMu.Lock()
	n := len(ch.ids)
	ch.idMu.Unlock()
	if n > 0 {
		return fmt.Errorf("rdma_destroy_event_channel: %d IDs still use the channel, close them first: %w",
			n, os.NewSyscallError("rdma_destroy_event_channel", syscall.EBUSY))
	}
	if ch.closed.Swap(true) {
		return nil
	}
	ch.w.Close()
	ch.getMu.Lock() // a GetEvent in progress has left
	C.rdma_destroy_event_channel(ch.c)
	ch.c = nil
	ch.getMu.Unlock()
	return nil
}

func (ch *EventChannel) add(id *ID) {
	ch.idMu.Lock()
	ch.ids[id.c] = id
	ch.idMu.Unlock()
}

// remove forgets id, unless its address is already another ID's.
func (ch *EventChannel) remove(id *ID) {
	ch.idMu.Lock()
	if ch.ids[id.c] == id {
		delete(ch.ids, id.c)
	}
	ch.idMu.Unlock()
}
