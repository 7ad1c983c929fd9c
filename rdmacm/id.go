//go:build linux && cgo

package rdmacm

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/inuse"
)

// PortSpace is an identifier's port space (enum rdma_port_space): which
// service, and so which QP type, it stands for.
type PortSpace int

// Port spaces (RDMA_PS_*).
const (
	PortSpaceIPoIB PortSpace = 0x0002 // UD QPs, in IPoIB's port space
	PortSpaceTCP   PortSpace = 0x0106 // reliable connected (RC) QPs
	PortSpaceUDP   PortSpace = 0x0111 // unreliable datagram (UD) QPs
	PortSpaceIB    PortSpace = 0x013f // InfiniBand service IDs; CreateQP makes RC QPs for it
)

// String returns the port space's name without the RDMA_PS_ prefix
// ("TCP"), or "PortSpace(0x…)" for another value.
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceIPoIB:
		return "IPOIB"
	case PortSpaceTCP:
		return "TCP"
	case PortSpaceUDP:
		return "UDP"
	case PortSpaceIB:
		return "IB"
	}
	return fmt.Sprintf("PortSpace(%#x)", int(ps))
}

func portSpaceTable() map[PortSpace]int {
	return map[PortSpace]int{
		PortSpaceIPoIB: C.RDMA_PS_IPOIB,
		PortSpaceTCP:   C.RDMA_PS_TCP,
		PortSpaceUDP:   C.RDMA_PS_UDP,
		PortSpaceIB:    C.RDMA_PS_IB,
	}
}

// ID is a connection manager identifier (struct rdma_cm_id), the rdma_cm
// counterpart of a socket. Its events arrive on its EventChannel.
//
// Its methods may be called from several goroutines at once. Its verbs
// (BindAddr, ResolveAddr, ResolveRoute, Listen, Connect, Accept, Reject,
// Disconnect, Establish, SetTOS, SetAckTimeout, JoinMulticast,
// LeaveMulticast), which librdmacm runs on the ID's state with no lock
// of its own, run one at a time: a second waits until the first
// returns, which it does at once (the outcome arrives as an event). The
// kernel takes most of them once an ID and refuses a second with an
// error matching syscall.EINVAL, as Accept refuses one after an Accept
// that succeeded. CreateQP and the Close of the QP it made run one at a
// time, and so do Migrates, which also wait for the verbs, CreateQP,
// InitQPAttr and Notify, and they for a Migrate: librdmacm sends each
// through the ID's channel, which a Migrate changes. That QP's Close
// waits for a verb under way and for a GetEvent reading an event from
// the ID's channel, in which librdmacm uses the QP. The queries (LocalAddr, RemoteAddr, PortNum,
// Context) take no lock: librdmacm writes what they read in a verb, or
// in the GetEvent that takes the verb's outcome, so read them once the
// outcome has come. Close may run beside any of them (see Close).
type ID struct {
	c   *C.struct_rdma_cm_id
	use inuse.Guard // guards c against Close
	ps  PortSpace
	ch  atomic.Pointer[EventChannel] // Migrate moves it
	// ownCh is the channel made for the ID alone, a connection
	// request's (GetRequest), which the ID's Close, or a Migrate away
	// from it, closes: the caller never made it. Set before the ID is
	// handed out; cleared (under chMu) once closed. A Migrate away from
	// it that cannot close it (EBUSY: IDs of the caller's on it) keeps
	// it, for the ID's Close, and sets movedOff.
	ownCh *EventChannel
	// movedOff says Migrate has moved the ID off ownCh, and left it open
	// (under chMu): claim refuses, as where it closed ownCh.
	movedOff bool
	// chMu serializes Migrate: librdmacm keeps the ID's channel
	// (id->channel) beside the kernel's record of it, and two
	// rdma_migrate_id at once left them apart (the ID's rdma_destroy_id
	// then failed with EINVAL). It guards conn.
	chMu sync.Mutex
	// conn says a Conn owns the ID (claim): its watch reads the ID's
	// events from the ID's channel, and Migrate refuses to move them.
	conn bool
	// listening says a Listener owns the ID, its listening one: its
	// GetRequest and Accept read the connection requests from the ID's
	// channel, and Migrate refuses to move them. Set before the ID is
	// handed out, and never cleared.
	listening bool
	qp        atomic.Pointer[ibverbs.QP] // made by CreateQP, until its Close
	// qpMu serializes CreateQP, the Close of the QP it made, which
	// librdmacm makes and destroys as the ID's (id->qp), and the verbs,
	// which use it (see lock): a QP's Close beside a CreateQP destroyed
	// the new QP (SIGSEGV). Taken after mu, before chMu.
	qpMu sync.Mutex
	// mu serializes the ID's verbs (see the type's doc), InitQPAttr,
	// Notify and the Migrates, taken after use.Enter and never with
	// qpMu or chMu held: librdmacm runs them on the ID's state with no
	// lock of its own (rdma_connect and rdma_accept set its depths
	// before the kernel takes one of them, and rdma_accept moves its
	// QP). It guards accepted.
	mu sync.Mutex
	// accepted says an Accept of the ID succeeded (under mu): librdmacm
	// answers a second one by moving the QP it made to the error state
	// (UD), and the kernel by rejecting the connection (RC).
	accepted bool
	// request says the ID came with a CONNECT_REQUEST: the passive
	// side's, whose peer may give up while it is answered.
	request bool
	// responded says a CONNECT_RESPONSE for the ID was read (GetEvent):
	// the active side of a QP made outside the ID may Establish then.
	responded atomic.Bool
}

// UDPQKey is the Q_Key of every UD QP of PortSpaceUDP (RDMA_UDP_QKEY):
// rdma_cm gives it to the QPs it makes and reports it to the peers that
// look them up, so a UD QP made otherwise that answers lookups by its
// number must use it too.
const UDPQKey = 0x01234567

