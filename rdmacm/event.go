//go:build linux && cgo

package rdmacm

// #include "shim.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorperf/gorperf/ibverbs"
)

// EventType is a connection manager event (enum rdma_cm_event_type).
type EventType int

// Event types. String gives the C name without RDMA_CM_EVENT_.
const (
	EventAddrResolved    EventType = 0
	EventAddrError       EventType = 1
	EventRouteResolved   EventType = 2
	EventRouteError      EventType = 3
	EventConnectRequest  EventType = 4
	EventConnectResponse EventType = 5
	EventConnectError    EventType = 6
	EventUnreachable     EventType = 7
	EventRejected        EventType = 8
	EventEstablished     EventType = 9
	EventDisconnected    EventType = 10
	EventDeviceRemoval   EventType = 11
	EventMulticastJoin   EventType = 12
	EventMulticastError  EventType = 13
	EventAddrChange      EventType = 14
	EventTimewaitExit    EventType = 15
)

var eventNames = []string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
	"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE",
	"REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
	"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
}

// String returns the event's name without the RDMA_CM_EVENT_ prefix
// ("ESTABLISHED"), or "EventType(n)" for an unknown one.
func (t EventType) String() string {
	if t >= 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// eventTypeTable pairs each EventType with its C value, for a test.
func eventTypeTable() map[EventType]int {
	return map[EventType]int{
		EventAddrResolved:    C.RDMA_CM_EVENT_ADDR_RESOLVED,
		EventAddrError:       C.RDMA_CM_EVENT_ADDR_ERROR,
		EventRouteResolved:   C.RDMA_CM_EVENT_ROUTE_RESOLVED,
		EventRouteError:      C.RDMA_CM_EVENT_ROUTE_ERROR,
		EventConnectRequest:  C.RDMA_CM_EVENT_CONNECT_REQUEST,
		EventConnectResponse: C.RDMA_CM_EVENT_CONNECT_RESPONSE,
		EventConnectError:    C.RDMA_CM_EVENT_CONNECT_ERROR,
		EventUnreachable:     C.RDMA_CM_EVENT_UNREACHABLE,
		EventRejected:        C.RDMA_CM_EVENT_REJECTED,
		EventEstablished:     C.RDMA_CM_EVENT_ESTABLISHED,
		EventDisconnected:    C.RDMA_CM_EVENT_DISCONNECTED,
		EventDeviceRemoval:   C.RDMA_CM_EVENT_DEVICE_REMOVAL,
		EventMulticastJoin:   C.RDMA_CM_EVENT_MULTICAST_JOIN,
		EventMulticastError:  C.RDMA_CM_EVENT_MULTICAST_ERROR,
		EventAddrChange:      C.RDMA_CM_EVENT_ADDR_CHANGE,
		EventTimewaitExit:    C.RDMA_CM_EVENT_TIMEWAIT_EXIT,
	}
}

// ConnParam holds connection parameters (struct rdma_conn_param): those to
// send with Connect and Accept, and those a connection event carries from
// the peer.
type ConnParam struct {
	// PrivateData goes to the peer with the request, reply or reject; at
	// most 56 bytes in a request and 196 in a reply for RC over InfiniBand
	// and RoCE. Received data comes padded with zeros to that size.
	PrivateData []byte
	// ResponderResources is how many RDMA reads and atomics the local QP
	// serves at once; InitiatorDepth how many it issues. RDMA_MAX_RESP_RES
	// and RDMA_MAX_INIT_DEPTH (MaxDepth) ask for the device's maximum.
	ResponderResources uint8
	InitiatorDepth     uint8
	// FlowControl says whether the sender has hardware flow control
	// (1) or not (0): the CM carries it to the peer and configures
	// nothing with it (RC only). Dial and Accept send 0.
	FlowControl uint8
	// RetryCount is how often the transport resends unanswered packets;
	// RNRRetryCount how often it retries a peer with no receive posted
	// (7 is forever). At most 7; RetryCount is ignored by Accept. Soft-RoCE
	// takes a RetryCount of 7 for forever too (see DefaultRetryCount).
	RetryCount    uint8
	RNRRetryCount uint8
	// SRQ and QPNum describe the QP when none was made with CreateQP.
	SRQ   bool
	QPNum uint32
}

// MaxDepth, as ConnParam.ResponderResources or InitiatorDepth, asks for the
// device's maximum (RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH).
const MaxDepth = 0xff

// UDParam holds the parameters of a UD event (struct rdma_ud_param): with
// ESTABLISHED, how to reach the peer's QP.
type UDParam struct {
	PrivateData []byte         // the peer's, as in ConnParam
	AHAttr      ibverbs.AHAttr // for (*ibverbs.PD).CreateAH
	QPNum       uint32         // the peer's QP number, for SendWR.RemoteQPN (0xffffff for a group)
	QKey        uint32         // its Q_Key, for SendWR.RemoteQKey
}

// Event is a connection manager event (struct rdma_cm_event), copied out of
// librdmacm's memory and already acknowledged (rdma_ack_cm_event).
type Event struct {
	Type EventType // what happened
	// Status is 0 on success; a negative errno for failures; for REJECTED
	// the reject reason.
	Status int
	// ID is the identifier the event is for. For CONNECT_REQUEST it is a
	// new ID for the connection, on the listener's channel, which the
	// caller must Accept or Reject and then Close.
	ID *ID
	// ListenID is the listening ID of a CONNECT_REQUEST.
	ListenID *ID
	// IsUD says the ID is a datagram one (RDMA_PS_UDP): UD holds the
	// event's parameters, else Param does.
	IsUD  bool
	Param ConnParam
	UD    UDParam
}

// PrivateData returns the private data of the event, from Param or UD.
func (ev *Event) PrivateData() []byte {
	if ev.IsUD {
		return ev.UD.PrivateData
	}
	return ev.Param.PrivateData
}

// String returns the event's type, with its status when not 0.
func (ev *Event) String() string {
	if ev.Status != 0 {
		return fmt.Sprintf("%s (status %d)", ev.Type, ev.Status)
	}
	return ev.Type.String()
}

// eventFromC copies a gr_event; GetEvent fills in the IDs.
func eventFromC(g *C.struct_gr_event) *Event {
	ev := &Event{Type: EventType(g.event), Status: int(g.status), IsUD: g.ud != 0}
	var data []byte
	if g.private_data_len > 0 {
		data = C.GoBytes(unsafe.Pointer(&g.private_data[0]), C.int(g.private_data_len))
	}
	if ev.IsUD {
		ev.UD = UDParam{
			PrivateData: data,
			AHAttr:      ibverbs.AHAttrFromRaw(unsafe.Pointer(&g.ah_attr)),
			QPNum:       uint32(g.qp_num),
			QKey:        uint32(g.qkey),
		}
	} else {
		ev.Param = ConnParam{
			PrivateData:        data,
			ResponderResources: uint8(g.responder_resources),
			InitiatorDepth:     uint8(g.initiator_depth),
			FlowControl:        uint8(g.flow_control),
			RetryCount:         uint8(g.retry_count),
			RNRRetryCount:      uint8(g.rnr_retry_count),
			SRQ:                g.srq != 0,
			QPNum:              uint32(g.qp_num),
		}
	}
	return ev
}
