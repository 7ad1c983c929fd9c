//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos

package exchange

import (
	"net"
	"syscall"
)

// readable reports whether nc is a socket with bytes to read, or its
// peer's end, waiting now, whatever its read deadline says: it peeks
// (recvfrom with MSG_PEEK|MSG_DONTWAIT) outside the deadline's check,
// which a read makes first. Other connections are never readable.
func readable(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	ready := false
	rc.Control(func(fd uintptr) {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ready = err == nil // a byte, or (0 bytes) the peer's end
	})
	return ready
}
