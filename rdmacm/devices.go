//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"net/netip"
	"slices"
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
//
// rdma_get_devices opens every RDMA device of the host, and librdmacm
// keeps them all open until the process exits. A driver that cannot take
// a device from a process that has it open (soft-RoCE's rxe and siw have
// no disassociate_ucontext; mlx5 and other hardware drivers do) then
// waits for the process, so `rdma link delete` of any such device blocks
// until it exits. Device opens only the device it names, where it can.
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

// Device returns librdmacm's context for the named device: the one its IDs
// on that device use, borrowed as those of Devices are. It has librdmacm
// open that device alone: it binds an ID to each IP address of the
// device's GID tables in turn (ibv_open_device, ibv_query_gid_table and
// ibv_close_device on a context of its own, then rdma_create_id,
// rdma_bind_addr, rdma_destroy_id) until one is on the device, and takes
// the ID's context. librdmacm keeps that device open while it is loaded
// (see Devices). Where no address binds to the device (an InfiniBand port
// without an IPoIB address, a RoCE netdev without one), it takes the
// context from Devices' list, closing the others' handles, and librdmacm
// has then opened every device. An unknown name (ibv_get_device_list) fails
// with an *OpError whose Op is "device", matching syscall.ENODEV, and
// opens nothing.
func Device(name string) (*ibverbs.Context, error) {
	if !deviceNamed(name) {
		// Before Devices' list, which would open every device.
		return nil, &OpError{Op: "device", Addr: name, Err: errNoDevice}
	}
	if ctx := boundDevice(name); ctx != nil {
		return ctx, nil
	}
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

// deviceNamed reports whether libibverbs lists a device of that name
// (ibv_get_device_list, which opens none), or cannot list them.
func deviceNamed(name string) bool {
	infos, err := ibverbs.Devices()
	if err != nil {
		return true // Devices' list says why
	}
	return slices.ContainsFunc(infos, func(d ibverbs.DeviceInfo) bool { return d.Name == name })
}

// boundDevice returns librdmacm's context for the named device by binding
// an ID to one of the device's addresses, nil where none binds to it.
func boundDevice(name string) *ibverbs.Context {
	if name == "" {
		return nil
	}
	ch, err := CreateEventChannel()
	if err != nil {
		return nil
	}
	defer ch.Close()
	for _, a := range deviceAddrs(name) {
		if ctx := bindContext(ch, a, name); ctx != nil {
			return ctx
		}
	}
	return nil
}

// deviceAddrs returns the IP addresses of the named device's GID tables,
// a link-local one with its netdev as the zone, read through a context
// of our own, which it closes. Entries without a netdev (InfiniBand's)
// are no IP addresses and are left out.
func deviceAddrs(name string) []netip.Addr {
	own, err := ibverbs.Open(name)
	if err != nil {
		return nil
	}
	defer own.Close()
	attr, err := own.QueryDevice()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for port := 1; port <= attr.PhysPortCnt; port++ {
		tab, err := own.GIDTable(port)
		if err != nil {
			continue
		}
		for _, e := range tab {
			ip := e.IP()
			if e.Netdev == "" || e.GID.IsZero() || !ip.IsValid() {
				continue
			}
			if ip.Is6() && ip.IsLinkLocalUnicast() {
				ip = ip.WithZone(e.Netdev)
			}
			if !slices.Contains(out, ip) { // RoCE v1 and v2 entries share it
				out = append(out, ip)
			}
		}
	}
	return out
}

// bindContext binds a new ID on ch to ip and returns its context where
// that is the named device's, nil otherwise.
func bindContext(ch *EventChannel, ip netip.Addr, name string) *ibverbs.Context {
	id, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		return nil
	}
	defer id.Close()
	if id.BindAddr(netip.AddrPortFrom(ip, 0)) != nil {
		return nil
	}
	ctx, err := id.Context()
	if err != nil {
		return nil
	}
	if ctx.Name() != name {
		ctx.Close()
		return nil
	}
	return ctx
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
