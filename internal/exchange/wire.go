package exchange

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxString is the longest string a message carries, in bytes (a
// one-byte length, which older peers' decoders hold to). Longer strings
// are cut when encoded, at a word boundary where one is near, and end
// with an ellipsis ("…"), so that a cut text reads as cut.
const MaxString = 255

// ellipsis ends a string that was cut to MaxString bytes.
const ellipsis = "…"

// ErrMalformed is wrapped by every error about bytes that are not a valid
// gorperf message.
var ErrMalformed = errors.New("malformed gorperf message")

func malformed(t MsgType, format string, args ...any) error {
	return fmt.Errorf("%w: %v: %s", ErrMalformed, t, fmt.Sprintf(format, args...))
}

// appendString appends s with a one-byte length, cut to MaxString bytes
// (truncate).
func appendString(b []byte, s string) []byte {
	s = truncate(s)
	b = append(b, uint8(len(s)))
	return append(b, s...)
}

// wordBack is how far back from the limit truncate looks for a space to
// cut at; a text with none that near is cut within a word.
const wordBack = 48

// truncate cuts s to MaxString bytes, ellipsis included: where it is
// longer, at the last space within wordBack bytes of the limit, else
// before the UTF-8 sequence that would be split (in a string that is not
// UTF-8 there, at the limit), and appends ellipsis. A text the peer cut
// read as whole, cut mid-word or mid-sentence ("... or leave -x");
// a cut text never shrinks to nothing (an error to no error).
func truncate(s string) string {
	if len(s) <= MaxString {
		return s
	}
	limit := MaxString - len(ellipsis)
	n := limit
	for i := limit; i > limit-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			n = i
			break
		}
	}
	if i := strings.LastIndexByte(s[:n+1], ' '); i > 0 && n-i <= wordBack {
		if t := strings.TrimRight(s[:i], " "); t != "" {
			n = len(t)
		}
	}
	return s[:n] + ellipsis
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
