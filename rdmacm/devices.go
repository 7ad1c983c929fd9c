//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
)

// Devices returns librdmacm's open devices (rdma_get_devices,
// rdma_free_devices): the contexts its IDs bind to. A PD or CQ made on one
// of them can be shared by many connections (Config.PD, Config.SendCQ).
// The contexts are borrowed: librdmacm keeps them open while it is loaded,
// and closing one ends only the handle. Close those you do not keep: the
// handles on a device share its async event stream (Context.Events), which
// stays open while any is.
func Devices() ([]*ibverbs.Context, error) {
	var n C.int
	list, err := C.rdma_get_devices(&n)
	if list == nil {
		return nil, cmError("rdma_get_devices", err)
	}
	defer C.rdma_free_devices(list)
	var out []*ibverbs.Context
	for _, c := range unsafe.Slice(list, int(n)) {
		ctx, err := ibverbs.WrapContext(unsafe.Pointer(c))
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, ctx)
	}
	return out, nil
}

// Device returns librdmacm's context for the named device, as Devices does
// (rdma_get_devices, rdma_free_devices), closing the others' handles. An
// unknown name fails with an *OpError whose Op is "device", matching
// syscall.ENODEV.
func Device(name string) (*ibverbs.Context, error) {
	devs, err := Devices()
	if err != nil {
		return nil, err
	}
	for i, d := range devs {
		if d.Name() == name {
			closeAll(devs[:i])
			closeAll(devs[i+1:])
			return d, nil
		}
	}
	closeAll(devs)
	return nil, &OpError{Op: "device", Addr: name, Err: errNoDevice}
}

// closeAll closes handles not handed out: an open handle keeps its
// device's shared event loop running (ibverbs.WrapContext).
func closeAll(ctxs []*ibverbs.Context) {
	for _, c := range ctxs {
		c.Close()
	}
}

// allIWARP reports whether there are devices (rdma_get_devices) and all
// of them are iWARP: whether private data may take iWARP's limits on an
// ID bound to no device.
func allIWARP() bool {
	var n C.int
	list := C.rdma_get_devices(&n)
	if list == nil {
		return false
	}
	defer C.rdma_free_devices(list)
	for _, c := range unsafe.Slice(list, int(n)) {
		if c.device.transport_type != C.IBV_TRANSPORT_IWARP {
			return false
		}
	}
	return n > 0
}
