package ibverbs

import "fmt"

// Endpoint is what a peer needs to connect a queue pair to this one: plain,
// serialisable data. How it travels (TCP, rdma_cm private data, a file) is
// up to the application; internal/exchange has gorperf's encoding.
type Endpoint struct {
	QPN      uint32  // queue pair number (24 bits)
	PSN      uint32  // first packet sequence number (24 bits)
	QKey     uint32  // UD only
	LID      uint16  // InfiniBand local identifier; 0 on RoCE
	GID      GID     // the port's GID used for this QP
	GIDIndex uint8   // that GID's index in the sender's table
	GIDType  GIDType // that GID's type
	MTU      MTU     // the sender's active path MTU
	Port     uint8   // the sender's port number
	// RdAtomic is, for RC, how many RDMA reads and atomics this QP accepts
	// at once as a responder (its max_dest_rd_atomic): the most the peer
	// may have outstanding. 0 means unknown.
	RdAtomic uint8
}

// String formats the endpoint for logs: QPN, PSN, LID, GID with its index
// and type, and MTU.
func (e Endpoint) String() string {
	return fmt.Sprintf("QPN %#06x PSN %#06x LID %d GID %s (index %d, %s) MTU %s",
		e.QPN, e.PSN, e.LID, e.GID, e.GIDIndex, e.GIDType, e.MTU)
}
