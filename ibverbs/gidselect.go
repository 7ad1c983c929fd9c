package ibverbs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// GIDRule states which GID a user wants. The zero GIDRule asks for the
// best routable RoCE v2 GID, preferring IPv4.
type GIDRule struct {
	// Family is 4 or 6 to require IPv4-mapped or IPv6 GIDs; 0 for either,
	// with IPv4 preferred.
	Family int
	// Addr, if valid, requires the GID of exactly this IP address. A zone
	// (fe80::1%eth0, or %2 by interface index) requires that netdev too.
	// Naming a link-local address here accepts its GID, AllowLinkLocal or
	// not.
	Addr netip.Addr
	// Prefix, if valid, requires a GID inside this subnet.
	Prefix netip.Prefix
	// Netdev, if set, requires a GID of this network device.
	Netdev string
	// AllowLinkLocal accepts link-local GIDs (IPv6 fe80::/10, IPv4
	// 169.254.0.0/16), which are not routed. Off by default.
	AllowLinkLocal bool
}

// String describes the rule in words, as errors and Explain use it:
// "RoCE v2 GID, IPv4, on eth0", or "any routable RoCE v2 GID, IPv4
// preferred" for the zero rule.
func (r GIDRule) String() string {
	var p []string
	switch r.Family {
	case 4:
		p = append(p, "IPv4")
	case 6:
		p = append(p, "IPv6")
	}
	if r.Addr.IsValid() {
		p = append(p, "address "+r.Addr.String())
	}
	if r.Prefix.IsValid() {
		p = append(p, "in "+r.Prefix.String())
	}
	if r.Netdev != "" {
		p = append(p, "on "+r.Netdev)
	}
	if len(p) == 0 {
		return "any routable RoCE v2 GID, IPv4 preferred"
	}
	return "RoCE v2 GID, " + strings.Join(p, ", ")
}

// GIDChoice is the outcome of SelectGID: the entry chosen, why, and why
// each other entry was passed over.
type GIDChoice struct {
	Entry   GIDEntry     // the entry chosen
	Reason  string       // why, in words ("first routable IPv4 RoCE v2 entry")
	Skipped []SkippedGID // every other entry of the table, in table order
}

// SkippedGID is an entry that SelectGID passed over, and why.
type SkippedGID struct {
	Entry  GIDEntry // the entry passed over
	Reason string   // why, in words ("RoCE v1 twin of index 1")
}

// Explain returns a multi-line account of the choice.
func (c GIDChoice) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chose GID index %d (%s %s", c.Entry.Index, c.Entry.Type, c.Entry.IP())
	if c.Entry.Netdev != "" {
		fmt.Fprintf(&b, " on %s", c.Entry.Netdev)
	}
	fmt.Fprintf(&b, "): %s\n", c.Reason)
	for _, s := range c.Skipped {
		fmt.Fprintf(&b, "  skipped index %d (%s %s): %s\n", s.Entry.Index, s.Entry.Type, s.Entry.GID, s.Reason)
	}
	return b.String()
}

// MaxGIDIndex is the highest GID index that a QP's or AH's address vector
// can use: its sgid_index is 8 bits, while a port's table may be longer
// (soft-RoCE's has 1024 slots).
const MaxGIDIndex = 255

