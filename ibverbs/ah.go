//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// AH is an address handle (struct ibv_ah) that addresses UD sends.
type AH struct {
	c  *C.struct_ibv_ah
	pd *PD
	// users counts the open SendBatches whose requests address with it.
	users refs
	// closeMu is held by Close, so that two Closes never destroy the same
	// struct ibv_ah. The posts do not take it.
	closeMu sync.Mutex
}

// CreateAH creates an address handle (ibv_create_ah). A port the device
// does not have fails with an error matching syscall.EINVAL that names
// it. On a RoCE (Ethernet) port an address vector needs a global route,
// IsGlobal and the destination's GID in GRH.DGID: where the provider
// refuses one without, the error says so.
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	if !pd.use.Enter() {
		return nil, ErrClosed
	}
	defer pd.use.Leave()
	if err := pd.ctx.checkPort("ibv_create_ah", int(attr.Port)); err != nil {
		return nil, fmt.Errorf("AH to %s: %w", attr.GRH.DGID, err)
	}
	var a C.struct_ibv_ah_attr
	attr.toC(&a)
	h, err := C.ibv_create_ah(pd.c, &a)
	if h == nil {
		err = attr.noGID(errnoOf("ibv_create_ah", err))
		if !attr.IsGlobal && pd.ctx.isEthernet(int(attr.Port)) {
			return nil, fmt.Errorf("AH on %s port %d, which is RoCE (Ethernet), where an AH needs a global route "+
				"(AHAttr.IsGlobal and the destination's GID in GRH.DGID): %w", pd.ctx.name, attr.Port, err)
		}
		return nil, fmt.Errorf("AH to %s: %w", attr.GRH.DGID, err)
	}
	pd.kids.add()
	return &AH{c: h, pd: pd}, nil
}

// CreateAHTo creates an address handle for remote, sent from the local GID
// at gidIndex on port (ibv_create_ah), with a hop limit of 64. On a RoCE
// port remote needs a GID (see CreateAH).
func (pd *PD) CreateAHTo(remote Endpoint, port, gidIndex int) (*AH, error) {
	if err := checkPortGID("ibv_create_ah", port, gidIndex); err != nil {
		return nil, err
	}
	return pd.CreateAH(AHAttr{
		DLID: remote.LID, Port: uint8(port), IsGlobal: !remote.GID.IsZero(),
		GRH: GlobalRoute{DGID: remote.GID, SGIDIndex: uint8(gidIndex), HopLimit: 64},
	})
}

// AHAttrFromWC works out the address vector of a reply to the sender of a
// UD receive (ibv_init_ah_from_wc): wc is the receive's completion and grh
// the first GRHLen bytes of its buffer, port the port it came in on. The
// vector leads back to the sender's GID, from the local GID the packet was
// sent to, which it finds in port's GID table, with the packet's traffic
// class, hop limit and flow label. grh is needed where wc.Flags has
// WCWithGRH, as every RoCE receive has, and ignored otherwise. A reply
// also needs the sender's QPN (wc.SrcQP) and Q_Key, which the packet does
// not carry.
//
// A packet sent to a multicast group fails with an error matching
// syscall.EINVAL, since no local GID is its destination; one whose
// destination is not in port's GID table (the address was removed since),
// with the destination named. So do a nil wc, a port the device does not
// have, and on a RoCE (Ethernet) port a completion without WCWithGRH,
// which gives no GID to reply to there (the Context asks the port for its
// link layer once).
func (c *Context) AHAttrFromWC(port int, wc *WC, grh []byte) (AHAttr, error) {
	const verb = "ibv_init_ah_from_wc"
	if wc == nil {
		return AHAttr{}, fmt.Errorf("%s: nil WC: %w", verb, syscall.EINVAL)
	}
	if !c.use.Enter() {
		return AHAttr{}, ErrClosed
	}
	defer c.use.Leave()
	if err := c.checkPort(verb, port); err != nil {
		return AHAttr{}, err
	}
	var p unsafe.Pointer
	var dst GID
	if wc.Flags&WCWithGRH == 0 && c.isEthernet(port) {
		return AHAttr{}, fmt.Errorf("%s: %s port %d is RoCE (Ethernet), where a reply needs the sender's GID, "+
			"and the completion has no GRH (WCWithGRH unset): %w", verb, c.name, port, syscall.EINVAL)
	}
	if wc.Flags&WCWithGRH != 0 {
		g, err := ParseGRH(grh)
		if err != nil {
			return AHAttr{}, fmt.Errorf("%s: %w", verb, err)
		}
		if g.Dst.Addr().IsMulticast() {
			return AHAttr{}, fmt.Errorf("%s: the packet was sent to multicast group %s, which names no local GID to reply from; "+
				"reply with an AH to the sender, %s: %w", verb, g.Dst.Addr(), g.Src.Addr(), syscall.EINVAL)
		}
		dst, p = g.Dst, unsafe.Pointer(&grh[0])
	}
	var a C.struct_ibv_ah_attr
	// WC has struct gv_wc's layout, as Poll relies on.
	if rc, err := C.gv_init_ah_from_wc(c.c, C.uint8_t(port), (*C.struct_gv_wc)(unsafe.Pointer(wc)), p, &a); rc != 0 {
		if p != nil {
			return AHAttr{}, fmt.Errorf("%s port %d: the packet's destination, %s, is not a GID of its type in the port's table: %w",
				c.name, port, dst.Addr(), errnoOf(verb, err))
		}
		return AHAttr{}, fmt.Errorf("%s port %d: %w", c.name, port, errnoOf(verb, err))
	}
	return ahFromC(&a), nil
}

// CreateAHFromWC creates an address handle to the sender of a UD receive
// (ibv_create_ah_from_wc), as AHAttrFromWC works it out: wc is the
// receive's completion, grh the first GRHLen bytes of its buffer, port the
// port it came in on. It refuses what AHAttrFromWC refuses.
func (pd *PD) CreateAHFromWC(wc *WC, grh []byte, port int) (*AH, error) {
	if pd.use.Closed() {
		return nil, ErrClosed
	}
	attr, err := pd.ctx.AHAttrFromWC(port, wc, grh)
	if err != nil {
		return nil, err
	}
	return pd.CreateAH(attr)
}

// Raw returns the struct ibv_ah pointer, valid until Close.
func (ah *AH) Raw() unsafe.Pointer { return unsafe.Pointer(ah.c) }

// Close destroys the address handle (ibv_destroy_ah). Closing twice is a
// no-op; while a SendBatch holds requests that address with it, it is an
// error matching syscall.EBUSY. A send posted with it must have completed.
// Two Closes may run at once: one destroys the handle and the other
// returns nil once it has.
func (ah *AH) Close() error {
	ah.closeMu.Lock()
	defer ah.closeMu.Unlock()
	if ah.c == nil {
		return nil
	}
	if n := ah.users.count(); n > 0 {
		return busyError("ibv_destroy_ah", n, "send batch addressing with it", "send batches addressing with it")
	}
	if rc := C.ibv_destroy_ah(ah.c); rc != 0 {
		return verbError("ibv_destroy_ah", int(rc))
	}
	ah.c = nil
	ah.pd.kids.done()
	return nil
}
