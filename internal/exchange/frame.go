package exchange

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// HeaderLen is the size of a frame header: type uint8, reserved uint8 (0),
// payload length uint16.
const HeaderLen = 4

// MaxPayload is the largest payload a frame can carry.
const MaxPayload = math.MaxUint16

// payloadBounds returns the smallest and largest payload of a message type,
// and false for an unknown type.
func payloadBounds(t MsgType) (lo, hi int, ok bool) {
	switch t {
	case TypeHello:
		return 4 + 2 + 1, 4 + 2 + 1 + MaxString, true
	case TypeSpec:
		return specLen, specLen + 4*MaxSetupQPs, true
	case TypeSetup:
		return 2 + envMinLen, 2 + MaxSetupQPs*qpInfoLen + envMinLen + 5*MaxString, true
	case TypeSync:
		return 4, 4, true
	case TypeResult:
		return resultLen + 1, resultLen + 1 + MaxString, true
	case TypeError:
		return 2 + 1, 2 + 1 + MaxString, true
	case TypeAlive:
		return 0, 0, true
	case TypeQueued:
		return 4, 4, true
	case TypeOffer:
		return 1, 1, true
	}
	return 0, 0, false
}

// AppendFrame appends m's header and payload to b. It fails only for a
// Setup of more than MaxSetupQPs QPs.
func AppendFrame(b []byte, m Message) ([]byte, error) {
	if s, ok := m.(Setup); ok && len(s.QPs) > MaxSetupQPs {
		return b, fmt.Errorf("setup of %d QPs: at most %d fit in a message", len(s.QPs), MaxSetupQPs)
	}
	start := len(b)
	b = append(b, uint8(m.Type()), 0, 0, 0)
	b = m.AppendPayload(b)
	n := len(b) - start - HeaderLen
	if n > MaxPayload { // cannot happen for the bounded messages above
		return b[:start], fmt.Errorf("%v payload of %d bytes exceeds %d", m.Type(), n, MaxPayload)
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(n))
	return b, nil
}

// parseHeader checks a frame header and returns the type and payload
// length it announces.
func parseHeader(h []byte) (MsgType, int, error) {
	t := MsgType(h[0])
	n := int(binary.BigEndian.Uint16(h[2:]))
	lo, hi, ok := payloadBounds(t)
	switch {
	case !ok:
		return t, 0, fmt.Errorf("%w: unknown message type %#02x", ErrMalformed, h[0])
	case h[1] != 0:
		return t, 0, malformed(t, "reserved header byte is %#02x", h[1])
	case n < lo || n > hi:
		return t, 0, malformed(t, "payload of %d bytes, want %d to %d", n, lo, hi)
	}
	return t, n, nil
}

// decodePayload decodes the payload of a message of type t.
func decodePayload(t MsgType, p []byte) (Message, error) {
	var (
		m   Message
		err error
	)
	switch t {
	case TypeHello:
		m, err = decodeHello(p)
	case TypeSpec:
		m, err = decodeSpec(p)
	case TypeSetup:
		m, err = decodeSetup(p)
	case TypeSync:
		m, err = decodeSync(p)
	case TypeResult:
		m, err = decodeResult(p)
	case TypeError:
		m, err = decodeErrorMsg(p)
	case TypeAlive:
		m = Alive{}
	case TypeQueued:
		m, err = decodeQueued(p)
	case TypeOffer:
		m, err = decodeOffer(p)
	default:
		return nil, fmt.Errorf("%w: unknown message type %#02x", ErrMalformed, uint8(t))
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeFrame decodes b, which must hold exactly one frame. An ErrorMsg is
// returned as a message, not as an error.
func DecodeFrame(b []byte) (Message, error) {
	if len(b) < HeaderLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a frame header", ErrMalformed, len(b))
	}
	t, n, err := parseHeader(b[:HeaderLen])
	if err != nil {
		return nil, err
	}
	if p := b[HeaderLen:]; len(p) != n {
		return nil, malformed(t, "frame announces %d payload bytes, has %d", n, len(p))
	}
	return decodePayload(t, b[HeaderLen:])
}

// ReadFrame reads one frame from r and decodes it, reading no further. It
// checks the header before reading the payload, so it never allocates more
// than the bound for the announced type, nor waits for the payload of a
// frame it would refuse. An ErrorMsg is returned as a message. It returns
// io.EOF only if r ends before the frame starts.
func ReadFrame(r io.Reader) (Message, error) {
	var h [HeaderLen]byte
	m, _, err := readFrame(r, &h)
	return m, err
}

// readFrame is ReadFrame that also reports how many bytes it consumed,
// reading the header into h (a Conn's own, so that a frame without a
// payload, an Alive, costs no allocation).
func readFrame(r io.Reader, h *[HeaderLen]byte) (Message, int, error) {
	n, err := io.ReadFull(r, h[:])
	if err != nil {
		return nil, n, err
	}
	t, size, err := parseHeader(h[:])
	if err != nil {
		return nil, n, err
	}
	p := make([]byte, size)
	m, err := io.ReadFull(r, p)
	n += m
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, n, fmt.Errorf("reading %v payload: %w", t, err)
	}
	msg, err := decodePayload(t, p)
	return msg, n, err
}
