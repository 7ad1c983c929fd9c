//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
)

// JoinMulticast joins the ID to the multicast group at group
// (rdma_join_multicast_ex), as a full member or, with sendOnly, a
// send-only one. Its outcome is the event MULTICAST_JOIN, whose UD
// parameters address the group (an AH attribute with the group's GID, QPN
// 0xffffff and the QKey), or MULTICAST_ERROR. If the ID has a QP,
// librdmacm attaches it to the group once joined, unless sendOnly; on
// RoCE the kernel also joins the IP group on the interface (IGMP or MLD)
// for a full member.
func (id *ID) JoinMulticast(group netip.Addr, sendOnly bool) error {
	if !id.use.Enter() {
		return ErrClosed
	}
	defer id.use.Leave()
	if !group.IsMulticast() {
		return fmt.Errorf("%v is not a multicast address: %w", group, errnoError("rdma_join_multicast_ex", int(syscall.EINVAL)))
	}
	if err := id.joinMulticast(group, sendOnly); err != nil {
		return fmt.Errorf("group %v: %w", group, err)
	}
	return nil
}

// joinMulticast is JoinMulticast, its error without the group.
func (id *ID) joinMulticast(group netip.Addr, sendOnly bool) error {
	id.mu.Lock() // the caller holds the guard, or owns the ID
	defer id.mu.Unlock()
	var ss C.struct_sockaddr_storage
	flags := C.uint32_t(C.RDMA_MC_JOIN_FLAG_FULLMEMBER)
	if sendOnly {
		flags = C.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
	}
	if rc := C.gr_join_multicast(id.c, sockaddr(netip.AddrPortFrom(group, 0), &ss), flags); rc != 0 {
		if rc == errnoENOTSUPP {
			return notSupported(group)
		}
		return errnoError("rdma_join_multicast_ex", int(rc))
	}
	return nil
}

// errnoENOTSUPP is the kernel's internal ENOTSUPP, which no libc names
// and Go's syscall.Errno does not match to errors.ErrUnsupported:
// rdma_join_multicast_ex returns it for an IPv6 group on a RoCE v2 port.
const errnoENOTSUPP = 524

// notSupported is the error for ENOTSUPP from rdma_join_multicast_ex: it
// says why, and matches syscall.EOPNOTSUPP and errors.ErrUnsupported.
func notSupported(group netip.Addr) error {
	why := "the kernel does not support this join"
	if group.Is6() {
		why = "the kernel does not join IPv6 multicast groups over RoCE v2 (join an IPv4 group, or use InfiniBand or RoCE v1)"
	}
	return fmt.Errorf("%s: %w", why, os.NewSyscallError("rdma_join_multicast_ex (errno 524, ENOTSUPP)", syscall.EOPNOTSUPP))
}

// LeaveMulticast leaves a group the ID joined (rdma_leave_multicast),
// detaching its QP.
func (id *ID) LeaveMulticast(group netip.Addr) error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	var ss C.struct_sockaddr_storage
	r, err := C.rdma_leave_multicast(id.c, sockaddr(netip.AddrPortFrom(group, 0), &ss))
	if r != 0 {
		return fmt.Errorf("group %v: %w", group, cmError("rdma_leave_multicast", err))
	}
	return nil
}

// JoinMulticast joins the IP multicast group group ("239.255.0.1", say)
// and returns a UD Conn for it: Conn.RemoteUD addresses the
// group, so that a send reaches every member's QP, and unless
// Config.MulticastSendOnly the Conn's QP is a member and receives what is
// sent to the group (each receive buffer starting with the 40-byte GRH).
// Config.SrcAddr picks the local address, and so the device; without it
// the route to the group does. It resolves the address
// (rdma_resolve_addr), makes the PD, CQs and UD QP (rdma_create_qp) and
// joins (rdma_join_multicast_ex), all bounded by ctx; Close leaves the
// group (rdma_leave_multicast). Errors are *OpError, as Dial's. An IPv6
// group ("ff0e::1") joins on InfiniBand and RoCE v1 only: over RoCE v2,
// the GID type rdma_cm takes by default, the kernel refuses it, and the
// error matches errors.ErrUnsupported and syscall.EOPNOTSUPP.
func JoinMulticast(ctx context.Context, group string, cfg *Config) (*Conn, error) {
	checkContext(ctx, "JoinMulticast")
	return op(ctx, "join", group, cfg, joinMulticast)
}

func joinMulticast(ctx context.Context, group string, cfg *Config) (*Conn, error) {
	ctx, cancel := cfg.handshake(ctx)
	defer cancel()
	g, err := netip.ParseAddr(group)
	if err != nil {
		return nil, err
	}
	if !g.IsMulticast() {
		return nil, fmt.Errorf("%v is not a multicast address: %w", g, syscall.EINVAL)
	}
	id, err := resolveFrom(ctx, cfg, PortSpaceUDP, netip.AddrPortFrom(g, 0), group)
	if err != nil {
		return nil, err
	}
	ch := id.ch.Load()
	ud := *cfg
	ud.UD = true
	c, err := newConn(id, &ud, ch)
	if err != nil {
		return nil, err
	}
	if err := c.prepare(cfg); err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	if err := id.joinMulticast(g, cfg.MulticastSendOnly); err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	c.group, c.joined = g, true
	ev, err := ch.Await(ctx, EventMulticastJoin)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("joining: %w", err), c.teardown())
	}
	c.udParam = ev.UD
	if c.ah, err = c.pd.CreateAH(ev.UD.AHAttr); err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	c.start()
	return c, nil
}

// Group returns the multicast group a Conn from JoinMulticast is for, and
// the zero Addr for any other Conn. Like LocalAddr, it may be called at
// any time, during and after Close too, which leaves the group.
func (c *Conn) Group() netip.Addr { return c.group }
