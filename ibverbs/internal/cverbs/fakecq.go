//go:build linux && cgo

package cverbs

// #include <stdlib.h>
// #include "fakecq.h"
import "C"

import "unsafe"

// FakeCQEx is a struct ibv_cq_ex in C memory whose poll iterator is
// scripted, for the tests of what PollEx makes of a provider's answers:
// its start_poll (and next_poll) give Good successful completions, with
// wr_ids 1, 2, ..., and then return RC every time. A test helper; Free it.
type FakeCQEx struct{ f *C.struct_cv_fake_cq }

// NewFakeCQEx makes a FakeCQEx that gives good completions and then
// returns rc: ENOENT for an empty CQ, or a provider's failure (mlx5's
// CQ_POLL_ERR is -2).
func NewFakeCQEx(good, rc int) *FakeCQEx {
	f := C.cv_fake_cq_new(C.int(good), C.int(rc))
	if f == nil {
		panic("cverbs: out of memory")
	}
	return &FakeCQEx{f: f}
}

// Ptr returns the struct ibv_cq_ex.
func (f *FakeCQEx) Ptr() unsafe.Pointer { return unsafe.Pointer(f.f) }

// Taken returns how many completions start_poll and next_poll have given.
func (f *FakeCQEx) Taken() int { return int(f.f.taken) }

// Ends returns how many times end_poll was called.
func (f *FakeCQEx) Ends() int { return int(f.f.ends) }

// Free frees the C memory.
func (f *FakeCQEx) Free() { C.cv_fake_cq_free(f.f) }

// FakeFailedCQ is a struct ibv_cq in C memory whose ibv_poll_cq gives one
// failed completion, with its wr_id, status, vendor error and QP number
// and every other field of the struct ibv_wc 0xa5 bytes, as a provider may
// leave them; then none. A test helper; Free it.
type FakeFailedCQ struct{ f *C.struct_cv_fake_failed_cq }

// NewFakeFailedCQ makes a FakeFailedCQ whose completion has the given
// wr_id, status, vendor_err and qp_num.
func NewFakeFailedCQ(wrID uint64, status int, vendorErr, qpn uint32) *FakeFailedCQ {
	f := C.cv_fake_failed_cq_new(C.uint64_t(wrID), C.int(status), C.uint32_t(vendorErr), C.uint32_t(qpn))
	if f == nil {
		panic("cverbs: out of memory")
	}
	return &FakeFailedCQ{f: f}
}

// Ptr returns the struct ibv_cq.
func (f *FakeFailedCQ) Ptr() unsafe.Pointer { return unsafe.Pointer(f.f) }

// Free frees the C memory.
func (f *FakeFailedCQ) Free() { C.free(unsafe.Pointer(f.f)) }