// cUDPQKey is C's, for the test that UDPQKey matches it.
func cUDPQKey() int { return C.RDMA_UDP_QKEY }

// CreateID creates an identifier whose events arrive on ch (rdma_create_id).
// PortSpaceTCP gives RC connections, PortSpaceUDP UD ones.
// It fails with ErrClosed once ch is closed, also while Close runs. A
// Listener's channel (Listener.ID's Channel) is refused, with an error
// matching syscall.EINVAL: the Listener's Accept and GetRequest read
// every event on it, and would drop the new ID's.
func (ch *EventChannel) CreateID(ps PortSpace) (*ID, error) {
	return ch.addIfOpen("rdma_create_id", func(cc *C.struct_rdma_event_channel) (*ID, error) {
		var c *C.struct_rdma_cm_id
		r, err := C.rdma_create_id(cc, &c, nil, C.enum_rdma_port_space(ps))
		if r != 0 {
			return nil, cmError("rdma_create_id", err)
		}
		return newID(c, ch, ps, false), nil
	})
}

// newID returns the ID of c, open, on ch.
func newID(c *C.struct_rdma_cm_id, ch *EventChannel, ps PortSpace, request bool) *ID {
	id := &ID{c: c, ps: ps, request: request}
	id.ch.Store(ch)
	id.use.Open()
	return id
}

// lock begins a verb of the ID: it enters the guard and takes mu, then
// qpMu, or returns false, taking nothing, once Close has begun. qpMu,
// because librdmacm uses the ID's QP (id->qp) in several verbs with no
// lock of its own (rdma_connect reads its number, rdma_accept and
// rdma_establish move it to RTR and RTS, rdma_disconnect to ERR,
// rdma_leave_multicast detaches it), and the QP's Close beside one of
// them would free the QP while it is used.
func (id *ID) lock() bool {
	if !id.use.Enter() {
		return false
	}
	id.mu.Lock()
	id.qpMu.Lock()
	if h := qpUseHook.Load(); h != nil {
		(*h)("verb")
	}
	return true
}

// unlock ends a verb that lock began.
func (id *ID) unlock() {
	id.qpMu.Unlock()
	id.mu.Unlock()
	id.use.Leave()
}

// qpUseHook, if set, runs where librdmacm may use an ID's QP, with the
// locks that keep the QP's Close out held: in each verb ("verb") and in
// GetEvent once it has read an event ("event") (for the tests).
var qpUseHook atomic.Pointer[func(where string)]

// Channel returns the event channel the ID's events arrive on. A
// Listener's (that of Listener.ID) is the Listener's alone: CreateID and
// Migrate refuse to put another ID on it, and its GetEvent and Await to
// take its events.
func (id *ID) Channel() *EventChannel { return id.ch.Load() }

// PortSpace returns the ID's port space.
func (id *ID) PortSpace() PortSpace { return id.ps }

// Raw returns the struct rdma_cm_id pointer, valid until Close; nil once
// Close has begun.
func (id *ID) Raw() unsafe.Pointer {
	if !id.use.Enter() {
		return nil
	}
	defer id.use.Leave()
	return unsafe.Pointer(id.c)
}

// sockaddrStorage names struct sockaddr_storage for tests, which cannot
// import "C".
type sockaddrStorage = C.struct_sockaddr_storage

// sockaddr fills ss with ap as a struct sockaddr_in or sockaddr_in6.
func sockaddr(ap netip.AddrPort, ss *C.struct_sockaddr_storage) *C.struct_sockaddr {
	*ss = C.struct_sockaddr_storage{}
	port := ap.Port()
	if a := ap.Addr().Unmap(); a.Is4() {
		sin := (*C.struct_sockaddr_in)(unsafe.Pointer(ss))
		sin.sin_family = C.AF_INET
		*(*[2]byte)(unsafe.Pointer(&sin.sin_port)) = [2]byte{byte(port >> 8), byte(port)}
		*(*[4]byte)(unsafe.Pointer(&sin.sin_addr)) = a.As4()
	} else {
		sin6 := (*C.struct_sockaddr_in6)(unsafe.Pointer(ss))
		sin6.sin6_family = C.AF_INET6
		*(*[2]byte)(unsafe.Pointer(&sin6.sin6_port)) = [2]byte{byte(port >> 8), byte(port)}
		*(*[16]byte)(unsafe.Pointer(&sin6.sin6_addr)) = a.As16()
		sin6.sin6_scope_id = C.uint32_t(zoneIndex(a.Zone()))
	}
	return (*C.struct_sockaddr)(unsafe.Pointer(ss))
}

// zoneIndex is the interface index an IPv6 address's zone names (a name,
// or a number), which a link-local address needs: 0 for none, or for a
// name no interface has, which the kernel then refuses for a link-local
// address.
func zoneIndex(zone string) int {
	if zone == "" {
		return 0
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return int(n)
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return ifi.Index
	}
	return 0
}

// zoneName is the zone of an IPv6 address with scope index i: its
// interface's name, or the number where there is no such interface.
func zoneName(i uint32) string {
	if i == 0 {
		return ""
	}
	if ifi, err := net.InterfaceByIndex(int(i)); err == nil {
		return ifi.Name
	}
	return strconv.FormatUint(uint64(i), 10)
}

