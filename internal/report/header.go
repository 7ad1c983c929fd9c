package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// rule is perftest's RESULT_LINE, the dashed line between blocks.
const rule = "---------------------------------------------------------------------------------------\n"

// Env is where one side of a test ran: what a result needs to say to be
// compared with another, months later or from another host.
type Env struct {
	// Host is the host's name and Kernel its kernel release.
	Host   string `json:"host"`
	Kernel string `json:"kernel"`
	// FWVer is the device's firmware version, and VendorID and
	// VendorPartID its PCI vendor and part (ibv_query_device).
	FWVer        string `json:"fw_ver"`
	VendorID     uint32 `json:"vendor_id"`
	VendorPartID uint32 `json:"vendor_part_id"`
	// SpeedGbps is the port's signalling rate from its width and speed,
	// 0 where the device reports codes gorperf does not know: what
	// gorperf devices calls speed_gbps.
	SpeedGbps float64 `json:"speed_gbps,omitempty"`
	// ActiveMTU is the port's active MTU in bytes: the most a test's
	// path MTU can be.
	ActiveMTU int `json:"active_mtu"`
	// Netdev is the network device of the GID in use, "" where none
	// (InfiniBand).
	Netdev string `json:"netdev,omitempty"`
}

// Header describes a test in the terms of perftest's header block.
type Header struct {
	// Test is the title, for example "RDMA_Write BW Test" or
	// "Send Latency Test".
	Test string
	// Events reports that the test sleeps on completion events (-e);
	// perftest's line for it names the device's completion vector 0.
	Events bool
	// Dual reports dual-port mode.
	Dual bool
	// Device is the RDMA device name, for example "rxe0".
	Device string
	// Port is the device port. perftest does not print it in this block
	// and neither does WriteHeader; it is kept for callers that share one
	// Header between outputs.
	Port int
	// NumQPs is the number of queue pairs.
	NumQPs int
	// Transport is the transport type, "IB" for InfiniBand and RoCE.
	Transport string
	// Connection is the connection type: "RC", "UC" or "UD".
	Connection string
	// UsingSRQ reports the use of a shared receive queue.
	UsingSRQ bool
	// PCIeRelaxOrder reports PCIe relaxed ordering.
	PCIeRelaxOrder bool
	// WRAPI reports that sends are posted through the ibv_wr_* API rather
	// than ibv_post_send.
	WRAPI bool
	// TXDepth and RXDepth are the send and receive queue depths; a zero
	// depth is not printed (perftest prints TX depth on the client and RX
	// depth on the server, in a send test, and both on both sides of a
	// bidirectional one).
	TXDepth, RXDepth int
	// PostList is the number of requests posted per list (-l); it is
	// printed only above 1, as perftest does.
	PostList int
	// CQModeration is the number of sends per signalled completion; zero
	// is not printed (perftest prints it for bandwidth tests only).
	CQModeration int
	// RateLimit, when set, describes this side's rate limit
	// (--rate_limit).
	RateLimit string
	// Mtu is the path MTU in bytes.
	Mtu int
	// LinkType is the port's link layer: "IB" or "Ethernet".
	LinkType string
	// GIDIndex is the GID table index in use; a negative index is not
	// printed, as perftest omits it when none was chosen.
	GIDIndex int
	// GIDReason, when set, is printed in parentheses after the GID index
	// to say why that entry was chosen.
	GIDReason string
	// CPUs, when set, are the CPUs this side runs on, and CPUReason why
	// (gorperf's --pin_cores, --numa_node, or the device's NUMA node).
	CPUs, CPUReason string
	// Env is where this side ran, and PeerDevice and PeerEnv the
	// other side's device and where it ran, as it said; the text header
	// leaves them out, as perftest's has no such lines, and the JSON has
	// them.
	Env        Env
	PeerDevice string
	PeerEnv    Env
	// Threads, above 1, is the number of threads of a test of several
	// (gorperf's --threads), and ThreadCPUs each one's CPU, if pinned.
	Threads    int
	ThreadCPUs []int
	// MaxInline is the maximum inline data size in bytes.
	MaxInline int
	// OutstandingReads, when positive, marks a read or atomic test: the
	// header then shows "Outstand reads" instead of "Max inline data",
	// and the address lines show each endpoint's OutReads.
	OutstandingReads int
	// FlowLabels are the GRH flow labels the QPs take in turn (gorperf's
	// and perftest's --flow_label); none is not printed.
	FlowLabels []uint32
	// Group is the multicast group this side's QP joined (-g), printed
	// when set.
	Group string
	// RdmaCM reports whether the QPs are created through rdma_cm.
	RdmaCM bool
	// DataEx is the method used to exchange endpoints: "Ethernet" (a TCP
	// socket) or "rdma_cm"; empty prints "Ethernet".
	DataEx string
	// ShowRKey prints each endpoint's RKey and VAddr, as perftest does for
	// RDMA Write and Read tests.
	ShowRKey bool
	// Local and Remote are the endpoints of each QP on this side and on
	// the peer, printed in that order after the block.
	Local, Remote []Endpoint
}

