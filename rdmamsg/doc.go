// Package rdmamsg carries messages, and byte streams made of them, over
// RDMA reliable connections, and datagrams over UD: for a program that wants RDMA's transport
// (kernel bypass, no copies in the network stack, ordered and reliable
// delivery by the NIC) without handling queue pairs, registered memory and
// completions itself.
//
//	l, err := rdmamsg.Listen(ctx, "198.18.0.1:7471", nil)
//	c, err := l.Accept(ctx)                             // the server
//	c, err := rdmamsg.Dial(ctx, "198.18.0.1:7471", nil) // the client
//	err = c.Send(ctx, []byte("hello"))                  // one message
//	n, err := c.Recv(ctx, buf)                          // one message, whole
//	io.Copy(c, file)                                    // or a stream
//	c.Close()
//
// # What is under it
//
// A Conn is an rdmacm connection (package rdmacm) with one RC queue pair.
// Each side keeps Config.Depth receives posted in registered memory off
// the Go heap, one buffer of Config.MaxMessage bytes each, and two more,
// for the peer's end message and its abort (below); the two sides
// exchange their depth and largest message in the connection's private
// data. A message is one send with immediate data, copied into one of
// Config.SendBuffers registered send buffers; Recv copies it out and posts
// its receive again at once. io.Copy to and from a Conn skips those
// copies: ReadFrom reads into the send buffers, WriteTo writes from the
// receive buffers.
//
// A Listener answers connection requests as they come, up to
// Config.Handshakes (32) at once, and keeps the connections made until
// Accept takes them, as a TCP listener's kernel does: 8 of them
// (Config.CM.Backlog, when smaller) wait for Accept, and the handshakes
// after those wait for room. Until Accept takes it, a connection holds
// only its receive buffers, this side's size, (Depth+2) × MaxMessage
// bytes of registered memory, from the listener's reply on; its send
// buffers, sized by the peer's largest message (up to Config.MaxSend), are
// made by Accept. A peer that stalls in its handshake is dropped once it
// has not completed the connection within Config.HandshakeTimeout (10 s)
// of the reply (Config.CM.Timeout, when set, bounds the whole handshake);
// until then it holds one of the Handshakes and its receive buffers. One
// IP address has at most Config.HandshakesPerAddr (8) handshakes under
// way, so that one host's stalls leave room for others; stalls from as
// many addresses as it takes can still hold every handshake, for
// HandshakeTimeout at a time. The address's further requests are rejected
// at once as busy, and Dial sends them again after a pause (10 ms at
// first, doubling up to 500 ms, with jitter) until one gets in or its
// context ends, when it fails with an error that says the listener was
// busy (matching syscall.EAGAIN, not ECONNREFUSED): a burst of Dials from
// one host, a pool of connections opened at start-up, all connect, a few
// handshakes at a time, as a TCP listener's backlog would queue them. The
// listener answers each request at once, a reply or a reject, so that no
// dialer depends on how long the connection manager waits for an answer
// or how often it sends the request again, which vary with the kernel and
// the NIC; a busy reject costs the listener no more than the request. The
// listener's Close closes the connections no Accept took.
//
// # Flow control
//
// A sender holds one credit for each receive the peer has posted and
// spends one a message, so no message ever finds the peer's receive queue
// empty: there is no RNR NAK and no retry timer on the path (the tests
// check the device's RNR counter). Receives posted again are reported to
// the peer in the immediate data of the next message, or, when half the
// depth is unreported and nothing goes the other way, in a credit update:
// a message without payload. The last credit is kept for updates, so two
// sides that both send faster than they read cannot deadlock; flow.go
// explains it and its test drives two simulated sides through random
// schedules. A Send that has no credit waits until the peer reads, or its
// context ends. A peer that is alive but does not read (a stopped
// process, whose device still acknowledges) is not a dead peer: as over
// TCP, a Send with context.Background() then waits for good. Give Send a
// deadline (its context, or NetConn's SetWriteDeadline), or Close the
// Conn from another goroutine, which ends the wait with ErrClosed.
//
// # Goroutines and waiting
//
// A Conn's sends and receives complete on one CQ (rdmacm.Config.SharedCQ),
// and the callers take its completions themselves: Send, Recv and the
// rest poll it when what they need is not there yet, and a caller that
// must wait sleeps on the CQ's completion channel in Go's netpoller, which
// wakes it when a completion comes, with no goroutine between. While one
// caller sleeps there, another (a Send waiting for credits while a Recv
// waits for a message) sleeps until the first wakes it, and takes the
// channel when the first leaves. No thread blocks in C, and nothing spins
// unless Config.Spin asks callers to poll for a while before they sleep.
// One goroutine may send and another receive at the same time. What comes
// while no caller waits stays on the CQ until a caller takes it; once
// none has taken a completion for a millisecond and none sleeps on the
// channel, a goroutine (the courier) sleeps there in their place, until
// a caller that would sleep there asks for it back. It takes what comes
// and sends the credit updates this side owes, which the peer may need
// to send at all: those for the receives its own updates and keepalives
// used. Send, Recv and the stream methods allocate
// nothing per message (BenchmarkRoundTrip, BenchmarkStream,
// TestNoAllocations), with one exception: a caller that sleeps on the
// channel with a cancellable context other than the last one used there
// registers a watch on it (context.AfterFunc), which allocates. Read,
// Write and a context kept from call to call do not, idle gaps and the
// courier's turns between them included.
//
// A nil context is a mistake in the program, not a context that never
// ends: every call that takes one (Dial, Listen, Accept, Handshake,
// Send, Recv, ReadRemote, WriteRemote, ListenPacket, ReadFrom, WriteTo)
// panics at once, naming itself, before it makes or waits for anything,
// as net.Dialer.DialContext does; pass context.Background() for none.
//
// # The end of a connection
//
// Close sends an end message after the last, waits until the messages
// it sent, and the end, have reached the peer (until 5 s pass with no
// send completing, or until a write deadline still to come), then
// disconnects; the peer's Recv and
// Read return what arrived and then io.EOF, and its Send fails with an
// error matching syscall.EPIPE. A peer that disconnects without an end
// message (its process was killed, say: the kernel closes its
// connection) is not taken for one that ended its stream: Recv, Read
// and WriteTo return what arrived and then an error matching both
// io.ErrUnexpectedEOF and rdmacm.ErrDisconnected, and Send, Write and
// ReadFrom fail with one that says the peer disconnected without ending
// its stream, matching syscall.EPIPE, as after a Close, and
// rdmacm.ErrDisconnected. CloseWrite ends one
// direction only, as a TCPConn's does: an end message after the last,
// and the peer reads io.EOF while it may still send. Abort ends the
// connection as a failure: an abort message after the last, then as
// Close, and the peer reads what arrived and then an error matching
// syscall.ECONNRESET, so that a stream that broke off part way is not
// taken for a whole one. The end and the abort need no credit: each side
// keeps two receives posted beyond the depth it tells its peer, which
// the credits never count, so one is free for each even when the peer
// reads nothing (flow.go); neither waits. A peer that sends data after
// its end message, or a second end, fails the connection (EPROTO). When
// a message cannot be delivered (the peer's host died, a link is down),
// the device gives up after the QP's retries (rdmacm.Config.AckTimeout
// and RetryCount: seven ACK timeouts with the defaults, about 15 s on
// soft-RoCE with rdma_cm's ACK timeout (Dial, Accept), about 7.5 s with
// Handshake's default AckTimeout of 18), and every call returns that
// error, after the messages that arrived. Where the device neither
// delivers nor fails them (soft-RoCE on a link that went down: its QP
// may stop, and not start again when the link comes back), the Conn
// fails itself: requests on the send queue and none completed for twice
// the QP's retries (its timeout × (retry count+1), ibv_query_qp, plus the
// time of the largest message at 10 MB/s), at least 20 s, fail the
// connection with an error matching syscall.ETIMEDOUT that says no send
// completed for so long: about 31 s with rdma_cm's defaults on
// soft-RoCE, 20 s through Handshake, and a tick later at most (a quarter
// of the smaller of that and KeepAlive); a side that only receives has a
// request on the send queue from its next keepalive on, so it fails
// within KeepAlive more. Send returns once a message is
// on its way, so Close is where one that never arrived is told: its
// error counts the messages that may not have reached the peer, says
// whether the end may not have, and why. A side sends within
// Config.KeepAlive (15 s by default) of its last post an empty credit
// update (or, with no credit to spare, a probe: an RDMA write of no
// bytes, which takes no receive), so that even a side that only
// receives, or one its peer stopped reading, hears of a peer that died
// silently, within the keepalive and the retries: about 30 s with the
// defaults on soft-RoCE.
//
// # One-sided RDMA
//
// Beside its messages, a Conn reads and writes the peer's memory with
// RDMA reads and writes on the same QP, which the peer's device serves
// without the peer's program (a key-value store whose clients read its
// values, a storage target that writes into its client's buffers):
//
//	r, err := c.RegisterMemory(1<<20, ibverbs.AccessRemoteRead|ibverbs.AccessRemoteWrite)
//	b, err := r.Remote().MarshalBinary()         // where r is, for the peer
//	err = c.Send(ctx, b)                         // sent as the program likes
//	err = peer.ReadRemote(ctx, local, 0, remote, off, n)  // the peer, remote decoded from b
//	err = peer.WriteRemote(ctx, remote, off, local, 0, n)
//
// RegisterMemory maps memory off the Go heap and registers it with the
// connection's protection domain (ibv_reg_mr), for the peer's access
// (Region.Remote, an ibverbs.RemoteMR of address, length and rkey) and as
// the local side of this side's operations. ReadRemote and WriteRemote
// post one signaled request each and wait for its completion as Recv
// waits for a message (polling the CQ, asleep in the netpoller, until the
// context ends, the read or write deadline passes or the Conn closes),
// and allocate nothing. Any number of goroutines may call them at once,
// beside Send and Recv: up to 16 are on the send queue at a time, in
// requests of their own beyond the messages', updates' and keepalives',
// so they take no credit and no send buffer, and no message waits for
// them; RDMA reads no more than the QP's initiator depth, which rdma_cm
// negotiates (rdmacm.Config.InitiatorDepth and ResponderResources,
// the device's maximum by default; Handshake takes the device's, at most
// 16). Their completions count for the stall watch and the keepalive as
// the messages' do, and the bytes of those on the send queue lengthen the
// stall's bound (20 s at least) as if they went at 10 MB/s: a device
// slower than that may still fail a long operation as a stall
// (soft-RoCE under emulation reads at about 0.5 MB/s, 8 MiB in some 19
// s). One operation is at most the port's largest message (max_msg_sz:
// 8 MiB on soft-RoCE); a longer one is refused (EMSGSIZE), and a larger
// transfer goes in parts. The QP keeps its requests in order: a message
// sent after WriteRemote returned reaches the peer after the bytes
// written, and is how the peer learns of them. A write with immediate
// data (RDMA_WRITE_WITH_IMM), which rdmamsg never sends, takes a receive
// of the peer's as a message would: the peer fails the connection
// (EPROTO), naming it and its length.
//
// A range outside the local region, or outside the remote one as its
// RemoteMR says, is refused before anything is posted (EINVAL). A request
// the peer's device refuses (an rkey it does not know, a range past its
// region, access the region was not registered with) fails with an
// error that names the operation, its length and the remote address and
// wraps the *ibverbs.WCError (ibverbs.WCRemAccessErr); as the RC QP goes
// to the error state, the whole connection fails with that error, which
// every call returns from then on. So does any failure or end of the
// connection: an operation then returns at once, one waiting for its
// place on the send queue too, with the connection's failure, or, where
// the peer closed or disconnected, an EPIPE that names the operation, as
// a Send's names the send, whether the operation was posted or not (the
// device flushes those on the send queue; where the stall watch failed
// the connection, it moves the QP to the error state for that). An
// operation cannot be recalled: one whose caller left early (its context
// ended) still reads or writes its local region until its completion,
// and the region's Close refuses (EBUSY) until then. A region's owner
// must not close it while the peer may still use it: the peer's
// operations would fail its connection.
//
// The region's owner learns of the peer's refused request too: its
// device moves the owner's QP to the error state as well, and, on
// soft-RoCE, completes none of the owner's requests with an error, only
// flushes them (IBV_WC_WR_FLUSH_ERR). A flush that nothing on the owner's
// side explains (it did not close, none of its requests failed, the peer
// neither disconnected nor closed) fails the connection with an error
// matching syscall.ECONNRESET that says the QP entered the error state
// without a failure of this side's requests, most likely for a read or
// write of the peer's refused here (its rkey, range or access); the
// owner disconnects, so that the peer learns of it too, and its Send,
// Recv and the rest return that error at once.
//
// Close deregisters the Conn's regions with the rest (after which
// Region.Close only unmaps their memory); a Region's Close before the
// Conn's deregisters it at once.
//
// # Without rdma_cm: Handshake
//
// Where the two sides already have a connection (TCP, as perftest and
// many RDMA programs use beside the verbs; a net.Pipe in one process),
// Handshake makes the Conn over it instead of through rdma_cm: each side
// calls it with its end, and they swap their QPs' endpoints and hellos in
// a few framed messages. The RDMA port is the one with a RoCE v2 GID of
// the connection's local address, so both take the route their TCP
// packets take, or the device that Config.Device names. The connection
// stays open beside the Conn: closing it is how each side learns of the
// other's end, as rdma_cm's disconnect is for a Conn that Dial made.
//
//	nc, err := net.Dial("tcp", "198.18.0.1:7470")
//	c, err := rdmamsg.Handshake(ctx, nc, nil) // the other side with its end
//
// # Package net
//
// A *Conn is not a net.Conn (its LocalAddr and RemoteAddr return a
// netip.AddrPort, not a net.Addr): Conn.NetConn gives one, as
// Listener.NetListener gives a net.Listener and PacketConn.NetPacketConn
// a net.PacketConn, for code written against package net. Conn and
// PacketConn have net.Conn's deadlines (SetDeadline, SetReadDeadline,
// SetWriteDeadline), which those share. Their errors are package net's
// too: a *net.OpError ("read rdma 198.18.0.2:41234->198.18.0.1:7471:
// rdmamsg: object is closed") of Net "rdma", the method's Op and the
// Addrs, as a TCP or UDP socket's, which unwraps to the error the Conn,
// Listener or PacketConn itself returns (those of the methods that take
// a context stay rdmamsg's own), so that errors.Is, errors.As and
// err.(net.Error) work on them as on a socket's; Read's io.EOF stays
// io.EOF. net/http serves and fetches over them unchanged (TestHTTP):
//
//	go http.Serve(l.NetListener(), handler)
//	tr := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
//		c, err := rdmamsg.Dial(ctx, addr, nil)
//		if err != nil {
//			return nil, err
//		}
//		return c.NetConn(), nil
//	}}
//
// # Datagrams
//
// PacketConn is the datagram side, on one UD queue pair, addressed by IP
// address and port as UDP is:
//
//	p, err := rdmamsg.ListenPacket(ctx, "198.18.0.1:7473", nil)
//	err = p.WriteTo(ctx, []byte("ping"), peer)  // peer: a netip.AddrPort
//	n, from, err := p.ReadFrom(ctx, buf)        // from: the sender's address
//
// ListenPacket binds an rdma_cm ID of the UDP port space at the address,
// which answers peers that look this side's QP up. The first WriteTo to a
// destination looks it up (rdmacm.LookupUD) and keeps an address handle;
// so does the first answer to a sender, which costs one lookup before
// it: a datagram teaches nothing of how to reach its sender. Only the
// port's owner answers a lookup (rdma_cm's UDP port space is the
// kernel's), so what a lookup says stays until another says otherwise.
// A datagram from a known address but another QP, or claiming another
// largest datagram, has the next WriteTo to that address look it up
// again: a PacketConn made again there (after a restart) has a new QP,
// which that lookup finds; until a datagram from it comes, datagrams to
// it go to the old one and are lost. At most 4,096 destinations are
// kept; a new one beyond that takes the place of the one written to
// least recently, which the next WriteTo to it looks up again. Datagrams may be lost or
// reordered, as UD's are; each is at most the port's MTU less an 8-byte
// header. A datagram whose send the device fails (on soft-RoCE, one sent
// while the link is down) is one lost, as a UDP socket's is:
// PacketStats.Failed counts it, and the PacketConn brings its QP back to
// RTS and goes on (from SQE; soft-RoCE's QP goes to the error state
// instead, which it leaves through RESET, losing the datagrams on their
// way with it). Only where that fails does the PacketConn fail: its
// ReadFrom and WriteTo return an error that names the datagram's
// destination and says so, and it rejects lookups (ECONNREFUSED) rather
// than answer them with a QP that takes nothing.
//
// A sender's address is not authenticated, but answers to it go to its
// owner. Its IP address is the GRH's, as the network delivered it; its
// port is what its datagram's header claims, and any UD QP can send a
// PacketConn datagram with any port: one on the same IP address can pose
// as another PacketConn there and have its datagrams taken for that one's.
// Do not use a datagram's address for access control. What it cannot do is
// redirect what is sent to that address, or limit its size: WriteTo sends
// to the QP, and within the largest datagram, that a lookup of the address
// gave, whatever datagrams claim (a forger that can answer lookups in the
// owner's place, on the network's path or with raw packets, is beyond
// this). A datagram that claims a known address from another QP costs one
// lookup, on the next WriteTo there; once that lookup has found the QP not
// to be the address's, its further datagrams cost none. A datagram costs
// no address handle; each destination WriteTo looks up costs one (on rxe,
// a kernel object counted against the device's limit), up to 4,096 for a
// PacketConn.
//
// WriteTo refuses at once a datagram longer than MaxDatagram (EMSGSIZE),
// and a destination where no PacketConn can be: an unspecified,
// multicast or broadcast address or port 0 (EINVAL), or a loopback one
// (EADDRNOTAVAIL, as no RDMA device has one). An IPv4-mapped IPv6
// destination is its IPv4 address.
//
// # Wire format
//
// The private data of the request and the reply begins with a 16-byte
// hello: "GRMS", version 1, a flags byte, two reserved bytes, the depth
// and the largest message (big-endian 32-bit). Flag bit 0 says the side
// takes end and abort messages, keeps two receives spare for them and
// sends an end message before it closes; an older rdmamsg sends no flags
// and ignores them. To such a peer CloseWrite fails
// (errors.ErrUnsupported), Close sends no end message, an abort goes
// only with a credit (Abort fails with errors.ErrUnsupported without
// one), and its disconnect reads as io.EOF, as it always did. The
// immediate data of every message carries the credits it reports in its
// low 16 bits; bit 31 marks a credit update, bit 30 an abort and bit 29
// the end of the sender's stream, at most one of them, and bit 28, with
// bit 29 only, an end of Close's, after which the sender takes nothing
// more (its peer's sends fail with EPIPE at once); the other bits are
// zero. A request without a hello is rejected with the reason in the
// reject's private data; one beyond Config.HandshakesPerAddr with "GRMB"
// and then the reason, which Dial takes for busy and tries again, as it
// does a reject whose reason begins "rdmamsg: too many handshakes from ",
// an older rdmamsg's. An older Dial reports the busy reject as any other.
//
// Handshake's frames are "GRMH", a kind byte and a body length byte,
// then the body: kind 'E' carries version 1, the active MTU, the LID, the
// QP number, the first PSN, the GID and the hello; 'R' (no body) says the
// sender's receives are posted; 'X' carries the reason a side failed.
//
// A PacketConn's datagram begins with 8 bytes: 'G', version 1, the
// sender's port and the largest datagram it takes (big-endian). Its answer
// to a lookup carries "GRMP", version 1, three reserved bytes and the
// largest datagram. Datagrams without the header are dropped.
package rdmamsg
