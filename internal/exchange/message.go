package exchange

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// ProtocolVersion is the version of the wire format this package speaks.
// Both sides must speak the same one; it changes whenever a payload layout
// or the order of messages does.
const ProtocolVersion = 14

// DefaultPort is the TCP port of the control connection, perftest's.
const DefaultPort = 18515

// Magic opens every Hello; a peer whose Hello has another magic is not
// gorperf.
const Magic = "GRPF"

// MsgType is the type byte of a frame.
type MsgType uint8

// Message types.
const (
	TypeHello  MsgType = 1
	TypeSpec   MsgType = 2
	TypeSetup  MsgType = 3
	TypeSync   MsgType = 4
	TypeResult MsgType = 5
	TypeError  MsgType = 6
	TypeAlive  MsgType = 7
	TypeQueued MsgType = 8
	TypeOffer  MsgType = 9
)

var typeNames = [...]string{"", "Hello", "Spec", "Setup", "Sync", "Result", "Error", "Alive", "Queued", "Offer"}

func (t MsgType) String() string {
	if t >= TypeHello && t <= TypeOffer {
		return typeNames[t]
	}
	return fmt.Sprintf("MsgType(%#02x)", uint8(t))
}

// Message is one of Hello, TestSpec, Setup, Sync, Result, ErrorMsg,
// Alive, Queued and Offer.
type Message interface {
	// Type returns the message's frame type.
	Type() MsgType
	// AppendPayload appends the message's payload, without the frame
	// header, to b. AppendFrame adds the header and checks the size.
	AppendPayload(b []byte) []byte

	message() // the set of messages is closed
}

// Hello is the first message each side sends (see Handshake). Its frame
// (type 1, the header and this payload) is the same in every protocol
// version, so that two releases of different versions always read each
// other's version and say so (*VersionError), where any other message
// may change with ProtocolVersion: what a later version needs to say
// first goes in another message, after the hellos.
type Hello struct {
	Magic   [4]byte // Magic
	Version uint16  // the sender's ProtocolVersion
	Tool    string  // the sender's program and version, e.g. "gorperf 0.1.0"
}

// NewHello returns this side's Hello.
func NewHello(tool string) Hello {
	return Hello{Magic: [4]byte([]byte(Magic)), Version: ProtocolVersion, Tool: tool}
}

// Sync is a barrier: each side sends one and waits for the peer's, which
// must carry the same Seq (see Conn.Barrier).
type Sync struct {
	Seq uint32
}

// Alive says only that its sender is alive: a side sends one every while
// (Conn.KeepAlive) so that a peer waiting for its next message can tell a
// side that takes long (a long run, a warm-up) from one that is stopped or
// hung with its connection open. Receives skip it.
type Alive struct{}

// Queued is an Alive that a server sends a client whose test waits its
// turn (gorperf serve's lobby, while other clients' tests run): Ahead
// tests come before it, the one running included. Receives skip it, as
// they skip an Alive, after passing it to the Conn's OnQueued.
type Queued struct {
	Ahead uint32
}

// Offer is what a side offers before its QPs are connected through
// rdma_cm (-R on RC), which replaces that test's first barrier: the
// client sends its Offer, and the server, once it has it, listens and
// sends its own. MTU is the most path MTU the side takes (its port's
// active MTU within -m and what its GID's netdev carries), which the
// Setup's endpoints carry too, but only once the QPs are connected: the
// path MTU that rdma_cm gives both sides' QPs is the active side's, from
// its route, and a passive side whose netdev carries less must cap its
// QPs, and the active side's, before they connect.
type Offer struct {
	MTU ibverbs.MTU
}

// Result is what one side measured, sent at the end of a test so that the
// other can report totals (the sum of both directions of a bidirectional
// test) or the reason a run failed.
type Result struct {
	Iterations uint64        // iterations (messages) this side completed
	Bytes      uint64        // payload bytes this side moved
	Elapsed    time.Duration // this side's measured time; negative is sent as 0
	Mismatches uint64        // data validation failures (TestSpec.ValidateData)
	// PeakMessages and PeakElapsed are this side's fastest window of
	// messages (its peak rate): PeakMessages completed in PeakElapsed, or
	// zeros. They travel whole, so that the peak's time per message keeps
	// its fractions of a nanosecond (version 10; version 9 sent whole
	// nanoseconds a message). A negative PeakElapsed is sent as 0.
	PeakMessages uint64
	PeakElapsed  time.Duration
	// Error is why this side's run failed, "" if it did not. It comes
	// from the network: print it through Err, which makes it safe.
	Error string
}

// Err returns the peer's failure that a received Result reports, as a
// *PeerError with CodeFailed, whose message is safe to print (terminal
// escapes and other control characters replaced), or nil when Error is
// empty.
func (res Result) Err() error {
	if res.Error == "" {
		return nil
	}
	return &PeerError{Code: CodeFailed, Text: res.Error}
}

