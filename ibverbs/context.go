//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Context is an open RDMA device (struct ibv_context).
type Context struct {
	c        *C.struct_ibv_context
	name     string
	tr       TransportType // c->device->transport_type
	ports    int
	borrowed bool // lent by another library (rdmacm): never closed by us
	kids     refs
	dev      *devState // shared by every handle on c
	vectors  int       // c's num_comp_vectors
	use      inUse     // guards c against Close

	llMu       sync.Mutex
	linkLayers map[int]LinkLayer // isEthernet's answers: a port's link layer does not change

	rdMu       sync.Mutex
	rdKnown    bool
	rdAtom     int // max_qp_rd_atom: reads and atomics a QP serves at once
	rdInitAtom int // max_qp_init_rd_atom: reads and atomics a QP may issue at once
}

// rdAtomicLimits returns the device's max_qp_rd_atom and
// max_qp_init_rd_atom. RC set-up needs them in Endpoint, ToRTR and ToRTS;
// they do not change, so the device is queried once per Context.
func (c *Context) rdAtomicLimits() (resp, init int, err error) {
	c.rdMu.Lock()
	defer c.rdMu.Unlock()
	if !c.rdKnown {
		da, err := c.QueryDevice()
		if err != nil {
			return 0, 0, err
		}
		c.rdAtom, c.rdInitAtom, c.rdKnown = da.MaxQPRdAtom, da.MaxQPInitRdAtom, true
	}
	return c.rdAtom, c.rdInitAtom, nil
}

// Name returns the device's name, e.g. "mlx5_0" or "rxe0".
func (c *Context) Name() string { return c.name }

// Transport returns the device's transport (struct ibv_device's
// transport_type, as DeviceInfo.Transport): TransportIB for InfiniBand and
// RoCE, TransportIWARP for iWARP.
func (c *Context) Transport() TransportType { return c.tr }

// Raw returns the underlying struct ibv_context pointer, for C code that
// this package does not wrap. It stays valid until Close.
func (c *Context) Raw() unsafe.Pointer { return unsafe.Pointer(c.c) }

// Close closes the device (ibv_close_device). It fails with EBUSY while PDs,
// CQs or completion channels of the context are open, and, for a Context
// from Open, while handles that WrapContext made on its device are open:
// they and their objects use the device, so close them first. Closing twice
// is a no-op. Closing a borrowed context (WrapContext) only ends this
// handle, and fails with EBUSY while objects made through it are open.
// A method of the Context under way in another goroutine (a query, an
// AllocPD) finishes before the device is closed, and one that begins once
// Close has begun returns ErrClosed.
func (c *Context) Close() error {
	c.use.Lock()
	defer c.use.Unlock()
	if c.c == nil {
		return nil
	}
	if n := c.kids.count(); n > 0 {
		return busyError("ibv_close_device", n, "object (a PD, CQ or channel)", "objects (PDs, CQs, channels)")
	}
	if others := c.dev.others(!c.borrowed); others > 0 {
		// Before the shut: methods under way and to come are not
		// turned away by a Close that cannot succeed.
		return busyError("ibv_close_device", int64(others), "other handle on the device (WrapContext)", "other handles on the device (WrapContext)")
	}
	if n := c.use.Quiesce(c.kids.count, nil); n > 0 { // made meanwhile
		return busyError("ibv_close_device", n, "object (a PD, CQ or channel)", "objects (PDs, CQs, channels)")
	}
	if others := c.dev.detach(c.c, !c.borrowed); others > 0 {
		c.use.Open()
		return busyError("ibv_close_device", int64(others), "other handle on the device (WrapContext)", "other handles on the device (WrapContext)")
	}
	if h := detachedHook.Load(); h != nil {
		(*h)(unsafe.Pointer(c.c))
	}
	if c.borrowed {
		c.c = nil
		return nil
	}
	rc := C.ibv_close_device(c.c)
	c.c = nil
	if rc != 0 {
		return verbError("ibv_close_device", int(rc))
	}
	return nil
}

