//go:build linux && cgo

package ibverbs

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"syscall"
)

// RemoteMRSize is the length in bytes of a RemoteMR's binary encoding
// (AppendBinary, UnmarshalBinary): Addr (8 bytes), Len (8) and RKey (4),
// in that order, each big-endian (network byte order), with nothing
// before, between or after them.
const RemoteMRSize = 20

// RemoteMR is a peer's view of a memory region: what a work request of
// the peer's names in SendWR.RemoteAddr and SendWR.RKey to read, write or
// apply atomics to the region (OpRDMARead, OpRDMAWrite, OpAtomicFetchAdd,
// ...). MR.Remote makes one, for a peer to receive; the peer's side
// names a part of it with SendWR.SetRemote, which checks the bounds.
// The region must have been registered with the access the peer's requests
// need (AccessRemoteWrite, AccessRemoteRead or AccessRemoteAtomic).
//
// It travels in a fixed-size binary encoding of RemoteMRSize bytes
// (AppendBinary, MarshalBinary; UnmarshalBinary), which the decoder reads
// from the front of what arrived and whose trailing bytes it ignores: it
// fits in, and survives the zero padding of, rdma_cm's private data (see
// package rdmacm), and a caller may put more of its own after it.
//
// A RemoteMR names at least one byte, within the 64-bit address space.
// The zero value names none: it is what MR.Remote returns for a closed
// MR, and it neither encodes nor decodes, as no RemoteMR that names no
// bytes does.
type RemoteMR struct {
	// Addr is the address of the region's first byte as the region's
	// device knows it (MR.Addr): the registering process's pointer, or
	// the iova of RegMRIOVA, which a zero-based region has at 0.
	Addr uint64
	// Len is the region's length in bytes (MR.Len).
	Len uint64
	// RKey is the key that grants the peer access (MR.RKey).
	RKey uint32
}

var (
	_ encoding.BinaryAppender    = RemoteMR{}
	_ encoding.BinaryMarshaler   = RemoteMR{}
	_ encoding.BinaryUnmarshaler = (*RemoteMR)(nil)
)

// Remote returns the region as a peer names it: its Addr, Len and RKey.
// It returns the zero RemoteMR once the MR is closed, since the key then
// names nothing, or a later registration's memory.
func (m *MR) Remote() RemoteMR {
	s := m.st.Load()
	if s.b == nil {
		return RemoteMR{}
	}
	return RemoteMR{Addr: s.addr, Len: uint64(s.n), RKey: s.rkey}
}

// check says why r cannot travel: it names no bytes, or bytes past the
// end of the address space.
func (r RemoteMR) check() error {
	if r.Len == 0 {
		return fmt.Errorf("ibverbs: RemoteMR of 0 bytes: %w", syscall.EINVAL)
	}
	if r.Len-1 > math.MaxUint64-r.Addr {
		return fmt.Errorf("ibverbs: RemoteMR of %d bytes at %#x passes the end of the address space: %w",
			r.Len, r.Addr, syscall.EINVAL)
	}
	return nil
}

// Range returns the part of r that is length bytes from offset off. It
// fails with an error matching syscall.EINVAL where that part is empty or
// does not lie within r, or where r itself names no bytes. A side may
// send a peer a Range of its MR's Remote, to lend it only that part.
func (r RemoteMR) Range(off, length uint64) (RemoteMR, error) {
	if err := r.check(); err != nil {
		return RemoteMR{}, err
	}
	if length == 0 || off > r.Len || length > r.Len-off {
		return RemoteMR{}, fmt.Errorf("ibverbs: range [%d, %d+%d) of a RemoteMR of %d bytes: want 1 byte or more within it: %w",
			off, off, length, r.Len, syscall.EINVAL)
	}
	return RemoteMR{Addr: r.Addr + off, Len: length, RKey: r.RKey}, nil
}

// AppendBinary appends r's encoding of RemoteMRSize bytes to b (see
// RemoteMRSize for the layout). It fails, appending nothing, for a
// RemoteMR that names no bytes or passes the end of the address space.
func (r RemoteMR) AppendBinary(b []byte) ([]byte, error) {
	if err := r.check(); err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint64(b, r.Addr)
	b = binary.BigEndian.AppendUint64(b, r.Len)
	return binary.BigEndian.AppendUint32(b, r.RKey), nil
}

