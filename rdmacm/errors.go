//go:build linux && cgo

package rdmacm

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// ErrClosed is returned by methods of an object after its Close.
// errors.Is(err, os.ErrClosed) and errors.Is(err, net.ErrClosed) also
// hold, so that code written for package net's connections and listeners
// (an accept or read loop that ends on net.ErrClosed) ends on it too.
var ErrClosed error = closedError{}

type closedError struct{}

func (closedError) Error() string { return "rdmacm: object is closed" }

func (closedError) Is(target error) bool { return target == os.ErrClosed || target == net.ErrClosed }

// Errors for the events that end an operation. The error returned wraps
// one of them, and the errno of the event's status where it carries one:
// errors.Is(err, ErrAddrResolve) && errors.Is(err, syscall.ETIMEDOUT).
var (
	// ErrAddrResolve: the address did not resolve (ADDR_ERROR, e.g. no
	// answer to ARP), or rdma_resolve_addr refused at once (ENETUNREACH:
	// no route to it).
	ErrAddrResolve = errors.New("address not resolved")
	// ErrRouteResolve: no route to the resolved address (ROUTE_ERROR), or
	// rdma_resolve_route refused at once.
	ErrRouteResolve = errors.New("route not resolved")
	// ErrUnreachable: the peer did not answer the connection handshake,
	// or, for a connection up, its address became unreachable
	// (UNREACHABLE; Conn.Err says so once Done closes). It also matches
	// the errno the event carries, syscall.ETIMEDOUT where it carries
	// none.
	ErrUnreachable = errors.New("peer unreachable")
	// ErrConnect: the connection failed in its last step (CONNECT_ERROR).
	ErrConnect = errors.New("connection error")
	// ErrMulticast: joining a multicast group failed (MULTICAST_ERROR),
	// in the fabric or when the QP was attached to the group.
	ErrMulticast = errors.New("multicast join failed")
	// ErrDisconnected: the peer disconnected or went away (DISCONNECTED),
	// or gave up on the connection while it was being made: on its
	// request while it was accepted, or after its reply (a Dial's
	// CONNECT_ERROR with EINVAL, where the CM has had the peer's REJ).
	ErrDisconnected = errors.New("peer disconnected")
	// ErrDeviceRemoved: the RDMA device went away (DEVICE_REMOVAL).
	ErrDeviceRemoved = errors.New("device removed")
)

var errNoDevice = fmt.Errorf("no such RDMA device: %w", syscall.ENODEV)

// EventError is an event that ended an operation in failure, other than a
// rejection (see RejectedError).
type EventError struct {
	Event  EventType // the event that came (ADDR_ERROR, UNREACHABLE, ...)
	Status int       // the event's status: a negative errno, or a transport code
}

// Error names the sentinel error the event stands for (ErrUnreachable,
// ...; "unexpected event" for one without), the event, and its errno or
// status.
func (e *EventError) Error() string {
	what := "unexpected event"
	if err := e.sentinel(); err != nil {
		what = err.Error()
	}
	s := fmt.Sprintf("%s (RDMA_CM_EVENT_%s", what, e.Event)
	if errno := e.errno(); errno != 0 {
		s += ": " + errno.Error()
	} else if e.Status != 0 {
		s += ", status " + strconv.Itoa(e.Status)
	}
	return s + ")"
}

func (e *EventError) sentinel() error {
	switch e.Event {
	case EventAddrError:
		return ErrAddrResolve
	case EventRouteError:
		return ErrRouteResolve
	case EventUnreachable:
		return ErrUnreachable
	case EventDisconnected:
		return ErrDisconnected
	case EventDeviceRemoval:
		return ErrDeviceRemoved
	case EventConnectError:
		return ErrConnect
	case EventMulticastError:
		return ErrMulticast
	}
	return nil // an event that ends no operation: unexpected where it came
}

func (e *EventError) errno() syscall.Errno {
	if e.Status < -1 {
		return syscall.Errno(-e.Status)
	}
	if e.Event == EventUnreachable {
		return syscall.ETIMEDOUT
	}
	return 0
}

// Unwrap returns the sentinel for the event, if it has one, and the errno
// of its status.
func (e *EventError) Unwrap() []error {
	var errs []error
	if err := e.sentinel(); err != nil {
		errs = append(errs, err)
	}
	if errno := e.errno(); errno != 0 {
		errs = append(errs, errno)
	}
	return errs
}