// addrPort reads a struct sockaddr_in or sockaddr_in6.
func addrPort(sa *C.struct_sockaddr) netip.AddrPort {
	if sa == nil {
		return netip.AddrPort{}
	}
	switch sa.sa_family {
	case C.AF_INET:
		sin := (*C.struct_sockaddr_in)(unsafe.Pointer(sa))
		p := *(*[2]byte)(unsafe.Pointer(&sin.sin_port))
		return netip.AddrPortFrom(netip.AddrFrom4(*(*[4]byte)(unsafe.Pointer(&sin.sin_addr))), uint16(p[0])<<8|uint16(p[1]))
	case C.AF_INET6:
		sin6 := (*C.struct_sockaddr_in6)(unsafe.Pointer(sa))
		p := *(*[2]byte)(unsafe.Pointer(&sin6.sin6_port))
		a := netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&sin6.sin6_addr)))
		if a.Is6() && !a.Is4In6() && (a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast()) {
			a = a.WithZone(zoneName(uint32(sin6.sin6_scope_id)))
		}
		return netip.AddrPortFrom(a, uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

// timeoutMS converts d to the milliseconds librdmacm takes.
func timeoutMS(d time.Duration) C.int {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return C.int(min(ms, math.MaxInt32))
}

// BindAddr binds the ID to a local address (rdma_bind_addr). A specific
// address also binds it to that address's RDMA device; the zero address
// (0.0.0.0 or ::) binds only the port.
//
// A port that another ID holds fails with an error matching
// syscall.EADDRINUSE, as package net's does, where the binds clash on
// the address itself; where they clash as a wildcard and a specific
// address (0.0.0.0:7471 and 198.18.0.1:7471), the kernel fails with
// EADDRNOTAVAIL, and the error matches both.
//
// An invalid addr (the zero netip.AddrPort) is refused with an error
// matching syscall.EINVAL, where it bound [::] as the zero address.
func (id *ID) BindAddr(addr netip.AddrPort) error {
	if !addr.IsValid() {
		return fmt.Errorf("BindAddr: addr is the invalid (zero) netip.AddrPort: give 0.0.0.0:0 or [::]:0 to bind any address: %w",
			os.NewSyscallError("rdma_bind_addr", syscall.EINVAL))
	}
	if err := id.bindAddr(addr); err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	return nil
}

// bindAddr is BindAddr, its error without the address.
func (id *ID) bindAddr(addr netip.AddrPort) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	var ss C.struct_sockaddr_storage
	r, err := C.rdma_bind_addr(id.c, sockaddr(addr, &ss))
	if r == 0 {
		return nil
	}
	err = cmError("rdma_bind_addr", err)
	if errors.Is(err, syscall.EADDRNOTAVAIL) && addr.Port() != 0 && id.bindsPortZero(addr.Addr()) {
		return &portTakenError{port: addr.Port(), err: err}
	}
	return err
}

// bindsPortZero reports whether ip binds on a new ID with any free port:
// whether the EADDRNOTAVAIL of a bind with a port was about the port.
func (id *ID) bindsPortZero(ip netip.Addr) bool {
	probe, err := id.ch.Load().CreateID(id.ps)
	if err != nil {
		return false
	}
	defer probe.Close()
	var ss C.struct_sockaddr_storage
	r, _ := C.rdma_bind_addr(probe.c, sockaddr(netip.AddrPortFrom(ip, 0), &ss))
	return r == 0
}

// portTakenError is the EADDRNOTAVAIL that rdma_bind_addr fails with
// when its port clashes with another ID's as wildcard and specific
// address: it keeps the errno and also matches syscall.EADDRINUSE.
type portTakenError struct {
	port uint16
	err  error // the *os.SyscallError with EADDRNOTAVAIL
}

func (e *portTakenError) Error() string {
	return fmt.Sprintf("%v (port %d is in use: another ID holds it on the wildcard or a specific address)", e.err, e.port)
}

func (e *portTakenError) Unwrap() error { return e.err }

func (e *portTakenError) Is(target error) bool { return target == syscall.EADDRINUSE }

// SetTOS sets the type of service (the IP traffic class: DSCP and ECN
// bits) of the ID's connection (rdma_set_option, RDMA_OPTION_ID_TOS). Set
// it before ResolveRoute: the route carries it into the QP's address.
func (id *ID) SetTOS(tos uint8) error {
	return id.setOption(C.RDMA_OPTION_ID_TOS, tos)
}

// SetAckTimeout sets the local ACK timeout of the ID's QP, 4.096 µs ×
// 2^t, in place of the one rdma_cm derives from the path's packet
// lifetime (rdma_set_option, RDMA_OPTION_ID_ACK_TIMEOUT). Set it before
// the QP reaches RTS: before Connect or Accept. The QP's field has 5
// bits: t above 31, which the kernel takes and the QP's transition to RTR
// then refuses (a Connect's CONNECT_ERROR, an Accept's EINVAL), is
// refused at once with an error matching syscall.EINVAL.
func (id *ID) SetAckTimeout(t uint8) error {
	if t > maxAckTimeout {
		return fmt.Errorf("ACK timeout %d: want at most %d (4.096 µs × 2^t): %w",
			t, maxAckTimeout, errnoError("rdma_set_option", int(syscall.EINVAL)))
	}
	return id.setOption(C.RDMA_OPTION_ID_ACK_TIMEOUT, t)
}

// setAFOnly sets whether an ID bound to :: takes IPv6 requests only
// (rdma_set_option, RDMA_OPTION_ID_AFONLY, as IPV6_V6ONLY), in place of
// the sysctl net.ipv6.bindv6only. Set it before BindAddr.
func (id *ID) setAFOnly(only bool) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	var v C.int
	if only {
		v = 1
	}
	r, err := C.rdma_set_option(id.c, C.RDMA_OPTION_ID, C.RDMA_OPTION_ID_AFONLY, unsafe.Pointer(&v), C.size_t(unsafe.Sizeof(v)))
	if r != 0 {
		return cmError("rdma_set_option", err)
	}
	return nil
}

