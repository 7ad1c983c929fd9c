//go:build linux && cgo

package ibverbs

import (
	"net"
	"unsafe"
)

// WRBytes returns request i of the batch as the provider reads it.
func (b *SendBatch) WRBytes(i int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&b.wrs[i])), unsafe.Sizeof(b.wrs[i]))
}

// PollError is the error of a Poll (ex false) or PollEx (ex true, on a
// CQ that ibv_create_cq_ex made) whose C poll returned n, -errno.
func PollError(n int, ex bool) error { return pollError(n, ex) }

// PollEnd is what a poll returns, a count or -errno, when the provider
// answered rc after got completions (shim.h's gv_poll_end).
func PollEnd(got, rc int) int { return pollEnd(got, rc) }

// FillWC converts w, the bytes of a struct ibv_wc, to a WC as Poll does
// (shim.h's gv_fill_wc).
func FillWC(w []byte) WC { return fillWC(w) }

// ChannelRaw returns the channel's struct ibv_comp_channel.
func ChannelRaw(ch *CompChannel) unsafe.Pointer { return unsafe.Pointer(ch.c) }

// SetGIDTableMaxEntries sets the most entries that GIDTable reads with
// one ibv_query_gid_table call, past which it reads the port's table slot
// by slot, until the returned func restores it. Tests that call it must
// not run in parallel with others that read GID tables.
func SetGIDTableMaxEntries(n int) (restore func()) {
	old := gidTableMaxEntries
	gidTableMaxEntries = n
	return func() { gidTableMaxEntries = old }
}

// CountInterfaceListings counts the listings of the host's network
// interfaces that GIDTable and QueryGID make to name netdevs, until the
// returned restore func; the same parallelism rule holds.
func CountInterfaceListings() (count func() int, restore func()) {
	old, n := netInterfaces, 0
	netInterfaces = func() ([]net.Interface, error) { n++; return old() }
	return func() int { return n }, func() { netInterfaces = old }
}

// GIDTableMaxEntries is the most entries GIDTable reads with one
// ibv_query_gid_table call.
func GIDTableMaxEntries() int { return gidTableMaxEntries }

// QueryGIDTable calls ibv_query_gid_table with a buffer of max entries
// and returns how many it read.
func (c *Context) QueryGIDTable(max int) (int, error) {
	raw, err := c.queryGIDTable(max)
	return len(raw), err
}

// Waiting returns how many Waits and WaitExes of the CQ are asleep on its
// channel: past their polls and arm, so that a completion from then on
// comes to them as an event, or not at all.
func (cq *CQ) Waiting() int { return int(cq.waiting.Load()) }
