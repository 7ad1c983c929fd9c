//go:build linux && cgo

package ibverbs

import "unsafe"

// WRBytes returns request i of the batch as the provider reads it.
func (b *SendBatch) WRBytes(i int) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&b.wrs[i])), unsafe.Sizeof(b.wrs[i]))
}
