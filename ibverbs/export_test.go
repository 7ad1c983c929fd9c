//go:build linux && cgo

package ibverbs

import "unsafe"

// WRBytes returns request i of the batch as the provider reads it.
func (b *SendBatch) WRBytes(i int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&b.wrs[i])), unsafe.Sizeof(b.wrs[i]))
}

// CQOverEx returns a CQ handle over the struct ibv_cq_ex at ex, made by
// no verb, for PollEx to read: a test's fake poll iterator. It must not
// be closed.
func CQOverEx(ex unsafe.Pointer) *CQ {
	cq := &CQ{}
	*(*unsafe.Pointer)(unsafe.Pointer(&cq.c)) = ex // struct ibv_cq_ex starts as struct ibv_cq does
	*(*unsafe.Pointer)(unsafe.Pointer(&cq.ex)) = ex
	return cq
}

// CQOver returns a CQ handle over the struct ibv_cq at raw, made by no
// verb, for Poll to read: a test's fake provider. It must not be closed.
func CQOver(raw unsafe.Pointer) *CQ {
	cq := &CQ{}
	*(*unsafe.Pointer)(unsafe.Pointer(&cq.c)) = raw
	return cq
}

// ChannelRaw returns the channel's struct ibv_comp_channel.
func ChannelRaw(ch *CompChannel) unsafe.Pointer { return unsafe.Pointer(ch.c) }
