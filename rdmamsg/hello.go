package rdmamsg

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A hello is what each side tells the other in the connection's private
// data (the dialer's request, the listener's reply): how many messages it
// keeps receives posted for, which are the peer's first credits, and the
// largest message it takes; and whether it takes end and abort messages,
// keeps two receives spare for them (flow.go) and sends an end message
// before it closes, which an older rdmamsg does not.
type hello struct {
	depth      int
	maxMessage int
	ends       bool
}

// The hello's layout: magic, version, a flags byte, two reserved bytes,
// the depth and the largest message, big-endian. The connection's private
// data may come padded with zeros (RoCE's CM pads a reply to 196 bytes),
// so a longer buffer is read from its start. An older rdmamsg sends the
// flags as zero, and ignores them.
const (
	helloMagic   = "GRMS"
	helloVersion = 1
	helloLen     = 16
	helloEnds    = 1 // flags: takes end and abort messages, keeps two receives spare, ends before Close
)

// Bounds on a side's settings, checked on both ends: the depth fits the
// immediate data's credit field and leaves room for the reserve the credit
// protocol keeps (flow.go); a message fits a receive's 32-bit length.
const (
	minDepth      = 4
	maxDepth      = 1 << 14
	maxMaxMessage = 1 << 30
)

var errNotHello = errors.New("not an rdmamsg peer")

func (h hello) encode() []byte {
	b := make([]byte, helloLen)
	copy(b, helloMagic)
	b[4] = helloVersion
	if h.ends {
		b[5] |= helloEnds
	}
	binary.BigEndian.PutUint32(b[8:], uint32(h.depth))
	binary.BigEndian.PutUint32(b[12:], uint32(h.maxMessage))
	return b
}

// parseHello reads the peer's hello and checks it against the bounds.
func parseHello(b []byte) (hello, error) {
	if len(b) < helloLen || string(b[:4]) != helloMagic {
		return hello{}, fmt.Errorf("%w: its connection data (%d bytes) has no rdmamsg hello", errNotHello, len(b))
	}
	if b[4] != helloVersion {
		return hello{}, fmt.Errorf("%w: it speaks rdmamsg version %d, this side %d", errNotHello, b[4], helloVersion)
	}
	h := hello{
		depth:      int(binary.BigEndian.Uint32(b[8:])),
		maxMessage: int(binary.BigEndian.Uint32(b[12:])),
		ends:       b[5]&helloEnds != 0,
	}
	if h.depth < minDepth || h.depth > maxDepth {
		return hello{}, fmt.Errorf("%w: its depth %d is outside %d to %d", errNotHello, h.depth, minDepth, maxDepth)
	}
	if h.maxMessage < 1 || h.maxMessage > maxMaxMessage {
		return hello{}, fmt.Errorf("%w: its largest message %d is outside 1 to %d", errNotHello, h.maxMessage, maxMaxMessage)
	}
	return h, nil
}

// A PacketConn's datagram begins with a header: 'G', version 1, the
// sender's port (where it answers lookups) and the largest datagram it
// takes, big-endian. Its answer to a lookup carries a hello: "GRMP",
// version 1, three reserved bytes and the largest datagram.
const (
	packetHeaderLen = 8
	packetHelloLen  = 12
	packetMagic     = "GRMP"
)

func putPacketHeader(b []byte, port uint16, maxData int) {
	b[0], b[1] = 'G', helloVersion
	binary.BigEndian.PutUint16(b[2:], port)
	binary.BigEndian.PutUint32(b[4:], uint32(maxData))
}

// parsePacketHeader reads a datagram's header; ok is false for a datagram
// that does not come from a PacketConn.
func parsePacketHeader(b []byte) (port uint16, maxData int, ok bool) {
	if len(b) < packetHeaderLen || b[0] != 'G' || b[1] != helloVersion {
		return 0, 0, false
	}
	port = binary.BigEndian.Uint16(b[2:])
	maxData = int(binary.BigEndian.Uint32(b[4:]))
	return port, maxData, port != 0 && maxData > 0 && maxData <= maxMaxMessage
}

