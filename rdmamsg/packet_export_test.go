//go:build linux && cgo

package rdmamsg

// SetUsingHook makes each WriteTo call f while it has its turn, just
// before it sends, until restore is called.
func SetUsingHook(f func()) (restore func()) {
	usingHook = func(*PacketConn) { f() }
	return func() { usingHook = nil }
}
