package ibverbs

import "fmt"

// This file holds the named types for libibverbs' enums and flags. They are
// plain Go so that pure-Go packages (the exchange protocol, reports) can use
// them on any platform; constants_test.go checks every value against verbs.h.

// HugePageSize is the page size of a Buffer made with
// BufferOptions.HugePages: 2 MiB, x86-64's and arm64's default huge page.
const HugePageSize = 2 << 20

// MTU is a path MTU as ibverbs encodes it (enum ibv_mtu).
type MTU uint8

// Path MTUs (IBV_MTU_*).
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, or 0 for an invalid value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// String returns the MTU in bytes ("1024"), or "MTU(n)" for an invalid
// value.
func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("MTU(%d)", uint8(m))
}

// MTUFromBytes returns the MTU for 256, 512, 1024, 2048 or 4096 bytes.
func MTUFromBytes(n int) (MTU, error) {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, nil
		}
	}
	return 0, fmt.Errorf("invalid MTU %d: want 256, 512, 1024, 2048 or 4096", n)
}

// PortState is the logical state of a port (enum ibv_port_state).
type PortState uint32

// Port states (IBV_PORT_*: IBV_PORT_ACTIVE is PortActive).
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

var portStateNames = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// String returns the state's name without the IBV_PORT_ prefix
// ("ACTIVE"), or "PortState(n)" for an unknown one.
func (s PortState) String() string { return enumName(portStateNames, int(s), "PortState") }

// LinkLayer is a port's link layer (IBV_LINK_LAYER_*).
type LinkLayer uint8

// Link layers (IBV_LINK_LAYER_*).
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

var linkLayerNames = []string{"Unspecified", "InfiniBand", "Ethernet"}

// String returns "InfiniBand", "Ethernet" or "Unspecified", as
// ibv_devinfo prints them, or "LinkLayer(n)" for an unknown value.
func (l LinkLayer) String() string { return enumName(linkLayerNames, int(l), "LinkLayer") }

// NodeType is the kind of a device (enum ibv_node_type).
type NodeType int32

// Node types (IBV_NODE_*).
const (
	NodeUnknown     NodeType = -1
	NodeCA          NodeType = 1
	NodeSwitch      NodeType = 2
	NodeRouter      NodeType = 3
	NodeRNIC        NodeType = 4
	NodeUSNIC       NodeType = 5
	NodeUSNICUDP    NodeType = 6
	NodeUnspecified NodeType = 7
)

var nodeTypeNames = []string{"", "CA", "Switch", "Router", "RNIC", "usNIC", "usNIC UDP", "Unspecified"}

// String returns the node type as ibv_devinfo prints it ("CA", "RNIC"),
// or "NodeType(n)" for an unknown one, NodeUnknown included.
func (t NodeType) String() string { return enumName(nodeTypeNames, int(t), "NodeType") }

// TransportType is the transport a device speaks (enum ibv_transport_type).
type TransportType int32

// Transport types (IBV_TRANSPORT_*).
const (
	TransportUnknown     TransportType = -1
	TransportIB          TransportType = 0
	TransportIWARP       TransportType = 1
	TransportUSNIC       TransportType = 2
	TransportUSNICUDP    TransportType = 3
	TransportUnspecified TransportType = 4
)

var transportNames = []string{"InfiniBand", "iWARP", "usNIC", "usNIC UDP", "Unspecified"}

// String returns the transport's name ("InfiniBand", "iWARP"), or
// "TransportType(n)" for an unknown one, TransportUnknown included.
func (t TransportType) String() string { return enumName(transportNames, int(t), "TransportType") }

// GIDType is the type of a GID table entry (enum ibv_gid_type).
type GIDType uint32

// GID types (IBV_GID_TYPE_IB, IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2).
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

var gidTypeNames = []string{"IB", "RoCE v1", "RoCE v2"}

// String returns "IB", "RoCE v1" or "RoCE v2", or "GIDType(n)" for
// an unknown type.
func (t GIDType) String() string { return enumName(gidTypeNames, int(t), "GIDType") }

// Access is a set of memory and QP access flags (enum ibv_access_flags).
type Access uint32

// Access flags (IBV_ACCESS_*).
const (
	AccessLocalWrite      Access = 1
	AccessRemoteWrite     Access = 2
	AccessRemoteRead      Access = 4
	AccessRemoteAtomic    Access = 8
	AccessMWBind          Access = 16
	AccessZeroBased       Access = 32
	AccessOnDemand        Access = 64
	AccessHugeTLB         Access = 128
	AccessRelaxedOrdering Access = 1 << 20
)

