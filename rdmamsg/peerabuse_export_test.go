//go:build linux && cgo

package rdmamsg

import (
	"errors"

	"github.com/gorperf/gorperf/ibverbs"
)

// RegionSGE returns the scatter-gather entry of n bytes of r at off, for a
// test that posts on the Conn's QP behind its back (as a peer that does
// not follow the protocol would).
func RegionSGE(r *Region, off, n int) ibverbs.SGE { return r.mr.SGE(off, n) }

// StopSilently moves c's QP to the error state behind its back, as a host
// that dies stops answering, for a test of how its peer finds out. c
// takes the flushes that follow for a failure of its own, as if it had
// died with its host: it does not take them for a request of the peer's
// refused here, which would fail its connection and disconnect (reset),
// telling the peer at once, as a dead host does not.
func StopSilently(c *Conn) error {
	c.mu.Lock()
	c.fail(errors.New("rdmamsg: stopped silently for a test"))
	c.mu.Unlock()
	return c.link.QP().ToError()
}
