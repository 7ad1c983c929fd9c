package ibverbs

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	case 0:
	default:
		p = append(p, "family "+strconv.Itoa(r.Family)+" (not 4 or 6)")
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
		if r.AllowLinkLocal {
			return "any RoCE v2 GID (link-local too), IPv4 preferred"
		}
		return "any routable RoCE v2 GID, IPv4 preferred"
	}
	if r.AllowLinkLocal {
		p = append(p, "link-local allowed")
	}
	return "RoCE v2 GID, " + strings.Join(p, ", ")
}

// check refuses a rule SelectGID cannot apply: a Family other than 0, 4
// and 6.
func (r GIDRule) check() error {
	if r.Family != 0 && r.Family != 4 && r.Family != 6 {
		return fmt.Errorf("ibverbs: GIDRule.Family %d: want 4 (IPv4), 6 (IPv6) or 0 (either): %w", r.Family, syscall.EINVAL)
	}
	return nil
}

// GIDChoice is the outcome of SelectGID: the entry chosen, why, and why
// each other entry was passed over.
type GIDChoice struct {
	Entry   GIDEntry     // the entry chosen
	Reason  string       // why, in words ("first routable IPv4 RoCE v2 entry")
	Skipped []SkippedGID // every other entry of the table, in table order
	// Tied holds the other candidates that ranked as Entry did and lost
	// only for their higher index, in table order; Reason names them.
	// The kernel puts a new address's GIDs in the lowest free slots,
	// reusing those an address removed left, so index order is not the
	// order the addresses were added in, and another host may pick its
	// entry of another subnet or VLAN: a rule naming the netdev, subnet
	// or address decides.
	Tied []GIDEntry
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
// entries that pass, a routable one comes before a link-local one (which
// only AllowLinkLocal lets pass, or an Addr naming it), then an IPv4-mapped
// GID before an IPv6 one unless the rule names a family, then the lowest
// index wins. Two hosts with the same addressing plan thus pick the same
// kind of entry whatever order their drivers fill the table in; where
// entries of the same kind tie, the index decides, and the choice's Reason
// and Tied say so. An entry past MaxGIDIndex never passes. It fails with a
// *NoGIDError when nothing passes (which, where Netdev is no entry's,
// says whether this host has a netdev of that name), and with an
// *AmbiguousGIDError when Addr
// names a link-local address, with no zone or Netdev, that more than one
// netdev has. A rule whose Family is not 0, 4 or 6 fails with an error
// matching syscall.EINVAL.
func SelectGID(table []GIDEntry, rule GIDRule) (GIDChoice, error) {
	if err := rule.check(); err != nil {
		return GIDChoice{}, err
	}
	// A RoCE v1 entry's twin is the v2 entry of the same GID on the same
	// netdev: a VLAN netdev shares its parent's MAC, so its link-local
	// GID too.
	twins := map[gidKey]int{}
	for _, e := range table {
		k := gidKey{e.GID, e.Ifindex}
		if _, ok := twins[k]; e.Type == GIDTypeRoCEv2 && !ok {
			twins[k] = e.Index
		}
	}
	why := make([]string, len(table))
	miss := make([]gidMiss, len(table))
	best := -1
	var cands []GIDEntry
	for i, e := range table {
		if why[i], miss[i] = rejectGID(e, rule, twins); why[i] != "" {
			continue
		}
		cands = append(cands, e)
		if best < 0 || gidRank(rule, e) < gidRank(rule, table[best]) ||
			gidRank(rule, e) == gidRank(rule, table[best]) && e.Index < table[best].Index {
			best = i
		}
	}
	var c GIDChoice
	if best < 0 {
		for i, e := range table {
			c.Skipped = append(c.Skipped, SkippedGID{e, why[i]})
		}
		return c, newNoGIDError(table, rule, c.Skipped, miss, twins)
	}
	if a := rule.Addr; len(cands) > 1 && a.IsValid() && a.Zone() == "" && rule.Netdev == "" && a.Unmap().IsLinkLocalUnicast() {
		return GIDChoice{}, &AmbiguousGIDError{Rule: rule, Entries: cands}
	}
	c.Entry = table[best]
	for i, e := range table {
		if i == best {
			continue
		}
		r := why[i]
		if r == "" {
			r = rankedBelow(rule, e, c.Entry)
			if gidRank(rule, e) == gidRank(rule, c.Entry) {
				c.Tied = append(c.Tied, e)
			}
		}
		c.Skipped = append(c.Skipped, SkippedGID{e, r})
	}
	c.Reason = chosenReason(rule, c.Entry, c.Tied)
	return c, nil
}

// gidKey identifies a GID on a netdev.
type gidKey struct {
	gid     GID
	ifindex int
}

// gidRank ranks a candidate by kind, lower first: routable before
// link-local, then an address in its preferred lifetime before a
// deprecated one, then, when the rule names no family, IPv4 before IPv6.
func gidRank(r GIDRule, e GIDEntry) int {
	k := 0
	if e.GID.IsLinkLocal() {
		k += 4
	}
	if e.AddrFlags&AddrDeprecated != 0 {
		k += 2
	}
	if r.Family == 0 && !e.GID.Addr().Is4() {
		k++
	}
	return k
}

// rankedBelow says why candidate e lost to the chosen entry c.
func rankedBelow(r GIDRule, e, c GIDEntry) string {
	switch {
	case e.GID.IsLinkLocal() && !c.GID.IsLinkLocal():
		return fmt.Sprintf("link-local; index %d is routable, which is preferred", c.Index)
	case e.AddrFlags&AddrDeprecated != 0 && c.AddrFlags&AddrDeprecated == 0:
		return fmt.Sprintf("%s; index %d is not, which is preferred", deprecatedWhy, c.Index)
	case gidRank(r, e) > gidRank(r, c):
		return fmt.Sprintf("IPv6; index %d is IPv4, which is preferred", c.Index)
	}
	return fmt.Sprintf("also usable, but index %d comes first", c.Index)
}

// chosenReason says why e was chosen by r over the rest of the table,
// naming the candidates tied with it.
func chosenReason(r GIDRule, e GIDEntry, tied []GIDEntry) string {
	fam := "IPv4"
	if !e.GID.Addr().Is4() {
		fam = "IPv6"
	}
	kind := "routable"
	if e.GID.IsLinkLocal() {
		kind = "link-local"
	}
	bare := r
	bare.AllowLinkLocal = false
	var s string
	switch {
	case bare == GIDRule{} && kind == "link-local":
		s = "first link-local " + fam + " RoCE v2 entry, none routable"
	case bare == GIDRule{}:
		s = "first routable " + fam + " RoCE v2 entry"
	default:
		// Words for what the ranking, not the rule, decided.
		var w []string
		if r.AllowLinkLocal && !r.Addr.IsValid() {
			w = append(w, kind)
		}
		if r.Family == 0 && !r.Addr.IsValid() {
			w = append(w, fam)
		}
		s = "first " + strings.Join(append(w, "entry matching "+r.String()), " ")
	}
	if e.AddrFlags&AddrDeprecated != 0 {
		s += ", " + deprecatedWhy + ": no other entry passes"
	}
	if len(tied) == 0 {
		return s
	}
	var also []string
	for i, t := range tied {
		if i == 3 {
			also = append(also, fmt.Sprintf("and %d more", len(tied)-i))
			break
		}
		d := fmt.Sprintf("index %d: %s", t.Index, t.IP())
		if t.Netdev != "" {
			d += " on " + t.Netdev
		}
		also = append(also, d)
	}
	return fmt.Sprintf("%s, 1 of %d (also %s)", s, len(tied)+1, strings.Join(also, ", "))
}

// gidMiss is the check of a GIDRule that an entry failed, in the order
// rejectGID makes them: an entry that fails a later check came closer to
// passing, so its reason tells more (an index past 255 more than an
// address other than the one named).
type gidMiss int

const (
	gidPasses gidMiss = iota
	missEmpty
	missV1
	missV1Twin
	missType
	missLinkLocal
	missFamily
	missAddr
	missZone
	missPrefix
	missNetdev
	missDADFailed
	missTentative
	missMappedIPv6
	missIndex
)

// rejectGID says why e fails r, and which check it failed, or "" and
// gidPasses if it passes; v2 maps a GID on a netdev to its RoCE v2
// entry's index.
func rejectGID(e GIDEntry, r GIDRule, v2 map[gidKey]int) (string, gidMiss) {
	a := e.GID.Addr()
	// The rule's address without its zone, which the zone check below
	// compares with the entry's netdev.
	want := r.Addr.WithZone("").Unmap()
	named := r.Addr.IsValid() && a == want
	switch {
	case e.GID.IsZero():
		return "empty (all-zero) entry", missEmpty
	case e.Type == GIDTypeRoCEv1:
		if i, ok := v2[gidKey{e.GID, e.Ifindex}]; ok {
			return fmt.Sprintf("RoCE v1 twin of index %d", i), missV1Twin
		}
		return "RoCE v1 (not routable over IP)", missV1
	case e.Type != GIDTypeRoCEv2:
		return e.Type.String() + ", not RoCE v2", missType
	case e.GID.IsLinkLocal() && !r.AllowLinkLocal && !named:
		if a.Is4() {
			return "link-local (169.254.0.0/16), not routable", missLinkLocal
		}
		return "link-local (fe80::/10), not routable", missLinkLocal
	case r.Family == 4 && !a.Is4():
		return "IPv6, IPv4 wanted", missFamily
	case r.Family == 6 && a.Is4():
		return "IPv4, IPv6 wanted", missFamily
	case r.Addr.IsValid() && !named:
		return "address is not " + want.String(), missAddr
	case r.Addr.Zone() != "" && !inZone(e, r.Addr.Zone()):
		if e.Netdev == "" {
			return "no netdev, zone " + r.Addr.Zone() + " wanted", missZone
		}
		return "on " + e.Netdev + ", not zone " + r.Addr.Zone(), missZone
	case r.Prefix.IsValid() && !r.Prefix.Contains(a) && !(a.Is4() && mapped4(r.Prefix) && r.Prefix.Contains(netip.AddrFrom16(a.As16()))):
		// An IPv4 GID is in an IPv4 subnet, or in an IPv4-mapped one
		// (::ffff:198.18.0.0/111), not in an IPv6 one such as ::/0.
		return "not in " + r.Prefix.String(), missPrefix
	case r.Netdev != "" && e.Netdev != r.Netdev:
		if e.Netdev == "" {
			return "no netdev, " + r.Netdev + " wanted", missNetdev
		}
		return "on " + e.Netdev + ", not " + r.Netdev, missNetdev
	case e.AddrFlags&AddrDADFailed != 0:
		return "address " + e.GID.Addr().String() + " failed duplicate address detection (dadfailed): another host on the link has it", missDADFailed
	case e.AddrFlags&AddrTentative != 0:
		return "address " + e.GID.Addr().String() + " is tentative: duplicate address detection has not finished", missTentative
	case e.MappedIPv6:
		return mappedIPv6Why(e), missMappedIPv6
	case e.Index > MaxGIDIndex:
		return fmt.Sprintf("index past %d, which the verbs' 8-bit GID index (sgid_index) cannot name", MaxGIDIndex), missIndex
	}
	return "", gidPasses
}

// deprecatedWhy is why a deprecated address ranks below others.
const deprecatedWhy = "deprecated (preferred lifetime 0)"

// mappedIPv6Why says why e, an IPv4-mapped GID of an IPv6 address, is
// rejected.
func mappedIPv6Why(e GIDEntry) string {
	on := ""
	if e.Netdev != "" {
		on = " on " + e.Netdev
	}
	return fmt.Sprintf("IPv4-mapped GID of the IPv6 address %s%s, which the kernel routes neither as IPv4 nor as IPv6 (add %s as an IPv4 address instead)",
		netip.AddrFrom16(e.GID), on, e.GID.Addr())
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
	// LinkLocal holds the indexes of the entries, in table order, that
	// failed the rule only for being link-local: the rule with
	// AllowLinkLocal takes one, and so does naming its index or address.
	LinkLocal []int
	// miss is the check each of Skipped failed, as rejectGID made them;
	// nil in an error made by hand.
	miss []gidMiss
	// absent says that no entry is on Rule.Netdev; then netdevs are the
	// netdevs the entries are on, in table order, and noNetdev says that
	// this host has no netdev of Rule.Netdev's name.
	absent   bool
	netdevs  []string
	noNetdev bool
}

// newNoGIDError is SelectGID's *NoGIDError: nothing in table passed rule,
// and skipped and miss say why; v2 maps a GID on a netdev to its RoCE v2
// entry's index, as rejectGID takes it.
func newNoGIDError(table []GIDEntry, rule GIDRule, skipped []SkippedGID, miss []gidMiss, v2 map[gidKey]int) *NoGIDError {
	e := &NoGIDError{Rule: rule, Skipped: skipped, miss: miss}
	allow := rule
	allow.AllowLinkLocal = true
	for i, g := range table {
		if miss[i] == missLinkLocal {
			if _, m := rejectGID(g, allow, v2); m == gidPasses {
				e.LinkLocal = append(e.LinkLocal, g.Index)
			}
		}
	}
	if rule.Netdev == "" || len(table) == 0 || slices.ContainsFunc(table, func(g GIDEntry) bool { return g.Netdev == rule.Netdev }) {
		return e
	}
	e.absent = true
	for _, g := range table {
		if g.Netdev != "" && !slices.Contains(e.netdevs, g.Netdev) {
			e.netdevs = append(e.netdevs, g.Netdev)
		}
	}
	e.noNetdev = !netdevExists(rule.Netdev)
	return e
}

// netdevExists reports whether this host has a network device of that
// name, or cannot tell; tests replace it.
var netdevExists = func(name string) bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return true
	}
	return slices.ContainsFunc(ifs, func(i net.Interface) bool { return i.Name == name })
}

