//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/gorperf/gorperf/internal/fdwait"
)

// AsyncEvent is an asynchronous event from the device (struct
// ibv_async_event), already acknowledged. QP, CQ and SRQ name the object
// the event is about when it is one of this package's and its Close has
// not begun: an event for one being closed has them nil, never another
// object made since at the same address.
type AsyncEvent struct {
	Type EventType // what happened (IBV_EVENT_*)
	Port int       // for port events
	QPN  uint32    // for QP events
	QP   *QP       // for QP events, when the QP is one of ours
	CQ   *CQ       // for CQ events, when the CQ is one of ours
	SRQ  *SRQ      // for SRQ events, when the SRQ is one of ours
	// Handle is, for CQ and SRQ events, the number the kernel knows the
	// CQ or SRQ by on its device (struct ibv_cq's and ibv_srq's handle;
	// CQ.Handle), set whether or not the object is one of ours.
	Handle uint32
}

// String formats the event with what it is about: "PORT_ACTIVE on port
// 1", "QP_FATAL on QP 0x11", "CQ_ERR on CQ handle 3" (see CQ.Handle),
// "SRQ_LIMIT_REACHED on SRQ handle 1", or the type alone.
func (e AsyncEvent) String() string {
	switch {
	case e.Port != 0:
		return fmt.Sprintf("%s on port %d", e.Type, e.Port)
	case e.QPN != 0 || e.QP != nil:
		return fmt.Sprintf("%s on QP %#x", e.Type, e.QPN)
	case e.Type == EventCQErr:
		return fmt.Sprintf("%s on CQ handle %d", e.Type, e.Handle)
	case e.Type == EventSRQErr || e.Type == EventSRQLimitReached:
		return fmt.Sprintf("%s on SRQ handle %d", e.Type, e.Handle)
	}
	return e.Type.String()
}

type eventLoop struct {
	ch     chan AsyncEvent
	cancel context.CancelFunc
	done   chan struct{}
	w      *fdwait.Waiter
}

// Events returns the device's asynchronous events (ibv_get_async_event),
// acknowledged (ibv_ack_async_event) and delivered in order, until the
// Context is closed, when the channel is closed. The first call starts a
// goroutine that waits on the async fd through the Go netpoller; later
// calls return the same channel. Events are held back, not dropped, while
// nobody receives.
//
// The channel also closes, with no event or error to say why, when
// reading the next event fails: ibv_get_async_event fails with an errno
// other than EAGAIN (as it may once the device is gone: after
// EventDeviceFatal, or when the driver unbinds it), or waiting on the fd
// does. A receiver that sees the channel close while the Context is still
// open should take the device as unusable; a later call of Events then
// returns that closed channel again, and starts nothing.
//
// A device has one stream of async events. Handles on one device made by
// WrapContext (such as each rdmacm connection's) share it: each returns
// the same channel, which names the objects made through any of them and
// is closed when the last of them is. Have one goroutine receive and
// dispatch; two receivers would each get some of the events.
func (c *Context) Events() (<-chan AsyncEvent, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	d := c.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.events != nil {
		return d.events.ch, nil
	}
	raw := c.c // this handle may close before the loop stops; the device outlives it
	w, err := fdwait.New(int(raw.async_fd), "async_fd")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &eventLoop{ch: make(chan AsyncEvent, 16), cancel: cancel, done: make(chan struct{}), w: w}
	d.events = l
	go func() {
		defer close(l.done)
		defer close(l.ch)
		for {
			var ev C.struct_ibv_async_event
			var qpn C.uint32_t
			var obj unsafe.Pointer
			var errno C.int
			err := w.Wait(ctx, func(uintptr) bool {
				errno = C.gv_get_async_event(raw, &ev, &qpn, &obj)
				return errno != C.int(syscall.EAGAIN)
			})
			if err != nil || errno != 0 {
				return
			}
			e := AsyncEvent{Type: EventType(ev.event_type), QPN: uint32(qpn)}
			switch e.Type {
			case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange, EventSMChange,
				EventClientReregister, EventGIDChange:
				e.Port = int(*(*C.int)(unsafe.Pointer(&ev.element)))
			}
			// Looked up before the ack: until then the object cannot
			// be destroyed (ibv_destroy_qp and the others wait for
			// their events' acks), so its address is no other's. One
			// being closed is out of the table already, and named by
			// no field.
			if obj != nil {
				switch e.Type {
				case EventCQErr:
					e.Handle = uint32((*C.struct_ibv_cq)(obj).handle)
				case EventSRQErr, EventSRQLimitReached:
					e.Handle = uint32((*C.struct_ibv_srq)(obj).handle)
				}
				switch o := d.lookup(obj).(type) {
				case *QP:
					e.QP = o
				case *CQ:
					e.CQ = o
				case *SRQ:
					e.SRQ = o
				}
			}
			C.ibv_ack_async_event(&ev)
			select {
			case l.ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return l.ch, nil
}

func (l *eventLoop) stop() {
	l.cancel()
	<-l.done
	l.w.Close()
}
