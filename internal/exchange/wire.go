package exchange

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxString is the longest string a message carries, in bytes. Longer
// strings are cut at a UTF-8 boundary when encoded.
const MaxString = 255

// ErrMalformed is wrapped by every error about bytes that are not a valid
// gorperf message.
var ErrMalformed = errors.New("malformed gorperf message")

func malformed(t MsgType, format string, args ...any) error {
	return fmt.Errorf("%w: %v: %s", ErrMalformed, t, fmt.Sprintf(format, args...))
}

// appendString appends s with a one-byte length, cut to MaxString bytes
// without splitting a UTF-8 sequence.
func appendString(b []byte, s string) []byte {
	s = truncate(s)
	b = append(b, uint8(len(s)))
	return append(b, s...)
}

// truncate cuts s to MaxString bytes, before the UTF-8 sequence that
// would be split; in a string that is not UTF-8 there, at MaxString, so
// that a text never shrinks to nothing (an error to no error).
func truncate(s string) string {
	if len(s) <= MaxString {
		return s
	}
	for n := MaxString; n > MaxString-utf8.UTFMax; n-- {
		if utf8.RuneStart(s[n]) {
			return s[:n]
		}
	}
	return s[:MaxString]
}

// reader decodes a payload. The first error sticks: later reads return
// zero values, and err reports it.
type reader struct {
	t   MsgType
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = malformed(r.t, format, args...)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("payload ends %d bytes early", n-len(r.b))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (r *reader) str() string {
	n := int(r.u8()) // at most MaxString by construction
	return string(r.take(n))
}

// done reports the first error, or an error if bytes are left over.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}
