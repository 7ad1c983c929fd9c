package ibverbs

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"io"
	"syscall"
)

// EndpointSize is the length in bytes of an Endpoint's binary encoding
// (AppendBinary, UnmarshalBinary), each field big-endian (network byte
// order), with nothing before, between or after them:
//
//	offset  size  field
//	0       1     version: EndpointVersion
//	1       4     QPN
//	5       4     PSN
//	9       4     QKey
//	13      2     LID
//	15      16    GID, in network order as the GID holds it
//	31      1     GIDIndex
//	32      1     GIDType
//	33      1     MTU
//	34      1     Port
//	35      1     RdAtomic
const EndpointSize = 36

// EndpointVersion is the version byte that leads an Endpoint's binary
// encoding. A decoder refuses any other, a zero above all, which is what
// the zero padding of an empty rdma_cm private data reads as.
const EndpointVersion = 1

// Endpoint is what a peer needs to connect a queue pair to this one: plain,
// serialisable data. (*QP).Endpoint makes one for a QP, and (*QP).Connect
// and ToRTR take the peer's.
//
// How it travels (TCP, rdma_cm private data, a file) is up to the
// application; what travels can be its fixed-size binary encoding of
// EndpointSize bytes (AppendBinary, MarshalBinary; UnmarshalBinary),
// which, as RemoteMR's, the decoder reads from the front of what arrived,
// ignoring the bytes after it, so that a caller may send more of its own
// behind it (a RemoteMR's RemoteMRSize bytes, say: both fit in the 56
// bytes of an rdma_cm connection request's private data). Its GID
// encodes as text in JSON and other text formats (GID.MarshalText).
type Endpoint struct {
	QPN      uint32  // queue pair number (24 bits)
	PSN      uint32  // first packet sequence number (24 bits)
	QKey     uint32  // UD only
	LID      uint16  // InfiniBand local identifier; 0 on RoCE
	GID      GID     // the port's GID used for this QP
	GIDIndex uint8   // that GID's index in the sender's table
	GIDType  GIDType // that GID's type
	MTU      MTU     // the sender's active path MTU
	Port     uint8   // the sender's port number
	// RdAtomic is, for RC, how many RDMA reads and atomics this QP accepts
	// at once as a responder (its max_dest_rd_atomic): the most the peer
	// may have outstanding. 0 means unknown.
	RdAtomic uint8
}

var (
	_ encoding.BinaryAppender    = Endpoint{}
	_ encoding.BinaryMarshaler   = Endpoint{}
	_ encoding.BinaryUnmarshaler = (*Endpoint)(nil)
)

// String formats the endpoint for logs: QPN, PSN, LID, GID with its index
// and type, and MTU.
func (e Endpoint) String() string {
	return fmt.Sprintf("QPN %#06x PSN %#06x LID %d GID %s (index %d, %s) MTU %s",
		e.QPN, e.PSN, e.LID, e.GID, e.GIDIndex, e.GIDType, e.MTU)
}

// check says why e cannot travel: a QPN or PSN past 24 bits, a GID type
// past the byte the encoding gives it, or an MTU that is neither a valid
// one nor 0 (unknown).
func (e Endpoint) check() error {
	switch {
	case e.QPN > 0xFFFFFF:
		return fmt.Errorf("ibverbs: Endpoint QPN %#x exceeds 24 bits: %w", e.QPN, syscall.EINVAL)
	case e.PSN > 0xFFFFFF:
		return fmt.Errorf("ibverbs: Endpoint PSN %#x exceeds 24 bits: %w", e.PSN, syscall.EINVAL)
	case e.GIDType > 0xFF:
		return fmt.Errorf("ibverbs: Endpoint GID type %d exceeds a byte: %w", uint32(e.GIDType), syscall.EINVAL)
	case e.MTU != 0 && e.MTU.Bytes() == 0:
		return fmt.Errorf("ibverbs: Endpoint MTU %d: want 0 (unknown) or %d to %d: %w",
			uint8(e.MTU), MTU256, MTU4096, syscall.EINVAL)
	}
	return nil
}

// AppendBinary appends e's encoding of EndpointSize bytes to b (see
// EndpointSize for the layout). It fails with an error matching
// syscall.EINVAL, appending nothing, for a QPN or PSN past 24 bits, a
// GIDType past 255 or an MTU that is not 0 or MTU256 to MTU4096.
func (e Endpoint) AppendBinary(b []byte) ([]byte, error) {
	if err := e.check(); err != nil {
		return b, err
	}
	b = append(b, EndpointVersion)
	b = binary.BigEndian.AppendUint32(b, e.QPN)
	b = binary.BigEndian.AppendUint32(b, e.PSN)
	b = binary.BigEndian.AppendUint32(b, e.QKey)
	b = binary.BigEndian.AppendUint16(b, e.LID)
	b = append(b, e.GID[:]...)
	return append(b, e.GIDIndex, uint8(e.GIDType), uint8(e.MTU), e.Port, e.RdAtomic), nil
}

// MarshalBinary returns e's encoding of EndpointSize bytes, as
// AppendBinary.
func (e Endpoint) MarshalBinary() ([]byte, error) {
	return e.AppendBinary(make([]byte, 0, EndpointSize))
}

// UnmarshalBinary decodes the Endpoint at the front of data, which
// AppendBinary wrote, and ignores the bytes after its EndpointSize, such
// as rdma_cm's zero padding of private data. Fewer bytes fail with an
// error matching io.ErrUnexpectedEOF; a version other than
// EndpointVersion (0, as the zeros of a peer that sent nothing decode
// to), or a field that AppendBinary refuses, with one matching
// syscall.EINVAL. On failure e is left as it was.
func (e *Endpoint) UnmarshalBinary(data []byte) error {
	if len(data) < EndpointSize {
		return fmt.Errorf("ibverbs: an Endpoint takes %d bytes, got %d: %w", EndpointSize, len(data), io.ErrUnexpectedEOF)
	}
	if data[0] != EndpointVersion {
		return fmt.Errorf("ibverbs: Endpoint encoding version %d, want %d: %w", data[0], EndpointVersion, syscall.EINVAL)
	}
	v := Endpoint{
		QPN:      binary.BigEndian.Uint32(data[1:]),
		PSN:      binary.BigEndian.Uint32(data[5:]),
		QKey:     binary.BigEndian.Uint32(data[9:]),
		LID:      binary.BigEndian.Uint16(data[13:]),
		GID:      GID(data[15:31]),
		GIDIndex: data[31],
		GIDType:  GIDType(data[32]),
		MTU:      MTU(data[33]),
		Port:     data[34],
		RdAtomic: data[35],
	}
	if err := v.check(); err != nil {
		return err
	}
	*e = v
	return nil
}
