//go:build linux && cgo

package rdmamsg

import (
	"time"

	"github.com/gorperf/gorperf/rdmacm"
)

// SetMaxPeers sets how many destinations a PacketConn keeps address
// handles for, for a test, and returns what puts it back.
func SetMaxPeers(n int) (restore func()) {
	old := maxPeers
	maxPeers = n
	return func() { maxPeers = old }
}

// SetMaxLookups sets how many lookups a PacketConn made from now on runs
// at once, for a test, and returns what puts it back.
func SetMaxLookups(n int) (restore func()) {
	old := maxLookups
	maxLookups = n
	return func() { maxLookups = old }
}

// SetHandshakeTimeout sets how long a Listener's peer has to complete its
// connection after the reply, for a test, and returns what puts it back.
func SetHandshakeTimeout(d time.Duration) (restore func()) {
	old := handshakeTimeout
	handshakeTimeout = d
	return func() { handshakeTimeout = old }
}

// Peers returns how many destinations p keeps an address handle for.
func (p *PacketConn) Peers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.peers)
}

// Retired returns how many address handles p has retired and not yet
// closed.
func (p *PacketConn) Retired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.retired)
}

// Hello returns the private data of an rdmamsg Dial's request, for a test
// that drives rdma_cm itself.
func Hello(depth, maxMessage int) []byte {
	return hello{depth: depth, maxMessage: maxMessage}.encode()
}

// SetRetireInUse makes each WriteTo retire the address handle it is about
// to send with, as another WriteTo's lookup of its destination (which
// found a new QP), or an eviction, may while it sends, until restore is
// called.
func SetRetireInUse() (restore func()) {
	usingHook = func(p *PacketConn) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for k, v := range p.peers {
			if v.ah == p.using.ah {
				delete(p.peers, k)
			}
		}
		p.retire(p.using.ah)
	}
	return func() { usingHook = nil }
}

// RetiredWait returns how many sends, counted from the first, the oldest
// retired address handle waits for, and how many p has posted; ok is
// false when none is retired.
func (p *PacketConn) RetiredWait() (after, sent uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.retired) == 0 {
		return 0, p.sent, false
	}
	return p.retired[0].after, p.sent, true
}

// SetPeerEnds sets what c takes its peer's hello to have said about end
// and abort messages, for a test of the ways to a peer older than them
// (false), which sends no end before it closes and keeps no receives
// spare.
func (c *Conn) SetPeerEnds(ends bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peerEnds = ends
}

// ForgetCloseWrite lets c send again after its end message, as a faulty
// peer would, for a test of what its peer makes of that.
func (c *Conn) ForgetCloseWrite() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wclosed = false
}

// CloseWithoutEnd closes c without an end message, as the kernel closes
// the connection of a process that was killed, for a test of what its
// peer makes of that.
func (c *Conn) CloseWithoutEnd() error {
	c.mu.Lock()
	c.wclosed = true // Close's end message went, c takes it
	c.mu.Unlock()
	return c.Close()
}

// SetShutHook makes f run in each Close and Abort once its end or abort
// is posted, before it waits for the sends, until restore is called.
func SetShutHook(f func(c *Conn)) (restore func()) {
	shutHook.Store(&f)
	return func() { shutHook.Store(nil) }
}

// Failure returns the error that failed c, nil if none did: what it
// received or what its sends and the link said, not its own Close.
func (c *Conn) Failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// CM returns the rdmacm listener under l.
func (l *Listener) CM() *rdmacm.Listener { return l.l }

// SetStallAfter sets the least time a connection's sends may go without
// a completion before it fails, for a test, and returns what puts it
// back.
func SetStallAfter(d time.Duration) (restore func()) {
	old := stallAfter
	stallAfter = d
	return func() { stallAfter = old }
}

// ListenerBusy reports whether err, a Dial's, is a Listener's reject as
// busy, and its reason (listenerBusy).
var ListenerBusy = listenerBusy

// BusyPause is the pause before a Dial's request after its tries'th busy
// reject (busyPause).
var BusyPause = busyPause

// BusyMark begins the private data of a busy reject.
const BusyMark = busyMark

// SetOpHook makes f run once each one-sided operation is posted, before
// its caller waits for the completion.
func SetOpHook(f func()) (restore func()) {
	opHook.Store(&f)
	return func() { opHook.Store(nil) }
}
