package ibverbs

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"
)

// ipv4GRH is a RoCE v2 GRH area over IPv4: 20 undefined bytes (fill),
// then the IPv4 header from src to dst, its checksum right unless bad.
func ipv4GRH(fill byte, src, dst string, bad bool) []byte {
	b := make([]byte, GRHLen)
	for i := range 20 {
		b[i] = fill
	}
	h := b[20:]
	h[0], h[1] = 0x45, 0x88 // version 4, 20 bytes; TOS
	binary.BigEndian.PutUint16(h[2:], 20+8+12+256)
	h[8], h[9] = 61, 17 // TTL, UDP
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	binary.BigEndian.PutUint16(h[10:], ipv4Checksum(h))
	if bad {
		h[10]++
	}
	return b
}

// ipv6GRH is a GRH (or IPv6 header) from src to dst with the given next
// header, traffic class 0x2a and flow label 0x12345.
func ipv6GRH(src, dst string, next byte) []byte {
	b := make([]byte, GRHLen)
	binary.BigEndian.PutUint32(b, 6<<28|0x2a<<20|0x12345)
	b[6], b[7] = next, 33
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	return b
}

func TestParseGRH(t *testing.T) {
	gid := func(s string) GID { return GID(netip.MustParseAddr(s).As16()) }
	v4 := GRH{IPv4: true, Src: gid("::ffff:198.18.0.2"), Dst: gid("::ffff:198.18.0.1"),
		TrafficClass: 0x88, HopLimit: 61, NextHeader: 17}
	// An IPv6 header whose last 20 bytes start as an IPv4 header of 20
	// bytes would, with a checksum that does not add up.
	v6look4 := ipv6GRH("2001:2::4500:45", "2001:2::1", 17)
	for _, c := range []struct {
		name string
		b    []byte
		want GRH
		err  error
	}{
		{"IPv4, zeros first", ipv4GRH(0, "198.18.0.2", "198.18.0.1", false), v4, nil},
		// rdma-core's rule: bytes starting with version 6 are still IPv4
		// when the last 20 are a valid IPv4 header.
		{"IPv4, version 6 first", ipv4GRH(0x60, "198.18.0.2", "198.18.0.1", false), v4, nil},
		{"IPv4 checksum wrong, not version 6", ipv4GRH(0, "198.18.0.2", "198.18.0.1", true), v4, nil},
		{"IPv6", ipv6GRH("2001:2::2", "2001:2::1", 17),
			GRH{Src: gid("2001:2::2"), Dst: gid("2001:2::1"), TrafficClass: 0x2a, FlowLabel: 0x12345, HopLimit: 33, NextHeader: 17}, nil},
		{"IB GRH", ipv6GRH("fe80::1", "fe80::2", 0x1b),
			GRH{Src: gid("fe80::1"), Dst: gid("fe80::2"), TrafficClass: 0x2a, FlowLabel: 0x12345, HopLimit: 33, NextHeader: 0x1b}, nil},
		{"IPv6 that looks like IPv4 at 20", v6look4,
			GRH{Src: gid("2001:2::4500:45"), Dst: gid("2001:2::1"), TrafficClass: 0x2a, FlowLabel: 0x12345, HopLimit: 33, NextHeader: 17}, nil},
		{"zeros", make([]byte, GRHLen), GRH{}, syscall.EPROTONOSUPPORT},
		{"short", make([]byte, GRHLen-1), GRH{}, syscall.EINVAL},
		{"nil", nil, GRH{}, syscall.EINVAL},
	} {
		got, err := ParseGRH(c.b)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: ParseGRH = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	// A wrong IPv4 checksum behind version 6 makes the bytes IPv6.
	b := ipv4GRH(0x60, "198.18.0.2", "198.18.0.1", true)
	if g, err := ParseGRH(b); err != nil || g.IPv4 {
		t.Errorf("version 6 with a bad IPv4 checksum: %+v, %v; want IPv6", g, err)
	}
}
