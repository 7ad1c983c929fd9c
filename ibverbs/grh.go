package ibverbs

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// GRHLen is the size of a global route header (struct ibv_grh): a UD
// receive's buffer must have this many bytes before the payload, where the
// device puts the header of the packet that brought it.
const GRHLen = 40

// GRH is what the first GRHLen bytes of a UD receive say about the packet
// that brought it. On InfiniBand and RoCE v1 they are the packet's GRH; on
// RoCE v2 over IPv6 the IPv6 header, which has the same layout; on RoCE v2
// over IPv4 the last 20 bytes are the IPv4 header and the first 20 are
// undefined.
type GRH struct {
	// IPv4 says the bytes held an IPv4 header; Src and Dst are then
	// IPv4 addresses mapped into IPv6, as RoCE v2 GIDs hold them.
	IPv4 bool
	// Src is the sender's GID and Dst the GID the packet was sent to
	// (a GID of the receiving port, or a multicast group).
	Src, Dst GID
	// TrafficClass is the GRH's traffic class (IPv4: the TOS byte),
	// HopLimit its hop limit (IPv4: the TTL), and FlowLabel its flow
	// label (0 over IPv4).
	TrafficClass uint8
	HopLimit     uint8
	FlowLabel    uint32
	// NextHeader is the GRH's next header: 0x1b (IB's BTH) on InfiniBand
	// and RoCE v1, 17 (UDP) on RoCE v2 over IPv6; 17 over IPv4 too,
	// from the IPv4 header's protocol.
	NextHeader uint8
}

// ParseGRH reads the global route header at the start of a UD receive's
// buffer, b, of at least GRHLen bytes. It tells an IPv4 header from an
// IPv6 one or a GRH as libibverbs' ibv_init_ah_from_wc does: bytes that do
// not start with version 6 must hold an IPv4 header in their last 20; ones
// that do are still IPv4 when those 20 bytes are an IPv4 header of 20
// bytes with a valid checksum. Bytes that are neither fail with an error
// matching syscall.EPROTONOSUPPORT. Use it only on a completion whose
// Flags has WCWithGRH: other receives leave the bytes as they were.
func ParseGRH(b []byte) (GRH, error) {
	if len(b) < GRHLen {
		return GRH{}, fmt.Errorf("ibverbs: GRH of %d bytes, want %d: %w", len(b), GRHLen, syscall.EINVAL)
	}
	ip4 := b[20:GRHLen]
	v6 := b[0]>>4 == 6
	if !v6 && ip4[0]>>4 != 4 {
		return GRH{}, fmt.Errorf("ibverbs: GRH starts %#02x, %#02x: neither IPv6 or IB (version 6) nor IPv4: %w",
			b[0], ip4[0], syscall.EPROTONOSUPPORT)
	}
	if !v6 || ip4[0]&0xf == 5 && ipv4Checksum(ip4) == 0 {
		g := GRH{IPv4: true, TrafficClass: ip4[1], HopLimit: ip4[8], NextHeader: ip4[9]}
		g.Src = mappedGID(ip4[12:16])
		g.Dst = mappedGID(ip4[16:20])
		return g, nil
	}
	vtf := binary.BigEndian.Uint32(b[0:4])
	g := GRH{
		TrafficClass: uint8(vtf >> 20),
		FlowLabel:    vtf & 0xfffff,
		NextHeader:   b[6],
		HopLimit:     b[7],
	}
	copy(g.Src[:], b[8:24])
	copy(g.Dst[:], b[24:40])
	return g, nil
}

// ipv4Checksum is the ones'-complement sum of h's 16-bit words,
// complemented: 0 for a header whose checksum field is right.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// mappedGID is the GID of IPv4 address a (4 bytes): ::ffff:a.
func mappedGID(a []byte) GID {
	var g GID
	g[10], g[11] = 0xff, 0xff
	copy(g[12:], a)
	return g
}