// devState is what every Context handle on one struct ibv_context shares:
// the table of QPs, CQs and SRQs by C pointer, through which async and
// completion events find their objects, and the one loop that reads the
// device's async events. Handles made by WrapContext on one device share
// it, so that an object made through one is found through another (a
// librdmacm device has a handle per connection and per Devices call).
type devState struct {
	handles int // under devStates.mu

	mu     sync.Mutex
	objs   map[unsafe.Pointer]any
	events *eventLoop
}

// devStates holds the devState of each struct ibv_context with open
// handles.
var devStates = struct {
	mu sync.Mutex
	m  map[*C.struct_ibv_context]*devState
}{m: map[*C.struct_ibv_context]*devState{}}

// attachDev returns c's devState, made if c has none, and counts one more
// handle on it.
func attachDev(c *C.struct_ibv_context) *devState {
	devStates.mu.Lock()
	defer devStates.mu.Unlock()
	d := devStates.m[c]
	if d == nil {
		d = &devState{objs: map[unsafe.Pointer]any{}}
		devStates.m[c] = d
	}
	d.handles++
	return d
}

// others returns, for the owner's handle, how many other handles share
// d (WrapContext's), while which its Close fails with EBUSY; 0 for a
// borrowed one.
func (d *devState) others(owner bool) int {
	if !owner {
		return 0
	}
	devStates.mu.Lock()
	defer devStates.mu.Unlock()
	return d.handles - 1
}

// detach counts a handle on c gone. When it was the last, d's event loop,
// if any, is stopped, and then d is forgotten. The owner, the handle whose
// Close closes the device, is not let go while other handles are open:
// detach then changes nothing and returns how many there are, for the
// owner's Close to refuse, as the device must outlive them and the
// objects made through them.
func (d *devState) detach(c *C.struct_ibv_context, owner bool) (others int) {
	devStates.mu.Lock()
	defer devStates.mu.Unlock()
	if owner && d.handles > 1 {
		return d.handles - 1
	}
	d.handles--
	if d.handles > 0 {
		return 0
	}
	d.mu.Lock()
	l := d.events
	d.events = nil
	d.mu.Unlock()
	// The loop stops before c's entry goes, with devStates.mu held: a
	// WrapContext of c, which waits for it, then makes a new devState,
	// whose Events starts a loop of its own on c's async fd, only once
	// this one has stopped reading it; the two at once would each take
	// some of the events, and the old one's would be lost with its
	// channel. The loop takes d.mu (lookup), never devStates.mu, and d.mu
	// is not held here.
	if l != nil {
		l.stop()
	}
	if devStates.m[c] == d {
		delete(devStates.m, c)
	}
	return 0
}

// detachedHook, if set, runs in Context.Close once the handle has left
// its device's state, before the device is closed (for the tests).
var detachedHook atomic.Pointer[func(raw unsafe.Pointer)]

// sameContext says why what, an object made on the context of, cannot
// take part in verb on c, or returns nil. Handles that share one struct
// ibv_context (WrapContext's, rdmacm's) are one context. Two Opens of one
// device are two, each numbering its objects afresh: the kernel would take
// another context's CQ or SRQ for this one's of the same number, or refuse
// it, and a provider would mix up their memory.
func (c *Context) sameContext(verb, what string, of *Context) error {
	if of.dev == c.dev {
		return nil
	}
	return fmt.Errorf("%s: %s: %s is on another context (an Open of %s of its own), "+
		"and an object works only with the context it was made on: %w", verb, c.name, what, of.name, syscall.EINVAL)
}

func (c *Context) register(p unsafe.Pointer, obj any) {
	c.dev.mu.Lock()
	c.dev.objs[p] = obj
	c.dev.mu.Unlock()
}

func (c *Context) unregister(p unsafe.Pointer) {
	c.dev.mu.Lock()
	delete(c.dev.objs, p)
	c.dev.mu.Unlock()
}

func (c *Context) lookup(p unsafe.Pointer) any { return c.dev.lookup(p) }

// lookup returns the QP, CQ or SRQ whose C pointer is p, or nil.
func (d *devState) lookup(p unsafe.Pointer) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.objs[p]
}