var accessNames = []flagName{
	{uint64(AccessLocalWrite), "LOCAL_WRITE"}, {uint64(AccessRemoteWrite), "REMOTE_WRITE"},
	{uint64(AccessRemoteRead), "REMOTE_READ"}, {uint64(AccessRemoteAtomic), "REMOTE_ATOMIC"},
	{uint64(AccessMWBind), "MW_BIND"}, {uint64(AccessZeroBased), "ZERO_BASED"},
	{uint64(AccessOnDemand), "ON_DEMAND"}, {uint64(AccessHugeTLB), "HUGETLB"},
	{uint64(AccessRelaxedOrdering), "RELAXED_ORDERING"},
}

// String returns the flags' names without the IBV_ACCESS_ prefix, joined
// by "|" ("LOCAL_WRITE|REMOTE_WRITE"), unknown bits in hex, or "0".
func (a Access) String() string { return flagString(uint64(a), accessNames) }

// QPType is a queue pair's transport service (enum ibv_qp_type).
type QPType uint32

// QP types (IBV_QPT_*).
const (
	QPTypeRC QPType = 2 // reliable connected
	QPTypeUC QPType = 3 // unreliable connected
	QPTypeUD QPType = 4 // unreliable datagram: a message is one packet, at most the path MTU (see SendWR.AH)
	// QPTypeRawPacket QPs send and receive whole Ethernet frames, and
	// making one needs CAP_NET_RAW. CreateQP takes it, and ToInit and
	// ToRTS give it the masks the kernel asks of one, but it is untested:
	// soft-RoCE, where the device tests run, makes no raw packet QPs, so
	// nothing here has ever made one; nor do the bindings have flow
	// steering (ibv_create_flow), which a NIC such as mlx5 needs to give
	// one traffic to receive.
	QPTypeRawPacket QPType = 8
)

// String returns "RC", "UC", "UD" or "RAW_PACKET", or "QPType(n)" for
// another value.
func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	case QPTypeRawPacket:
		return "RAW_PACKET"
	}
	return fmt.Sprintf("QPType(%d)", uint32(t))
}

// ParseQPType parses "RC", "UC" or "UD".
func ParseQPType(s string) (QPType, error) {
	for _, t := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("invalid connection type %q: want RC, UC or UD", s)
}

// QPState is the state of a queue pair (enum ibv_qp_state).
type QPState uint32

// QP states (IBV_QPS_*).
const (
	QPStateReset   QPState = 0
	QPStateInit    QPState = 1
	QPStateRTR     QPState = 2
	QPStateRTS     QPState = 3
	QPStateSQD     QPState = 4
	QPStateSQE     QPState = 5
	QPStateError   QPState = 6
	QPStateUnknown QPState = 7
)

var qpStateNames = []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"}

// String returns the state's name without the IBV_QPS_ prefix ("RTS",
// "ERR"), or "QPState(n)" for an unknown one.
func (s QPState) String() string { return enumName(qpStateNames, int(s), "QPState") }

// QPAttrMask selects the fields of a QPAttr that a Modify applies
// (enum ibv_qp_attr_mask). QPAttrAltPath, QPAttrPathMigState and
// QPAttrRateLimit are verbs.h's too, but QPAttr has no fields for their
// attributes, and Modify refuses them.
type QPAttrMask uint32

// QP attribute mask bits (IBV_QP_*: IBV_QP_STATE is QPAttrState).
const (
	QPAttrState           QPAttrMask = 1 << 0
	QPAttrCurState        QPAttrMask = 1 << 1
	QPAttrEnSQDAsync      QPAttrMask = 1 << 2
	QPAttrAccessFlags     QPAttrMask = 1 << 3
	QPAttrPKeyIndex       QPAttrMask = 1 << 4
	QPAttrPort            QPAttrMask = 1 << 5
	QPAttrQKey            QPAttrMask = 1 << 6
	QPAttrAV              QPAttrMask = 1 << 7
	QPAttrPathMTU         QPAttrMask = 1 << 8
	QPAttrTimeout         QPAttrMask = 1 << 9
	QPAttrRetryCnt        QPAttrMask = 1 << 10
	QPAttrRNRRetry        QPAttrMask = 1 << 11
	QPAttrRQPSN           QPAttrMask = 1 << 12
	QPAttrMaxQPRdAtomic   QPAttrMask = 1 << 13
	QPAttrAltPath         QPAttrMask = 1 << 14
	QPAttrMinRNRTimer     QPAttrMask = 1 << 15
	QPAttrSQPSN           QPAttrMask = 1 << 16
	QPAttrMaxDestRdAtomic QPAttrMask = 1 << 17
	QPAttrPathMigState    QPAttrMask = 1 << 18
	QPAttrCap             QPAttrMask = 1 << 19
	QPAttrDestQPN         QPAttrMask = 1 << 20
	QPAttrRateLimit       QPAttrMask = 1 << 25
)