// RejectedError says that the peer, or its connection manager, refused the
// connection (REJECTED, or UNREACHABLE with a SIDR status for UD). It
// matches syscall.ECONNREFUSED.
type RejectedError struct {
	// Status is the reject reason: for RC the InfiniBand CM REJ reason
	// (28, consumer defined, for rdma_reject; 8, invalid service ID, when
	// nothing listens), for UD the SIDR REP status.
	Status int
	// UD says Status is a SIDR REP status.
	UD bool
	// PrivateData is what the peer passed to rdma_reject. The CM carries a
	// fixed size (148 bytes for RC over InfiniBand and RoCE), so shorter
	// data arrives padded with zeros.
	PrivateData []byte
}

// Error says the connection was refused, with the reason (Reason) and the
// private data, if any but zeros.
func (e *RejectedError) Error() string {
	s := "connection refused: rejected by the peer (" + e.Reason()
	if d := bytes.TrimRight(e.PrivateData, "\x00"); len(d) > 0 {
		s += fmt.Sprintf(", private data %q", d)
	}
	return s + ")"
}

// Reason names Status.
func (e *RejectedError) Reason() string {
	if e.UD {
		switch e.Status {
		case 1:
			return "SIDR status 1, service not supported: nothing listens there"
		case 2:
			return "SIDR status 2, rejected"
		case 3:
			return "SIDR status 3, no QP"
		}
		return "SIDR status " + strconv.Itoa(e.Status)
	}
	names := map[int]string{
		1: "no QP", 2: "no EEC", 3: "no resources", 4: "timeout", 5: "unsupported request",
		6: "invalid comm ID", 7: "invalid comm instance", 8: "invalid service ID: nothing listens there",
		9: "invalid transport type", 10: "stale connection", 12: "invalid GID", 13: "invalid LID",
		26: "invalid MTU", 27: "insufficient responder resources",
		28: "consumer defined: rejected by the application, or nothing listens there",
		29: "invalid RNR retry", 30: "duplicate local comm ID", 31: "invalid class version",
		35: "vendor option not supported",
	}
	if n, ok := names[e.Status]; ok {
		return "reason " + strconv.Itoa(e.Status) + ", " + n
	}
	return "reason " + strconv.Itoa(e.Status)
}

// Is reports whether target is syscall.ECONNREFUSED.
func (e *RejectedError) Is(target error) bool { return target == syscall.ECONNREFUSED }

// OpError is the error of Dial, Listen, Accept, LookupUD, JoinMulticast and
// Device: which operation, on which address, and why.
type OpError struct {
	// Op is the operation: "dial", "listen", "accept", "lookup"
	// (LookupUD), "join" (JoinMulticast) or "device" (Device).
	Op string
	// Addr is the address as the caller gave it (for Accept, the
	// address the listener is bound to, its port picked if it asked for
	// 0; for Device, the device's name), or "".
	Addr string
	// Err is why: an *EventError, a *RejectedError, a verb's
	// *os.SyscallError, a context's error, ErrClosed, ...
	Err error
}

// Error returns "rdmacm: " followed by Op, Addr and Err's message.
func (e *OpError) Error() string {
	s := "rdmacm: " + e.Op
	if e.Addr != "" {
		s += " " + e.Addr
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *OpError) Unwrap() error { return e.Err }

// cmError wraps the errno a librdmacm call set, captured by cgo with the
// call's result.
func cmError(fn string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		return os.NewSyscallError(fn, errno)
	}
	return os.NewSyscallError(fn, syscall.EIO)
}

// errnoError wraps an errno a helper returned.
func errnoError(fn string, errno int) error {
	if errno == 0 {
		errno = int(syscall.EIO)
	}
	return os.NewSyscallError(fn, syscall.Errno(errno))
}

// eventError turns an event that is not the one awaited into an error.
func eventError(ev *Event) error {
	switch {
	case ev.Type == EventRejected:
		return &RejectedError{Status: ev.Status, UD: ev.IsUD, PrivateData: ev.PrivateData()}
	case ev.Type == EventUnreachable && ev.IsUD && ev.Status > 0:
		return &RejectedError{Status: ev.Status, UD: true, PrivateData: ev.PrivateData()}
	}
	return &EventError{Event: ev.Type, Status: ev.Status}
}
