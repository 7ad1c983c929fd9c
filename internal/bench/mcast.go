//go:build linux && cgo

package bench

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// The default groups of --mcg, from the scopes that stay inside a site:
// IPv4's local scope (RFC 2365) and IPv6's site-local experiment address
// (ff05::114, RFC 4727). The server's QP joins the group, the client's
// the next one.
var (
	defaultGroup4 = netip.MustParseAddr("239.255.0.1")
	defaultGroup6 = netip.MustParseAddr("ff05::114")
)

// mcastQPN is the destination QPN of a datagram to a multicast group.
const mcastQPN = 0xffffff

// groupOf returns the multicast group a side's QP joins: base (or the
// default of the GID's family), or for the client the address after it
// (its last byte one higher, wrapping, as perftest's). A zero GID, an
// InfiniBand port's (LID routing), has no family: the group's is base's,
// or by default IPv4's, IPoIB's usual one.
func groupOf(base netip.Addr, gid ibverbs.GID, client bool) (netip.Addr, error) {
	v4 := gid.Addr().Is4()
	if gid.IsZero() {
		v4 = !base.IsValid() || base.Unmap().Is4()
	}
	if !base.IsValid() {
		base = defaultGroup6
		if v4 {
			base = defaultGroup4
		}
	}
	base = base.Unmap()
	switch {
	case !base.IsMulticast():
		return netip.Addr{}, fmt.Errorf("--MGID %v is not a multicast address", base)
	case base.Is4() != v4:
		return netip.Addr{}, fmt.Errorf("--MGID %v and the GID %v are not of one IP version: the group's datagrams go out from the GID's address", base, gid)
	}
	if client {
		b := base.As16()
		b[15]++
		base = netip.AddrFrom16(b).Unmap() // still multicast: only the last byte changed
	}
	return base, nil
}

// cmJoin is joinGroup through rdma_cm (-R): rdma_cm makes the UD QP on
// this side's PD and CQs, joins the group from the GID's address, which
// joins the interface to the IP group too, and attaches the QP.
func (s *session) cmJoin(ctx context.Context, client bool) error {
	g, err := groupOf(s.local.Group, s.gid.Entry.GID, client)
	if err != nil {
		return err
	}
	cfg := s.cmConfig()
	cfg.SrcAddr = s.cmSrcAddr()
	c, err := rdmacm.JoinMulticast(ctx, g.String(), cfg)
	if err != nil {
		return err
	}
	if err := s.addConn(c); err != nil {
		return err
	}
	s.localInfo[0].Endpoint.GID = ibverbs.GID(g.As16())
	// The group's multicast LID, which the peer's sends go to over
	// InfiniBand, as perftest's (its mcg_params.mlid); on RoCE none.
	s.localInfo[0].Endpoint.LID = 0
	if s.portAttr.LinkLayer != ibverbs.LinkLayerEthernet {
		s.localInfo[0].Endpoint.LID = c.UD().AHAttr.DLID
	}
	s.group = g
	return nil
}

// joinGroup makes this side's QP a member of its multicast group for a
// --mcg test and tells the peer to send there. On RoCE the port's
// interface joins the IP group too (IGMP or MLD, as rdma_cm's join does),
// so that the network, and rxe's IP stack, deliver the group's datagrams;
// the socket that holds the membership lives as long as the session.
func (s *session) joinGroup(client bool) error {
	g, err := groupOf(s.local.Group, s.gid.Entry.GID, client)
	if err != nil {
		return err
	}
	gid := ibverbs.GID(g.As16())
	if s.portAttr.LinkLayer != ibverbs.LinkLayerEthernet {
		// perftest asks the subnet manager with a MAD of its own.
		return fmt.Errorf("--mcg on %s port %d: an InfiniBand group is joined through the subnet manager: add -R, whose rdma_cm does that", s.ctx.Name(), s.port)
	}
	ifi, err := net.InterfaceByIndex(s.gid.Entry.Ifindex)
	if err != nil {
		return fmt.Errorf("joining multicast group %v: the GID's interface: %w", g, err)
	}
	network := "udp6"
	if g.Is4() {
		network = "udp4"
	}
	if s.member, err = net.ListenMulticastUDP(network, ifi, net.UDPAddrFromAddrPort(netip.AddrPortFrom(g, 0))); err != nil {
		return fmt.Errorf("joining multicast group %v on %s: %w", g, ifi.Name, err)
	}
	for i, qp := range s.qps {
		if err := qp.AttachMcast(gid, 0); err != nil {
			return err
		}
		// The peer sends to the group's GID and mcastQPN; the QPN
		// stays the QP's own, for the header.
		s.localInfo[i].Endpoint.GID = gid
		s.localInfo[i].Endpoint.LID = 0
	}
	s.group = g
	return nil
}
