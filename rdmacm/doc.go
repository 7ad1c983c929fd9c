// Package rdmacm binds librdmacm, the RDMA connection manager: it sets up
// RDMA connections by IP address and port, the way sockets do, and hands
// back ibverbs objects (package ibverbs) to move data with.
//
// # Two layers
//
// The low layer is one-to-one with C: an EventChannel, IDs created on it,
// and Events read from it. The Go-shaped layer on top is Listen, Accept and
// Dial, which return a Conn owning an ID, its own event channel, and the
// PD, CQs and QP of the connection:
//
//	l, err := rdmacm.Listen(ctx, "198.18.0.1:7471", nil)
//	c, err := l.Accept(ctx)               // on the server
//	c, err := rdmacm.Dial(ctx, "198.18.0.1:7471", nil) // on the client
//	c.QP().PostSend(...); c.SendCQ().Poll(...)
//	<-c.Done()                            // the peer disconnected
//	c.Close()
//
// Every wait takes a context and waits in the Go netpoller: the event
// channel's descriptor is non-blocking, so no thread blocks in librdmacm.
// A nil context is a mistake in the program, not a context that never
// ends: every call that takes one (Dial, Listen, Accept, GetRequest,
// GetEvent, Await, LookupUD, JoinMulticast, ConnRequest.Accept) panics
// at once, naming itself, before it makes anything, as
// net.Dialer.DialContext does; pass context.Background() for none.
//
// # Naming
//
// The rdma_ prefix goes, the first C argument becomes the receiver, destroy
// is Close, and enums are MixedCaps named types with String methods:
//
//	rdma_create_event_channel  CreateEventChannel
//	rdma_destroy_event_channel (*EventChannel).Close
//	rdma_get_cm_event          (*EventChannel).GetEvent (also acks)
//	rdma_ack_cm_event          done inside GetEvent; Events are copies
//	                           (*EventChannel).Await waits for one type of event
//	rdma_create_id             (*EventChannel).CreateID
//	rdma_destroy_id            (*ID).Close
//	rdma_bind_addr             (*ID).BindAddr
//	rdma_resolve_addr          (*ID).ResolveAddr
//	rdma_resolve_route         (*ID).ResolveRoute
//	rdma_set_option            (*ID).SetTOS, SetAckTimeout; Config.TOS, AckTimeout
//	rdma_listen                (*ID).Listen
//	rdma_connect               (*ID).Connect; LookupUD asks a UD listener for its QP
//	rdma_accept                (*ID).Accept
//	rdma_reject                (*ID).Reject
//	rdma_disconnect            (*ID).Disconnect
//	rdma_migrate_id            (*ID).Migrate
//	rdma_join_multicast_ex     (*ID).JoinMulticast; JoinMulticast makes a Conn for a group
//	rdma_leave_multicast       (*ID).LeaveMulticast; (*Conn).Close of that Conn
//	rdma_create_qp             (*ID).CreateQP, returning an *ibverbs.QP
//	rdma_destroy_qp            (*ibverbs.QP).Close of that QP
//	rdma_init_qp_attr          (*ID).InitQPAttr, for a QP made with ibverbs
//	rdma_establish             (*ID).Establish
//	rdma_notify                (*ID).Notify
//	rdma_set_local_ece         (*ID).SetLocalECE, for a QP made with ibverbs
//	rdma_get_remote_ece        (*ID).RemoteECE, for a QP made with ibverbs
//	rdma_get_local_addr        (*ID).LocalAddr
//	rdma_get_peer_addr         (*ID).RemoteAddr
//	rdma_get_devices           Devices (every device); Device binds an ID instead
//	rdma_get_request           (*Listener).GetRequest
//	struct rdma_conn_param     ConnParam
//	struct rdma_ud_param       UDParam
//	enum rdma_cm_event_type    EventType (EventAddrResolved, ...)
//	enum rdma_port_space       PortSpace (PortSpaceTCP, PortSpaceUDP, ...)
//
// # Lifetimes
//
// An ID must be closed before its channel, and a QP from CreateQP before
// its ID; Close refuses otherwise (EBUSY). Conn.Close does it all in order:
// disconnect, QP, a UD connection's AH, CQs, PD, ID, channel, and then
// closes Conn.Done. An
// event that ends a connection (the peer's disconnect, UNREACHABLE,
// DEVICE_REMOVAL) frees nothing: it moves the QP to the error state,
// which flushes the work posted, and closes Done. A UD Conn gets no such
// event: its Done never closes on its own, and a UD Listener's Accept
// makes a whole Conn (QP, CQs, PD, descriptors) for every lookup or UD
// Dial that reaches it, even one whose peer has since given up. The
// program must close each UD Conn itself when done with it. The device context of an ID
// (ID.Context, Conn.Context, Devices) is librdmacm's, open while the
// library is loaded; closing the Go handle never closes the device.
// A device librdmacm opened (for an ID bound to it, or every device, for
// Devices) stays open after its DEVICE_REMOVAL until librdmacm next reads
// the device list again, which it does only in rdma_get_devices or when
// an address finds no device it knows: in practice often until the
// process exits. A soft-RoCE (rxe) or siw device's `rdma link delete`
// then blocks, every object closed, for as long (hardware drivers such as
// mlx5 let the device go).
//
// # Close and other goroutines
//
// Close may run while other goroutines use the object, as closing a file
// or a connection to end a reader is ordinary Go. An ID's Close waits for
// the calls of the ID under way (each a C call that returns on its own:
// rdma_cm's verbs start work whose outcome arrives as an event) and then
// destroys it; a call that begins once Close has begun returns ErrClosed,
// or the zero value where the method returns no error (LocalAddr,
// RemoteAddr, PortNum, Raw). A Close that refuses (EBUSY: the ID's QP is
// open) changes nothing, and the ID stays usable. An EventChannel's Close
// wakes a GetEvent under way, which returns ErrClosed, and a Listener's
// its Accept and GetRequest; a Conn's Close closes the objects it owns,
// whose methods follow ibverbs' same rule. Closing twice is harmless.
// What an object was made with (ID.Channel, ID.PortSpace, Conn.QP, ...)
// may be read at any time. Calls of an ID other than Close may also run
// at once: its verbs then run one at a time (see ID).
//
// # A QP made with ibverbs
//
// A program may make its QP itself (ibverbs' PD.CreateQP, on the ID's
// Context) and connect it with rdma_cm, as librdmacm allows: Connect and
// Accept send its number in ConnParam.QPNum, and InitQPAttr gives the
// attributes that move it to INIT, RTR and RTS, each passed to the QP's
// Modify. The passive side moves it to RTS before Accept; the active side
// gets CONNECT_RESPONSE where it would get ESTABLISHED, moves it to RTS,
// and calls Establish, upon which the passive side gets ESTABLISHED.
// Establish belongs there only: on the passive side, or on the active
// side before CONNECT_RESPONSE, librdmacm's rdma_establish would have the
// kernel reject or break the connection, and Establish refuses it with
// EINVAL. InitQPAttr gives RTR and RTS only once the CM has the peer's
// answer (the CONNECT_REQUEST, or CONNECT_RESPONSE) and refuses them
// before with EINVAL. For a datagram ID (PortSpaceUDP, PortSpaceIPoIB)
// the CM's attributes are INIT's; InitQPAttr gives RTR and RTS as
// librdmacm sets them on its own UD QPs (the state, and a send PSN of 0).
// Dial and Accept do this themselves for a Conn's QP with
// Config.PathMTU, whose RTR takes the least of the CM's path MTU and
// that one: librdmacm gives a QP it made the route's, which the program
// cannot lower. All of this is InfiniBand's and RoCE's. On an iWARP
// device the CM gives attributes for INIT only (RTR's are INIT's, RTS
// has none, and no path MTU): the program moves its QP to INIT, and the
// provider moves it to RTS itself, at Accept and as the connection is
// made; the active side gets ESTABLISHED, not CONNECT_RESPONSE, and
// calls no Establish, and InitQPAttr refuses RTR and RTS, saying so.
// Dial and Accept keep librdmacm's QP there and ignore PathMTU.
// Calls that need the ID's device (ResolveRoute, Connect, Accept) refuse
// an ID on none, one neither resolved nor bound to a device's address,
// with an error matching syscall.EINVAL.
//
// # Errors
//
// librdmacm calls fail with *os.SyscallError carrying the errno, so
// errors.Is(err, syscall.EINVAL) works. Events that end an operation become
// *RejectedError (matching syscall.ECONNREFUSED) or *EventError (matching
// ErrAddrResolve, ErrRouteResolve, ErrUnreachable, ErrDisconnected... and the
// errno of the event's status, such as syscall.ETIMEDOUT). Dial, Listen and
// Accept wrap them in *OpError, and return ctx's error when it ends first.
//
// A work request that completes with ibverbs.WCWRFlushErr says only that
// the QP was in the error state. When an event ended the connection, the
// Conn put it there, and Conn.Err says why: errors.Is(c.Err(),
// ErrDisconnected) after the peer's disconnect (or its process's end).
// The Conn sets Err before it moves the QP to the error state, so a flush
// that the event caused finds Err set (ExampleConn_Err); Done closes just
// after. Where Err is nil, the connection failed otherwise: one of this side's requests
// failed first (ibverbs.WCRetryExcErr, WCRemAccessErr: its completion,
// not a flush, says why), or one of the peer's did, which the peer's
// completions say.
//
// # The RNR timer
//
// The kernel's CM gives an RC QP a min_rnr_timer of 0, which the verbs
// read as 655.36 ms: a peer that sends while this side has no receive
// posted then waits that long before it tries again, and a bandwidth
// test whose receiver falls behind crawls. Dial and Accept set 0.64 ms
// (12) once the QP is ready to send, as a QP connected with ibverbs'
// ConnParams has; Config.MinRNRTimer picks another, or keeps the CM's.
//
// # Private data
//
// Connection requests, replies and rejects carry a little private data.
// Over InfiniBand and RoCE the CM sends a fixed size, so what arrives is
// padded with zeros: 56 bytes in a request, 196 in a reply and 148 in a
// reject for RC; 180 and 136 for UD. A format of variable length must
// say its own length to survive that; one of a fixed size does.
//
// It is the place to tell the peer what its RDMA reads, writes and
// atomics name of this side's memory: an ibverbs.RemoteMR (address,
// length and rkey), whose encoding has a fixed size
// (ibverbs.RemoteMRSize, 20 bytes, big-endian) and whose decoder ignores
// the padding. Each side registers its memory before it connects, on a
// PD of its own that it passes in Config.PD (made on the context Device
// returns for the device of its address), so the RemoteMR is there to
// send:
//
//	// The client sends its region with the request:
//	mine, err := mr.Remote().AppendBinary(nil)
//	c, err := rdmacm.Dial(ctx, addr, &rdmacm.Config{PD: pd, PrivateData: mine})
//	var server ibverbs.RemoteMR
//	err = server.UnmarshalBinary(c.PrivateData()) // the reply's 196 bytes
//	wr := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{mr.SGE(0, n)}}
//	err = wr.SetRemote(server, off) // RemoteAddr and RKey, bounds checked
//
//	// The server reads it from the request and replies with its own:
//	r, err := l.GetRequest(ctx)
//	var client ibverbs.RemoteMR
//	err = client.UnmarshalBinary(r.PrivateData()) // the request's 56 bytes
//	mine, err := mr.Remote().AppendBinary(nil)
//	c, err := r.Accept(ctx, &rdmacm.Config{PD: pd, PrivateData: mine})
//
// A server that lends all its clients one region replies with it from
// Listen's Config and Accept, and reads each client's from
// Conn.PrivateData. ExampleConnRequest_Accept and ExampleDial_remoteMR
// show both sides whole.
package rdmacm
