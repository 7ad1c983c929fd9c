//go:build linux && cgo

package rdmamsg

// SetUsingHook makes each WriteTo call f while it has its turn, just
// before it sends, until restore is called.
func SetUsingHook(f func()) (restore func()) {
	usingHook = func(*PacketConn) { f() }
	return func() { usingHook = nil }
}

// SetRestartError makes the restart of a PacketConn's QP after a failed
// completion fail with err, until restore is called.
func SetRestartError(err error) (restore func()) {
	restartHook = func() error { return err }
	return func() { restartHook = nil }
}

// PacketSendState returns p's free send buffers and the sends on the
// wire, as p counts them.
func PacketSendState(p *PacketConn) (free []int, onWire int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.free...), p.sqOut
}
