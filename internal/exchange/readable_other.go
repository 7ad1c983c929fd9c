//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos)

package exchange

import "net"

// readable reports whether nc has bytes waiting: on this system it cannot
// tell, and says not.
func readable(net.Conn) bool { return false }

// wholeFrame reports whether a whole frame waits in nc: on this system it
// cannot tell, and says not.
func wholeFrame(net.Conn) bool { return false }
