//go:build linux && cgo

package cverbs

// #include <infiniband/verbs.h>
import "C"

import (
	"syscall"
	"unsafe"
)

// CreateCQ makes a CQ of cqe entries with ibv_create_cq on the struct
// ibv_context ctx and the struct ibv_comp_channel ch, behind package
// ibverbs' back: for a test that needs the verbs to hold an object the
// binding does not count. Destroy it with DestroyCQ.
func CreateCQ(ctx, ch unsafe.Pointer, cqe int) (unsafe.Pointer, error) {
	cq, err := C.ibv_create_cq((*C.struct_ibv_context)(ctx), C.int(cqe), nil, (*C.struct_ibv_comp_channel)(ch), 0)
	if cq == nil {
		return nil, err
	}
	return unsafe.Pointer(cq), nil
}

// DestroyCQ destroys a CQ that CreateCQ made (ibv_destroy_cq).
func DestroyCQ(cq unsafe.Pointer) error {
	if rc := C.ibv_destroy_cq((*C.struct_ibv_cq)(cq)); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}