func (id *ID) setOption(name C.int, v uint8) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	b := C.uint8_t(v)
	r, err := C.rdma_set_option(id.c, C.RDMA_OPTION_ID, name, unsafe.Pointer(&b), C.size_t(unsafe.Sizeof(b)))
	if r != 0 {
		return cmError("rdma_set_option", err)
	}
	return nil
}

// ResolveAddr starts resolving dst to an RDMA address, and binds the ID to
// src first unless src is the zero AddrPort (rdma_resolve_addr). Its outcome
// is the event ADDR_RESOLVED or ADDR_ERROR, after at most timeout. An
// invalid dst (the zero netip.AddrPort), or a src with a port but no
// address, is refused with an error matching syscall.EINVAL, where dst
// went to the kernel as [::].
func (id *ID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	if !dst.IsValid() {
		return fmt.Errorf("ResolveAddr: dst is the invalid (zero) netip.AddrPort: %w",
			os.NewSyscallError("rdma_resolve_addr", syscall.EINVAL))
	}
	if !src.IsValid() && src != (netip.AddrPort{}) {
		return fmt.Errorf("ResolveAddr: src has port %d but no address (the zero netip.AddrPort binds none): %w",
			src.Port(), os.NewSyscallError("rdma_resolve_addr", syscall.EINVAL))
	}
	if err := id.resolveAddr(src, dst, timeout); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	return nil
}

// resolveAddr is ResolveAddr, its error without the address.
func (id *ID) resolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	var sss, dss C.struct_sockaddr_storage
	var sa *C.struct_sockaddr
	if src.IsValid() {
		sa = sockaddr(src, &sss)
	}
	r, err := C.rdma_resolve_addr(id.c, sa, sockaddr(dst, &dss), timeoutMS(timeout))
	if r != 0 {
		return cmError("rdma_resolve_addr", err)
	}
	return nil
}

// withAddr prefixes err with ap unless the caller's address given, which
// the *OpError shows, already says it.
func withAddr(ap netip.AddrPort, given string, err error) error {
	if ap.String() == given || ap.Addr().String() == given {
		return err
	}
	return fmt.Errorf("%s: %w", ap, err)
}

// ResolveRoute starts resolving the route to the resolved address
// (rdma_resolve_route). Its outcome is the event ROUTE_RESOLVED or
// ROUTE_ERROR. The address is resolved first (ResolveAddr, then
// ADDR_RESOLVED), which puts the ID on the device that reaches it; an ID
// on no device yet (see Context) is refused with an error matching
// syscall.EINVAL, where librdmacm read the device and the process died
// (SIGSEGV).
func (id *ID) ResolveRoute(timeout time.Duration) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	if err := id.needDevice("rdma_resolve_route", "resolve the peer's address first (ResolveAddr, then ADDR_RESOLVED)"); err != nil {
		return err
	}
	r, err := C.rdma_resolve_route(id.c, timeoutMS(timeout))
	if r != 0 {
		return cmError("rdma_resolve_route", err)
	}
	return nil
}

// Listen listens for connection requests on the bound address
// (rdma_listen); each arrives as a CONNECT_REQUEST event with a new ID.
// backlog 0 takes the kernel's default.
func (id *ID) Listen(backlog int) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	r, err := C.rdma_listen(id.c, C.int(backlog))
	if r != 0 {
		return cmError("rdma_listen", err)
	}
	return nil
}

// connParam converts p to C. The private data is copied to C memory,
// which free releases.
func connParam(fn string, p *ConnParam) (c *C.struct_rdma_conn_param, free func(), err error) {
	if p == nil {
		return nil, func() {}, nil
	}
	if len(p.PrivateData) > math.MaxUint8 {
		return nil, nil, fmt.Errorf("%d bytes of private data, at most 255 fit: %w",
			len(p.PrivateData), os.NewSyscallError(fn, syscall.EINVAL))
	}
	c = (*C.struct_rdma_conn_param)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_rdma_conn_param{}))))
	if c == nil {
		return nil, nil, os.NewSyscallError(fn, syscall.ENOMEM)
	}
	if len(p.PrivateData) > 0 {
		c.private_data = C.CBytes(p.PrivateData)
		c.private_data_len = C.uint8_t(len(p.PrivateData))
	}
	c.responder_resources = C.uint8_t(p.ResponderResources)
	c.initiator_depth = C.uint8_t(p.InitiatorDepth)
	c.flow_control = C.uint8_t(p.FlowControl)
	c.retry_count = C.uint8_t(p.RetryCount)
	c.rnr_retry_count = C.uint8_t(p.RNRRetryCount)
	if p.SRQ {
		c.srq = 1
	}
	c.qp_num = C.uint32_t(p.QPNum)
	return c, func() {
		C.free(unsafe.Pointer(c.private_data))
		C.free(unsafe.Pointer(c))
	}, nil
}

// Private data limits over InfiniBand and RoCE: the room in the IB CM's
// messages, less the header rdma_cm puts in a request.
const (
	maxConnectData   = 56  // REQ
	maxAcceptData    = 196 // REP
	maxRejectData    = 148 // REJ
	maxUDConnectData = 180 // SIDR REQ
	maxUDAcceptData  = 136 // SIDR REP, which also rejects
)

// The CM messages that carry private data.
const (
	cmRequest = iota
	cmReply
	cmReject
)