// DeviceAttr holds a device's capabilities (struct ibv_device_attr_ex).
// Its fields are the C struct's of the same names in MixedCaps (FWVer is
// fw_ver, MaxQPRdAtom max_qp_rd_atom), from its orig_attr but for the last
// six, with the GUIDs in host order; see ibv_query_device(3).
type DeviceAttr struct {
	FWVer                   string
	NodeGUID, SysImageGUID  uint64
	MaxMRSize               uint64
	PageSizeCap             uint64
	VendorID, VendorPartID  uint32
	HWVer                   uint32
	MaxQP, MaxQPWR          int
	DeviceCapFlags          uint32
	MaxSGE, MaxSGERD        int
	MaxCQ, MaxCQE           int
	MaxMR, MaxPD            int
	MaxMW                   int
	MaxQPRdAtom             int
	MaxQPInitRdAtom         int
	MaxSRQ, MaxSRQWR        int
	MaxSRQSGE               int
	MaxAH                   int
	MaxPKeys                int
	AtomicCap               AtomicCap
	PhysPortCnt             int
	CompletionTimestampMask uint64 // extended attributes below; zero when the driver lacks them
	HCACoreClockKHz         uint64
	DeviceCapFlagsEx        uint64
	MaxCQModCount           int
	MaxCQModPeriodUS        int
	MaxDMSize               uint64
}

// QueryDevice returns the device's attributes (ibv_query_device_ex, falling
// back to ibv_query_device where the driver lacks the extended verb).
func (c *Context) QueryDevice() (DeviceAttr, error) {
	if !c.use.Enter() {
		return DeviceAttr{}, ErrClosed
	}
	defer c.use.Leave()
	var a C.struct_ibv_device_attr_ex
	if rc := C.gv_query_device_ex(c.c, &a); rc != 0 {
		return DeviceAttr{}, verbError("ibv_query_device_ex", int(rc))
	}
	o := &a.orig_attr
	return DeviceAttr{
		FWVer:                   C.GoString(&o.fw_ver[0]),
		NodeGUID:                be64(uint64(o.node_guid)),
		SysImageGUID:            be64(uint64(o.sys_image_guid)),
		MaxMRSize:               uint64(o.max_mr_size),
		PageSizeCap:             uint64(o.page_size_cap),
		VendorID:                uint32(o.vendor_id),
		VendorPartID:            uint32(o.vendor_part_id),
		HWVer:                   uint32(o.hw_ver),
		MaxQP:                   int(o.max_qp),
		MaxQPWR:                 int(o.max_qp_wr),
		DeviceCapFlags:          uint32(o.device_cap_flags),
		MaxSGE:                  int(o.max_sge),
		MaxSGERD:                int(o.max_sge_rd),
		MaxCQ:                   int(o.max_cq),
		MaxCQE:                  int(o.max_cqe),
		MaxMR:                   int(o.max_mr),
		MaxMW:                   int(o.max_mw),
		MaxPD:                   int(o.max_pd),
		MaxQPRdAtom:             int(o.max_qp_rd_atom),
		MaxQPInitRdAtom:         int(o.max_qp_init_rd_atom),
		MaxSRQ:                  int(o.max_srq),
		MaxSRQWR:                int(o.max_srq_wr),
		MaxSRQSGE:               int(o.max_srq_sge),
		MaxAH:                   int(o.max_ah),
		MaxPKeys:                int(o.max_pkeys),
		AtomicCap:               AtomicCap(o.atomic_cap),
		PhysPortCnt:             int(o.phys_port_cnt),
		CompletionTimestampMask: uint64(a.completion_timestamp_mask),
		HCACoreClockKHz:         uint64(a.hca_core_clock),
		DeviceCapFlagsEx:        uint64(a.device_cap_flags_ex),
		MaxCQModCount:           int(a.cq_mod_caps.max_cq_count),
		MaxCQModPeriodUS:        int(a.cq_mod_caps.max_cq_period),
		MaxDMSize:               uint64(a.max_dm_size),
	}, nil
}

