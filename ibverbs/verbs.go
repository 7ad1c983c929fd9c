//go:build linux && cgo

package ibverbs

// #cgo pkg-config: libibverbs
// #cgo CFLAGS: -O2 -Wall
// #cgo noescape gv_poll_cq
// #cgo noescape gv_channel_wait
// #cgo nocallback gv_channel_wait
// #cgo nocallback gv_cq_event_done
// #cgo nocallback gv_poll_cq
// #cgo noescape gv_poll_cq_ex
// #cgo nocallback gv_poll_cq_ex
// #cgo noescape gv_post_send
// #cgo nocallback gv_post_send
// #cgo noescape gv_wr_post
// #cgo nocallback gv_wr_post
// #cgo noescape gv_post_recv
// #cgo noescape gv_post_srq_recv
// #cgo nocallback gv_post_recv
// #cgo nocallback gv_post_srq_recv
// #cgo nocallback gv_req_notify_cq
// #cgo noescape gv_post_poll
// #cgo nocallback gv_post_poll
// #include "shim.h"
import "C"

import "unsafe"

// handle passes a pointer to C memory to the shim as a uintptr_t, which
// cgo does not check on each call as it does a pointer to a C struct that
// holds pointers (see shim.h). Only for C memory: Go memory must be passed
// as a pointer.
func handle[T any](p *T) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(p))) }