func packetHello(maxData int) []byte {
	b := make([]byte, packetHelloLen)
	copy(b, packetMagic)
	b[4] = helloVersion
	binary.BigEndian.PutUint32(b[8:], uint32(maxData))
	return b
}

// parsePacketHello reads the hello of a lookup's answer, which may come
// padded with zeros.
func parsePacketHello(b []byte) (maxData int, ok bool) {
	if len(b) < packetHelloLen || string(b[:4]) != packetMagic || b[4] != helloVersion {
		return 0, false
	}
	maxData = int(binary.BigEndian.Uint32(b[8:]))
	return maxData, maxData > 0 && maxData <= maxMaxMessage
}

// Handshake's frames, which go over the net.Conn it is given: "GRMH", a
// kind, the body's length and the body. Each side sends its endpoint
// (kind 'E'), then, once its QP is ready and its receives are posted,
// 'R' with no body; a side that fails sends 'X' with the reason instead.
// The endpoint's body is version 1, the active MTU (the verbs' 1-5), the
// LID, the QP number and first PSN (24 bits each, in 32), the GID, and the
// side's hello; integers are big-endian.
const (
	frameMagic   = "GRMH"
	frameHdrLen  = 6
	endpointLen  = 28 + helloLen
	maxFrameBody = 255

	frameEndpoint = 'E'
	frameReady    = 'R'
	frameError    = 'X'
)

// An endpoint is what Handshake tells the peer about its QP.
type endpoint struct {
	mtu      uint8
	lid      uint16
	qpn, psn uint32
	gid      [16]byte
	hello    hello
}

func putFrame(kind byte, body []byte) []byte {
	body = body[:min(len(body), maxFrameBody)]
	b := make([]byte, frameHdrLen, frameHdrLen+len(body))
	copy(b, frameMagic)
	b[4], b[5] = kind, byte(len(body))
	return append(b, body...)
}

func (e endpoint) frame() []byte {
	b := make([]byte, endpointLen)
	b[0], b[1] = helloVersion, e.mtu
	binary.BigEndian.PutUint16(b[2:], e.lid)
	binary.BigEndian.PutUint32(b[4:], e.qpn)
	binary.BigEndian.PutUint32(b[8:], e.psn)
	copy(b[12:28], e.gid[:])
	copy(b[28:], e.hello.encode())
	return putFrame(frameEndpoint, b)
}

// parseFrameHeader reads a frame's header: its kind and body length.
func parseFrameHeader(b []byte) (kind byte, n int, err error) {
	if len(b) < frameHdrLen || string(b[:4]) != frameMagic {
		return 0, 0, fmt.Errorf("%w: it did not answer with an rdmamsg handshake", errNotHello)
	}
	switch b[4] {
	case frameEndpoint, frameReady, frameError:
		return b[4], int(b[5]), nil
	}
	return 0, 0, fmt.Errorf("%w: a handshake frame of unknown kind %q", errNotHello, b[4])
}

// parseEndpoint reads the body of an endpoint frame.
func parseEndpoint(b []byte) (endpoint, error) {
	if len(b) != endpointLen {
		return endpoint{}, fmt.Errorf("%w: an endpoint of %d bytes, want %d", errNotHello, len(b), endpointLen)
	}
	if b[0] != helloVersion {
		return endpoint{}, fmt.Errorf("%w: it speaks rdmamsg version %d, this side %d", errNotHello, b[0], helloVersion)
	}
	e := endpoint{
		mtu: b[1],
		lid: binary.BigEndian.Uint16(b[2:]),
		qpn: binary.BigEndian.Uint32(b[4:]),
		psn: binary.BigEndian.Uint32(b[8:]),
	}
	copy(e.gid[:], b[12:28])
	if e.mtu < 1 || e.mtu > 5 || e.qpn == 0 || e.qpn > 0xffffff || e.psn > 0xffffff {
		return endpoint{}, fmt.Errorf("%w: an endpoint out of range (MTU %d, QPN %#x, PSN %#x)", errNotHello, e.mtu, e.qpn, e.psn)
	}
	var err error
	e.hello, err = parseHello(b[28:])
	return e, err
}
