//go:build linux

package ibverbs

import "github.com/gorperf/gorperf/internal/inuse"

// inUse guards an object's C handle against the object's Close (see
// package inuse, which rdmacm's objects share): each method that hands
// the handle to C enters before and leaves after, and Close, once begun,
// turns the methods that enter after it away (they return ErrClosed) and
// waits for those under way to leave before it destroys the object.
type inUse = inuse.Guard
