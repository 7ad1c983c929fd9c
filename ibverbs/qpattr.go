//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unsafe"
)

// GlobalRoute is the GRH part of an address vector (struct ibv_global_route).
// RoCE always needs one. Its fields are the C struct's of the same names
// in MixedCaps (DGID is dgid, SGIDIndex sgid_index).
type GlobalRoute struct {
	DGID         GID
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
}

// AHAttr is an address vector (struct ibv_ah_attr): how to reach a peer.
// Its fields are the C struct's of the same names in MixedCaps (DLID is
// dlid, IsGlobal is_global, Port port_num).
type AHAttr struct {
	GRH         GlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    bool
	Port        uint8
}

// noGID adds to err, a verb's error for an address vector a, that a's
// source GID index names no GID in its port's table where err is ENODATA,
// as the kernel says it for an index past the table's end or an empty
// entry; it returns err otherwise.
func (a *AHAttr) noGID(err error) error {
	if !a.IsGlobal || !errors.Is(err, syscall.ENODATA) {
		return err
	}
	return fmt.Errorf("GID index %d: port %d's GID table has no GID there: %w", a.GRH.SGIDIndex, a.Port, err)
}

// QPAttr holds queue pair attributes (struct ibv_qp_attr) for Modify and
// Query. Which fields matter is said by a QPAttrMask. Its fields are the C
// struct's of the same names in MixedCaps (RQPSN is rq_psn, AH ah_attr,
// Port port_num, RetryCnt retry_cnt); see ibv_modify_qp(3).
type QPAttr struct {
	State           QPState
	CurState        QPState
	PathMTU         MTU
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPN         uint32
	Access          Access
	Cap             QPCap
	AH              AHAttr
	PKeyIndex       uint16
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	Port            uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	SQDraining      bool
	// EnSQDAsync, with QPAttrEnSQDAsync on a move to SQD, asks for
	// EventSQDrained once the send queue has drained
	// (en_sqd_async_notify): the specification has a device raise that
	// event only when asked (soft-RoCE raises it either way: its
	// requester does not read the flag).
	EnSQDAsync bool
}

func (a *AHAttr) toC(c *C.struct_ibv_ah_attr) {
	*c = C.struct_ibv_ah_attr{}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&c.grh.dgid)), 16), a.GRH.DGID[:])
	c.grh.flow_label = C.uint32_t(a.GRH.FlowLabel)
	c.grh.sgid_index = C.uint8_t(a.GRH.SGIDIndex)
	c.grh.hop_limit = C.uint8_t(a.GRH.HopLimit)
	c.grh.traffic_class = C.uint8_t(a.GRH.TrafficClass)
	c.dlid = C.uint16_t(a.DLID)
	c.sl = C.uint8_t(a.SL)
	c.src_path_bits = C.uint8_t(a.SrcPathBits)
	c.static_rate = C.uint8_t(a.StaticRate)
	if a.IsGlobal {
		c.is_global = 1
	}
	c.port_num = C.uint8_t(a.Port)
}

func ahFromC(c *C.struct_ibv_ah_attr) AHAttr {
	var a AHAttr
	copy(a.GRH.DGID[:], unsafe.Slice((*byte)(unsafe.Pointer(&c.grh.dgid)), 16))
	a.GRH.FlowLabel = uint32(c.grh.flow_label)
	a.GRH.SGIDIndex = uint8(c.grh.sgid_index)
	a.GRH.HopLimit = uint8(c.grh.hop_limit)
	a.GRH.TrafficClass = uint8(c.grh.traffic_class)
	a.DLID = uint16(c.dlid)
	a.SL = uint8(c.sl)
	a.SrcPathBits = uint8(c.src_path_bits)
	a.StaticRate = uint8(c.static_rate)
	a.IsGlobal = c.is_global != 0
	a.Port = uint8(c.port_num)
	return a
}

// qpAttrFields are the mask bits whose attributes QPAttr has fields for.
const qpAttrFields = QPAttrState | QPAttrCurState | QPAttrAccessFlags | QPAttrPKeyIndex | QPAttrPort |
	QPAttrQKey | QPAttrAV | QPAttrPathMTU | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry |
	QPAttrRQPSN | QPAttrMaxQPRdAtomic | QPAttrMinRNRTimer | QPAttrSQPSN | QPAttrMaxDestRdAtomic |
	QPAttrCap | QPAttrDestQPN | QPAttrEnSQDAsync

