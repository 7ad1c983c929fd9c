//go:build linux && cgo

package rdmacm

import (
	"errors"
	"syscall"
	"time"
)

// Waiting reports whether a GetEvent holds ch: takes its next event, or
// waits for one.
func Waiting(ch *EventChannel) bool { return len(ch.getSem) == 1 }

// PeerGaveUp reports whether the connection request id came with can no
// longer be answered, its peer having given up: the condition on which
// ConnRequest.Accept's failure matches ErrDisconnected.
func PeerGaveUp(id *ID) bool {
	return errors.Is(id.peersReason(syscall.EINVAL), ErrDisconnected)
}

// SetGetEventHook makes f run in each GetEvent once it has taken an event,
// before it looks the event's ID up; restore unsets it.
func SetGetEventHook(f func(ch *EventChannel, ev *Event)) (restore func()) {
	getEventHook.Store(&f)
	return func() { getEventHook.Store(nil) }
}

// SetTakenHook makes f run in each Listener.Accept once it has taken a
// request, before it answers it; restore unsets it.
func SetTakenHook(f func(l *Listener)) (restore func()) {
	takenHook.Store(&f)
	return func() { takenHook.Store(nil) }
}

// SetGetEventFault makes f run in each GetEvent before it reads: an
// errno it returns fails the read with it; restore unsets it.
func SetGetEventFault(f func(ch *EventChannel) syscall.Errno) (restore func()) {
	getEventFault.Store(&f)
	return func() { getEventFault.Store(nil) }
}

// SetConnectTimeout makes d the bound of a connection request that
// neither Config.Timeout nor a deadline on ctx bounds; restore undoes it.
func SetConnectTimeout(d time.Duration) (restore func()) {
	old := connectTimeout
	connectTimeout = d
	return func() { connectTimeout = old }
}

// IDClosing reports whether id's Close has begun (and not failed since):
// a call of id that begins now returns ErrClosed.
func IDClosing(id *ID) bool { return id.use.Closed() }

// SetQPUseHook makes f run where librdmacm may use an ID's QP, with the
// locks that keep the QP's Close out held: in each verb of an ID
// ("verb") and in each GetEvent once it has read an event ("event");
// restore unsets it.
func SetQPUseHook(f func(where string)) (restore func()) {
	qpUseHook.Store(&f)
	return func() { qpUseHook.Store(nil) }
}

// ForceMigrate moves id to ch as Migrate does, also where a Conn owns id
// and Migrate refuses: for the tests of a Conn whose ID is on a channel
// it did not make.
func ForceMigrate(id *ID, ch *EventChannel) error {
	id.chMu.Lock()
	conn := id.conn
	id.conn = false
	id.chMu.Unlock()
	defer func() {
		id.chMu.Lock()
		id.conn = conn
		id.chMu.Unlock()
	}()
	return id.Migrate(ch)
}

// MaxHandshakes bounds the handshakes under way on a Listener, its
// Accepts' together.
const MaxHandshakes = maxHandshakes

// ListenerFd returns the descriptor of l's event channel, where the
// requests that no Accept or GetRequest has taken yet wait: readable
// while one does.
func ListenerFd(l *Listener) int { return l.ch.Fd() }