// SelectGID picks a RoCE v2 GID from a port's table by rule. Among the
// entries that pass, IPv4-mapped GIDs come before IPv6 ones unless the rule
// says otherwise, then the lowest index wins, so two hosts with the same
// addressing plan pick the same kind of entry whatever order their drivers
// fill the table in. An entry past MaxGIDIndex never passes. It fails with
// an explanation when nothing passes.
func SelectGID(table []GIDEntry, rule GIDRule) (GIDChoice, error) {
	var c GIDChoice
	best := -1
	v2ByGID := map[GID]int{}
	for _, e := range table {
		if e.Type == GIDTypeRoCEv2 {
			v2ByGID[e.GID] = e.Index
		}
	}
	for i, e := range table {
		why := rejectGID(e, rule, v2ByGID)
		if why != "" {
			c.Skipped = append(c.Skipped, SkippedGID{e, why})
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		// IPv4 before IPv6 when the family is open; else the earlier index.
		if rule.Family == 0 && e.GID.Addr().Is4() && !table[best].GID.Addr().Is4() {
			c.Skipped = append(c.Skipped, SkippedGID{table[best], fmt.Sprintf("IPv6; index %d is IPv4, which is preferred", e.Index)})
			best = i
		} else {
			c.Skipped = append(c.Skipped, SkippedGID{e, fmt.Sprintf("also usable, but index %d comes first", table[best].Index)})
		}
	}
	if best < 0 {
		return c, &NoGIDError{Rule: rule, Skipped: c.Skipped}
	}
	c.Entry = table[best]
	fam := "IPv6"
	if c.Entry.GID.Addr().Is4() {
		fam = "IPv4"
	}
	if rule == (GIDRule{}) {
		c.Reason = "first routable " + fam + " RoCE v2 entry"
	} else {
		c.Reason = "first entry matching " + rule.String()
	}
	return c, nil
}

func rejectGID(e GIDEntry, r GIDRule, v2 map[GID]int) string {
	a := e.GID.Addr()
	// The rule's address without its zone, which the zone check below
	// compares with the entry's netdev.
	want := r.Addr.WithZone("").Unmap()
	named := r.Addr.IsValid() && a == want
	switch {
	case e.GID.IsZero():
		return "empty (all-zero) entry"
	case e.Type == GIDTypeRoCEv1:
		if i, ok := v2[e.GID]; ok {
			return fmt.Sprintf("RoCE v1 twin of index %d", i)
		}
		return "RoCE v1 (not routable over IP)"
	case e.Type != GIDTypeRoCEv2:
		return e.Type.String() + ", not RoCE v2"
	case e.GID.IsLinkLocal() && !r.AllowLinkLocal && !named:
		if a.Is4() {
			return "link-local (169.254.0.0/16), not routable"
		}
		return "link-local (fe80::/10), not routable"
	case r.Family == 4 && !a.Is4():
		return "IPv6, IPv4 wanted"
	case r.Family == 6 && a.Is4():
		return "IPv4, IPv6 wanted"
	case r.Addr.IsValid() && !named:
		return "address is not " + want.String()
	case r.Addr.Zone() != "" && !inZone(e, r.Addr.Zone()):
		if e.Netdev == "" {
			return "no netdev, zone " + r.Addr.Zone() + " wanted"
		}
		return "on " + e.Netdev + ", not zone " + r.Addr.Zone()
	case r.Prefix.IsValid() && !r.Prefix.Contains(a) && !(a.Is4() && mapped4(r.Prefix) && r.Prefix.Contains(netip.AddrFrom16(a.As16()))):
		// An IPv4 GID is in an IPv4 subnet, or in an IPv4-mapped one
		// (::ffff:198.18.0.0/111), not in an IPv6 one such as ::/0.
		return "not in " + r.Prefix.String()
	case r.Netdev != "" && e.Netdev != r.Netdev:
		if e.Netdev == "" {
			return "no netdev, " + r.Netdev + " wanted"
		}
		return "on " + e.Netdev + ", not " + r.Netdev
	case e.Index > MaxGIDIndex:
		return fmt.Sprintf("index past %d, which the verbs' 8-bit GID index (sgid_index) cannot name", MaxGIDIndex)
	}
	return ""
}

// inZone reports whether zone, a netdev's name or its interface index,
// names e's netdev.
func inZone(e GIDEntry, zone string) bool {
	if i, err := strconv.Atoi(zone); err == nil {
		return e.Ifindex != 0 && i == e.Ifindex
	}
	return e.Netdev != "" && zone == e.Netdev
}

// mapped4 reports whether p is a subnet of IPv4-mapped IPv6 addresses
// (::ffff:0:0/96 or narrower).
func mapped4(p netip.Prefix) bool { return p.Bits() >= 96 && p.Addr().Is4In6() }

// NoGIDError says that no GID table entry passed a GIDRule, and why each
// was rejected.
type NoGIDError struct {
	Rule    GIDRule      // the rule nothing passed
	Skipped []SkippedGID // every entry of the table, with why it failed the rule
}

// Error returns the rule and each entry's reason for failing it, or, for
// an empty table, a hint at why it may be empty.
func (e *NoGIDError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no GID matches %s", e.Rule)
	if len(e.Skipped) == 0 {
		b.WriteString(" (the GID table is empty: is the port's netdev up with an IP address?)")
	}
	for _, s := range e.Skipped {
		fmt.Fprintf(&b, "; index %d %s: %s", s.Entry.Index, s.Entry.GID, s.Reason)
	}
	return b.String()
}