// Modify changes the QP's attributes selected by mask (ibv_modify_qp), one
// to one with C. The mask bits whose attributes QPAttr has no fields for
// (QPAttrAltPath, QPAttrPathMigState, QPAttrRateLimit) or that verbs.h
// does not define are refused with an error matching syscall.EINVAL that
// names them, before the QP is looked at: the verb would otherwise apply
// zeros. So is a nil attr.
//
// A state transition that the verb refuses with EINVAL is said with the
// state the QP is in (ibv_query_qp, on that error path only) and the
// states the one asked for is reached from, as ibv_modify_qp(3) lists
// them: INIT from RESET or INIT, RTR from INIT, RTS from RTR, RTS, SQD
// or SQE, SQD from RTS or SQD; RESET from any; ERR from any but RESET
// (the kernel's table of transitions, as the InfiniBand spec's: a QP in
// RESET goes to INIT, or stays in RESET). Where the move is legal, the
// error names, for the QP's type, the attributes the move requires that
// the mask lacks and the bits it has that the move does not take (the
// kernel's table, ib_modify_qp_is_ok's: RC's RESET to INIT requires
// QPAttrPKeyIndex, QPAttrPort and QPAttrAccessFlags, UD's QPAttrQKey in
// place of the last); and, on a RoCE (Ethernet) port, an address vector
// (QPAttrAV) without a global route, which RoCE needs, or with a source
// and a destination GID of different IP families.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	if bad := mask &^ qpAttrFields; bad != 0 {
		them := "them"
		if bad&(bad-1) == 0 {
			them = "it"
		}
		return fmt.Errorf("ibv_modify_qp: QP %#x: mask %s: QPAttr has no field for %s: %w",
			qp.num, maskNames(bad), them, syscall.EINVAL)
	}
	if attr == nil {
		return fmt.Errorf("ibv_modify_qp: QP %#x: nil QPAttr: %w", qp.num, syscall.EINVAL)
	}
	if !qp.use.Enter() {
		return ErrClosed
	}
	defer qp.use.Leave()
	if mask&QPAttrCap != 0 {
		if err := attr.Cap.check("ibv_modify_qp"); err != nil {
			return err
		}
	}
	var a C.struct_ibv_qp_attr
	a.qp_state = C.enum_ibv_qp_state(attr.State)
	a.cur_qp_state = C.enum_ibv_qp_state(attr.CurState)
	a.path_mtu = C.enum_ibv_mtu(attr.PathMTU)
	a.qkey = C.uint32_t(attr.QKey)
	a.rq_psn = C.uint32_t(attr.RQPSN)
	a.sq_psn = C.uint32_t(attr.SQPSN)
	a.dest_qp_num = C.uint32_t(attr.DestQPN)
	a.qp_access_flags = C.uint(attr.Access)
	a.cap.max_send_wr = C.uint32_t(attr.Cap.MaxSendWR)
	a.cap.max_recv_wr = C.uint32_t(attr.Cap.MaxRecvWR)
	a.cap.max_send_sge = C.uint32_t(attr.Cap.MaxSendSGE)
	a.cap.max_recv_sge = C.uint32_t(attr.Cap.MaxRecvSGE)
	a.cap.max_inline_data = C.uint32_t(attr.Cap.MaxInline)
	attr.AH.toC(&a.ah_attr)
	a.pkey_index = C.uint16_t(attr.PKeyIndex)
	a.max_rd_atomic = C.uint8_t(attr.MaxRdAtomic)
	a.max_dest_rd_atomic = C.uint8_t(attr.MaxDestRdAtomic)
	a.min_rnr_timer = C.uint8_t(attr.MinRNRTimer)
	a.port_num = C.uint8_t(attr.Port)
	a.timeout = C.uint8_t(attr.Timeout)
	a.retry_cnt = C.uint8_t(attr.RetryCnt)
	a.rnr_retry = C.uint8_t(attr.RNRRetry)
	if attr.EnSQDAsync {
		a.en_sqd_async_notify = 1
	}
	if rc := C.ibv_modify_qp(qp.c, &a, C.int(mask)); rc != 0 {
		return qp.modifyError(attr, mask, rc)
	}
	return nil
}

// modifyError is Modify's error for rc, what ibv_modify_qp returned for
// attr and mask. On EINVAL it says why, where it can tell: a move from
// the QP's state that is not legal, a mask without the attributes the
// move requires or with some it does not take (for the QP's type), or an
// address vector that a RoCE port refuses. The caller has entered qp.
func (qp *QP) modifyError(attr *QPAttr, mask QPAttrMask, rc C.int) error {
	err := verbError("ibv_modify_qp", int(rc))
	if mask&QPAttrAV != 0 {
		err = attr.AH.noGID(err)
	}
	einval := rc == C.int(syscall.EINVAL) || rc == -C.int(syscall.EINVAL)
	var av string
	if einval && mask&QPAttrAV != 0 {
		av = qp.avProblem(&attr.AH)
	}
	if mask&QPAttrState == 0 { // attributes only: no state to name
		if av != "" {
			return fmt.Errorf("QP %#x: %s: %w", qp.num, av, err)
		}
		return fmt.Errorf("QP %#x: %w", qp.num, err)
	}
	if einval {
		if why := qp.transition(attr.State, mask, attr.CurState, av); why != "" {
			return fmt.Errorf("QP %#x to %s: %s: %w", qp.num, attr.State, why, err)
		}
		if av != "" {
			return fmt.Errorf("QP %#x to %s: %s: %w", qp.num, attr.State, av, err)
		}
	}
	return fmt.Errorf("QP %#x to %s: %w", qp.num, attr.State, err)
}