// Opcode is a send work request's operation (enum ibv_wr_opcode).
type Opcode uint32

// Send opcodes (IBV_WR_*).
const (
	OpRDMAWrite        Opcode = 0
	OpRDMAWriteWithImm Opcode = 1
	OpSend             Opcode = 2
	OpSendWithImm      Opcode = 3
	OpRDMARead         Opcode = 4
	OpAtomicCmpAndSwp  Opcode = 5
	OpAtomicFetchAdd   Opcode = 6
	OpLocalInv         Opcode = 7
	OpBindMW           Opcode = 8
	OpSendWithInv      Opcode = 9
)

var opcodeNames = []string{"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM",
	"RDMA_READ", "ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW", "SEND_WITH_INV"}

// String returns the opcode's name without the IBV_WR_ prefix
// ("RDMA_WRITE"), or "Opcode(n)" for an unknown one.
func (o Opcode) String() string { return enumName(opcodeNames, int(o), "Opcode") }

// SendFlags modify a send work request (enum ibv_send_flags).
type SendFlags uint32

// Send flags (IBV_SEND_*).
const (
	SendFence     SendFlags = 1
	SendSignaled  SendFlags = 2
	SendSolicited SendFlags = 4
	// SendInline sends or writes the SGL's bytes in the request:
	// QPCap.MaxInline at most. The CPU copies them at the post, so each
	// SGE must lie in the process memory of a live MR of the QP's PD and
	// carry that MR's LKey (as MR.SGE's do): a post refuses any other,
	// with an error matching syscall.EINVAL, rather than let the
	// provider copy from an address that may not be mapped. Only sends
	// and RDMA writes take it: a post refuses it on any other opcode (a
	// READ, an atomic, a bind) with an error matching syscall.EINVAL.
	SendInline SendFlags = 8
	SendIPCsum SendFlags = 16
)

var sendFlagNames = []flagName{{1, "FENCE"}, {2, "SIGNALED"}, {4, "SOLICITED"}, {8, "INLINE"}, {16, "IP_CSUM"}}

// String returns the flags' names without the IBV_SEND_ prefix, joined
// by "|" ("SIGNALED|INLINE"), unknown bits in hex, or "0".
func (f SendFlags) String() string { return flagString(uint64(f), sendFlagNames) }

// WCStatus is the status of a work completion (enum ibv_wc_status).
type WCStatus uint32

// Work completion statuses (IBV_WC_*: IBV_WC_SUCCESS is WCSuccess).
const (
	WCSuccess          WCStatus = 0
	WCLocLenErr        WCStatus = 1
	WCLocQPOpErr       WCStatus = 2
	WCLocEECOpErr      WCStatus = 3
	WCLocProtErr       WCStatus = 4
	WCWRFlushErr       WCStatus = 5
	WCMWBindErr        WCStatus = 6
	WCBadRespErr       WCStatus = 7
	WCLocAccessErr     WCStatus = 8
	WCRemInvReqErr     WCStatus = 9
	WCRemAccessErr     WCStatus = 10
	WCRemOpErr         WCStatus = 11
	WCRetryExcErr      WCStatus = 12
	WCRNRRetryExcErr   WCStatus = 13
	WCLocRDDViolErr    WCStatus = 14
	WCRemInvRdReqErr   WCStatus = 15
	WCRemAbortErr      WCStatus = 16
	WCInvEECNErr       WCStatus = 17
	WCInvEECStateErr   WCStatus = 18
	WCFatalErr         WCStatus = 19
	WCRespTimeoutErr   WCStatus = 20
	WCGeneralErr       WCStatus = 21
	WCTMErr            WCStatus = 22
	WCTMRndvIncomplete WCStatus = 23
)

var wcStatusNames = []string{"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR",
	"LOC_PROT_ERR", "WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR",
	"REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
	"LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
	"INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR",
	"TM_RNDV_INCOMPLETE"}

// String returns the status's name as ibverbs spells it, without the
// IBV_WC_ prefix, e.g. "REM_ACCESS_ERR".
func (s WCStatus) String() string { return enumName(wcStatusNames, int(s), "WCStatus") }

// WCOpcode is the operation a work completion reports (enum ibv_wc_opcode).
type WCOpcode uint32

// Work completion opcodes (IBV_WC_*: IBV_WC_RECV is WCRecv).
const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCBindMW          WCOpcode = 5
	WCLocalInv        WCOpcode = 6
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

