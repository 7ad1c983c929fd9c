package exchange

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gorperf/gorperf/ibverbs"
)

// QPInfo is what the peer needs to reach one of this side's queue pairs:
// its endpoint and the memory its RDMA and atomic requests may target.
type QPInfo struct {
	Endpoint ibverbs.Endpoint
	RKey     uint32 // remote key of the buffer
	Addr     uint64 // the buffer's address in this side's address space
	Len      uint64 // the buffer's length in bytes
}

// Setup is what each side sends once the server has accepted the
// TestSpec: one QPInfo per QP, in QP order, and where the side runs.
// Check it against the spec.
type Setup struct {
	QPs []QPInfo
	Env Env
}

// Env is where a side runs, so that each side's report can name the
// other's host and NIC: its host name and kernel release, its device,
// the device's firmware and PCI vendor and part, its port's link rate
// (kbit/s, 0 where unknown) and active MTU (bytes), and the netdev of its
// GID. Strings longer than MaxString are cut.
type Env struct {
	Host, Kernel, Device, FWVer, Netdev string
	VendorID, VendorPartID              uint32
	LinkKbps, ActiveMTU                 uint32
}

// qpInfoLen is the encoded size of a QPInfo: endpoint QPN, PSN, QKey
// (uint32), LID (uint16), GID [16]byte, GID index uint8, GID type uint32,
// MTU, port and RdAtomic uint8, then rkey uint32, addr and len uint64.
const qpInfoLen = 4 + 4 + 4 + 2 + 16 + 1 + 4 + 1 + 1 + 1 + 4 + 8 + 8

// envMinLen is the encoded size of an Env with empty strings: five
// string lengths and four uint32s.
const envMinLen = 5 + 4*4

// AppendPayload appends count uint16 and count QPInfos, each: QPN, PSN,
// QKey uint32, LID uint16, GID [16]byte, GID index uint8, GID type uint32,
// MTU uint8, port uint8, RdAtomic uint8, rkey uint32, addr uint64, len
// uint64; then the Env: host, kernel, device, firmware and netdev strings,
// vendor, part, link rate and active MTU uint32. AppendFrame refuses a
// Setup of more than MaxSetupQPs.
func (s Setup) AppendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(min(len(s.QPs), math.MaxUint16)))
	for _, q := range s.QPs {
		e := q.Endpoint
		b = binary.BigEndian.AppendUint32(b, e.QPN)
		b = binary.BigEndian.AppendUint32(b, e.PSN)
		b = binary.BigEndian.AppendUint32(b, e.QKey)
		b = binary.BigEndian.AppendUint16(b, e.LID)
		b = append(b, e.GID[:]...)
		b = append(b, e.GIDIndex)
		b = binary.BigEndian.AppendUint32(b, uint32(e.GIDType))
		b = append(b, uint8(e.MTU), e.Port, e.RdAtomic)
		b = binary.BigEndian.AppendUint32(b, q.RKey)
		b = binary.BigEndian.AppendUint64(b, q.Addr)
		b = binary.BigEndian.AppendUint64(b, q.Len)
	}
	e := s.Env
	for _, str := range []string{e.Host, e.Kernel, e.Device, e.FWVer, e.Netdev} {
		b = appendString(b, str)
	}
	for _, v := range []uint32{e.VendorID, e.VendorPartID, e.LinkKbps, e.ActiveMTU} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func decodeSetup(p []byte) (Setup, error) {
	r := reader{t: TypeSetup, b: p}
	n := int(r.u16())
	if n > MaxSetupQPs {
		return Setup{}, malformed(TypeSetup, "%d QPs, more than %d", n, MaxSetupQPs)
	}
	if r.err == nil && len(r.b) < n*qpInfoLen {
		return Setup{}, malformed(TypeSetup, "%d bytes for %d QPs, want at least %d", len(r.b), n, n*qpInfoLen)
	}
	var s Setup
	if n > 0 {
		s.QPs = make([]QPInfo, n)
	}
	for i := range s.QPs {
		q := &s.QPs[i]
		e := &q.Endpoint
		e.QPN = r.u32()
		e.PSN = r.u32()
		e.QKey = r.u32()
		e.LID = r.u16()
		copy(e.GID[:], r.take(16))
		e.GIDIndex = r.u8()
		e.GIDType = ibverbs.GIDType(r.u32())
		e.MTU = ibverbs.MTU(r.u8())
		e.Port = r.u8()
		e.RdAtomic = r.u8()
		q.RKey = r.u32()
		q.Addr = r.u64()
		q.Len = r.u64()
	}
	e := &s.Env
	for _, str := range []*string{&e.Host, &e.Kernel, &e.Device, &e.FWVer, &e.Netdev} {
		*str = r.str()
	}
	for _, v := range []*uint32{&e.VendorID, &e.VendorPartID, &e.LinkKbps, &e.ActiveMTU} {
		*v = r.u32()
	}
	if err := r.done(); err != nil {
		return Setup{}, err
	}
	return s, nil
}

// Check reports whether s can serve spec, the test both sides agreed on:
// one QPInfo per QP, 24-bit QPNs and PSNs, a valid MTU and, for tests that
// target the peer's memory, a buffer that holds the largest message (8-byte
// aligned for atomics) without wrapping around the address space.
func (s Setup) Check(spec TestSpec) error {
	if len(s.QPs) != int(spec.NumQPs) {
		return fmt.Errorf("setup has %d QPs, the test %d", len(s.QPs), spec.NumQPs)
	}
	for i, q := range s.QPs {
		e := q.Endpoint
		switch {
		case e.QPN > 0xFFFFFF:
			return fmt.Errorf("setup QP %d: QPN %#x exceeds 24 bits", i, e.QPN)
		case e.PSN > 0xFFFFFF:
			return fmt.Errorf("setup QP %d: PSN %#x exceeds 24 bits", i, e.PSN)
		case e.MTU.Bytes() == 0:
			return fmt.Errorf("setup QP %d: invalid MTU %d", i, uint8(e.MTU))
		}
		if !spec.Test.UsesRemoteMemory() {
			continue
		}
		if q.Len < uint64(spec.MaxSize()) {
			return fmt.Errorf("setup QP %d: buffer of %d bytes cannot hold a %d-byte message", i, q.Len, spec.MaxSize())
		}
		if q.Addr > math.MaxUint64-q.Len {
			return fmt.Errorf("setup QP %d: buffer %#x+%d wraps around", i, q.Addr, q.Len)
		}
		if spec.Test.IsAtomic() && q.Addr%8 != 0 {
			return fmt.Errorf("setup QP %d: atomic target %#x is not 8-byte aligned", i, q.Addr)
		}
	}
	return nil
}
