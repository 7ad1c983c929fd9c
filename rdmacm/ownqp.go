//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
)

// InitQPAttr returns the attributes, and the mask saying which to set,
// that move a QP of the ID's connection to state (rdma_init_qp_attr): for
// a QP made outside the ID (ibverbs' PD.CreateQP, on the ID's Context),
// whose number Connect or Accept sent in ConnParam.QPNum, to pass to the
// QP's Modify. It is what librdmacm does for a QP from CreateQP, and the
// order is the same:
//
//   - passive side, on CONNECT_REQUEST: INIT, RTR and RTS, then Accept;
//     the connection is up at ESTABLISHED.
//   - active side: Connect with the QP in RESET or INIT; on
//     CONNECT_RESPONSE: INIT (again: the attributes are the peer's now),
//     RTR and RTS, then Establish.
//
// state is INIT, RTR or RTS; others are refused with an error matching
// syscall.EINVAL. The mask is the kernel's, and Modify takes it as it
// is on RoCE; it may hold bits QPAttr has no field for (QPAttrAltPath,
// where the CM found an alternate path), which Modify refuses.
//
// The attributes are the connection's as the CM negotiated it: the
// access they give the QP allows the peer RDMA writes, and RDMA reads and
// atomics only where the ConnParams gave the connection depths for them
// (InitiatorDepth, ResponderResources), which are then the QP's
// MaxRdAtomic and MaxDestRdAtomic; with depths of 0 the QP serves
// writes and sends only. INIT before the peer's answer allows no remote
// access at all, which is why the active side moves its QP to INIT again
// on CONNECT_RESPONSE.
//
// On a connected ID (RC), RTR and RTS need the peer's answer: before
// it (before the CONNECT_REQUEST on the passive side, before
// CONNECT_RESPONSE on the active side, or on an ID that connects
// nothing) the kernel gives INIT's attributes for any state, and
// InitQPAttr refuses RTR without the address vector and destination QP
// (QPAttrAV, QPAttrDestQPN) and RTS without the send PSN (QPAttrSQPSN),
// with an error matching syscall.EINVAL that says what must come first.
//
// The flow above, RTR and RTS from the CM and CONNECT_RESPONSE then
// Establish, is InfiniBand's and RoCE's. An iWARP device's CM gives
// attributes for INIT only (the kernel's iw_cm_init_qp_attr answers RTR
// with INIT's and RTS with none), and its provider moves the QP, found
// by the number in ConnParam.QPNum, to RTS itself: at Accept on the
// passive side, and as the connection is made on the active side, which
// gets ESTABLISHED, never CONNECT_RESPONSE, and calls no Establish. The
// QP is moved to INIT only; InitQPAttr refuses RTR and RTS there with an
// error matching syscall.EINVAL that says so.
//
// A datagram ID (PortSpaceUDP, PortSpaceIPoIB) has no peer of its own to
// take attributes from, and the kernel gives INIT's (state, P_Key index,
// port and Q_Key) for any state, which Modify refuses past INIT. As
// librdmacm does for the UD QPs it makes, InitQPAttr gives the kernel's
// attributes for INIT only; RTR is the state alone (QPAttrState), and
// RTS the state and a send PSN of 0 (QPAttrState|QPAttrSQPSN). It still
// asks the kernel for INIT's first, so that an ID the CM cannot serve
// fails the same way.
//
// The kernel's failures are wrapped with rdma_init_qp_attr and the state
// asked for. After Close it returns ErrClosed. The examples of
// InitQPAttr (the passive side) and Establish (the active side) show the
// whole flow.
func (id *ID) InitQPAttr(state ibverbs.QPState) (ibverbs.QPAttr, ibverbs.QPAttrMask, error) {
	if !id.use.Enter() {
		return ibverbs.QPAttr{}, 0, ErrClosed
	}
	defer id.use.Leave()
	id.mu.Lock() // rdma_init_qp_attr writes to the ID's channel: see Migrate
	defer id.mu.Unlock()
	switch state {
	case ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS:
	default:
		return ibverbs.QPAttr{}, 0, fmt.Errorf("QP state %s: the CM gives INIT, RTR and RTS only: %w",
			state, os.NewSyscallError("rdma_init_qp_attr", syscall.EINVAL))
	}
	ud := id.c.qp_type == C.IBV_QPT_UD
	ask := state
	if ud {
		ask = ibverbs.QPStateInit
	}
	var a C.struct_ibv_qp_attr
	var mask C.int
	a.qp_state = C.enum_ibv_qp_state(ask)
	if r, err := C.rdma_init_qp_attr(id.c, &a, &mask); r != 0 {
		return ibverbs.QPAttr{}, 0, fmt.Errorf("QP state %s: %w", state, cmError("rdma_init_qp_attr", err))
	}
	attr, m := ibverbs.QPAttrFromRaw(unsafe.Pointer(&a)), ibverbs.QPAttrMask(mask)
	switch {
	case ud && state == ibverbs.QPStateRTR:
		return ibverbs.QPAttr{State: state}, ibverbs.QPAttrState, nil
	case ud && state == ibverbs.QPStateRTS:
		return ibverbs.QPAttr{State: state}, ibverbs.QPAttrState | ibverbs.QPAttrSQPSN, nil
	case ud:
		return attr, m, nil
	}
	if err := lacksPeer(id.transportHeld(), state, m); err != nil {
		return ibverbs.QPAttr{}, 0, err
	}
	return attr, m, nil
}