// String returns the opcode's name without the IBV_WC_ prefix ("SEND",
// "RECV"), or "WCOpcode(n)" for an unknown one.
func (o WCOpcode) String() string {
	switch o {
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return enumName([]string{"SEND", "RDMA_WRITE", "RDMA_READ", "COMP_SWAP", "FETCH_ADD",
		"BIND_MW", "LOCAL_INV"}, int(o), "WCOpcode")
}

// WCFlags describe a work completion (enum ibv_wc_flags).
type WCFlags uint32

// Work completion flags (IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_IP_CSUM_OK,
// IBV_WC_WITH_INV).
const (
	WCWithGRH  WCFlags = 1
	WCWithImm  WCFlags = 2
	WCIPCsumOK WCFlags = 4
	// WCWithInv marks the receive of a send with invalidate
	// (OpSendWithInv), whose invalidated rkey is then in WC.Imm.
	// Soft-RoCE does not set it: its kernel driver flags such a receive
	// with the kernel's IB_WC_WITH_INVALIDATE, 1<<2 (rxe_resp.c,
	// do_complete), and rdma-core's rxe provider passes the kernel's
	// flags on as they are, so libibverbs reads that bit as
	// IBV_WC_IP_CSUM_OK: the receive has WCIPCsumOK, not WCWithInv, and
	// Imm is 0, as Poll reads the key only with WCWithInv (and immediate
	// data only with WCWithImm). The key is invalidated all the same
	// (seen with kernel 6.1 and rdma-core 44; the kernel's rxe still
	// sets that bit).
	WCWithInv WCFlags = 8
)

var wcFlagNames = []flagName{{1, "GRH"}, {2, "WITH_IMM"}, {4, "IP_CSUM_OK"}, {8, "WITH_INV"}}

// String returns the flags' names ("GRH|WITH_IMM"), unknown bits in hex,
// or "0".
func (f WCFlags) String() string { return flagString(uint64(f), wcFlagNames) }

// EventType is the kind of an asynchronous event (enum ibv_event_type).
type EventType uint32

// Asynchronous event types (IBV_EVENT_*).
const (
	EventCQErr            EventType = 0
	EventQPFatal          EventType = 1
	EventQPReqErr         EventType = 2
	EventQPAccessErr      EventType = 3
	EventCommEst          EventType = 4
	EventSQDrained        EventType = 5
	EventPathMig          EventType = 6
	EventPathMigErr       EventType = 7
	EventDeviceFatal      EventType = 8
	EventPortActive       EventType = 9
	EventPortErr          EventType = 10
	EventLIDChange        EventType = 11
	EventPKeyChange       EventType = 12
	EventSMChange         EventType = 13
	EventSRQErr           EventType = 14
	EventSRQLimitReached  EventType = 15
	EventQPLastWQEReached EventType = 16
	EventClientReregister EventType = 17
	EventGIDChange        EventType = 18
	EventWQFatal          EventType = 19
)

var eventNames = []string{"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST",
	"SQ_DRAINED", "PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR",
	"LID_CHANGE", "PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED",
	"QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL"}

// String returns the event's name without the IBV_EVENT_ prefix
// ("PORT_ACTIVE"), or "EventType(n)" for an unknown one.
func (e EventType) String() string { return enumName(eventNames, int(e), "EventType") }

// AtomicCap says how a device orders atomic operations (enum ibv_atomic_cap).
type AtomicCap uint32

// Atomic capabilities (IBV_ATOMIC_*).
const (
	AtomicNone AtomicCap = 0
	AtomicHCA  AtomicCap = 1
	AtomicGlob AtomicCap = 2
)

// String returns "NONE", "HCA" or "GLOB", or "AtomicCap(n)" for an
// unknown value.
func (a AtomicCap) String() string {
	return enumName([]string{"NONE", "HCA", "GLOB"}, int(a), "AtomicCap")
}

func enumName(names []string, v int, typ string) string {
	if v >= 0 && v < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

type flagName struct {
	bit  uint64
	name string
}

func flagString(v uint64, names []flagName) string {
	if v == 0 {
		return "0"
	}
	s := ""
	for _, f := range names {
		if v&f.bit != 0 {
			if s != "" {
				s += "|"
			}
			s += f.name
			v &^= f.bit
		}
	}
	if v != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#x", v)
	}
	return s
}

// MWType is a memory window's type (enum ibv_mw_type).
type MWType uint32

// Memory window types (IBV_MW_TYPE_1, IBV_MW_TYPE_2).
const (
	// MWType1 windows are bound with QP.BindMW and stay bound until bound
	// again; no QP owns them.
	MWType1 MWType = 1
	// MWType2 windows are bound by an OpBindMW work request on a QP, which
	// then alone may use them, and are unbound by invalidation: OpLocalInv,
	// or a peer's OpSendWithInv.
	MWType2 MWType = 2
)

var mwTypeNames = []string{MWType1: "type 1", MWType2: "type 2"}

// String returns "type 1" or "type 2", or "MWType(n)" for another
// value.
func (t MWType) String() string { return enumName(mwTypeNames, int(t), "MWType") }