// MarshalBinary returns r's encoding of RemoteMRSize bytes, as
// AppendBinary.
func (r RemoteMR) MarshalBinary() ([]byte, error) {
	return r.AppendBinary(make([]byte, 0, RemoteMRSize))
}

// UnmarshalBinary decodes the RemoteMR at the front of data, which
// AppendBinary wrote, and ignores the bytes after its RemoteMRSize, such
// as rdma_cm's zero padding of private data. Fewer bytes fail with an
// error matching io.ErrUnexpectedEOF; a RemoteMR of no bytes (as the
// zeros of a peer that sent no private data decode to) or past the end of
// the address space, with one matching syscall.EINVAL. On failure r is
// left as it was.
func (r *RemoteMR) UnmarshalBinary(data []byte) error {
	if len(data) < RemoteMRSize {
		return fmt.Errorf("ibverbs: a RemoteMR takes %d bytes, got %d: %w", RemoteMRSize, len(data), io.ErrUnexpectedEOF)
	}
	v := RemoteMR{
		Addr: binary.BigEndian.Uint64(data),
		Len:  binary.BigEndian.Uint64(data[8:]),
		RKey: binary.BigEndian.Uint32(data[16:]),
	}
	if err := v.check(); err != nil {
		return err
	}
	*r = v
	return nil
}

// SetRemote sets wr's RemoteAddr and RKey to the bytes of r at offset off,
// once it has checked that the request stays within r: an OpRDMAWrite,
// OpRDMAWriteWithImm or OpRDMARead moves as many bytes as its SGL holds,
// which must fit from off; an OpAtomicCmpAndSwp or OpAtomicFetchAdd works
// on 8 bytes, which must fit and lie on an 8-byte boundary (Addr+off), as
// the verbs require, and takes one SGE of 8 bytes for the old value (as
// PostSend checks too). Set Opcode and SGL first. Other opcodes name no
// remote memory. A request that would not fit, or an r that names no
// bytes (the zero RemoteMR) or passes the end of the address space, fails with an error
// matching syscall.EINVAL and leaves wr as it was, where the device would
// fail its completion (WCRemAccessErr, WCRemInvReqErr) or, within the
// rkey's region, touch other bytes than meant. It does not allocate,
// unless it fails.
func (wr *SendWR) SetRemote(r RemoteMR, off uint64) error {
	if err := r.check(); err != nil {
		return err
	}
	var n uint64
	switch wr.Opcode {
	case OpRDMAWrite, OpRDMAWriteWithImm, OpRDMARead:
		for i := range wr.SGL {
			n += uint64(wr.SGL[i].Length)
		}
	case OpAtomicCmpAndSwp, OpAtomicFetchAdd:
		if len(wr.SGL) != 1 || wr.SGL[0].Length != 8 {
			return fmt.Errorf("ibverbs: SetRemote on a %v with %s: an atomic takes one SGE of 8 bytes, where the old value lands: %w",
				wr.Opcode, sglSize(wr.SGL), syscall.EINVAL)
		}
		n = 8
	default:
		return fmt.Errorf("ibverbs: SetRemote on a %v request, which names no remote memory: %w", wr.Opcode, syscall.EINVAL)
	}
	if off > r.Len || n > r.Len-off {
		return fmt.Errorf("ibverbs: %v of %d bytes at offset %d of a RemoteMR of %d bytes: %w",
			wr.Opcode, n, off, r.Len, syscall.EINVAL)
	}
	addr := r.Addr + off
	if wr.Opcode == OpAtomicCmpAndSwp || wr.Opcode == OpAtomicFetchAdd {
		if addr%8 != 0 {
			return fmt.Errorf("ibverbs: %v at %#x, offset %d: atomics need an 8-byte aligned address: %w",
				wr.Opcode, addr, off, syscall.EINVAL)
		}
	}
	wr.RemoteAddr, wr.RKey = addr, r.RKey
	return nil
}
