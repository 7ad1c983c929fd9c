package ibverbs

import (
	"encoding"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// GID is a 128-bit global identifier (union ibv_gid). On RoCE it holds an
// IPv6 address, or an IPv4 address mapped into IPv6 (::ffff:a.b.c.d).
type GID [16]byte

// IsZero reports whether every byte of g is zero, as in unused table slots.
func (g GID) IsZero() bool { return g == GID{} }

// Addr returns g as an IP address, unmapping IPv4-mapped GIDs.
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g).Unmap() }

// IsLinkLocal reports whether g is a link-local GID, IPv6 (fe80::/10) or
// IPv4-mapped (::ffff:169.254.0.0/112), which RoCE v2 cannot route beyond
// one L2 segment.
func (g GID) IsLinkLocal() bool { return g.Addr().IsLinkLocalUnicast() }

// String formats g as IPv6 text, the way `ip` and show_gids print it
// (e.g. "::ffff:198.18.0.1" or "fe80::1").
func (g GID) String() string { return netip.AddrFrom16(g).String() }

// Hex formats g as the colon-separated groups that sysfs uses
// ("0000:0000:0000:0000:0000:ffff:c612:0001").
func (g GID) Hex() string {
	h := hex.EncodeToString(g[:])
	var b strings.Builder
	for i := 0; i < 32; i += 4 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+4])
	}
	return b.String()
}

// ParseGID parses a GID written as an IP address ("::ffff:198.18.0.1",
// "198.18.0.1", "fe80::1") or in sysfs' eight hex groups. An IPv6 zone
// ("fe80::1%eth0") is dropped: a GID has none, and a link-local GID is
// told apart by the device, port and netdev of its table entry (GIDEntry).
func ParseGID(s string) (GID, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return GID(a.As16()), nil
	}
	h := strings.ReplaceAll(s, ":", "")
	var g GID
	if len(h) == 32 {
		if _, err := hex.Decode(g[:], []byte(h)); err == nil {
			return g, nil
		}
	}
	return GID{}, fmt.Errorf("invalid GID %q", s)
}

// GIDFromIP returns the RoCE GID for an IP address.
func GIDFromIP(ip net.IP) GID {
	var g GID
	copy(g[:], ip.To16())
	return g
}

// GIDEntry is one valid entry of a port's GID table (struct ibv_gid_entry),
// with the network device it belongs to.
type GIDEntry struct {
	Index   int     // the entry's index in the table, as ConnParams.GIDIndex takes it
	Port    int     // the port whose table it is, from 1
	GID     GID     // the GID itself
	Type    GIDType // IB, RoCE v1 or RoCE v2
	Ifindex int     // the netdev's interface index; 0 on InfiniBand
	Netdev  string  // the netdev's name, "" if unknown
	// AddrFlags holds the flags of the netdev's address that the GID was
	// made from (AddrDeprecated, AddrTentative, AddrDADFailed), read from
	// an rtnetlink RTM_GETADDR dump; 0 where that address is not found.
	AddrFlags AddrFlags
	// MappedIPv6 reports an IPv4-mapped GID (::ffff:a.b.c.d) whose
	// address on the netdev is that IPv6 address, not the IPv4 address
	// a.b.c.d (`ip -6 addr add ::ffff:a.b.c.d/128`): the kernel routes
	// RoCE v2 from it neither as IPv4 nor as IPv6.
	MappedIPv6 bool
}

// AddrFlags are flags of a netdev's IP address, as rtnetlink reports them
// (ifa_flags and the IFA_FLAGS attribute, the kernel's IFA_F_*) and `ip
// addr` prints them.
type AddrFlags uint32

// The address flags that GID selection heeds: the kernel's values
// (linux/if_addr.h), spelled out so that the type builds off Linux too.
const (
	// AddrDADFailed: duplicate address detection found the address on
	// another host of the link (IFA_F_DADFAILED); it stays tentative.
	AddrDADFailed AddrFlags = 0x08
	// AddrDeprecated: the address's preferred lifetime is over
	// (IFA_F_DEPRECATED); it still works, but is no source of choice.
	AddrDeprecated AddrFlags = 0x20
	// AddrTentative: duplicate address detection has not finished
	// (IFA_F_TENTATIVE); the address cannot be used yet.
	AddrTentative AddrFlags = 0x40
)

// String names the flags that GID selection heeds, as `ip addr` does
// ("deprecated", "tentative dadfailed"); "" for none of them.
func (f AddrFlags) String() string {
	var p []string
	if f&AddrDeprecated != 0 {
		p = append(p, "deprecated")
	}
	if f&AddrTentative != 0 {
		p = append(p, "tentative")
	}
	if f&AddrDADFailed != 0 {
		p = append(p, "dadfailed")
	}
	return strings.Join(p, " ")
}

// IP returns the address the entry maps to: the IPv4 address of an
// IPv4-mapped GID, else the GID as an IPv6 address.
func (e GIDEntry) IP() netip.Addr { return e.GID.Addr() }

// String formats the entry as "index 3 RoCE v2 ::ffff:198.18.0.1 on eth0".
func (e GIDEntry) String() string {
	s := fmt.Sprintf("index %d %s %s", e.Index, e.Type, e.GID)
	if e.Netdev != "" {
		s += " on " + e.Netdev
	}
	return s
}

var (
	_ encoding.TextMarshaler   = GID{}
	_ encoding.TextUnmarshaler = (*GID)(nil)
)

// MarshalText returns g as String formats it ("::ffff:198.18.0.1",
// "fe80::1"), so that encoding/json and other text encoders write a GID
// as its address, not as 16 numbers. It never fails.
func (g GID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses text as ParseGID does: an IP address or sysfs'
// eight hex groups. Other text fails with an error matching
// syscall.EINVAL, and leaves g as it was.
func (g *GID) UnmarshalText(text []byte) error {
	v, err := ParseGID(string(text))
	if err != nil {
		return fmt.Errorf("ibverbs: %w: %w", err, syscall.EINVAL)
	}
	*g = v
	return nil
}
