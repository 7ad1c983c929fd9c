//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos

package exchange

import (
	"encoding/binary"
	"net"
	"syscall"
)

// peeker returns a function that peeks at nc's waiting bytes (recvfrom
// with MSG_PEEK|MSG_DONTWAIT) outside the read deadline's check, which a
// read makes first, or nil where nc is no socket.
func peeker(nc net.Conn) func(b []byte) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(b []byte) (n int, err error) {
		if cerr := rc.Control(func(fd uintptr) {
			n, _, err = syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		}); cerr != nil {
			return 0, cerr
		}
		return n, err
	}
}

// readable reports whether nc is a socket with bytes to read, or its
// peer's end, waiting now, whatever its read deadline says. Other
// connections are never readable.
func readable(nc net.Conn) bool {
	peek := peeker(nc)
	if peek == nil {
		return false
	}
	var b [1]byte
	_, err := peek(b[:])
	return err == nil // a byte, or (0 bytes) the peer's end
}

// wholeFrame reports whether a whole frame waits to be read in nc, a
// socket, with a valid header, peeking as readable does: a read of it
// then does not wait.
func wholeFrame(nc net.Conn) bool {
	peek := peeker(nc)
	if peek == nil {
		return false
	}
	var h [HeaderLen]byte
	if n, err := peek(h[:]); err != nil || n < HeaderLen {
		return false
	}
	if _, _, err := parseHeader(h[:]); err != nil {
		return false
	}
	size := int(binary.BigEndian.Uint16(h[2:]))
	if size == 0 {
		return true
	}
	n, err := peek(make([]byte, HeaderLen+size))
	return err == nil && n == HeaderLen+size
}