// RawClock reads the device's free-running clock now
// (ibv_query_rt_values_ex with IBV_VALUES_MASK_RAW_CLOCK), in the units of
// the completion timestamps of CQInit.Timestamps: ticks of
// DeviceAttr.HCACoreClockKHz, within DeviceAttr.CompletionTimestampMask,
// so that a completion's Timestamp can be set against it. The verb
// answers a struct timespec, which this returns as tv_sec*1e9 + tv_nsec:
// the ticks where a provider puts them in tv_nsec alone, as mlx5's does.
// A device without the query, soft-RoCE among them, fails with an error
// matching errors.ErrUnsupported, as does one that answers without the
// raw clock.
func (c *Context) RawClock() (uint64, error) {
	if !c.use.Enter() {
		return 0, ErrClosed
	}
	defer c.use.Leave()
	var t C.uint64_t
	if rc := C.gv_query_raw_clock(c.c, &t); rc != 0 {
		return 0, fmt.Errorf("%s: raw clock: %w", c.name, verbError("ibv_query_rt_values_ex", int(rc)))
	}
	return uint64(t), nil
}

// PortAttr holds a port's attributes (struct ibv_port_attr). Its fields
// are the C struct's of the same names in MixedCaps (GIDTableLen is
// gid_tbl_len, SMLID sm_lid); see ibv_query_port(3).
type PortAttr struct {
	State        PortState
	MaxMTU       MTU
	ActiveMTU    MTU
	GIDTableLen  int
	PortCapFlags uint32
	MaxMsgSize   uint32
	PKeyTableLen int
	LID, SMLID   uint16
	LMC          uint8
	ActiveWidth  uint8 // IB width code: 1=1x 2=4x 4=8x 8=12x 16=2x
	ActiveSpeed  uint8 // IB speed code: 1=SDR 2=DDR 4=QDR 8=FDR10 16=FDR 32=EDR 64=HDR 128=NDR (also for XDR)
	// ActiveSpeedEx is active_speed_ex (rdma-core 49 and a kernel that
	// reports it): the speed code, 256=XDR included; 0 where unknown,
	// when ActiveSpeed holds it.
	ActiveSpeedEx uint32
	PhysState     uint8
	LinkLayer     LinkLayer
}