// checkPrivateData checks that n bytes of private data fit in the CM
// message msg (cmRequest, cmReply, cmReject) of id's port space: an
// iWARP device's take up to the 255 bytes the length has room for,
// InfiniBand's and RoCE's less. An ID on no device (bound to a wildcard
// address) takes the smallest limit of the devices present, which its
// requests may come through. Where they do not fit, fn (the verb) would
// fail with a bare EINVAL, after the QP was made.
func (id *ID) checkPrivateData(fn string, n int, msg int) error {
	if !id.use.Enter() {
		return ErrClosed
	}
	defer id.use.Leave()
	// InfiniBand's and RoCE's limit first, which is below iWARP's.
	var most int
	ud := id.ps == PortSpaceUDP || id.ps == PortSpaceIPoIB // SIDR
	switch {
	case ud && msg == cmRequest:
		most = maxUDConnectData
	case ud:
		most = maxUDAcceptData
	case msg == cmRequest:
		most = maxConnectData
	case msg == cmReply:
		most = maxAcceptData
	default:
		most = maxRejectData
	}
	if n <= most {
		// Without asking allIWARP, whose rdma_get_devices has
		// librdmacm open every device for good.
		return nil
	}
	var iwarp bool
	if v := id.c.verbs; v != nil {
		iwarp = v.device.transport_type == C.IBV_TRANSPORT_IWARP
	} else {
		iwarp = allIWARP()
	}
	if iwarp {
		most = math.MaxUint8
	}
	if n <= most {
		return nil
	}
	what := [...]string{cmRequest: "request", cmReply: "reply", cmReject: "reject"}[msg]
	return fmt.Errorf("%d bytes of private data, where a %s connection %s carries at most %d: %w",
		n, id.ps, what, most, os.NewSyscallError(fn, syscall.EINVAL))
}

// Connect starts a connection to the resolved route (rdma_connect); for a
// UD ID, a lookup of the peer's QP. Its outcome is ESTABLISHED, REJECTED,
// UNREACHABLE or CONNECT_ERROR; CONNECT_RESPONSE instead for an RC ID
// without a QP from CreateQP, whose own QP p.QPNum names: see
// Establish. p may be nil for librdmacm's defaults once the ID has a
// QP. An ID on no device yet (see Context) is refused with an error
// matching syscall.EINVAL, where librdmacm read the device and the
// process died (SIGSEGV): resolve the address and the route first.
func (id *ID) Connect(p *ConnParam) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	if err := id.needDevice("rdma_connect", "resolve the peer's address and route first (ResolveAddr, ResolveRoute)"); err != nil {
		return err
	}
	if p != nil {
		if err := id.checkPrivateData("rdma_connect", len(p.PrivateData), cmRequest); err != nil {
			return err
		}
	}
	c, free, err := connParam("rdma_connect", p)
	if err != nil {
		return err
	}
	defer free()
	r, err := C.rdma_connect(id.c, c)
	if r != 0 {
		return cmError("rdma_connect", err)
	}
	return nil
}

// Accept accepts the connection request this ID came with (rdma_accept).
// For RC the connection is up at the event ESTABLISHED; a UD request is
// answered at once. p may be nil for librdmacm's defaults once the ID has
// a QP (CreateQP); without one, p must give the QP's number, and nil is
// refused (librdmacm would read it). Accept is for the ID that a
// CONNECT_REQUEST event brings (Event.ID), which is on the device the
// request came through; one on no device (a new ID, or a listening one
// bound to a wildcard address) is refused with an error matching
// syscall.EINVAL, where librdmacm read the device and the process died
// (SIGSEGV). An Accept once one has succeeded is refused with an error
// matching syscall.EINVAL: librdmacm's second rdma_accept moved the QP
// it made to the error state (UD), and the kernel's rejected the
// connection (RC, a QP made outside the ID).
func (id *ID) Accept(p *ConnParam) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	if err := id.needDevice("rdma_accept", "accept the ID of a CONNECT_REQUEST event (Event.ID), not a new or listening one"); err != nil {
		return err
	}
	if id.accepted {
		return fmt.Errorf("the request is accepted already: %w", os.NewSyscallError("rdma_accept", syscall.EINVAL))
	}
	if p == nil && id.c.qp == nil {
		return fmt.Errorf("an ID without a QP (CreateQP) needs a ConnParam with the QP's number: %w",
			os.NewSyscallError("rdma_accept", syscall.EINVAL))
	}
	if p != nil {
		if err := id.checkPrivateData("rdma_accept", len(p.PrivateData), cmReply); err != nil {
			return err
		}
	}
	c, free, err := connParam("rdma_accept", p)
	if err != nil {
		return err
	}
	defer free()
	r, err := C.rdma_accept(id.c, c)
	if r != 0 {
		return cmError("rdma_accept", err)
	}
	id.accepted = true
	return nil
}

// Reject refuses the connection request this ID came with, sending
// privateData (at most 148 bytes for RC, 136 for UD, over InfiniBand and
// RoCE) to the peer (rdma_reject). Close the ID afterwards.
func (id *ID) Reject(privateData []byte) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	if err := id.checkPrivateData("rdma_reject", len(privateData), cmReject); err != nil {
		return err
	}
	var p unsafe.Pointer
	if len(privateData) > 0 {
		p = unsafe.Pointer(&privateData[0])
	}
	r, err := C.rdma_reject(id.c, p, C.uint8_t(len(privateData)))
	runtime.KeepAlive(privateData)
	if r != 0 {
		return cmError("rdma_reject", err)
	}
	return nil
}

// Disconnect moves the ID's QP to the error state and tells the peer
// (rdma_disconnect). Both sides then get DISCONNECTED.
func (id *ID) Disconnect() error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	r, err := C.rdma_disconnect(id.c)
	if r != 0 {
		return cmError("rdma_disconnect", err)
	}
	return nil
}

