//go:build linux && cgo

package rdmacm

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gorperf/gorperf/ibverbs"
)

// This file holds what a Conn does with a QP of its own, one it made with
// ibverbs and moves itself (Config.PathMTU), where librdmacm moves those
// it made (rdma_create_qp): in rdma_accept on the passive side, and on
// CONNECT_RESPONSE, inside rdma_get_cm_event, on the active side
// (ucma_modify_qp_rtr, ucma_modify_qp_rts), with the attributes the CM
// gives and no say of the caller's in the path MTU.

// movesQP reports whether the connection's QP is the Conn's own, made and
// moved by it: an RC connection with a PathMTU on a device of transport
// t that is InfiniBand's or RoCE's (ibverbs.TransportIB), whose CM gives
// a path MTU in RTR's attributes. An iWARP device's has none to cap: the
// kernel's iw_cm_init_qp_attr answers RTR with INIT's attributes (the
// state and access flags) and RTS with none, the provider moves the QP
// to RTS itself when the connection is made, and the active side gets
// ESTABLISHED, never CONNECT_RESPONSE; iWARP's frames are sized by its
// TCP connection, not by a path MTU. There the Conn keeps librdmacm's QP,
// as UD does, and PathMTU is ignored. No other transport has rdma_cm
// (its rdma_init_qp_attr fails with ENOSYS).
func (cfg *Config) movesQP(t ibverbs.TransportType) bool {
	return !cfg.UD && cfg.PathMTU != 0 && t == ibverbs.TransportIB
}

// notLoaded are the mask bits of rdma_init_qp_attr's that a Conn's own QP
// is moved without: an alternate path (InfiniBand's APM), for which
// QPAttr has no fields (Modify refuses them), and bits 21 to 24, which an
// rdma_ucm kernel bug set on InfiniBand (librdmacm's ucma_modify_qp_rtr
// clears them there) and which verbs.h does not define.
const notLoaded = ibverbs.QPAttrAltPath | ibverbs.QPAttrPathMigState | 0xf<<21

// makeQP makes the Conn's own RC QP on its PD (ibv_create_qp, or
// ibv_create_qp_ex with init.WRAPI) and moves it to INIT, as
// rdma_create_qp does (ucma_init_conn_qp), so that Config.Prepare may
// post receives. The Conn's teardown closes it.
func (c *Conn) makeQP(init ibverbs.QPInit) error {
	init.Type = ibverbs.QPTypeRC
	qp, err := c.pd.CreateQP(init)
	if err != nil {
		return err
	}
	c.qp, c.ownQP = qp, true
	return c.moveQP(ibverbs.QPStateInit, 0, MaxDepth)
}

// moveQP moves the Conn's own QP to state with the attributes the CM
// gives (InitQPAttr: rdma_init_qp_attr, then ibv_modify_qp), as librdmacm
// moves one it made. RTR's path MTU is the least of the CM's and mtu
// (where not 0); depth, where not MaxDepth, is RTR's max_dest_rd_atomic
// or RTS's max_rd_atomic, as rdma_accept sets the depths it resolved.
func (c *Conn) moveQP(state ibverbs.QPState, mtu ibverbs.MTU, depth uint8) error {
	attr, mask, err := c.id.InitQPAttr(state)
	if err != nil {
		return err
	}
	mask &^= notLoaded
	switch state {
	case ibverbs.QPStateRTR:
		if mtu != 0 && (mask&ibverbs.QPAttrPathMTU == 0 || attr.PathMTU > mtu) {
			attr.PathMTU = mtu
			mask |= ibverbs.QPAttrPathMTU
		}
		if depth != MaxDepth {
			attr.MaxDestRdAtomic = depth
		}
	case ibverbs.QPStateRTS:
		if depth != MaxDepth {
			attr.MaxRdAtomic = depth
		}
	}
	if err := c.qp.Modify(&attr, mask); err != nil {
		return fmt.Errorf("moving the QP to %s: %w", state, err)
	}
	return nil
}

// readyQP moves the Conn's own QP, in INIT, to INIT again (with the
// attributes the peer's request or reply gave the CM), RTR, its path MTU
// capped at cfg.PathMTU, and RTS, as ucma_modify_qp_rtr and
// ucma_modify_qp_rts do; resp and depth are the responder resources and
// initiator depth, or MaxDepth for the CM's.
func (c *Conn) readyQP(cfg *Config, resp, depth uint8) error {
	if err := c.moveQP(ibverbs.QPStateInit, 0, MaxDepth); err != nil {
		return err
	}
	if err := c.moveQP(ibverbs.QPStateRTR, cfg.PathMTU, resp); err != nil {
		return err
	}
	return c.moveQP(ibverbs.QPStateRTS, 0, depth)
}

// acceptDepths resolves p's depths, for the reply to a request that came
// with req, where they are MaxDepth, as rdma_accept does: the request's,
// within the device's (max_qp_init_rd_atom, max_qp_rd_atom). The Conn's
// own QP gets the same as the reply says.
func (c *Conn) acceptDepths(p, req *ConnParam) error {
	if p.InitiatorDepth != MaxDepth && p.ResponderResources != MaxDepth {
		return nil
	}
	da, err := c.ctx.QueryDevice()
	if err != nil {
		return err
	}
	if p.InitiatorDepth == MaxDepth {
		p.InitiatorDepth = uint8(min(int(req.InitiatorDepth), da.MaxQPInitRdAtom, MaxDepth-1))
	}
	if p.ResponderResources == MaxDepth {
		p.ResponderResources = uint8(min(int(req.ResponderResources), da.MaxQPRdAtom, MaxDepth-1))
	}
	return nil
}

// establish completes, on the active side, the connection of the Conn's
// own QP once CONNECT_RESPONSE has come: it moves the QP to RTS
// (readyQP), gives it the RNR timer (setRNRTimer), and answers the peer
// (Establish: rdma_establish), which then gets ESTABLISHED. A failure
// after the peer gave up (the kernel's CM has left the connection, and
// the verbs fail with EINVAL) matches ErrDisconnected too.
func (c *Conn) establish(cfg *Config) error {
	err := c.readyQP(cfg, MaxDepth, MaxDepth)
	if err == nil {
		err = c.setRNRTimer(cfg)
	}
	if err == nil {
		err = c.id.Establish()
	}
	if err != nil && errors.Is(err, syscall.EINVAL) && c.id.cmGone() {
		err = fmt.Errorf("%w: the peer gave up on the connection after replying: %w", err, ErrDisconnected)
	}
	return err
}