// maskRule is what the kernel asks of the mask of one move of a QP of
// one type (ib_modify_qp_is_ok): the attributes the move requires, and
// those it allows besides them and QPAttrState. Any other bit fails the
// verb with EINVAL.
type maskRule struct{ req, opt QPAttrMask }

// qpMove is a move from one QP state to another.
type qpMove struct{ from, to QPState }

// Attribute sets that several moves of the connected types allow.
const (
	pathOpts   = QPAttrAltPath | QPAttrAccessFlags | QPAttrPathMigState
	ucRTSOpts  = QPAttrCurState | pathOpts
	rcRTSOpts  = ucRTSOpts | QPAttrMinRNRTimer
	udRTSOpts  = QPAttrCurState | QPAttrQKey
	rawRTSOpts = QPAttrRateLimit
	rcRTRReq   = QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
	rcRTSReq   = QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic
)

// modifyRules are the legal moves of Modify and, for each, the mask each
// QP type needs: the InfiniBand specification's table as the kernel
// keeps it (qp_state_table in drivers/infiniband/core/verbs.c), which
// soft-RoCE and the other providers check a mask against. A move not
// listed is not legal; a type not listed under a legal move takes
// QPAttrState alone. ToInit, ToRTR and ToRTS ask for the required
// attributes from here; Modify names what a mask lacks or has too many
// of from here where the verb refuses it with EINVAL.
var modifyRules = func() map[qpMove]map[QPType]maskRule {
	m := map[qpMove]map[QPType]maskRule{
		{QPStateReset, QPStateInit}: {
			QPTypeRC:        {req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			QPTypeUC:        {req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			QPTypeUD:        {req: QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
			QPTypeRawPacket: {req: QPAttrPort},
		},
		{QPStateInit, QPStateInit}: {
			QPTypeRC: {opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			QPTypeUC: {opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags},
			QPTypeUD: {opt: QPAttrPKeyIndex | QPAttrPort | QPAttrQKey},
		},
		{QPStateInit, QPStateRTR}: {
			QPTypeRC: {req: rcRTRReq | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer,
				opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
			QPTypeUC: {req: rcRTRReq, opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex},
			QPTypeUD: {opt: QPAttrPKeyIndex | QPAttrQKey},
		},
		{QPStateRTR, QPStateRTS}: {
			QPTypeRC:        {req: rcRTSReq, opt: rcRTSOpts},
			QPTypeUC:        {req: QPAttrSQPSN, opt: ucRTSOpts},
			QPTypeUD:        {req: QPAttrSQPSN, opt: udRTSOpts},
			QPTypeRawPacket: {opt: rawRTSOpts},
		},
		{QPStateRTS, QPStateRTS}: {
			QPTypeRC:        {opt: rcRTSOpts},
			QPTypeUC:        {opt: ucRTSOpts},
			QPTypeUD:        {opt: udRTSOpts},
			QPTypeRawPacket: {opt: rawRTSOpts},
		},
		{QPStateRTS, QPStateSQD}: {
			QPTypeRC: {opt: QPAttrEnSQDAsync},
			QPTypeUC: {opt: QPAttrEnSQDAsync},
			QPTypeUD: {opt: QPAttrEnSQDAsync},
		},
		{QPStateSQD, QPStateRTS}: {
			QPTypeRC: {opt: rcRTSOpts},
			QPTypeUC: {opt: ucRTSOpts},
			QPTypeUD: {opt: udRTSOpts},
		},
		{QPStateSQD, QPStateSQD}: {
			QPTypeRC: {opt: QPAttrPort | QPAttrAV | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry |
				QPAttrMaxQPRdAtomic | QPAttrMaxDestRdAtomic | QPAttrPKeyIndex | QPAttrMinRNRTimer | pathOpts},
			QPTypeUC: {opt: QPAttrAV | QPAttrPKeyIndex | pathOpts},
			QPTypeUD: {opt: QPAttrPKeyIndex | QPAttrQKey},
		},
		{QPStateSQE, QPStateRTS}: {
			QPTypeUC: {opt: QPAttrCurState | QPAttrAccessFlags},
			QPTypeUD: {opt: udRTSOpts},
		},
	}
	// RESET from any state, ERR from any but RESET, with the state alone.
	for s := QPStateReset; s <= QPStateError; s++ {
		m[qpMove{s, QPStateReset}] = nil
		if s != QPStateReset {
			m[qpMove{s, QPStateError}] = nil
		}
	}
	return m
}()

// required returns the attributes the kernel requires of a QP of type typ
// for move m (modifyRules), and whether the table knows the move and
// type.
func required(typ QPType, m qpMove) (QPAttrMask, bool) {
	rules, ok := modifyRules[m]
	if !ok || !knownType(typ) {
		return 0, false
	}
	return rules[typ].req, true
}

// knownType says whether modifyRules has the masks of QPs of type typ.
func knownType(typ QPType) bool {
	switch typ {
	case QPTypeRC, QPTypeUC, QPTypeUD, QPTypeRawPacket:
		return true
	}
	return false
}

// maskProblem says what is wrong with mask for the legal move m of a QP of
// type typ (modifyRules): the required attributes it lacks, and the bits
// the move does not take; "" where it has neither, or the table does not
// know the type.
func maskProblem(typ QPType, m qpMove, mask QPAttrMask) string {
	if !knownType(typ) {
		return ""
	}
	r := modifyRules[m][typ]
	lacks := r.req &^ mask
	extra := mask &^ (r.req | r.opt | QPAttrState)
	if lacks == 0 && extra == 0 {
		return ""
	}
	a := "a"
	if typ == QPTypeRC {
		a = "an"
	}
	var parts []string
	if lacks != 0 {
		parts = append(parts, fmt.Sprintf("lacks %s, which the move requires", andList(maskBits(lacks))))
	}
	if extra != 0 {
		parts = append(parts, fmt.Sprintf("has %s, which the move does not take", andList(maskBits(extra))))
	}
	return fmt.Sprintf("the mask is wrong for %s %s QP's move from %s to %s: it %s",
		a, typ, m.from, m.to, strings.Join(parts, ", and "))
}

// transition says, for a move to state that the verb refused with
// EINVAL, which state the QP is in (ibv_query_qp), and what judgeMove
// says of the move. Where the mask has QPAttrCurState, the kernel judges
// the move from claimed, the attribute's CurState, not from the state the
// QP is in, and so does transition, saying so where the two differ. It
// returns "" where the query fails. The caller has entered qp.
func (qp *QP) transition(to QPState, mask QPAttrMask, claimed QPState, av string) string {
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	if C.ibv_query_qp(qp.c, &a, C.IBV_QP_STATE, &ia) != 0 {
		return ""
	}
	cur := QPState(a.qp_state)
	from, why := cur, "the QP is in "+cur.String()
	if mask&QPAttrCurState != 0 && claimed != cur {
		from, why = claimed, why+", and the mask's CurState says "+claimed.String()
	}
	if j := judgeMove(qp.typ, from, to, mask, av); j != "" {
		why += ", " + j
	}
	return why
}

// judgeMove says, of a move of a QP of type typ from state from to state
// to that the verb refused, which states the move needs where from is
// none of them; or, where it is one, that the move is legal, and what
// mask, with the attributes in it, was wrong for it: the required
// attributes the mask lacks and the bits the move does not take
// (modifyRules), and what av, the address vector's problem (avProblem),
// says. It returns "" for a state no move reaches.
func judgeMove(typ QPType, from, to QPState, mask QPAttrMask, av string) string {
	move := qpMove{from, to}
	if _, ok := modifyRules[move]; ok {
		var why []string
		if p := maskProblem(typ, move, mask); p != "" {
			why = append(why, p)
		}
		if av != "" {
			why = append(why, av)
		}
		if len(why) == 0 {
			why = append(why, "an attribute or the mask is wrong for the QP's type or device")
		}
		return fmt.Sprintf("from which %s may be reached: %s", to, strings.Join(why, "; "))
	}
	if to == QPStateError && from == QPStateReset {
		return "from which ERR is not reached (ERR is reached from any state but RESET; a QP in RESET has no work to flush)"
	}
	var states []string
	for s := QPStateReset; s <= QPStateError; s++ {
		if _, ok := modifyRules[qpMove{s, to}]; ok {
			states = append(states, s.String())
		}
	}
	if len(states) == 0 { // a state no move reaches
		return ""
	}
	return fmt.Sprintf("and %s is reached from %s", to, orList(states))
}

// avProblem says, for an address vector that the verb refused with
// EINVAL, what the kernel finds wrong with it on a RoCE (Ethernet) port:
// no global route, which RoCE needs (ToRTR and Connect make none for a
// remote Endpoint without a GID), or a source GID (ibv_query_gid_ex, on
// this error path only) and a destination GID of different IP families,
// IPv4 and IPv6, between which the kernel resolves no route. It returns
// "" for anything else. The caller has entered qp.
func (qp *QP) avProblem(ah *AHAttr) string {
	ctx := qp.pd.ctx
	if !ctx.isEthernet(int(ah.Port)) {
		return ""
	}
	if !ah.IsGlobal {
		return fmt.Sprintf("the address vector on %s port %d, which is RoCE (Ethernet), has no global route, "+
			"which RoCE needs (AHAttr.IsGlobal and the destination's GID in GRH.DGID; for ToRTR and Connect, "+
			"a remote Endpoint with a GID)", ctx.name, ah.Port)
	}
	src, err := ctx.QueryGID(int(ah.Port), int(ah.GRH.SGIDIndex))
	if err != nil || src.GID.IsZero() || ah.GRH.DGID.IsZero() {
		return ""
	}
	if s4, d4 := src.GID.Addr().Is4(), ah.GRH.DGID.Addr().Is4(); s4 != d4 {
		return fmt.Sprintf("the source GID %s (index %d of %s port %d) and the destination GID %s are of different IP families "+
			"(%s and %s): RoCE v2 cannot route between them", src.GID, ah.GRH.SGIDIndex, ctx.name, ah.Port,
			ah.GRH.DGID, ipFamily(s4), ipFamily(d4))
	}
	return ""
}

// ipFamily names an address's family: IPv4 where is4, else IPv6.
func ipFamily(is4 bool) string {
	if is4 {
		return "IPv4"
	}
	return "IPv6"
}

// orList joins names as "A", "A or B", "A, B or C".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// andList joins names as "A", "A and B", "A, B and C".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// qpAttrNames are the mask bits' names, in the bits' order.
var qpAttrNames = []struct {
	bit  QPAttrMask
	name string
}{
	{QPAttrState, "QPAttrState"}, {QPAttrCurState, "QPAttrCurState"}, {QPAttrEnSQDAsync, "QPAttrEnSQDAsync"},
	{QPAttrAccessFlags, "QPAttrAccessFlags"}, {QPAttrPKeyIndex, "QPAttrPKeyIndex"}, {QPAttrPort, "QPAttrPort"},
	{QPAttrQKey, "QPAttrQKey"}, {QPAttrAV, "QPAttrAV"}, {QPAttrPathMTU, "QPAttrPathMTU"},
	{QPAttrTimeout, "QPAttrTimeout"}, {QPAttrRetryCnt, "QPAttrRetryCnt"}, {QPAttrRNRRetry, "QPAttrRNRRetry"},
	{QPAttrRQPSN, "QPAttrRQPSN"}, {QPAttrMaxQPRdAtomic, "QPAttrMaxQPRdAtomic"}, {QPAttrAltPath, "QPAttrAltPath"},
	{QPAttrMinRNRTimer, "QPAttrMinRNRTimer"}, {QPAttrSQPSN, "QPAttrSQPSN"},
	{QPAttrMaxDestRdAtomic, "QPAttrMaxDestRdAtomic"}, {QPAttrPathMigState, "QPAttrPathMigState"},
	{QPAttrCap, "QPAttrCap"}, {QPAttrDestQPN, "QPAttrDestQPN"}, {QPAttrRateLimit, "QPAttrRateLimit"},
}

// maskBits names the bits of m, in their order, the ones verbs.h does not
// define together as "unknown bits 0x...".
func maskBits(m QPAttrMask) []string {
	var names []string
	for _, b := range qpAttrNames {
		if m&b.bit != 0 {
			names = append(names, b.name)
			m &^= b.bit
		}
	}
	if m != 0 {
		names = append(names, fmt.Sprintf("unknown bits %#x", uint32(m)))
	}
	return names
}

// maskNames names the bits of m that Modify refuses.
func maskNames(m QPAttrMask) string { return strings.Join(maskBits(m), ", ") }

// Query returns the QP's current attributes and its init capacities
// (ibv_query_qp with every mask bit). Its CurState is State, the state
// the QP is in: the verbs' cur_qp_state is an input of Modify
// (QPAttrCurState), which providers do not fill on a query (soft-RoCE
// leaves it 0, RESET, whatever the state).
func (qp *QP) Query() (QPAttr, error) {
	if !qp.use.Enter() {
		return QPAttr{}, ErrClosed
	}
	defer qp.use.Leave()
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	mask := C.int(0x1fffff)
	if rc := C.ibv_query_qp(qp.c, &a, mask, &ia); rc != 0 {
		return QPAttr{}, verbError("ibv_query_qp", int(rc))
	}
	r := qpAttrFromC(&a)
	r.CurState = r.State
	return r, nil
}

// qpAttrFromC converts a C struct ibv_qp_attr, its cur_qp_state as it is.
func qpAttrFromC(a *C.struct_ibv_qp_attr) QPAttr {
	return QPAttr{
		State: QPState(a.qp_state), CurState: QPState(a.cur_qp_state), PathMTU: MTU(a.path_mtu),
		QKey: uint32(a.qkey), RQPSN: uint32(a.rq_psn), SQPSN: uint32(a.sq_psn),
		DestQPN: uint32(a.dest_qp_num), Access: Access(a.qp_access_flags),
		Cap: QPCap{MaxSendWR: int(a.cap.max_send_wr), MaxRecvWR: int(a.cap.max_recv_wr),
			MaxSendSGE: int(a.cap.max_send_sge), MaxRecvSGE: int(a.cap.max_recv_sge),
			MaxInline: int(a.cap.max_inline_data)},
		AH: ahFromC(&a.ah_attr), PKeyIndex: uint16(a.pkey_index),
		MaxRdAtomic: uint8(a.max_rd_atomic), MaxDestRdAtomic: uint8(a.max_dest_rd_atomic),
		MinRNRTimer: uint8(a.min_rnr_timer), Port: uint8(a.port_num), Timeout: uint8(a.timeout),
		RetryCnt: uint8(a.retry_cnt), RNRRetry: uint8(a.rnr_retry), SQDraining: a.sq_draining != 0,
		EnSQDAsync: a.en_sqd_async_notify != 0,
	}
}

// QPAttrFromRaw converts the C struct ibv_qp_attr that raw points to, such
// as the one rdma_init_qp_attr fills, to a QPAttr. The struct must be laid
// out as the libibverbs headers this package was built with say. Every
// field is converted, whatever attribute mask the C call returned; the
// struct is read during the call only. It serves bindings of other C
// libraries, such as package rdmacm. A nil raw panics.
func QPAttrFromRaw(raw unsafe.Pointer) QPAttr {
	return qpAttrFromC((*C.struct_ibv_qp_attr)(raw))
}

// State returns the QP's current state (ibv_query_qp).
func (qp *QP) State() (QPState, error) {
	a, err := qp.Query()
	return a.State, err
}

// ConnParams are the settings Connect and the To* steps use. Zero fields
// take the defaults shown, as perftest does; a field without one is used
// as it is, zero included.
type ConnParams struct {
	Port      int    // 1
	GIDIndex  int    // required on RoCE: the local GID's index (see SelectGID)
	PKeyIndex uint16 // 0
	QKey      uint32 // UD: 0x11111111 (Endpoint reports it once ToInit set it)
	// Access is the remote access the QP allows: default for RC is remote
	// write, read and atomic; for UC remote write.
	Access  Access
	MTU     MTU   // the smaller of the local active MTU and the peer's
	Timeout uint8 // DefaultAckTimeout (4.096 µs × 2^14 ≈ 67 ms)
	// RetryCnt and RNRRetry are how often an RC QP resends unanswered
	// packets, and retries a peer that had no receive posted (7 there
	// meaning for ever): 0 to 7, as Retries reads them, so that zero
	// takes the default of 7 and a negative value asks for none.
	RetryCnt    int
	RNRRetry    int
	MinRNRTimer uint8 // DefaultMinRNRTimer (0.64 ms)
	// MaxRdAtomic is the initiator depth: how many RDMA reads and atomics
	// this QP may have outstanding. Default: the device's limit, capped by
	// the remote Endpoint's RdAtomic, or at 16 when that is unknown.
	MaxRdAtomic uint8
	// MaxDestRdAtomic is the responder resources: how many the peer may
	// have outstanding against this QP. Default: the device's limit, which
	// is what (*QP).Endpoint offers the peer as RdAtomic.
	MaxDestRdAtomic uint8
	// SL is the service level of the path to the peer (0); TrafficClass,
	// HopLimit and FlowLabel the GRH's fields of the address vector, which
	// RoCE v2 puts in the IP header: the traffic class byte (DSCP and
	// ECN, 0), the hop limit or TTL (64) and the IPv6 flow label (0).
	SL           uint8
	TrafficClass uint8
	HopLimit     uint8
	FlowLabel    uint32
}

const defaultQKey = 0x11111111

// DefaultAckTimeout is the local ACK timeout an RC QP gets from
// ConnParams unless told otherwise: 14, which the verbs read as 4.096 µs
// × 2^14, about 67 ms (perftest's default too).
const DefaultAckTimeout = 14

// DefaultMinRNRTimer is the RNR NAK timer an RC QP gets unless told
// otherwise, by ConnParams here and by rdmacm's Dial and Accept: 12, which
// the verbs read as 0.64 ms (0 would be 655.36 ms).
const DefaultMinRNRTimer = 12

// Retries turns a retry count as ConnParams takes it into the 3-bit
// value of the QP attribute (retry_cnt, rnr_retry): 0 is the default, 7;
// a negative value is 0, no retries; above 7 is 7. rdmacm.Config's
// RNRRetryCount reads the same; its RetryCount takes 0 for
// rdmacm.DefaultRetryCount, 6, as soft-RoCE retries for ever at 7.
func Retries(n int) uint8 {
	switch {
	case n == 0:
		return 7
	case n < 0:
		return 0
	}
	return uint8(min(n, 7))
}

func (p *ConnParams) fill(qp *QP) error {
	if p.Port == 0 {
		p.Port = 1
	}
	if err := checkPortGID("ConnParams", p.Port, p.GIDIndex); err != nil {
		return err
	}
	if p.QKey == 0 {
		p.QKey = defaultQKey
	}
	if p.Access == 0 {
		switch qp.typ {
		case QPTypeRC:
			p.Access = AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessLocalWrite
		case QPTypeUC:
			p.Access = AccessRemoteWrite | AccessLocalWrite
		}
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultAckTimeout
	}
	if p.MinRNRTimer == 0 {
		p.MinRNRTimer = DefaultMinRNRTimer
	}
	if p.HopLimit == 0 {
		p.HopLimit = 64
	}
	if qp.typ == QPTypeRC && (p.MaxRdAtomic == 0 || p.MaxDestRdAtomic == 0) {
		resp, init, err := qp.pd.ctx.rdAtomicLimits()
		if err != nil {
			return err
		}
		if p.MaxDestRdAtomic == 0 {
			p.MaxDestRdAtomic = rdAtomic(resp)
		}
		if p.MaxRdAtomic == 0 {
			peer := 16 // unknown: a depth every RC device accepts
			if qp.peerRdAtomic > 0 {
				peer = int(qp.peerRdAtomic)
			}
			p.MaxRdAtomic = rdAtomic(min(init, peer))
		}
	}
	return nil
}

// checkPortGID refuses a port or GID index that the verbs' 8-bit fields
// cannot hold, which would otherwise wrap to another (GID 256 to GID 0).
func checkPortGID(what string, port, gidIndex int) error {
	if port < 1 || port > 255 {
		return fmt.Errorf("%s: port %d: want 1 to 255: %w", what, port, syscall.EINVAL)
	}
	if gidIndex < 0 || gidIndex > MaxGIDIndex {
		return fmt.Errorf("%s: GID index %d: want 0 to %d: %w", what, gidIndex, MaxGIDIndex, syscall.EINVAL)
	}
	return nil
}

// rdAtomic clamps a device's read/atomic limit to the uint8 the QP
// attributes hold, and to at least 1.
func rdAtomic(n int) uint8 { return uint8(min(max(n, 1), 255)) }

// ToInit moves the QP from RESET to INIT with the mask its type needs
// (ibv_modify_qp; for RC, ibv_query_device_ex the first time on its
// context, for ConnParams' read/atomic defaults).
func (qp *QP) ToInit(p ConnParams) error {
	if err := p.fill(qp); err != nil {
		return err
	}
	a := QPAttr{State: QPStateInit, PKeyIndex: p.PKeyIndex, Port: uint8(p.Port), Access: p.Access, QKey: p.QKey}
	// The attributes the kernel requires (modifyRules); a type the table
	// does not know gets RC's.
	req, ok := required(qp.typ, qpMove{QPStateReset, QPStateInit})
	if !ok {
		req = QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags
	}
	return qp.Modify(&a, QPAttrState|req)
}

// ToRTR moves the QP from INIT to ready-to-receive, aimed at remote
// (ibv_modify_qp; ibv_query_port for the active MTU when ConnParams.MTU is
// 0). It remembers remote.RdAtomic as the cap on ToRTS's default
// MaxRdAtomic.
func (qp *QP) ToRTR(remote Endpoint, p ConnParams) error {
	qp.peerRdAtomic = remote.RdAtomic
	if err := p.fill(qp); err != nil {
		return err
	}
	a := QPAttr{State: QPStateRTR}
	// The attributes the kernel requires (modifyRules): those of the path
	// to remote for RC and UC, none for UD and raw packet QPs.
	req, _ := required(qp.typ, qpMove{QPStateInit, QPStateRTR})
	if qp.typ == QPTypeRC || qp.typ == QPTypeUC {
		mtu := p.MTU
		if mtu == 0 {
			pa, err := qp.pd.ctx.QueryPort(p.Port)
			if err != nil {
				return err
			}
			mtu = pa.ActiveMTU
			if remote.MTU != 0 && remote.MTU < mtu {
				mtu = remote.MTU
			}
		}
		a.PathMTU = mtu
		a.DestQPN = remote.QPN
		a.RQPSN = remote.PSN
		a.AH = qp.ahFor(remote, p)
		a.MaxDestRdAtomic = p.MaxDestRdAtomic // RC's
		a.MinRNRTimer = p.MinRNRTimer
	}
	return qp.Modify(&a, QPAttrState|req)
}

// ToRTS moves the QP from RTR to ready-to-send with send PSN qp.PSN()
// (ibv_modify_qp); a raw packet QP, which has no PSN, with its state alone.
func (qp *QP) ToRTS(p ConnParams) error {
	if err := p.fill(qp); err != nil {
		return err
	}
	a := QPAttr{State: QPStateRTS, SQPSN: qp.psn, Timeout: p.Timeout, RetryCnt: Retries(p.RetryCnt),
		RNRRetry: Retries(p.RNRRetry), MaxRdAtomic: p.MaxRdAtomic}
	return qp.Modify(&a, rtsMask(qp.typ))
}

// rtsMask is the mask ToRTS modifies a QP of type typ with: the attributes
// the kernel requires from RTR to RTS (modifyRules). A raw packet QP has
// no send PSN, nor any other: the kernel refuses the mask with one. A type
// the table does not know gets a send PSN.
func rtsMask(typ QPType) QPAttrMask {
	if req, ok := required(typ, qpMove{QPStateRTR, QPStateRTS}); ok {
		return QPAttrState | req
	}
	return QPAttrState | QPAttrSQPSN
}

// Connect takes the QP from RESET through INIT and RTR to RTS, aimed at
// remote (for UD, remote is unused: address each send with an AH): ToInit,
// ToRTR and ToRTS, three ibv_modify_qp calls.
func (qp *QP) Connect(remote Endpoint, p ConnParams) error {
	if err := qp.ToInit(p); err != nil {
		return err
	}
	if err := qp.ToRTR(remote, p); err != nil {
		return err
	}
	return qp.ToRTS(p)
}

// ToError moves the QP to the error state (ibv_modify_qp): outstanding
// work requests complete with WCWRFlushErr.
func (qp *QP) ToError() error {
	return qp.Modify(&QPAttr{State: QPStateError}, QPAttrState)
}

// Reset moves the QP to RESET (ibv_modify_qp), dropping all its work;
// Connect can then reuse it.
func (qp *QP) Reset() error {
	return qp.Modify(&QPAttr{State: QPStateReset}, QPAttrState)
}

func (qp *QP) ahFor(remote Endpoint, p ConnParams) AHAttr {
	a := AHAttr{DLID: remote.LID, SL: p.SL, Port: uint8(p.Port)}
	if !remote.GID.IsZero() {
		a.IsGlobal = true
		a.GRH = GlobalRoute{DGID: remote.GID, SGIDIndex: uint8(p.GIDIndex), HopLimit: p.HopLimit,
			TrafficClass: p.TrafficClass, FlowLabel: p.FlowLabel}
	}
	return a
}

// Endpoint describes this QP for a peer: its number and PSN, the given
// port's LID (ibv_query_port), active MTU and the GID at gidIndex
// (ibv_query_gid_ex; an index past 255, which the verbs' 8-bit GID index
// cannot hold, fails with EINVAL), and for RC the device's limit on reads and atomics
// it serves at once (ibv_query_device_ex; the default
// ConnParams.MaxDestRdAtomic: lower RdAtomic if you lower that).
//
// For UD, QKey is the Q_Key the QP has (ibv_query_qp): the one ToInit
// (ConnParams.QKey), Modify or the library that made the QP (rdma_cm)
// gave it. A UD QP still in RESET has none yet, and reports the one ToInit
// gives by default, 0x11111111: to advertise another, move the QP to INIT
// before taking its Endpoint. Other types report that default.
func (qp *QP) Endpoint(port, gidIndex int) (Endpoint, error) {
	if !qp.use.Enter() {
		return Endpoint{}, ErrClosed
	}
	defer qp.use.Leave()
	// Endpoint.GIDIndex and the GID index that Connect's address vector
	// takes are 8 bits: refuse an index they would wrap (256 to 0).
	if err := checkPortGID("Endpoint", port, gidIndex); err != nil {
		return Endpoint{}, err
	}
	ctx := qp.pd.ctx
	pa, err := ctx.QueryPort(port)
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{QPN: qp.num, PSN: qp.psn, LID: pa.LID, MTU: pa.ActiveMTU, Port: uint8(port), QKey: defaultQKey}
	if qp.typ == QPTypeUD {
		if e.QKey, err = qp.qkey(); err != nil {
			return Endpoint{}, err
		}
	}
	if qp.typ == QPTypeRC {
		resp, _, err := ctx.rdAtomicLimits()
		if err != nil {
			return Endpoint{}, err
		}
		e.RdAtomic = rdAtomic(resp)
	}
	if pa.LinkLayer == LinkLayerEthernet || gidIndex > 0 {
		g, err := ctx.QueryGID(port, gidIndex)
		if err != nil {
			return Endpoint{}, err
		}
		if g.GID.IsZero() {
			return Endpoint{}, fmt.Errorf("GID index %d of %s port %d is empty: %w", gidIndex, ctx.name, port, syscall.EINVAL)
		}
		e.GID, e.GIDIndex, e.GIDType = g.GID, uint8(gidIndex), g.Type
	}
	return e, nil
}

// qkey returns the Q_Key of a UD QP past RESET, and for one in RESET the
// default that ToInit gives. The caller has entered qp.
func (qp *QP) qkey() (uint32, error) {
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	if rc := C.ibv_query_qp(qp.c, &a, C.IBV_QP_STATE|C.IBV_QP_QKEY, &ia); rc != 0 {
		return 0, fmt.Errorf("QP %#x's Q_Key: %w", qp.num, verbError("ibv_query_qp", int(rc)))
	}
	if a.qp_state == C.IBV_QPS_RESET {
		return defaultQKey, nil
	}
	return uint32(a.qkey), nil
}

// AHAttrFromRaw converts a C struct ibv_ah_attr, such as the one an
// rdma_cm UD event carries, to an AHAttr.
func AHAttrFromRaw(raw unsafe.Pointer) AHAttr {
	return ahFromC((*C.struct_ibv_ah_attr)(raw))
}