// Migrate moves the ID, and its future events, to another channel
// (rdma_migrate_id). It fails with ErrClosed once ch is closed, also while
// ch's Close runs. The Migrates of one ID run one at a time, and each
// waits for the ID's verbs, CreateQP, InitQPAttr and Notify under way,
// which librdmacm sends through the ID's channel; they wait for it. The ID of a
// connection request (Listener.GetRequest) that moves to another channel
// closes the one made for it; ConnRequest.Accept then refuses the request.
// Where the caller has put IDs of its own on that channel (CreateID,
// Migrate), the channel's Close refuses (EBUSY), as at the ID's Close:
// Migrate, the ID moved, returns that error, and the channel is the
// caller's to close once its IDs are (the channel's Close, or the ID's,
// which closes it then).
// The ID of a Conn (Conn.ID, from Dial, Accept or JoinMulticast) stays on
// the Conn's channel, where the Conn reads its events, and a Listener's
// listening ID (Listener.ID) on the Listener's, where its Accept and
// GetRequest read the connection requests: Migrate refuses either with
// an error matching syscall.EINVAL, and the ID stays where it was. So it
// does any ID's move onto a Listener's channel, whose Accept and
// GetRequest read every event on it and would drop the ID's.
func (id *ID) Migrate(ch *EventChannel) error {
	if !id.use.Enter() {
		return ErrClosed
	}
	defer id.use.Leave()
	// librdmacm sends each command of the ID's through the channel the
	// ID is on (id->channel), which rdma_migrate_id changes and which
	// is closed below when it was the request's own: the verbs (mu),
	// CreateQP (qpMu), InitQPAttr and Notify (mu) wait meanwhile, and
	// Migrate waits for them.
	id.mu.Lock()
	defer id.mu.Unlock()
	id.qpMu.Lock()
	defer id.qpMu.Unlock()
	id.chMu.Lock()
	defer id.chMu.Unlock()
	if id.conn {
		return fmt.Errorf("rdmacm: the ID is a Conn's, which reads its events from the ID's channel: %w",
			os.NewSyscallError("rdma_migrate_id", syscall.EINVAL))
	}
	if id.listening {
		return fmt.Errorf("rdmacm: the ID is a Listener's, whose Accept and GetRequest read the connection requests "+
			"from the ID's channel: %w", os.NewSyscallError("rdma_migrate_id", syscall.EINVAL))
	}
	old := id.ch.Load()
	// The ID joins ch before it moves and leaves old after, so that no
	// Close of either finds it on neither meanwhile. rdma_migrate_id
	// runs outside ch's idMu: it waits for the acks of the ID's events
	// taken, and a GetEvent acknowledges its event only once it has
	// looked the ID up under its channel's idMu.
	if _, err := ch.addIfOpen("rdma_migrate_id", func(*C.struct_rdma_event_channel) (*ID, error) { return id, nil }); err != nil {
		return err
	}
	// ch.c stays: ch's Close refuses while the ID is in ch.ids.
	if r, err := C.rdma_migrate_id(id.c, ch.c); r != 0 {
		if old != ch {
			ch.remove(id)
		}
		return cmError("rdma_migrate_id", err)
	}
	id.ch.Store(ch)
	if old != ch {
		old.remove(id)
		if old == id.ownCh {
			return id.leaveOwnCh()
		}
	}
	return nil
}

// leaveOwnCh closes ownCh, which Migrate has moved the ID off, and
// forgets it. Where the caller has put IDs of its own on it, the
// channel's Close refuses (EBUSY), as at the ID's Close: the ID keeps it,
// for its Close to close, and Migrate, the ID moved, returns the error.
// The caller holds chMu.
func (id *ID) leaveOwnCh() error {
	id.movedOff = true
	if err := id.ownCh.Close(); err != nil {
		return fmt.Errorf("rdmacm: the ID moved, but the event channel made for its connection request "+
			"(its ID.Channel before the Migrate) is still open: IDs of the caller's use it: close them, "+
			"then the channel or the ID: %w", err)
	}
	id.ownCh = nil
	return nil
}

// claim makes the ID a Conn's, whose watch reads the ID's events from
// its channel: Migrate refuses from then on. It reports false, claiming
// nothing, for the ID of a connection request that Migrate moved off the
// channel made for it, to a channel of the caller's, which may carry other
// IDs' events and is the caller's to read and close.
func (id *ID) claim() bool {
	id.chMu.Lock()
	defer id.chMu.Unlock()
	if id.request && (id.ownCh == nil || id.movedOff) {
		return false
	}
	id.conn = true
	return true
}

// Context returns the device the ID is bound to (id->verbs), once an
// address is bound or resolved or the ID came with a request. The Context
// is borrowed from librdmacm, which keeps its devices open while it is
// loaded: closing it ends only the handle. It is the device that a PD or
// CQ passed to CreateQP must belong to. An ID on no device (not bound or
// resolved yet, bound to a wildcard address, or bound to an address that
// no RDMA device has, such as 127.0.0.1, which rdma_bind_addr takes)
// fails with an error matching syscall.ENODEV that says which.
func (id *ID) Context() (*ibverbs.Context, error) {
	if !id.use.Enter() {
		return nil, ErrClosed
	}
	defer id.use.Leave()
	if id.c.verbs == nil {
		return nil, fmt.Errorf("rdmacm: %s: %w", id.deviceless(), syscall.ENODEV)
	}
	return ibverbs.WrapContext(unsafe.Pointer(id.c.verbs))
}

// onDevice reports whether the ID is bound to a device (id->verbs).
func (id *ID) onDevice() bool {
	if !id.use.Enter() {
		return false
	}
	defer id.use.Leave()
	return id.c.verbs != nil
}

// transport returns the transport of the ID's device
// (id->verbs->device->transport_type): ibverbs.TransportIB for
// InfiniBand and RoCE, TransportIWARP for iWARP; TransportUnknown on no
// device or once Close has begun.
func (id *ID) transport() ibverbs.TransportType {
	if !id.use.Enter() {
		return ibverbs.TransportUnknown
	}
	defer id.use.Leave()
	return id.transportHeld()
}