// Lanes returns the number of lanes ActiveWidth encodes, or 0.
func (p PortAttr) Lanes() int {
	switch p.ActiveWidth {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// Speed returns the port's speed code: ActiveSpeedEx where the library
// and kernel report it, else ActiveSpeed.
func (p PortAttr) Speed() uint32 {
	if p.ActiveSpeedEx != 0 {
		return p.ActiveSpeedEx
	}
	return uint32(p.ActiveSpeed)
}

// laneGbps is each speed code's signalling rate per lane in Gbit/s, as
// ibv_rate_to_mbps has them (IBV_RATE_800_GBPS, XDR 4x: 850000 Mbit/s).
var laneGbps = map[uint32]float64{1: 2.5, 2: 5, 4: 10, 8: 10.3125, 16: 14.0625, 32: 25.78125,
	64: 53.125, 128: 106.25, 256: 212.5}

// Gbps returns the port's signalling rate in Gbit/s from its width and
// speed codes (Speed), or 0 when the codes are unknown. Built against
// rdma-core older than 49, or run on one, an XDR port reads as NDR (the
// kernel's active_speed for it) unless the library fills ActiveSpeedEx.
func (p PortAttr) Gbps() float64 {
	return laneGbps[p.Speed()] * float64(p.Lanes())
}

// PhysStateString names PhysState as ibv_devinfo does.
func (p PortAttr) PhysStateString() string {
	return enumName([]string{"", "SLEEP", "POLLING", "DISABLED", "PORT_CONFIGURATION_TRAINING",
		"LINK_UP", "LINK_ERROR_RECOVERY", "PHY_TEST"}, int(p.PhysState), "PhysState")
}

// checkPort refuses a port the device does not have, for verb. The
// caller has entered c.
func (c *Context) checkPort(verb string, port int) error {
	if port < 1 || port > c.ports {
		return fmt.Errorf("invalid port %d: %s has ports 1-%d: %w", port, c.name, c.ports,
			os.NewSyscallError(verb, syscall.EINVAL))
	}
	return nil
}

// isEthernet says whether port's link layer is Ethernet (RoCE), where an
// address vector needs a global route; false where the port cannot be
// queried. The port is queried once per Context: a UD server that replies
// to each request through AHAttrFromWC asks for every one.
func (c *Context) isEthernet(port int) bool {
	c.llMu.Lock()
	defer c.llMu.Unlock()
	ll, ok := c.linkLayers[port]
	if !ok {
		pa, err := c.QueryPort(port)
		if err != nil {
			return false
		}
		if c.linkLayers == nil {
			c.linkLayers = map[int]LinkLayer{}
		}
		ll = pa.LinkLayer
		c.linkLayers[port] = ll
	}
	return ll == LinkLayerEthernet
}

// QueryPort returns the attributes of a port, numbered from 1
// (ibv_query_port). A port the device does not have fails with EINVAL.
func (c *Context) QueryPort(port int) (PortAttr, error) {
	if !c.use.Enter() {
		return PortAttr{}, ErrClosed
	}
	defer c.use.Leave()
	if err := c.checkPort("ibv_query_port", port); err != nil {
		return PortAttr{}, err
	}
	var a C.struct_ibv_port_attr
	var speedEx C.uint32_t
	if rc := C.gv_query_port(c.c, C.uint8_t(port), &a, &speedEx); rc != 0 {
		return PortAttr{}, fmt.Errorf("%s port %d: %w", c.name, port, verbError("ibv_query_port", int(rc)))
	}
	return PortAttr{
		State:         PortState(a.state),
		MaxMTU:        MTU(a.max_mtu),
		ActiveMTU:     MTU(a.active_mtu),
		GIDTableLen:   int(a.gid_tbl_len),
		PortCapFlags:  uint32(a.port_cap_flags),
		MaxMsgSize:    uint32(a.max_msg_sz),
		PKeyTableLen:  int(a.pkey_tbl_len),
		LID:           uint16(a.lid),
		SMLID:         uint16(a.sm_lid),
		LMC:           uint8(a.lmc),
		ActiveWidth:   uint8(a.active_width),
		ActiveSpeed:   uint8(a.active_speed),
		ActiveSpeedEx: uint32(speedEx),
		PhysState:     uint8(a.phys_state),
		LinkLayer:     LinkLayer(a.link_layer),
	}, nil
}

// GIDTable returns the valid entries of a port's GID table, with each
// entry's type and netdev (ibv_query_gid_table, which reads every port's
// table: the buffer holds all of them, ibv_query_port for each length).
// Where all the ports' tables together are too long for one call of that
// verb (its buffer's length is 16 bits: 2047 entries), it reads this
// port's slot by slot (ibv_query_gid_ex) instead. It looks the netdevs'
// names up in one listing of the host's interfaces.
func (c *Context) GIDTable(port int) ([]GIDEntry, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	if err := c.checkPort("ibv_query_port", port); err != nil {
		return nil, err
	}
	// The verb returns the valid entries of all ports and fails with
	// EINVAL once they outnumber the buffer, so size it by the sum of the
	// ports' table lengths, not by this port's (ports' tables can differ).
	max, mine := 0, 0
	for p := 1; p <= c.ports; p++ {
		pa, err := c.QueryPort(p)
		if err != nil {
			return nil, err
		}
		max += pa.GIDTableLen
		if p == port {
			mine = pa.GIDTableLen
		}
	}
	if mine == 0 {
		return nil, nil
	}
	if max > gidTableMaxEntries {
		// An mlx5 uplink with its representors' ports, some 255 entries
		// each, passes the limit.
		raw := make([]C.struct_ibv_gid_entry, mine)
		var bad C.uint32_t
		n := C.gv_query_gid_port(c.c, C.uint32_t(port), &raw[0], C.uint32_t(mine), &bad)
		if n < 0 {
			return nil, fmt.Errorf("%s port %d GID index %d: %w", c.name, port, bad, verbError("ibv_query_gid_ex", int(-n)))
		}
		return gidEntries(raw[:n], port), nil
	}
	raw, err := c.queryGIDTable(max)
	if err != nil {
		return nil, err
	}
	return gidEntries(raw, port), nil
}

// queryGIDTable returns the valid entries of every port's GID table
// (ibv_query_gid_table) with a buffer of max entries.
func (c *Context) queryGIDTable(max int) ([]C.struct_ibv_gid_entry, error) {
	if !c.use.Enter() {
		return nil, ErrClosed
	}
	defer c.use.Leave()
	raw := make([]C.struct_ibv_gid_entry, max)
	n := C.gv_query_gid_table(c.c, &raw[0], C.long(max))
	if n < 0 {
		return nil, fmt.Errorf("%s: %w", c.name, verbError("ibv_query_gid_table", int(-n)))
	}
	return raw[:n], nil
}

// gidTableMaxEntries is the most entries one ibv_query_gid_table call can
// return: rdma-core passes the buffer as an ioctl attribute whose length
// is 16 bits, and fails with EINVAL past it. A test lowers it to read a
// table slot by slot.
var gidTableMaxEntries = 0xffff / int(unsafe.Sizeof(C.struct_ibv_gid_entry{}))

// gidEntries returns the entries of raw that are port's.
func gidEntries(raw []C.struct_ibv_gid_entry, port int) []GIDEntry {
	var names ifNames
	var out []GIDEntry
	for i := range raw {
		if int(raw[i].port_num) == port {
			out = append(out, gidEntry(&raw[i], &names))
		}
	}
	return out
}

// QueryGID returns one entry of a port's GID table (ibv_query_gid_ex). An
// index beyond the table fails with EINVAL; an unused slot with ENODATA.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) {
	if !c.use.Enter() {
		return GIDEntry{}, ErrClosed
	}
	defer c.use.Leave()
	pa, err := c.QueryPort(port)
	if err != nil {
		return GIDEntry{}, err
	}
	if index < 0 || index >= pa.GIDTableLen {
		return GIDEntry{}, fmt.Errorf("GID index %d out of range: %s port %d has %d entries (0-%d): %w",
			index, c.name, port, pa.GIDTableLen, pa.GIDTableLen-1, os.NewSyscallError("ibv_query_gid_ex", syscall.EINVAL))
	}
	var r C.struct_ibv_gid_entry
	rc := C._ibv_query_gid_ex(c.c, C.uint32_t(port), C.uint32_t(index), &r, 0, C.size_t(unsafe.Sizeof(r)))
	if rc == C.int(syscall.ENODATA) {
		return GIDEntry{}, fmt.Errorf("%s port %d GID index %d is empty (the table has %d slots; the used ones are listed by `gorperf devices`): %w",
			c.name, port, index, pa.GIDTableLen, verbError("ibv_query_gid_ex", int(rc)))
	}
	if rc != 0 {
		return GIDEntry{}, fmt.Errorf("%s port %d GID index %d: %w", c.name, port, index, verbError("ibv_query_gid_ex", int(rc)))
	}
	return gidEntry(&r, &ifNames{}), nil
}

// QueryPKey returns the P_Key at index of a port's P_Key table
// (ibv_query_pkey), in host order: on RoCE the table holds the default
// key, 0xffff (full membership), at index 0. A port the device does not
// have, or an index beyond the table's PortAttr.PKeyTableLen entries
// (ibv_query_port), fails with an error matching syscall.EINVAL that says
// the table's size.
func (c *Context) QueryPKey(port, index int) (uint16, error) {
	if !c.use.Enter() {
		return 0, ErrClosed
	}
	defer c.use.Leave()
	pa, err := c.QueryPort(port)
	if err != nil {
		return 0, err
	}
	if n := pa.PKeyTableLen; index < 0 || index >= n {
		return 0, fmt.Errorf("P_Key index %d out of range: %s port %d has %d entries (0-%d): %w",
			index, c.name, port, n, n-1, os.NewSyscallError("ibv_query_pkey", syscall.EINVAL))
	}
	var k C.uint16_t
	if rc := C.gv_query_pkey(c.c, C.uint8_t(port), C.int(index), &k); rc != 0 {
		return 0, fmt.Errorf("%s port %d P_Key index %d: %w", c.name, port, index, verbError("ibv_query_pkey", int(rc)))
	}
	return uint16(k), nil
}

// PKeyIndex returns the index of the P_Key pkey, in host order, in a
// port's P_Key table (ibv_get_pkey_index), the index a QP's
// ibv_qp_attr.pkey_index or a UD request names it by: on RoCE the
// default key 0xffff is at index 0. The membership bit counts: 0x7fff
// (limited) and 0xffff (full) are two keys. A key the table lacks fails
// with an error matching syscall.ENOENT, and a port the device does not
// have with one matching syscall.EINVAL.
func (c *Context) PKeyIndex(port int, pkey uint16) (int, error) {
	const verb = "ibv_get_pkey_index"
	if !c.use.Enter() {
		return 0, ErrClosed
	}
	defer c.use.Leave()
	if port < 1 || port > c.ports {
		return 0, fmt.Errorf("invalid port %d: %s has ports 1-%d: %w", port, c.name, c.ports,
			os.NewSyscallError(verb, syscall.EINVAL))
	}
	i := C.gv_get_pkey_index(c.c, C.uint8_t(port), C.uint16_t(pkey))
	if i == -C.int(syscall.ENOENT) {
		return 0, fmt.Errorf("P_Key %#04x is not in %s port %d's P_Key table: %w", pkey, c.name, port,
			verbError(verb, int(i)))
	}
	if i < 0 {
		return 0, fmt.Errorf("%s port %d P_Key %#04x: %w", c.name, port, pkey, verbError(verb, int(i)))
	}
	return int(i), nil
}

// gidEntry converts a struct ibv_gid_entry, naming its netdev by names.
func gidEntry(r *C.struct_ibv_gid_entry, names *ifNames) GIDEntry {
	e := GIDEntry{
		Index:   int(r.gid_index),
		Port:    int(r.port_num),
		Type:    GIDType(r.gid_type),
		Ifindex: int(r.ndev_ifindex),
	}
	copy(e.GID[:], C.GoBytes(unsafe.Pointer(&r.gid), 16))
	e.Netdev = names.name(e.Ifindex)
	names.addrFlags(&e)
	return e
}

// netInterfaces lists the host's network interfaces; a test counts its
// calls.
var netInterfaces = net.Interfaces

// ifNames names network interfaces by index from one listing of them
// (net.Interfaces, a netlink dump of every link), made at the first
// lookup: net.InterfaceByIndex makes the same dump for each.
type ifNames struct {
	byIndex map[int]string
	// addrs holds each interface's addresses by index, from one
	// rtnetlink dump made at the first entry that needs it.
	addrs     map[int][]ifAddr
	addrsRead bool
}

// ifAddr is an address of a netdev with its flags. An IPv4 address is
// held unmapped, an IPv6 one (::ffff:a.b.c.d too) as 16 bytes.
type ifAddr struct {
	addr  netip.Addr
	flags AddrFlags
}

// netAddrs lists every interface's addresses by interface index; a test
// replaces it.
var netAddrs = dumpAddrs

// addrFlags sets e's AddrFlags and MappedIPv6 from the address of e's
// netdev that its GID was made from. An IPv4-mapped GID is of the IPv4
// address if the netdev has it, else of the IPv6 address ::ffff:a.b.c.d.
func (n *ifNames) addrFlags(e *GIDEntry) {
	if e.Ifindex == 0 || e.Type == GIDTypeIB {
		return
	}
	if !n.addrsRead {
		n.addrsRead = true
		n.addrs, _ = netAddrs()
	}
	raw := netip.AddrFrom16(e.GID)
	var v6 *ifAddr
	for i, a := range n.addrs[e.Ifindex] {
		if raw.Is4In6() && a.addr == raw.Unmap() {
			e.AddrFlags = a.flags
			return
		}
		if a.addr == raw && v6 == nil {
			v6 = &n.addrs[e.Ifindex][i]
		}
	}
	if v6 != nil {
		e.AddrFlags = v6.flags
		e.MappedIPv6 = raw.Is4In6()
	}
}

// dumpAddrs reads every interface's addresses and their flags with an
// rtnetlink RTM_GETADDR dump, which, unlike net.Interface.Addrs, carries
// the flags.
func dumpAddrs() (map[int][]ifAddr, error) {
	b, err := syscall.NetlinkRIB(syscall.RTM_GETADDR, syscall.AF_UNSPEC)
	if err != nil {
		return nil, os.NewSyscallError("netlink RTM_GETADDR", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil, fmt.Errorf("netlink RTM_GETADDR: %w", err)
	}
	out := map[int][]ifAddr{}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != syscall.RTM_NEWADDR || len(m.Data) < syscall.SizeofIfAddrmsg {
			continue
		}
		ifa := (*syscall.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			continue
		}
		a := ifAddr{flags: AddrFlags(ifa.Flags)}
		var local netip.Addr
		for _, at := range attrs {
			switch at.Attr.Type {
			case syscall.IFA_ADDRESS:
				a.addr, _ = netip.AddrFromSlice(at.Value)
			case syscall.IFA_LOCAL:
				local, _ = netip.AddrFromSlice(at.Value)
			case unix.IFA_FLAGS:
				if len(at.Value) >= 4 {
					a.flags = AddrFlags(binary.NativeEndian.Uint32(at.Value))
				}
			}
		}
		if local.IsValid() {
			// A point-to-point link's IFA_ADDRESS is the peer's.
			a.addr = local
		}
		if a.addr.IsValid() {
			out[int(ifa.Index)] = append(out[int(ifa.Index)], a)
		}
	}
	return out, nil
}

// name returns the name of the interface of index i; "" for 0 or an
// index that the listing lacks.
func (n *ifNames) name(i int) string {
	if i == 0 {
		return ""
	}
	if n.byIndex == nil {
		n.byIndex = map[int]string{}
		ifs, _ := netInterfaces()
		for _, f := range ifs {
			n.byIndex[f.Index] = f.Name
		}
	}
	return n.byIndex[i]
}

// SelectGID reads a port's GID table (ibv_query_gid_table, as GIDTable)
// and picks a RoCE v2 entry by rule; see the package function SelectGID
// for the rules. A rule SelectGID refuses is refused before the table is
// read.
func (c *Context) SelectGID(port int, rule GIDRule) (GIDChoice, error) {
	if err := rule.check(); err != nil {
		return GIDChoice{}, err
	}
	t, err := c.GIDTable(port)
	if err != nil {
		return GIDChoice{}, err
	}
	ch, err := SelectGID(t, rule)
	if err != nil {
		return ch, fmt.Errorf("%s port %d: %w", c.name, port, err)
	}
	return ch, nil
}

// WrapContext wraps a struct ibv_context that another library opened and
// owns, such as librdmacm's cm_id->verbs, reading its port count
// (ibv_query_device) and its device's name (ibv_get_device_name). Close
// never closes the device; the
// owner must outlive every object made from the returned Context. Where the
// owner is this package (the Raw of a Context from Open), it sees to that:
// its Close fails with EBUSY while the returned handle is open, and the
// handle's Close while objects made through it are.
//
// Every handle on one device, whether from WrapContext or Open, knows the
// objects made through the others: a CQ made through one handle may use a
// completion channel made through another, and the device's one stream of
// async events (Events) is shared by them all and names their objects.
func WrapContext(raw unsafe.Pointer) (*Context, error) {
	if raw == nil {
		return nil, fmt.Errorf("ibverbs: WrapContext(nil): %w", syscall.EINVAL)
	}
	c := (*C.struct_ibv_context)(raw)
	var a C.struct_ibv_device_attr
	if rc := C.ibv_query_device(c, &a); rc != 0 {
		return nil, verbError("ibv_query_device", int(rc))
	}
	ctx := &Context{c: c, name: C.GoString(C.ibv_get_device_name(c.device)), tr: TransportType(c.device.transport_type), borrowed: true,
		ports: int(a.phys_port_cnt), vectors: int(c.num_comp_vectors), dev: attachDev(c)}
	ctx.use.Open()
	return ctx, nil
}