// noGIDErrorMax is as long as NoGIDError's text grows, unless its first
// group of reasons is longer: past it, the rest are counted, not written.
const noGIDErrorMax = 1000

// Error returns the rule and why the table's entries failed it, or, for
// an empty table, a hint at why it may be empty. Entries are grouped by
// reason, and the groups ordered by how close their entries came to
// passing: an entry past index 255 or with a tentative address before
// one whose address is not the one named, and that before an empty entry
// or a RoCE v1 one. A group of up to three entries names each with its
// reason; a larger one names its first three and counts the rest, with
// the reason once ("index 2 ::ffff:198.18.0.1, index 4 ::ffff:198.18.0.2,
// index 6 ::ffff:198.18.0.3 and 240 more: address is not 198.18.0.9").
// The text stops short of 1000 bytes (unless its first group is longer),
// counting the entries it leaves out; Skipped has every entry and its
// reason. Where no entry is on the rule's Netdev, the text says so first,
// with up to three of the netdevs the entries are on, or that the host
// has no netdev of that name at all; where LinkLocal has entries, it ends
// saying that naming the index of one takes it.
func (e *NoGIDError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no GID matches %s", e.Rule)
	if len(e.Skipped) == 0 {
		b.WriteString(" (the GID table is empty: is the port's netdev up with an IP address?)")
	}
	if e.absent {
		on := "the port has no GID on " + e.Rule.Netdev + " (its GIDs are on "
		if e.noNetdev {
			on = "there is no netdev " + e.Rule.Netdev + " (the port's GIDs are on "
		}
		nds := "no netdev"
		if len(e.netdevs) > 0 {
			nds = strings.Join(e.netdevs[:min(len(e.netdevs), 3)], ", ")
		}
		if n := len(e.netdevs) - 3; n > 0 {
			nds += " and " + strconv.Itoa(n) + " more"
		}
		fmt.Fprintf(&b, ": %s%s)", on, nds)
	}
	shown := 0
	for _, g := range e.groups() {
		p := g.String()
		if shown > 0 && b.Len()+len(p)+len(notShown(len(e.Skipped)-shown-len(g.entries))) > noGIDErrorMax {
			break
		}
		b.WriteString(p)
		shown += len(g.entries)
	}
	b.WriteString(notShown(len(e.Skipped) - shown))
	if len(e.LinkLocal) > 0 {
		fmt.Fprintf(&b, "; to use a link-local GID anyway, name its index (%s)", indexesOr(e.LinkLocal))
	}
	return b.String()
}

