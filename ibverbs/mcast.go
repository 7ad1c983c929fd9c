//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"unsafe"
)

// AttachMcast attaches a UD QP to the multicast group gid
// (ibv_attach_mcast): datagrams sent to the group (an AH with the group's
// GID as its destination and RemoteQPN 0xffffff) reach the QP. lid is the
// group's LID on InfiniBand and 0 on RoCE. A QP may be attached to
// several groups; Close detaches it from them. Attaching a group again
// with the same LID is a no-op; attaching it with another LID, while the
// QP is attached with the first, is refused with an error matching
// syscall.EINVAL (the kernel would count two attaches that only one
// detach could undo, and the QP could then never be destroyed).
//
// On RoCE the network (and rxe's own IP stack) also needs the host to be a
// member of the group's IP multicast group on the port's interface, which
// rdma_cm's join (rdmacm.JoinMulticast) arranges and this verb does not.
func (qp *QP) AttachMcast(gid GID, lid uint16) error {
	return qp.mcast("ibv_attach_mcast", gid, lid, true)
}

// DetachMcast detaches the QP from the multicast group gid
// (ibv_detach_mcast).
func (qp *QP) DetachMcast(gid GID, lid uint16) error {
	return qp.mcast("ibv_detach_mcast", gid, lid, false)
}

func (qp *QP) mcast(verb string, gid GID, lid uint16, attach bool) error {
	qp.sendMu.Lock() // as Close, which detaches
	defer qp.sendMu.Unlock()
	return qp.mcastLocked(verb, gid, lid, attach)
}

// mcastLocked attaches or detaches, with qp.sendMu held.
func (qp *QP) mcastLocked(verb string, gid GID, lid uint16, attach bool) error {
	if qp.c == nil {
		return ErrClosed
	}
	if qp.typ != QPTypeUD {
		return fmt.Errorf("%s: a %v QP cannot join a multicast group, only a UD one: %w", verb, qp.typ, syscall.EINVAL)
	}
	if !gid.Addr().IsMulticast() {
		return fmt.Errorf("%s: %v is not a multicast GID: %w", verb, gid, syscall.EINVAL)
	}
	if attach {
		// uverbs counts each attach with another LID as its own, but rxe
		// attaches a GID once, whatever the LID: of the two, only one
		// detach could succeed and the QP could never be destroyed.
		for _, m := range qp.groups {
			if m.gid == gid && m.lid != lid {
				return fmt.Errorf("%s: group %v: already attached to the GID with LID %#x; detach it first: %w", verb, gid, m.lid, syscall.EINVAL)
			}
		}
	}
	g := (*C.union_ibv_gid)(unsafe.Pointer(&gid))
	var rc C.int
	if attach {
		rc = C.ibv_attach_mcast(qp.c, g, C.uint16_t(lid))
	} else {
		rc = C.ibv_detach_mcast(qp.c, g, C.uint16_t(lid))
	}
	if rc != 0 {
		return fmt.Errorf("group %v: %w", gid, verbError(verb, int(rc)))
	}
	m := mcastGroup{gid, lid}
	i := slices.Index(qp.groups, m)
	switch {
	case attach && i < 0: // a second attach is a no-op in the kernel
		qp.groups = append(qp.groups, m)
	case !attach && i >= 0:
		qp.groups = slices.Delete(qp.groups, i, i+1)
	}
	return nil
}

// mcastGroup is a group a QP is attached to.
type mcastGroup struct {
	gid GID
	lid uint16
}

// detachAll detaches the QP from the groups it is attached to, which the
// kernel requires before the QP is destroyed, with qp.sendMu held. A group
// the kernel does not have (EINVAL: something else, such as librdmacm's
// leave, detached it) is forgotten.
func (qp *QP) detachAll() error {
	for len(qp.groups) > 0 {
		g := qp.groups[len(qp.groups)-1]
		err := qp.mcastLocked("ibv_detach_mcast", g.gid, g.lid, false)
		if errors.Is(err, syscall.EINVAL) {
			qp.groups = qp.groups[:len(qp.groups)-1]
		} else if err != nil {
			return err
		}
	}
	return nil
}