// lacksPeer says why InitQPAttr refuses the kernel's attributes of mask m
// for state, on a connected ID of a device of transport t, or returns
// nil: RTR needs the address vector and destination QP, RTS the send PSN.
// On InfiniBand and RoCE they are missing until the CM has the peer's
// answer; on iWARP always, since its CM gives attributes for INIT only
// (iw_cm_init_qp_attr answers RTR with INIT's, RTS with none) and its
// provider moves the QP to RTS itself, as the connection is made.
func lacksPeer(t ibverbs.TransportType, state ibverbs.QPState, m ibverbs.QPAttrMask) error {
	var need ibverbs.QPAttrMask
	switch state {
	case ibverbs.QPStateRTR:
		need = ibverbs.QPAttrAV | ibverbs.QPAttrDestQPN
	case ibverbs.QPStateRTS:
		need = ibverbs.QPAttrSQPSN
	}
	if m&need == need {
		return nil
	}
	errno := os.NewSyscallError("rdma_init_qp_attr", syscall.EINVAL)
	if t == ibverbs.TransportIWARP {
		return fmt.Errorf("QP state %s: an iWARP CM gives attributes for INIT only (mask %#x): the provider moves the QP "+
			"to RTS itself, at Accept (passive side) or as the connection is made (active side, which gets ESTABLISHED, "+
			"not CONNECT_RESPONSE, and calls no Establish): move it to INIT only: %w", state, uint32(m), errno)
	}
	return fmt.Errorf("QP state %s: the CM has no peer for the ID yet (mask %#x): "+
		"take RTR and RTS on the CONNECT_REQUEST (passive side) or on CONNECT_RESPONSE (active side): %w",
		state, uint32(m), errno)
}

// Establish completes, on the active side, a connection whose QP the ID
// did not make (rdma_establish): called on CONNECT_RESPONSE once that QP
// is in RTS (InitQPAttr), it answers the peer, which then gets
// ESTABLISHED. librdmacm's rdma_establish at any other moment has the
// kernel answer the connection wrongly (a REJ to the peer of the
// passive side, and on the active side before the peer's answer one
// that breaks the connection under way), so Establish refuses, without
// calling it, with an error matching syscall.EINVAL: the ID of a
// CONNECT_REQUEST (the passive side completes with Accept), and an ID
// for which GetEvent has not yet read CONNECT_RESPONSE. An ID with a QP
// from CreateQP, whose connection librdmacm completes itself, is refused
// the same way. The kernel's failures are wrapped with rdma_establish,
// among them EINVAL for a second Establish; after Close it returns
// ErrClosed. On an iWARP device the active side gets ESTABLISHED, never
// CONNECT_RESPONSE, and has no Establish to call (see InitQPAttr).
func (id *ID) Establish() error {
	if !id.lock() {
		return ErrClosed
	}
	defer id.unlock()
	if id.c.qp != nil {
		return fmt.Errorf("the ID has a QP from CreateQP, and librdmacm completes its connection: %w",
			os.NewSyscallError("rdma_establish", syscall.EINVAL))
	}
	if id.request {
		return fmt.Errorf("the ID came with a CONNECT_REQUEST: the passive side completes with Accept: %w",
			os.NewSyscallError("rdma_establish", syscall.EINVAL))
	}
	if !id.responded.Load() {
		return fmt.Errorf("no CONNECT_RESPONSE for the ID yet: Connect, and Establish on CONNECT_RESPONSE: %w",
			os.NewSyscallError("rdma_establish", syscall.EINVAL))
	}
	if r, err := C.rdma_establish(id.c); r != 0 {
		return cmError("rdma_establish", err)
	}
	return nil
}

// Notify passes the CM an asynchronous event of the connection's QP
// (rdma_notify), for a QP the ID did not make: ibverbs.EventCommEst, a
// receive on the passive side before the CM's last message arrived,
// makes the connection ESTABLISHED then. The CM of an InfiniBand or
// RoCE device takes EventCommEst and EventPathMig and fails others with
// an error matching syscall.EINVAL, as it does on an ID that has no
// connection under way, and EventCommEst on a connection already
// ESTABLISHED with one matching syscall.EISCONN. The QP's events arrive
// on its Context's Events
// channel (ID.Context); the error names rdma_notify and the event. After
// Close it returns ErrClosed.
func (id *ID) Notify(ev ibverbs.EventType) error {
	if !id.use.Enter() {
		return ErrClosed
	}
	defer id.use.Leave()
	id.mu.Lock() // rdma_notify writes to the ID's channel: see Migrate
	defer id.mu.Unlock()
	if r, err := C.rdma_notify(id.c, C.enum_ibv_event_type(ev)); r != 0 {
		return fmt.Errorf("%s: %w", ev, cmError("rdma_notify", err))
	}
	return nil
}