// Endpoint is what one side of a QP tells the other, as printed in the
// address lines.
type Endpoint struct {
	// LID is the port's local identifier (0 on RoCE).
	LID uint16
	// QPN is the queue pair number.
	QPN uint32
	// PSN is the initial packet sequence number.
	PSN uint32
	// RKey and VAddr describe the remote-accessible buffer; they are
	// printed only when Header.ShowRKey is set.
	RKey  uint32
	VAddr uint64
	// OutReads is the number of outstanding reads the endpoint accepts;
	// printed only when Header.OutstandingReads is positive.
	OutReads int
	// GID is the endpoint's GID as FormatGID writes it; an empty GID
	// line is not printed.
	GID string
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// WriteHeader writes perftest's test header block: a rule, the title,
// the settings, a rule, then the local and remote address lines and a
// closing rule when there are any endpoints.
func WriteHeader(w io.Writer, h Header) error {
	p := &printer{w: w}
	p.printf(rule)
	p.printf("                    %s\n", h.Test)
	if h.Events {
		p.printf(" Test with events. Using %s_comp0\n", h.Device)
	}
	p.printf(" Dual-port       : %s\t\tDevice         : %s\n", onOff(h.Dual), h.Device)
	p.printf(" Number of qps   : %d\t\tTransport type : %s\n", h.NumQPs, h.Transport)
	p.printf(" Connection type : %s\t\tUsing SRQ      : %s\n", h.Connection, onOff(h.UsingSRQ))
	p.printf(" PCIe relax order: %s\n", onOff(h.PCIeRelaxOrder))
	p.printf(" ibv_wr* API     : %s\n", onOff(h.WRAPI))
	if h.TXDepth > 0 {
		p.printf(" TX depth        : %d\n", h.TXDepth)
	}
	if h.PostList > 1 {
		p.printf(" Post List       : %d\n", h.PostList)
	}
	if h.RXDepth > 0 {
		p.printf(" RX depth        : %d\n", h.RXDepth)
	}
	if h.CQModeration > 0 {
		p.printf(" CQ Moderation   : %d\n", h.CQModeration)
	}
	if h.RateLimit != "" {
		p.printf(" Rate limit      : %s\n", h.RateLimit)
	}
	p.printf(" Mtu             : %d[B]\n", h.Mtu)
	p.printf(" Link type       : %s\n", h.LinkType)
	if h.GIDIndex >= 0 {
		if h.GIDReason != "" {
			p.printf(" GID index       : %d (%s)\n", h.GIDIndex, h.GIDReason)
		} else {
			p.printf(" GID index       : %d\n", h.GIDIndex)
		}
	}
	if h.CPUs != "" {
		p.printf(" CPUs            : %s (%s)\n", h.CPUs, h.CPUReason)
	}
	if h.Threads > 1 {
		if len(h.ThreadCPUs) == h.Threads {
			cpus := make([]string, len(h.ThreadCPUs))
			for i, c := range h.ThreadCPUs {
				cpus[i] = strconv.Itoa(c)
			}
			p.printf(" Threads         : %d (one a connection, on CPUs %s)\n", h.Threads, strings.Join(cpus, ","))
		} else {
			p.printf(" Threads         : %d (one a connection)\n", h.Threads)
		}
	}
	if h.OutstandingReads > 0 {
		p.printf(" Outstand reads  : %d\n", h.OutstandingReads)
	} else {
		p.printf(" Max inline data : %d[B]\n", h.MaxInline)
	}
	if len(h.FlowLabels) > 0 {
		labels := make([]string, len(h.FlowLabels))
		for i, fl := range h.FlowLabels {
			labels[i] = fmt.Sprintf("0x%05x", fl)
		}
		p.printf(" Flow labels     : %s (in turn, one a QP)\n", strings.Join(labels, ","))
	}
	if h.Group != "" {
		p.printf(" Multicast group : %s (this side's; the peer sends to it)\n", h.Group)
	}
	p.printf(" rdma_cm QPs\t : %s\n", onOff(h.RdmaCM))
	dataEx := h.DataEx
	if dataEx == "" {
		dataEx = "Ethernet"
	}
	p.printf(" Data ex. method : %s\n", dataEx)
	p.printf(rule)

	if len(h.Local)+len(h.Remote) == 0 {
		return p.err
	}
	for _, e := range h.Local {
		writeEndpoint(p, h, "local", e)
	}
	for _, e := range h.Remote {
		writeEndpoint(p, h, "remote", e)
	}
	p.printf(rule)
	return p.err
}

// writeEndpoint writes one address line, as perftest's
// ctx_print_pingpong_data does, and the GID line under it.
func writeEndpoint(p *printer, h Header, side string, e Endpoint) {
	p.printf(" %s address: LID %s QPN %s PSN %s",
		side, cHex(uint64(e.LID), 4), cHex(uint64(e.QPN), 6), cHex(uint64(e.PSN), 6))
	if h.OutstandingReads > 0 {
		p.printf(" OUT %s", cHex(uint64(e.OutReads), 4))
	}
	if h.ShowRKey {
		p.printf(" RKey %s VAddr %s", cHex(uint64(e.RKey), 8), cHex(e.VAddr, 16))
	}
	p.printf("\n")
	if e.GID != "" {
		p.printf(" GID: %s\n", e.GID)
	}
}