// indexesOr writes indexes as "0", "0 or 4", "0, 4 or 6", or past three
// "0, 4, 6 or one of 2 more".
func indexesOr(indexes []int) string {
	var s []string
	for _, i := range indexes[:min(len(indexes), 3)] {
		s = append(s, strconv.Itoa(i))
	}
	if n := len(indexes) - 3; n > 0 {
		return strings.Join(s, ", ") + " or one of " + strconv.Itoa(n) + " more"
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// notShown is what NoGIDError's text ends with when it leaves n entries
// out.
func notShown(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 more entry not shown"
	}
	return "; " + strconv.Itoa(n) + " more entries not shown"
}

// skippedGroup is entries of a NoGIDError that failed the same check for
// the same reason.
type skippedGroup struct {
	miss    gidMiss
	reason  string
	entries []SkippedGID
}

// groups groups e.Skipped by reason, in the order Error writes them: the
// latest check failed first, then by lowest index. RoCE v1 twins make one
// group whatever entry each is the twin of (its reason, for more than
// three, "RoCE v1 twins of RoCE v2 entries").
func (e *NoGIDError) groups() []*skippedGroup {
	type key struct {
		miss   gidMiss
		reason string
	}
	var gs []*skippedGroup
	by := map[key]*skippedGroup{}
	for i, s := range e.Skipped {
		k := key{reason: s.Reason}
		if len(e.miss) == len(e.Skipped) {
			k.miss = e.miss[i]
		}
		if k.miss == missV1Twin {
			k.reason = "RoCE v1 twins of RoCE v2 entries"
		}
		g := by[k]
		if g == nil {
			g = &skippedGroup{miss: k.miss, reason: k.reason}
			by[k] = g
			gs = append(gs, g)
		}
		g.entries = append(g.entries, s)
	}
	slices.SortStableFunc(gs, func(a, b *skippedGroup) int { return cmp.Compare(b.miss, a.miss) })
	return gs
}

// String writes the group as Error does, beginning "; ": up to three
// entries one by one, each with its reason, as Explain does; more as the
// first three and a count, with the group's reason once.
func (g *skippedGroup) String() string {
	var b strings.Builder
	if len(g.entries) <= 3 {
		for _, s := range g.entries {
			fmt.Fprintf(&b, "; index %d %s: %s", s.Entry.Index, s.Entry.GID, s.Reason)
		}
		return b.String()
	}
	for i, s := range g.entries[:3] {
		sep := ", "
		if i == 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%sindex %d %s", sep, s.Entry.Index, s.Entry.GID)
	}
	fmt.Fprintf(&b, " and %d more: %s", len(g.entries)-3, g.reason)
	return b.String()
}

// AmbiguousGIDError says that a GIDRule's Addr, a link-local address with
// no zone, names GIDs of more than one netdev: each netdev has its own
// link, so the address alone does not say which to use.
type AmbiguousGIDError struct {
	Rule    GIDRule    // the rule
	Entries []GIDEntry // the entries that pass it, in table order
}

// Error names the netdevs that have the address, and how to choose one.
func (e *AmbiguousGIDError) Error() string {
	var on []string
	for _, c := range e.Entries {
		nd := c.Netdev
		if nd == "" {
			nd = "ifindex " + strconv.Itoa(c.Ifindex)
		}
		on = append(on, fmt.Sprintf("index %d on %s", c.Index, nd))
	}
	a := e.Rule.Addr
	hint := "name the netdev to say which"
	if a.Unmap().Is6() && len(e.Entries) > 0 && e.Entries[0].Netdev != "" {
		hint = "add a zone (" + a.WithZone(e.Entries[0].Netdev).String() + ") or name the netdev to say which"
	}
	return fmt.Sprintf("link-local address %s is on more than one netdev (%s): %s", a, strings.Join(on, ", "), hint)
}
