//go:build linux && cgo

package bench

import (
	"fmt"
	"net/netip"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// gidFamily is "IPv4" for a GID that maps an IPv4 address, else "IPv6".
func gidFamily(g ibverbs.GID) string {
	if netip.AddrFrom16(g).Is4In6() {
		return "IPv4"
	}
	return "IPv6"
}

// gidMismatch says why a RoCE QP on this side's GID local cannot reach
// the peer's QP on remote's GID, or returns nil: the two GIDs are of
// different IP families (an IPv4-mapped GID and an IPv6 one), or of
// different RoCE versions where both sides know theirs. Modifying the
// QP to RTR would fail with only EINVAL; perftest says "Found
// Incompatibility issue with GID types". Both sides see both GIDs in the
// Setup swap, so each finds the same mismatch before its QPs are
// touched: a *checkError, which each side reports once.
func gidMismatch(local ibverbs.GIDEntry, remote ibverbs.Endpoint) error {
	if local.GID.IsZero() || remote.GID.IsZero() {
		return nil
	}
	lf, rf := gidFamily(local.GID), gidFamily(remote.GID)
	roce := func(t ibverbs.GIDType) bool { return t == ibverbs.GIDTypeRoCEv1 || t == ibverbs.GIDTypeRoCEv2 }
	typesDiffer := roce(local.Type) && roce(remote.GIDType) && local.Type != remote.GIDType
	if lf == rf && !typesDiffer {
		return nil
	}
	what := "IP family"
	if lf == rf {
		what = "RoCE version"
	}
	return &checkError{code: exchange.CodeGIDMismatch, msg: fmt.Sprintf("incompatible GIDs: this side's is index %d, %s (%s, %s), the peer's index %d, %s (%s, %s): "+
		"both sides need GIDs of one %s; choose them with -x (each device's GID table is in `gorperf devices`), "+
		"or leave -x out on both sides and give --gid-family 4 or 6",
		local.Index, local.GID.Addr(), local.Type, lf, remote.GIDIndex, remote.GID.Addr(), remote.GIDType, rf, what)}
}
