//go:build linux && cgo

package ibverbs

// #include "shim.h"
// #include <stdlib.h>
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// DeviceInfo describes an RDMA device from the device list
// (ibv_get_device_list, ibv_get_device_name, ibv_get_device_guid).
type DeviceInfo struct {
	Name      string        // the device's name, for Open ("mlx5_0", "rxe0")
	GUID      uint64        // node GUID, in host order
	NodeType  NodeType      // a channel adapter (CA) or an RNIC, mostly
	Transport TransportType // InfiniBand (also for RoCE) or iWARP
	// NUMANode is the NUMA node the device is attached to, from
	// device/numa_node under its sysfs directory (ibdev_path); -1 where
	// it names none, as for a software device such as rxe.
	NUMANode int
	// Index is the kernel's index of the device (ibv_get_device_index),
	// by which RDMA netlink and the rdma tool number it (`rdma dev`
	// prints "INDEX: NAME: ..."); -1 where the kernel does not say.
	Index int
}

// GUIDString formats the node GUID as ibv_devices does.
func (d DeviceInfo) GUIDString() string { return fmt.Sprintf("%016x", d.GUID) }

// deviceList calls ibv_get_device_list. libibverbs fails it with ENOSYS
// when the kernel has no RDMA user-space interface at all (no ib_uverbs,
// so no /sys/class/infiniband_verbs): a host with no devices, which
// deviceList reports as an empty list. The list is freed with
// ibv_free_device_list unless it is empty.
func deviceList() ([]*C.struct_ibv_device, **C.struct_ibv_device, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if e := errnoOf("ibv_get_device_list", err); !errors.Is(e, syscall.ENOSYS) {
			return nil, nil, e
		}
		return nil, nil, nil
	}
	return unsafe.Slice(list, int(n)), list, nil
}

// Devices lists the RDMA devices on this host (ibv_get_device_list, with
// ibv_get_device_name, ibv_get_device_guid and ibv_get_device_index for
// each; the list is freed with ibv_free_device_list). An empty list, a
// kernel without RDMA included, is not an error.
func Devices() ([]DeviceInfo, error) {
	devs, list, err := deviceList()
	if list == nil {
		return nil, err
	}
	defer C.ibv_free_device_list(list)
	out := make([]DeviceInfo, 0, len(devs))
	for _, d := range devs {
		out = append(out, DeviceInfo{
			Name:      C.GoString(C.ibv_get_device_name(d)),
			GUID:      be64(uint64(C.ibv_get_device_guid(d))),
			NodeType:  NodeType(d.node_type),
			Transport: TransportType(d.transport_type),
			NUMANode:  numaNode(C.GoString(&d.ibdev_path[0])),
			Index:     int(C.ibv_get_device_index(d)),
		})
	}
	return out, nil
}

// numaNode reads the NUMA node of the device whose sysfs directory is
// dir, or -1.
func numaNode(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "device", "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// Open opens the device with the given name, or the first device when name
// is "" (ibv_get_device_list, ibv_get_device_name, ibv_open_device, then
// ibv_query_device for its port count, closing it again with
// ibv_close_device if that fails; ibv_free_device_list). An unknown name
// fails with an error that lists the devices there are and matches
// syscall.ENODEV.
func Open(name string) (*Context, error) {
	devs, list, err := deviceList()
	if err != nil {
		return nil, err
	}
	if list != nil {
		defer C.ibv_free_device_list(list)
	}
	var names []string
	for _, d := range devs {
		dn := C.GoString(C.ibv_get_device_name(d))
		names = append(names, dn)
		if name != "" && dn != name {
			continue
		}
		c, err := C.ibv_open_device(d)
		if c == nil {
			return nil, fmt.Errorf("open %s: %w", dn, errnoOf("ibv_open_device", err))
		}
		var a C.struct_ibv_device_attr
		if rc := C.ibv_query_device(c, &a); rc != 0 {
			C.ibv_close_device(c)
			return nil, fmt.Errorf("open %s: %w", dn, verbError("ibv_query_device", int(rc)))
		}
		ctx := &Context{c: c, name: dn, tr: TransportType(c.device.transport_type), ports: int(a.phys_port_cnt), vectors: int(c.num_comp_vectors),
			dev: attachDev(c)}
		ctx.use.Open()
		return ctx, nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("ibverbs: no RDMA devices found (is a driver loaded, or rxe set up? see `rdma link`): %w",
			os.NewSyscallError("ibv_get_device_list", syscall.ENODEV))
	}
	return nil, fmt.Errorf("ibverbs: no RDMA device named %q (devices: %s): %w", name,
		strings.Join(names, ", "), os.NewSyscallError("ibv_open_device", syscall.ENODEV))
}

func be64(v uint64) uint64 {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = v
	var r uint64
	for _, x := range b {
		r = r<<8 | uint64(x)
	}
	return r
}
