package exchange

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"
)

var (
	// ErrNotGorperf means the peer's first bytes are not a gorperf Hello.
	ErrNotGorperf = errors.New("peer does not speak the gorperf protocol (is it perftest or another service on that port?)")

	// ErrUnexpected means a well-formed message came out of turn.
	ErrUnexpected = errors.New("unexpected message")

	// ErrInvalidSpec is wrapped by TestSpec.Validate's errors.
	ErrInvalidSpec = errors.New("invalid test")

	// ErrOverLimit is wrapped by TestSpec.CheckLimits's errors when a valid
	// test asks for more than the server's Limits allow.
	ErrOverLimit = errors.New("test exceeds the server's limits")
)

// VersionError is returned by Handshake when the peer speaks another
// ProtocolVersion.
type VersionError struct {
	Local, Remote uint16
	RemoteTool    string // the peer's Hello.Tool
}

func (e *VersionError) Error() string {
	peer := "the peer"
	if e.RemoteTool != "" {
		peer += " (" + sanitize(e.RemoteTool) + ")"
	}
	return fmt.Sprintf("gorperf protocol version mismatch: this side speaks version %d, %s speaks version %d; run the same gorperf release on both sides",
		e.Local, peer, e.Remote)
}

// SilenceError is a receive that Conn.SetPeerTimeout ended: the peer,
// whose connection is still open, sent nothing, not even an Alive, for
// After. It matches os.ErrDeadlineExceeded. A stopped peer and a
// partition look alike from here: a host that vanished, or a network cut
// between the hosts, closes no connection either.
type SilenceError struct {
	After time.Duration
}

func (e *SilenceError) Error() string {
	return fmt.Sprintf("the peer has sent nothing for %v, not even a keepalive, though its connection is open: "+
		"it is stopped or hung (SIGSTOP, a debugger, a deadlock), or its host or the network to it is gone (see --peer-timeout)", e.After)
}

// Unwrap returns os.ErrDeadlineExceeded.
func (e *SilenceError) Unwrap() error { return os.ErrDeadlineExceeded }

// ErrorCode classifies an ErrorMsg.
type ErrorCode uint16

// Error codes. A receiver treats an unknown code as CodeFailed.
const (
	CodeFailed      ErrorCode = 1 // anything else
	CodeInvalidSpec ErrorCode = 2 // the TestSpec is invalid (ErrInvalidSpec)
	CodeOverLimit   ErrorCode = 3 // the TestSpec exceeds the server's Limits (ErrOverLimit)
	CodeUnsupported ErrorCode = 4 // the device cannot run the test (errors.ErrUnsupported)
	CodeAborted     ErrorCode = 5 // the side was interrupted (context.Canceled)

	// The codes of checks that both sides make alike of what they
	// swapped (the Setups), so that a side that finds what its peer
	// said tells it once, in its own words (a Coder's code). A peer that
	// predates them reads them as CodeFailed.
	CodeGIDMismatch ErrorCode = 6 // the two sides' GIDs cannot reach each other
	CodeUDSize      ErrorCode = 7 // a UD message is over the path MTU
)

var codeNames = [...]string{"", "failed", "invalid test", "over limit", "unsupported", "aborted",
	"incompatible GIDs", "UD message over the path MTU"}

func (c ErrorCode) String() string {
	if c >= CodeFailed && c <= CodeUDSize {
		return codeNames[c]
	}
	return fmt.Sprintf("ErrorCode(%d)", uint16(c))
}

// codeErrors maps codes to the errors a *PeerError matches with errors.Is.
var codeErrors = map[ErrorCode]error{
	CodeInvalidSpec: ErrInvalidSpec,
	CodeOverLimit:   ErrOverLimit,
	CodeUnsupported: errors.ErrUnsupported,
	CodeAborted:     context.Canceled,
}

// Coder is an error that names its ErrorCode: a check's that both sides
// make (CodeGIDMismatch, CodeUDSize).
type Coder interface {
	error
	ErrorCode() ErrorCode
}

// NewErrorMsg returns the ErrorMsg that tells the peer about err, with the
// code of the first of ErrInvalidSpec, ErrOverLimit, errors.ErrUnsupported
// and context.Canceled that err matches (a *PeerError keeps its code, a
// Coder gives its own).
func NewErrorMsg(err error) ErrorMsg {
	m := ErrorMsg{Code: CodeFailed, Text: err.Error()}
	var pe *PeerError
	if errors.As(err, &pe) {
		m.Code = pe.Code
		return m
	}
	var ce Coder
	if errors.As(err, &ce) {
		m.Code = ce.ErrorCode()
		return m
	}
	for _, c := range []ErrorCode{CodeInvalidSpec, CodeOverLimit, CodeUnsupported, CodeAborted} {
		if errors.Is(err, codeErrors[c]) {
			m.Code = c
			break
		}
	}
	return m
}

// PeerError is an ErrorMsg the peer sent. errors.Is matches it against the
// error its code stands for (ErrOverLimit for CodeOverLimit, and so on).
type PeerError struct {
	Code ErrorCode
	Text string // as the peer sent it; Error() makes it printable
}

func (e *PeerError) Error() string {
	return "peer: " + e.Said()
}

// Said is what the peer said, made printable, without Error's "peer: ":
// its text, or where it sent none, its code's name.
func (e *PeerError) Said() string {
	if e.Text == "" {
		return e.Code.String()
	}
	return sanitize(e.Text)
}

// Is reports whether target is the error e's code stands for.
func (e *PeerError) Is(target error) bool {
	want, ok := codeErrors[e.Code]
	return ok && target == want
}

// sanitize makes text from the network safe to print on a terminal.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return unicode.ReplacementChar
	}, s)
}

// UnexpectedError is a receive's failure on a message of another type
// than the one it wanted; it wraps ErrUnexpected. A client that gets its
// own TestSpec back (Got TypeSpec, which no server sends) talks to a
// service that echoes what it is sent.
type UnexpectedError struct {
	Want, Got MsgType
}

func (e *UnexpectedError) Error() string {
	return fmt.Sprintf("%v: expected %v, got %v", ErrUnexpected, e.Want, e.Got)
}

func (e *UnexpectedError) Unwrap() error { return ErrUnexpected }
