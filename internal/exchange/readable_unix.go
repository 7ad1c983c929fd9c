//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos

package exchange

import (
	"encoding/binary"
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

// wholeFrame reports whether a whole frame waits to be read in nc, a
// socket, with a valid header, peeking as readable does: a read of it
// then does not wait.
func wholeFrame(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	peek := func(b []byte) (n int) {
		rc.Control(func(fd uintptr) {
			n, _, err = syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		})
		if err != nil {
			return 0
		}
		return n
	}
	var h [HeaderLen]byte
	if peek(h[:]) < HeaderLen {
		return false
	}
	if _, _, err := parseHeader(h[:]); err != nil {
		return false
	}
	size := int(binary.BigEndian.Uint16(h[2:]))
	return size == 0 || peek(make([]byte, HeaderLen+size)) == HeaderLen+size
}