// transportHeld is transport for a caller that holds the guard.
func (id *ID) transportHeld() ibverbs.TransportType {
	if id.c.verbs == nil {
		return ibverbs.TransportUnknown
	}
	return ibverbs.TransportType(id.c.verbs.device.transport_type)
}

// verbs returns the ID's struct ibv_context (id->verbs), nil on no
// device or once Close has begun.
func (id *ID) verbs() unsafe.Pointer {
	if !id.use.Enter() {
		return nil
	}
	defer id.use.Leave()
	return unsafe.Pointer(id.c.verbs)
}

// deviceless says why an open ID is on no device.
func (id *ID) deviceless() string {
	a := addrPort(C.gr_local_addr(id.c)) // the caller holds the guard
	switch {
	case !a.Addr().IsValid():
		return "the ID is not bound to a device yet"
	case !a.Addr().IsUnspecified():
		// rdma_bind_addr took an address that no device has.
		return fmt.Sprintf("the ID is bound to %s, which no RDMA device has", a.Addr())
	}
	return fmt.Sprintf("the ID is bound to the wildcard address %s, on no device", a)
}

// needDevice refuses fn, a verb that librdmacm runs on an ID's device
// unchecked (id->verbs, or its own record of it), on an ID on no device,
// with an error matching syscall.EINVAL that says why and what to do
// first: the verb would read through a NULL pointer and the process
// would die (SIGSEGV).
func (id *ID) needDevice(fn, first string) error {
	if id.c.verbs != nil { // the caller holds the guard: no nested Enter
		return nil
	}
	return fmt.Errorf("%s: %s: %w", id.deviceless(), first, os.NewSyscallError(fn, syscall.EINVAL))
}

// PortNum returns the device port the ID is bound to, from 1; 0 if none.
func (id *ID) PortNum() int {
	if !id.use.Enter() {
		return 0
	}
	defer id.use.Leave()
	return int(id.c.port_num)
}

// LocalAddr returns the ID's local address and port (rdma_get_local_addr,
// rdma_get_src_port).
func (id *ID) LocalAddr() netip.AddrPort {
	if !id.use.Enter() {
		return netip.AddrPort{}
	}
	defer id.use.Leave()
	return addrPort(C.gr_local_addr(id.c))
}

// RemoteAddr returns the peer's address and port (rdma_get_peer_addr,
// rdma_get_dst_port).
func (id *ID) RemoteAddr() netip.AddrPort {
	if !id.use.Enter() {
		return netip.AddrPort{}
	}
	defer id.use.Leave()
	return addrPort(C.gr_peer_addr(id.c))
}

// CreateQP creates the ID's queue pair on pd and its device (rdma_create_qp)
// and returns it as an ibverbs QP whose Close destroys it as
// rdma_destroy_qp does, but reports a failure that rdma_destroy_qp drops
// (EBUSY while librdmacm has it attached to a multicast group). librdmacm
// moves the QP through its states: receives may be posted at once, and it
// is ready to send once connected (RC) or at once (UD). The type is RC for
// PortSpaceTCP and UD for PortSpaceUDP whatever init.Type says. pd and the
// CQs must be on the ID's device (see Context). With init.WRAPI it is made
// by rdma_create_qp_ex and posts through the ibv_wr_* API.
func (id *ID) CreateQP(pd *ibverbs.PD, init ibverbs.QPInit) (*ibverbs.QP, error) {
	if !id.use.Enter() {
		return nil, ErrClosed
	}
	defer id.use.Leave()
	id.qpMu.Lock()
	defer id.qpMu.Unlock()
	if id.qp.Load() != nil {
		return nil, fmt.Errorf("rdmacm: the ID has a QP already: %w", os.NewSyscallError("rdma_create_qp", syscall.EINVAL))
	}
	if pd == nil || init.SendCQ == nil {
		return nil, fmt.Errorf("rdmacm: CreateQP needs a PD and a send CQ: %w", os.NewSyscallError("rdma_create_qp", syscall.EINVAL))
	}
	init.Type = ibverbs.QPTypeRC
	if id.ps == PortSpaceUDP || id.ps == PortSpaceIPoIB {
		init.Type = ibverbs.QPTypeUD
	}
	c := id.c
	// creating: CreateQPWith calls destroy itself where the QP it made
	// fails it, with qpMu held here.
	var creating atomic.Bool
	creating.Store(true)
	defer creating.Store(false)
	qp, err := pd.CreateQPWith(init, func(attr unsafe.Pointer) (unsafe.Pointer, error) {
		if init.WRAPI {
			if r, err := C.rdma_create_qp_ex(c, (*C.struct_ibv_qp_init_attr_ex)(attr)); r != 0 {
				return nil, cmError("rdma_create_qp_ex", err)
			}
		} else if r, err := C.rdma_create_qp(c, (*C.struct_ibv_pd)(pd.Raw()), (*C.struct_ibv_qp_init_attr)(attr)); r != 0 {
			return nil, cmError("rdma_create_qp", err)
		}
		return unsafe.Pointer(c.qp), nil
	}, func() error {
		if !creating.Load() {
			id.qpMu.Lock()
			defer id.qpMu.Unlock()
		}
		// GetEvent's rdma_get_cm_event uses the QP too (see
		// EventChannel.evMu); chMu keeps the ID on that channel.
		id.chMu.Lock()
		defer id.chMu.Unlock()
		ch := id.ch.Load()
		ch.evMu.Lock()
		defer ch.evMu.Unlock()
		if rc := C.gr_destroy_qp(c); rc != 0 {
			return errnoError("rdma_destroy_qp", int(rc))
		}
		id.qp.Store(nil)
		return nil
	})
	if err != nil {
		return nil, err
	}
	id.qp.Store(qp)
	return qp, nil
}

