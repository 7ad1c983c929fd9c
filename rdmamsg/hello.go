package rdmamsg

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A hello is what each side tells the other in the connection's private
// data (the dialer's request, the listener's reply): how many messages it
// keeps receives posted for, which are the peer's first credits, and the
// largest message it takes.
type hello struct {
	depth      int
	maxMessage int
}

// The hello's layout: magic, version, three reserved bytes, the depth and
// the largest message, big-endian. The connection's private data may come
// padded with zeros (RoCE's CM pads a reply to 196 bytes), so a longer
// buffer is read from its start.
const (
	helloMagic   = "GRMS"
	helloVersion = 1
	helloLen     = 16
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
