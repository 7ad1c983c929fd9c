package ibverbs

import "sync/atomic"

// refs counts an object's live children. A parent refuses to Close while it
// has any: closing in the wrong order is an error, never a crash.
type refs struct{ n atomic.Int64 }

func (r *refs) add()         { r.n.Add(1) }
func (r *refs) done()        { r.n.Add(-1) }
func (r *refs) count() int64 { return r.n.Load() }