// QP returns the QP made by CreateQP, or nil.
func (id *ID) QP() *ibverbs.QP { return id.qp.Load() }

// Close destroys the ID (rdma_destroy_id), cancelling what it had under
// way. It fails with EBUSY while the QP from CreateQP is open. It may run
// while other goroutines call the ID's methods: it waits for the calls
// under way, and those that begin once it has begun return ErrClosed
// (see the package's doc). An event of the ID that a GetEvent in another
// goroutine has taken holds it up until GetEvent has named the event's
// ID. Closing twice is a no-op. The ID of a connection request
// (Listener.GetRequest) closes the event channel made for it too
// (Channel, or the one a Migrate moved it off and left open): where the caller has put IDs of its own on that channel
// (CreateID, Migrate), the channel's Close refuses (EBUSY), and Close,
// the ID destroyed, returns that error. The channel is then the
// caller's to close once its IDs are (the channel's Close, or the ID's
// again, which closes it then).
func (id *ID) Close() error {
	id.use.Lock()
	defer id.use.Unlock()
	if id.use.Closed() {
		return id.closeOwnCh() // where a Close left it open
	}
	// A CreateQP under way may make a QP: Quiesce counts again once the
	// calls under way have left.
	if id.use.Quiesce(id.hasQP, nil) > 0 {
		return fmt.Errorf("rdma_destroy_id: close the ID's QP first: %w", os.NewSyscallError("rdma_destroy_id", syscall.EBUSY))
	}
	// The ID leaves its channel only once destroyed, so that the
	// channel's Close cannot destroy the channel, which rdma_destroy_id
	// writes to, first. If a new ID takes the address meanwhile, remove
	// leaves it be.
	r, err := C.rdma_destroy_id(id.c)
	if r != 0 {
		id.use.Open()
		return cmError("rdma_destroy_id", err)
	}
	ch := id.ch.Load()
	ch.remove(id)
	id.c = nil
	return id.closeOwnCh()
}

// closeOwnCh closes the channel made for the ID alone (ownCh), which
// the ID, destroyed, has left, or a Migrate moved it off and left open,
// and forgets it; it is the ID's Close's, which holds the guard's lock.
// Where the caller has put IDs of its own on it, the channel's Close
// refuses (EBUSY): the ID keeps it, for its next Close to close.
func (id *ID) closeOwnCh() error {
	id.chMu.Lock() // as claim, which reads ownCh
	defer id.chMu.Unlock()
	ch := id.ownCh
	if ch == nil {
		return nil
	}
	if err := ch.Close(); err != nil {
		return fmt.Errorf("rdmacm: the ID is closed, but not the event channel made for its connection request "+
			"(ID.Channel), which IDs of the caller's use: close them, then the channel or the ID again: %w", err)
	}
	id.ownCh = nil
	return nil
}

// hasQP counts the ID's QP from CreateQP, 0 or 1, for Close.
func (id *ID) hasQP() int64 {
	if id.qp.Load() != nil {
		return 1
	}
	return 0
}

// peersReason is err, a verb's failure on a connection request, or,
// when the peer has given up on the request, ErrDisconnected with err's
// text but not its EINVAL, which a server would take for a fault in its
// own Config. The peer has given up when its Dial ended, or it refused,
// and the CM left the state in which a request can be answered:
// rdma_create_qp or rdma_accept then fails with a bare EINVAL, and the
// kernel queues no event for it (Linux 6.1): the CM's
// refusal to give the QP's attributes (rdma_init_qp_attr) tells it from
// this side's own failure. Other IDs' errors are err.
func (id *ID) peersReason(err error) error {
	// Only EINVAL: after this side's own failure in rdma_accept (the
	// kernel could not send the reply: ENOMEM, a MAD error), the
	// kernel has rejected the request itself, and the probe would
	// blame the peer.
	if !id.request || !errors.Is(err, syscall.EINVAL) || !id.cmGone() {
		return err
	}
	return fmt.Errorf("the peer gave up on its request (%v): %w", err, ErrDisconnected)
}

// repliedReason is err, a Dial's wait for ESTABLISHED, with
// ErrDisconnected in it when the peer gave up on the connection after it
// replied: librdmacm takes the reply (CONNECT_RESPONSE) in
// rdma_get_cm_event, moves the QP to RTR and RTS and sends the RTU
// (rdma_accept), which fails with EINVAL where the kernel's CM has had
// the peer's REJ meanwhile, and returns CONNECT_ERROR with that status.
// The CM's refusal to give the QP's attributes tells it from a failure
// of this side's own QP's transitions (CONNECT_ERROR, EINVAL too), after
// which the CM still holds the reply.
func (id *ID) repliedReason(err error) error {
	var ee *EventError
	if !errors.As(err, &ee) || ee.Event != EventConnectError || !errors.Is(err, syscall.EINVAL) || !id.cmGone() {
		return err
	}
	return fmt.Errorf("%w: the peer gave up on the connection after replying: %w", err, ErrDisconnected)
}

// cmGone reports whether the kernel's CM has left the states of a
// connection under way for the ID (a request taken, a reply sent or
// received, established): rdma_init_qp_attr refuses the QP's INIT
// attributes then. It reports false for a closed ID.
func (id *ID) cmGone() bool {
	if !id.use.Enter() {
		return false
	}
	defer id.use.Leave()
	id.mu.Lock() // rdma_init_qp_attr writes to the ID's channel: see Migrate
	defer id.mu.Unlock()
	var attr C.struct_ibv_qp_attr
	var mask C.int
	attr.qp_state = C.IBV_QPS_INIT
	return C.rdma_init_qp_attr(id.c, &attr, &mask) != 0
}