// ErrorMsg is sent instead of the expected message when a side gives up;
// the receiver's Conn returns it as a *PeerError. NewErrorMsg builds one
// from an error.
type ErrorMsg struct {
	Code ErrorCode
	Text string // cut to MaxString bytes when sent
}

func (Hello) Type() MsgType    { return TypeHello }
func (TestSpec) Type() MsgType { return TypeSpec }
func (Setup) Type() MsgType    { return TypeSetup }
func (Sync) Type() MsgType     { return TypeSync }
func (Result) Type() MsgType   { return TypeResult }
func (ErrorMsg) Type() MsgType { return TypeError }
func (Alive) Type() MsgType    { return TypeAlive }
func (Queued) Type() MsgType   { return TypeQueued }
func (Offer) Type() MsgType    { return TypeOffer }

func (Hello) message()    {}
func (TestSpec) message() {}
func (Setup) message()    {}
func (Sync) message()     {}
func (Result) message()   {}
func (ErrorMsg) message() {}
func (Alive) message()    {}
func (Queued) message()   {}
func (Offer) message()    {}

// AppendPayload appends nothing: an Alive has no payload.
func (Alive) AppendPayload(b []byte) []byte { return b }

// AppendPayload appends ahead uint32.
func (q Queued) AppendPayload(b []byte) []byte { return binary.BigEndian.AppendUint32(b, q.Ahead) }

func decodeQueued(p []byte) (Queued, error) {
	r := reader{t: TypeQueued, b: p}
	q := Queued{Ahead: r.u32()}
	return q, r.done()
}

// AppendPayload appends MTU uint8.
func (o Offer) AppendPayload(b []byte) []byte { return append(b, uint8(o.MTU)) }

func decodeOffer(p []byte) (Offer, error) {
	r := reader{t: TypeOffer, b: p}
	o := Offer{MTU: ibverbs.MTU(r.u8())}
	if err := r.done(); err != nil {
		return o, err
	}
	if o.MTU.Bytes() == 0 {
		return o, fmt.Errorf("%w: offer of an invalid MTU %d", ErrMalformed, uint8(o.MTU))
	}
	return o, nil
}

// AppendPayload appends magic [4]byte, version uint16, tool string.
func (h Hello) AppendPayload(b []byte) []byte {
	b = append(b, h.Magic[:]...)
	b = binary.BigEndian.AppendUint16(b, h.Version)
	return appendString(b, h.Tool)
}

func decodeHello(p []byte) (Hello, error) {
	r := reader{t: TypeHello, b: p}
	var h Hello
	copy(h.Magic[:], r.take(4))
	h.Version = r.u16()
	h.Tool = r.str()
	return h, r.done()
}

// AppendPayload appends seq uint32.
func (s Sync) AppendPayload(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, s.Seq)
}

func decodeSync(p []byte) (Sync, error) {
	r := reader{t: TypeSync, b: p}
	s := Sync{Seq: r.u32()}
	return s, r.done()
}

// resultLen is a Result's payload before its error text: six uint64s.
const resultLen = 6 * 8

// AppendPayload appends iterations, bytes, elapsed nanoseconds,
// mismatches, peak elapsed nanoseconds and peak messages, each uint64,
// then error string.
func (res Result) AppendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, res.Iterations)
	b = binary.BigEndian.AppendUint64(b, res.Bytes)
	b = binary.BigEndian.AppendUint64(b, uint64(max(res.Elapsed, 0)))
	b = binary.BigEndian.AppendUint64(b, res.Mismatches)
	b = binary.BigEndian.AppendUint64(b, uint64(max(res.PeakElapsed, 0)))
	b = binary.BigEndian.AppendUint64(b, res.PeakMessages)
	return appendString(b, res.Error)
}

func decodeResult(p []byte) (Result, error) {
	r := reader{t: TypeResult, b: p}
	var res Result
	res.Iterations = r.u64()
	res.Bytes = r.u64()
	ns := r.u64()
	if ns > math.MaxInt64 {
		r.fail("elapsed time %d ns out of range", ns)
	}
	res.Elapsed = time.Duration(ns)
	res.Mismatches = r.u64()
	if ns = r.u64(); ns > math.MaxInt64 {
		r.fail("peak time %d ns out of range", ns)
	}
	res.PeakElapsed = time.Duration(ns)
	res.PeakMessages = r.u64()
	res.Error = r.str()
	return res, r.done()
}

// AppendPayload appends code uint16, text string.
func (e ErrorMsg) AppendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(e.Code))
	return appendString(b, e.Text)
}

func decodeErrorMsg(p []byte) (ErrorMsg, error) {
	r := reader{t: TypeError, b: p}
	var e ErrorMsg
	e.Code = ErrorCode(r.u16())
	e.Text = r.str()
	return e, r.done()
}
