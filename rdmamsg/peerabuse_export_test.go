//go:build linux && cgo

package rdmamsg

import "github.com/gorperf/gorperf/ibverbs"

// RegionSGE returns the scatter-gather entry of n bytes of r at off, for a
// test that posts on the Conn's QP behind its back (as a peer that does
// not follow the protocol would).
func RegionSGE(r *Region, off, n int) ibverbs.SGE { return r.mr.SGE(off, n) }
