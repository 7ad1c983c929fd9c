//go:build linux && cgo

package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// Config tunes Dial, Listen and Accept. The zero value (or nil) gives an
// RC connection with 16 send and 16 receive work requests of one SGE, its
// own PD and CQs, the device's maximum RDMA read depth, and retries forever
// on RNR.
type Config struct {
	// UD makes datagram "connections" (RDMA_PS_UDP, a UD QP): the dialer
	// learns the listener's QPN and QKey and gets an address handle for
	// it (Conn.RemoteUD). Both ends must agree.
	UD bool

	// Cap is the QP's capacity; zero asks for 16 send and 16 receive WRs,
	// and a zero SGE count for 1. Conn.QP().Cap() has what was granted.
	Cap ibverbs.QPCap
	// CQSize is the size of each CQ the connection makes; zero sizes the
	// send CQ to Cap.MaxSendWR and the receive CQ to Cap.MaxRecvWR.
	CQSize int
	// SingleThreadedCQs makes the CQs the connection makes single-threaded
	// (ibverbs.CQInit.SingleThreaded), a promise that one goroutine at a
	// time polls or waits on each: a device that honours it (mlx5) then
	// polls without a lock. A device without the flag gets ordinary CQs;
	// CQ.SingleThreaded says which.
	SingleThreadedCQs bool
	// SharedCQ makes the connection's one CQ serve both its send and its
	// receive queue, with one completion channel, of CQSize entries
	// (default MaxSendWR + MaxRecvWR): one poll takes both kinds of
	// completion, and one goroutine sleeps for either. SendCQ and RecvCQ
	// then return the same CQ. It does nothing when Config.SendCQ or
	// Config.RecvCQ is set.
	SharedCQ bool
	// SigAll makes every send signalled.
	SigAll bool
	// WRAPI makes the QP post sends through the ibv_wr_* API
	// (ibverbs.QPInit.WRAPI); a device without it fails the connection
	// with an error that matches errors.ErrUnsupported.
	WRAPI bool

	// PD, SendCQ and RecvCQ, when set, are used instead of making new
	// ones, and Conn.Close leaves them open. They must be on the device the
	// connection goes through: make them on a context from Devices (or
	// Device), which stays open for them. Not on another Conn's Context:
	// that Conn's Close would then fail (EBUSY) until they are closed.
	// RecvCQ defaults to SendCQ when only that is set.
	PD     *ibverbs.PD
	SendCQ *ibverbs.CQ
	RecvCQ *ibverbs.CQ
	// SRQ, when set, gives the QP its receives (ibverbs.QPInit.SRQ): post
	// them to the SRQ, not to Conn.QP(); their completions still come on
	// RecvCQ, with the QP's number in WC.QPN. It is on the connection's
	// device, so PD must be set too, and Conn.Close leaves it open.
	//
	// On a CQ shared by several connections, a connection's first
	// completions can come before Accept returns: the dialer's Dial may
	// return, and its first sends arrive, as soon as this side's reply
	// has gone out. A server that maps WC.QPN to its connections maps
	// the new one in Prepare (QP().Num()), which runs before the reply.
	SRQ *ibverbs.SRQ

	// TOS, for Dial, is the connection's IP type of service (DSCP and ECN
	// bits; rdma_set_option RDMA_OPTION_ID_TOS); an accepted connection
	// takes the dialer's from its request. Zero leaves rdma_cm's default.
	TOS uint8
	// AckTimeout is an RC QP's local ACK timeout, 4.096 µs × 2^n (1 to
	// 31; rdma_set_option RDMA_OPTION_ID_ACK_TIMEOUT). Zero leaves the one
	// rdma_cm derives from the path; UD ignores it; above 31 is refused
	// (EINVAL).
	AckTimeout uint8
	// PathMTU, when set, is the most path MTU an RC connection's QP
	// gets: the least of it and the one rdma_cm derives from the route
	// (rdma_init_qp_attr's path_mtu), which its RTR takes (ibv_modify_qp
	// IBV_QP_PATH_MTU). librdmacm moves only the QPs it made
	// (rdma_create_qp) and gives them the route's, so with PathMTU the
	// Conn makes its QP with ibverbs (ibv_create_qp) and moves it itself,
	// as the package doc's A QP made with ibverbs does: to INIT when it
	// is made, to RTR and RTS with the CM's other attributes (InitQPAttr)
	// before Accept replies, or on the CONNECT_RESPONSE that Dial then
	// waits for, which it answers with rdma_establish. The QP offers no
	// ECE options then (librdmacm sets those of its own QPs only). Zero
	// leaves the path MTU, and the QP, to rdma_cm; UD ignores it, and so
	// does a connection on an iWARP device, whose QPs have no path MTU to
	// cap (iWARP's frames are sized by its TCP connection, and the CM
	// gives no path MTU: the kernel's iw_cm_init_qp_attr answers RTR with
	// INIT's attributes) and whose provider moves them to RTS itself,
	// the active side getting ESTABLISHED, not CONNECT_RESPONSE: the flow
	// above is not iWARP's, and there the QP is librdmacm's, as with
	// PathMTU 0. A value that is not
	// an MTU (ibverbs.MTU256 to MTU4096) is refused (EINVAL) on any
	// device. Conn.QP().Query() says the path MTU the QP got.
	PathMTU ibverbs.MTU

	// PrivateData goes to the peer in the connection request (Dial) or
	// reply (Accept): at most 56 and 196 bytes for RC, 180 and 136 for UD,
	// over InfiniBand and RoCE, where the peer gets it padded with zeros
	// to that size. An ibverbs.RemoteMR's encoding (AppendBinary, 20
	// bytes) fits, and tells the peer where to read and write this side's
	// memory; the package doc's Private data shows the exchange.
	PrivateData []byte
	// InitiatorDepth and ResponderResources bound the RDMA reads and
	// atomics in flight from and to this side. Zero asks for the device's
	// maximum (limited on Accept by what the peer asked); negative for
	// none. A value above the device's maximum is cut to it, and on
	// Accept an InitiatorDepth above the request's to that.
	InitiatorDepth     int
	ResponderResources int
	// RetryCount is how often an RC QP sends a packet again that the
	// peer has not acknowledged within the ACK timeout (AckTimeout)
	// before the request fails with ibverbs.WCRetryExcErr: 1 to 7, zero
	// for DefaultRetryCount (6), negative for none. It is what tells a
	// side that its peer went silent (its host died, its link was cut),
	// which the CM does not: a request outstanding to such a peer fails
	// after the first try and the retries, RetryCount+1 ACK timeouts of
	// 4.096 µs × 2^AckTimeout each (a NIC may round them up). With the
	// defaults on soft-RoCE, where rdma_cm derives 19 (2.1 s) from the
	// path, that is 7 × 2.1 s, about 15 s; with AckTimeout 14 (67 ms),
	// half a second. Through rdma_cm the dialer's count is both sides':
	// the connection request carries it to the accepting side's QP, and
	// Accept's is ignored.
	RetryCount int
	// RNRRetryCount is how often an RC QP retries a send that found no
	// receive posted at the peer (an RNR NAK): 1 to 7, 7 meaning forever,
	// zero for 7, negative for none.
	RNRRetryCount int
	// MinRNRTimer is the RNR NAK timer of an RC connection's QP: how long
	// a peer that found no receive posted here waits before it sends
	// again, in the verbs' encoding (1 is 0.01 ms, 12 is 0.64 ms, 31 is
	// 491.52 ms, 0 is 655.36 ms). The kernel's CM gives the QP 0, so a
	// peer that outruns this side's receives stalls 655 ms each time.
	// Zero here asks for ibverbs.DefaultMinRNRTimer (12), set once the
	// QP is ready to send (ibv_modify_qp IBV_QP_MIN_RNR_TIMER, RTS to
	// RTS); negative keeps the CM's 0; above 31 is refused.
	MinRNRTimer int

	// MulticastSendOnly makes JoinMulticast join as a send-only member:
	// its QP sends to the group but is not attached to it.
	MulticastSendOnly bool

	// Prepare, when set, runs once the connection's QP exists and before
	// Dial sends its request, Accept its reply or JoinMulticast joins: the
	// place to post the first receives, so that none of the peer's first
	// messages finds the receive queue empty and waits out an RNR NAK.
	// What it makes on the Conn's PD and QP (MRs, batches) its cleanup
	// frees; the Conn calls cleanup when it closes, before the QP, or at
	// once when the set-up fails after Prepare. A cleanup that fails is
	// called again by the Conn's next Close, so it must be safe to call
	// again (Close methods are). Close runs cleanup before Done closes
	// (Done closes once the teardown is over), so cleanup must not wait
	// for Done, nor for a goroutine that stops on Done: Close would never
	// return. Stop such a goroutine another way, with a context that
	// cleanup cancels before it waits, say. An error from Prepare,
	// which must have freed what it made, fails the set-up (and rejects
	// an accepted request). Prepare must not close the Listener whose
	// Accept runs it: the Listener's Close waits for the handshakes under
	// way, Prepare's among them. A Listener's Prepare may run for several
	// connections at once, and for one that a later Accept returns: an
	// Accept begins the handshake of each request it takes while another
	// is under way (see Listener.Accept). Keep what it makes with the
	// Conn it ran for (in a map keyed by the *Conn, say), not in one
	// variable that the next connection's Prepare overwrites.
	Prepare func(c *Conn) (cleanup func() error, err error)

	// SrcAddr, for Dial and JoinMulticast, is the local address ("ip" or "ip:port") to bind
	// before resolving the destination: it picks the local device.
	SrcAddr string
	// Backlog, for Listen, bounds the connection requests that have come
	// and that no Accept or GetRequest has taken yet (rdma_listen's
	// backlog). Zero, or more than the kernel allows, takes the kernel's
	// limit: the rdma_ucm module's max_backlog (the sysctl
	// net.rdma_ucm.max_backlog, 1024 by default). A request beyond the
	// backlog is dropped without a reject, so that its sender's CM sends
	// it again, but only once its response timeout has passed (about
	// 4.5 s on soft-RoCE): a burst of Dials larger than the backlog is
	// taken slowly, a backlog's worth every few seconds, and Dials with
	// a short deadline fail (with a backlog of 4, 30 of 64 concurrent
	// Dials failed at a 30 s deadline; with 0, all 64 connected in
	// 1.5 s). Set it low only to shed load.
	Backlog int

	// AddrTimeout and RouteTimeout bound address and route resolution
	// (default 2s each; Dial resolves the address in attempts of 250ms
	// until AddrTimeout); Timeout, when set, bounds a whole Dial or Accept
	// handshake. A context deadline that comes sooner wins. Unset, and
	// with no deadline on ctx, a Dial's connection request is bounded by
	// DefaultConnectTimeout (2 min) or the kernel CM's retries, whichever
	// ends first (see Dial).
	AddrTimeout  time.Duration
	RouteTimeout time.Duration
	Timeout      time.Duration
}

const (
	defaultWR      = 16
	defaultResolve = 2 * time.Second
)

// DefaultRetryCount is the retry count of an RC connection whose
// Config.RetryCount is zero: 6, not the 7 of perftest and rdma_cm's
// examples, because soft-RoCE (rxe) takes 7 for "retry forever", as the
// verbs define it only for the RNR retry count: there a peer that went
// silent was never noticed, and a request to it waited for good. On a
// NIC that counts 7 as 7, 6 notices such a peer one ACK timeout sooner.
// Config.RetryCount 7 still asks for 7.
const DefaultRetryCount = 6

// retries is Config.RetryCount as the CM takes it: zero for
// DefaultRetryCount, negative for none, above 7 for 7.
func retries(n int) uint8 {
	if n == 0 {
		return DefaultRetryCount
	}
	return ibverbs.Retries(n)
}

func (cfg *Config) portSpace() PortSpace {
	if cfg.UD {
		return PortSpaceUDP
	}
	return PortSpaceTCP
}

func (cfg *Config) qpCap() ibverbs.QPCap {
	c := cfg.Cap
	if c.MaxSendWR == 0 && c.MaxRecvWR == 0 {
		c.MaxSendWR, c.MaxRecvWR = defaultWR, defaultWR
	}
	c.MaxSendSGE = max(c.MaxSendSGE, 1)
	c.MaxRecvSGE = max(c.MaxRecvSGE, 1)
	return c
}

func (cfg *Config) connParam() *ConnParam {
	depth := func(v int) uint8 {
		switch {
		case v == 0:
			return MaxDepth
		case v < 0:
			return 0
		}
		return uint8(min(v, MaxDepth-1))
	}
	return &ConnParam{
		PrivateData:        cfg.PrivateData,
		InitiatorDepth:     depth(cfg.InitiatorDepth),
		ResponderResources: depth(cfg.ResponderResources),
		RetryCount:         retries(cfg.RetryCount),
		RNRRetryCount:      ibverbs.Retries(cfg.RNRRetryCount),
	}
}

// resolveTimeout is d (or the default), shortened to end just after ctx's
// deadline so that the context, not the kernel, reports running out.
func resolveTimeout(ctx context.Context, d time.Duration) time.Duration {
	if d <= 0 {
		d = defaultResolve
	}
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)+50*time.Millisecond)
	}
	return d
}

// handshake bounds ctx by cfg.Timeout.
func (cfg *Config) handshake(ctx context.Context) (context.Context, context.CancelFunc) {
	if cfg.Timeout > 0 {
		return context.WithTimeout(ctx, cfg.Timeout)
	}
	return context.WithCancel(ctx)
}

// Await returns the next event of type want on the channel (GetEvent:
// rdma_get_cm_event, rdma_ack_cm_event), skipping
// those that do not end a wait (ADDR_CHANGE, TIMEWAIT_EXIT, and
// MULTICAST_JOIN when another is awaited), or an error for any other
// event: a *RejectedError for REJECTED, or for a UD lookup's UNREACHABLE
// with a SIDR status, else an *EventError naming the event and its status.
// A CONNECT_REQUEST (of a listening ID on the channel) is rejected, and
// its new ID closed, before the error returns.
// It is how a program that drives IDs itself waits for the outcome of
// ResolveAddr, ResolveRoute, Connect or JoinMulticast. It takes the
// channel's next event whatever its ID: give each ID it waits for a
// channel of its own (as Dial and Listen do), or read a channel that
// several IDs share with GetEvent and route the events by Event.ID.
func (ch *EventChannel) Await(ctx context.Context, want EventType) (*Event, error) {
	checkContext(ctx, "(*EventChannel).Await")
	for {
		ev, err := ch.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		switch ev.Type {
		case want:
			return ev, nil
		case EventAddrChange, EventTimewaitExit, EventMulticastJoin:
			continue
		case EventConnectRequest:
			// The request came with an ID of its own, which no one
			// else can reach: refuse it and free it, or it would
			// hold the channel open for good.
			if ev.ID != nil && ev.ID.request {
				err := fmt.Errorf("waiting for %s: %w", want, eventError(ev))
				return nil, errors.Join(err, ev.ID.Reject(nil), ev.ID.Close())
			}
		}
		return nil, fmt.Errorf("waiting for %s: %w", want, eventError(ev))
	}
}

// Conn is a connection made by Dial or Accept: an rdma_cm ID with its own
// event channel, and the QP, CQs and PD under it. Post work requests on
// QP() and poll SendCQ() and RecvCQ(), or wait on them with CQ.Wait; the
// memory they name must be registered on PD().
//
// When the connection ends for an event (the peer's disconnect, say), the
// work requests still posted complete with ibverbs.WCWRFlushErr, and Err
// says why the connection ended: errors.Is(c.Err(), ErrDisconnected).
// The Conn sets Err before it moves the QP to the error state, and closes
// Done after: a flushed completion finds Err set (ExampleConn_Err).
//
// A UD Conn's receives (Config.UD, JoinMulticast) start with the 40-byte
// GRH: each must hold 40 bytes more than the largest datagram that may
// come, up to the path MTU (the port's active MTU, ibverbs.PortAttr's
// ActiveMTU: UD ignores Config.PathMTU). On soft-RoCE a shorter receive completes with
// ibverbs.WCLocQPOpErr and moves the QP to the error state, where it
// takes no datagram more; no event comes of it, so Done stays open and
// Err nil. Close the Conn, or bring the QP back: take its port, P_Key
// index, Q_Key and send PSN (QP.Query) first, then QP.Reset, QP.Modify
// to INIT with the first three, to RTR, and to RTS with the PSN, and post
// the receives again (TestUDShortReceive).
type Conn struct {
	id *ID
	// ownCh is the channel the Conn made for its ID (Dial's,
	// JoinMulticast's), which teardown closes; an accepted Conn's ID
	// closes the one GetRequest made for it itself. Nil for those.
	ownCh   *EventChannel
	ctx     *ibverbs.Context
	ownCtx  bool
	pd      *ibverbs.PD
	ownPD   bool
	scq     *ibverbs.CQ
	ownSCQ  bool
	rcq     *ibverbs.CQ
	ownRCQ  bool
	sch     *ibverbs.CompChannel // the own CQs' channels, for CQ.Wait
	rch     *ibverbs.CompChannel
	qp      *ibverbs.QP
	ownQP   bool // qp is the Conn's, made and moved by it (Config.PathMTU), not librdmacm's
	ud      bool
	param   ConnParam
	udParam UDParam
	ah      *ibverbs.AH
	// group is the group a Conn from JoinMulticast joined, set before
	// JoinMulticast returns and never changed after, so that Group may
	// read it at any time; joined says whether teardown must still leave
	// it (set and cleared before the Conn is returned, or under closeMu).
	group   netip.Addr
	joined  bool
	cleanup func() error // from Config.Prepare
	// local, remote and port are the ID's, kept when the Conn is made
	// (for Config.Prepare) and again once connected: Close may free the
	// ID while another goroutine asks.
	local, remote netip.AddrPort
	port          int

	done      chan struct{}
	mu        sync.Mutex
	err       error
	stopWatch context.CancelFunc
	watchDone chan struct{}
	closeMu   sync.Mutex // Close's, one at a time
	closed    bool       // a Close has freed everything
}

// connParam is cfg's parameters for rdma_connect, or for rdma_accept of a
// request that came with req, on c's device. Depths given above the
// device's (max_qp_init_rd_atom, max_qp_rd_atom), which librdmacm refuses
// with EINVAL, are cut to them, as perftest cuts -o; an accepting side's
// initiator depth also to the request's, as rdma_accept(3) requires.
func (c *Conn) connParam(cfg *Config, req *ConnParam) (*ConnParam, error) {
	p := cfg.connParam()
	given := func(v uint8) bool { return v != MaxDepth && v != 0 }
	if c.ud || !given(p.InitiatorDepth) && !given(p.ResponderResources) {
		return p, nil
	}
	da, err := c.ctx.QueryDevice()
	if err != nil {
		return nil, err
	}
	if given(p.InitiatorDepth) {
		p.InitiatorDepth = uint8(min(int(p.InitiatorDepth), da.MaxQPInitRdAtom))
		if req != nil {
			p.InitiatorDepth = min(p.InitiatorDepth, req.InitiatorDepth)
		}
	}
	if given(p.ResponderResources) {
		p.ResponderResources = uint8(min(int(p.ResponderResources), da.MaxQPRdAtom))
	}
	return p, nil
}

// newConn makes the connection's resources on id's device. It owns id and
// its channel from here on: on failure both are closed.
func newConn(id *ID, cfg *Config, ownCh *EventChannel) (c *Conn, err error) {
	c = &Conn{id: id, ownCh: ownCh, ud: cfg.UD, done: make(chan struct{}),
		local: id.LocalAddr(), remote: id.RemoteAddr(), port: id.PortNum()}
	defer func() {
		if err != nil {
			err = errors.Join(id.peersReason(err), c.teardown())
			c = nil
		}
	}()
	if !id.claim() { // Accept has claimed a request's ID before
		return c, fmt.Errorf("rdmacm: the ID moved to a channel of the caller's (Migrate): %w", syscall.EINVAL)
	}
	verbs := id.verbs()
	if err := cfg.check(); err != nil {
		return c, err
	}
	if cfg.SRQ != nil && cfg.PD == nil {
		return c, fmt.Errorf("Config.SRQ needs Config.PD, on the same device: %w", syscall.EINVAL)
	}
	if cfg.PD != nil {
		c.pd, c.ctx = cfg.PD, cfg.PD.Context()
		if c.ctx.Raw() != verbs {
			dev := "another device"
			if ctx, err := id.Context(); err == nil {
				dev = ctx.Name()
				ctx.Close()
			}
			return c, fmt.Errorf("Config.PD is on %s, not on %s where the connection goes "+
				"(or on a context not from rdmacm.Devices): %w", c.ctx.Name(), dev, syscall.EINVAL)
		}
	} else {
		if c.ctx, err = id.Context(); err != nil {
			return c, err
		}
		c.ownCtx = true
		if c.pd, err = c.ctx.AllocPD(); err != nil {
			return c, err
		}
		c.ownPD = true
	}
	qc := cfg.qpCap()
	size := func(n int) int {
		if cfg.CQSize > 0 {
			return cfg.CQSize
		}
		return max(n, 1)
	}
	mkCQ := func(n int, ch *ibverbs.CompChannel) (*ibverbs.CQ, error) {
		if cfg.SingleThreadedCQs {
			return c.pd.Context().CreateCQEx(ibverbs.CQInit{Entries: n, Channel: ch, SingleThreaded: true})
		}
		return c.pd.Context().CreateCQ(n, ch)
	}
	c.scq, c.rcq = cfg.SendCQ, cfg.RecvCQ
	if c.rcq == nil {
		c.rcq = c.scq
	}
	// The CQs the connection makes have a completion channel each, so
	// that CQ.Wait works on them: a channel costs a file descriptor and
	// nothing on a CQ that is only polled.
	if c.scq == nil {
		if c.sch, err = c.pd.Context().CreateCompChannel(); err != nil {
			return c, err
		}
		// A RecvCQ given keeps its place: receives complete where its
		// owner polls.
		shared := cfg.SharedCQ && c.rcq == nil
		n := qc.MaxSendWR
		if shared {
			n += qc.MaxRecvWR
		}
		if c.scq, err = mkCQ(size(n), c.sch); err != nil {
			return c, err
		}
		c.ownSCQ = true
		if shared {
			c.rcq = c.scq
		}
	}
	if c.rcq == nil {
		if c.rch, err = c.pd.Context().CreateCompChannel(); err != nil {
			return c, err
		}
		if c.rcq, err = mkCQ(size(qc.MaxRecvWR), c.rch); err != nil {
			return c, err
		}
		c.ownRCQ = true
	}
	if cfg.SRQ != nil {
		qc.MaxRecvWR, qc.MaxRecvSGE = 0, 0
	}
	qpInit := ibverbs.QPInit{SendCQ: c.scq, RecvCQ: c.rcq, SRQ: cfg.SRQ, Cap: qc, SigAll: cfg.SigAll, WRAPI: cfg.WRAPI}
	if cfg.movesQP(id.transport()) {
		return c, c.makeQP(qpInit)
	}
	c.qp, err = id.CreateQP(c.pd, qpInit)
	return c, err
}

// prepare runs cfg.Prepare, keeping its cleanup for teardown.
func (c *Conn) prepare(cfg *Config) error {
	if cfg.Prepare == nil {
		return nil
	}
	cleanup, err := cfg.Prepare(c)
	if err != nil {
		return fmt.Errorf("Config.Prepare: %w", err)
	}
	c.cleanup = cleanup
	return nil
}

// maxRNRTimer is the largest RNR NAK timer, and maxAckTimeout the
// largest local ACK timeout: each field has 5 bits.
const (
	maxRNRTimer   = 31
	maxAckTimeout = 31
)

// check refuses the settings no connection can take, so that Listen and
// Dial fail at once rather than every Accept, or the connection request.
func (cfg *Config) check() error {
	if cfg.MinRNRTimer > maxRNRTimer {
		return fmt.Errorf("Config.MinRNRTimer %d: want 1 to %d, 0 for %d, or negative for the CM's: %w",
			cfg.MinRNRTimer, maxRNRTimer, ibverbs.DefaultMinRNRTimer, syscall.EINVAL)
	}
	if cfg.AckTimeout > maxAckTimeout {
		return fmt.Errorf("Config.AckTimeout %d: want 1 to %d, or 0 for the one rdma_cm derives from the path: %w",
			cfg.AckTimeout, maxAckTimeout, syscall.EINVAL)
	}
	if cfg.PathMTU != 0 && cfg.PathMTU.Bytes() == 0 {
		return fmt.Errorf("Config.PathMTU %d: want ibverbs.MTU256 (%d) to MTU4096 (%d), or 0 for the one rdma_cm derives from the route: %w",
			uint8(cfg.PathMTU), ibverbs.MTU256, ibverbs.MTU4096, syscall.EINVAL)
	}
	return nil
}

// setRNRTimer gives an RC connection's QP cfg's RNR NAK timer, once
// rdma_cm has brought it to RTS, where the CM left 0 (655 ms). A QP
// already in the error state is left so: the peer, which may send once
// it has the reply, sent first, and its message failed here (one too
// long for the receive posted); the connection is made, and that
// failure is the receive's completion's to report, not Accept's.
func (c *Conn) setRNRTimer(cfg *Config) error {
	if cfg.UD || cfg.MinRNRTimer < 0 {
		return nil
	}
	t := uint8(ibverbs.DefaultMinRNRTimer)
	if cfg.MinRNRTimer > 0 {
		t = uint8(cfg.MinRNRTimer)
	}
	err := c.qp.Modify(&ibverbs.QPAttr{MinRNRTimer: t}, ibverbs.QPAttrMinRNRTimer)
	if err != nil {
		if st, qerr := c.qp.State(); qerr == nil && st == ibverbs.QPStateError {
			return nil
		}
	}
	return err
}

// teardown closes what the connection owns, in reverse order of creation
// but for the AH, which goes after the QP that sends with it, going on
// past a failure. Each Close is idempotent, so that a teardown
// that failed can run again: what it closed stays closed, and what failed
// is tried again.
func (c *Conn) teardown() error { return errors.Join(c.teardownSteps()...) }

// teardownSteps is teardown, returning the failures of its steps, each
// naming what failed to close ("the Conn's PD: ibv_dealloc_pd: ..."). The
// Conn's handle on the device (id.Context's, which closes no device: it
// is librdmacm's) is left for the next teardown where a PD, CQ or channel
// of the Conn's failed to close, since that one keeps it open: its
// error ("ibv_close_device: 1 object ... still open") would only repeat
// that failure.
func (c *Conn) teardownSteps() []error {
	var errs []error
	step := func(what string, err error) bool {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		return err == nil
	}
	kidsClosed := true // the handle's objects that the Conn made
	closeIf := func(own bool, what string, x interface{ Close() error }) {
		if own && !step(what, x.Close()) {
			kidsClosed = false
		}
	}
	if c.joined && step("leaving the multicast group", c.id.LeaveMulticast(c.group)) {
		c.joined = false
	}
	if c.cleanup != nil && step("Config.Prepare's cleanup", c.cleanup()) {
		c.cleanup = nil
	}
	// The QP before the AH that addresses its sends: the QP's Close
	// waits for a PostSend under way, which may be handing the AH to the
	// provider, and the AH's Close takes no lock of the QP's. While the
	// QP stays open, so does its AH.
	qpClosed := c.qp == nil || step("the Conn's QP", c.qp.Close())
	if c.ah != nil && qpClosed {
		step("the Conn's AH", c.ah.Close())
	}
	closeIf(c.ownRCQ && c.rcq != c.scq, "the Conn's receive CQ", c.rcq)
	closeIf(c.rch != nil, "the Conn's receive CQ's channel", c.rch)
	closeIf(c.ownSCQ, "the Conn's CQ", c.scq)
	closeIf(c.sch != nil, "the Conn's CQ's channel", c.sch)
	closeIf(c.ownPD, "the Conn's PD", c.pd)
	if c.ownCtx && kidsClosed {
		step("the Conn's handle on the device", c.ctx.Close())
	}
	if step("the Conn's ID", c.id.Close()) {
		c.joined = false // rdma_destroy_id has left it
	}
	// The channel the Conn made, never the one the ID is on: that may
	// be a caller's, which other IDs use. A request's ID has closed the
	// channel GetRequest made for it.
	if c.ownCh != nil {
		step("the Conn's event channel", c.ownCh.Close())
	}
	return errs
}

// start keeps the connection's addresses and begins watching its channel
// for the peer going away.
func (c *Conn) start() {
	c.local, c.remote, c.port = c.id.LocalAddr(), c.id.RemoteAddr(), c.id.PortNum()
	ctx, cancel := context.WithCancel(context.Background())
	c.stopWatch = cancel
	c.watchDone = make(chan struct{})
	go c.watch(ctx)
}

// watch reads the connection's events until one ends it, or Close (ctx).
// A read that fails for want of memory (or is interrupted) took no event:
// it reads again, after a pause that grows to watchBackoff, rather than
// end a connection that is still up.
func (c *Conn) watch(ctx context.Context) {
	defer close(c.watchDone)
	pause := time.Millisecond
	for {
		ev, err := c.id.ch.Load().GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !transient(err) {
				c.stop(err, false)
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			pause = min(2*pause, watchBackoff)
			continue
		}
		pause = time.Millisecond
		switch ev.Type {
		case EventDisconnected:
			// Answer the peer's disconnect request (DREQ) at once, as
			// rdma_cm expects, so that its rdma_disconnect completes
			// without waiting for a timeout.
			c.stop(eventError(ev), !c.ud)
			return
		case EventDeviceRemoval, EventConnectError, EventUnreachable, EventRejected, EventMulticastError:
			c.stop(eventError(ev), false)
			return
		}
	}
}

// stop ends the connection for err, an event or a failed read of the
// events: it records err, so that Err explains every flush that follows;
// disconnects, where disconnect says so (answering the peer's); moves
// the QP to the error state, so that the work posted on it flushes and a
// CQ.Wait for it wakes; then closes Done. The CM moves the QP itself only
// for a disconnect (rdma_disconnect): an UNREACHABLE that ends an
// established connection (rdma_cm on RoCE sends one when the peer's
// address stops resolving, or resolves to another MAC) left the QP in
// RTS, and its waiters waiting for completions that never came. Only
// watch calls stop, and Close waits for watch to return.
func (c *Conn) stop(err error, disconnect bool) {
	c.mu.Lock()
	ended := c.err != nil
	if !ended {
		c.err = err
	}
	c.mu.Unlock()
	if ended {
		return
	}
	if disconnect {
		c.id.Disconnect()
	}
	if c.qp != nil {
		c.qp.ToError()
	}
	close(c.done)
}

// watchBackoff is the longest pause of watch between reads that fail.
const watchBackoff = time.Second

// transient reports whether err, a failed read of an event channel, may
// succeed if tried again: the read took no event.
func transient(err error) bool {
	return errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EINTR)
}

// end records why the connection ended and closes Done, unless an event
// ended it before (stop).
func (c *Conn) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
}

// QP returns the connection's queue pair: RC, or UD with Config.UD.
func (c *Conn) QP() *ibverbs.QP { return c.qp }

// PD returns the protection domain of the QP.
func (c *Conn) PD() *ibverbs.PD { return c.pd }

// SendCQ returns the CQ of the QP's send queue. Unless it is
// Config.SendCQ, it has a completion channel of its own, so a goroutine
// can CQ.Wait on it.
func (c *Conn) SendCQ() *ibverbs.CQ { return c.scq }

// RecvCQ returns the CQ of the QP's receive queue, with a completion
// channel of its own as SendCQ's, unless it is one from the Config.
func (c *Conn) RecvCQ() *ibverbs.CQ { return c.rcq }

// Context returns the device the connection goes through, borrowed from
// librdmacm (or Config.PD's context).
func (c *Conn) Context() *ibverbs.Context { return c.ctx }

// ID returns the connection's rdma_cm identifier. Its events belong to the
// Conn: do not wait on its channel. It stays on that channel: its
// Migrate refuses (syscall.EINVAL).
func (c *Conn) ID() *ID { return c.id }

// PortNum returns the device port the connection uses.
func (c *Conn) PortNum() int { return c.port }

// LocalAddr returns the local IP address and port. Like RemoteAddr and
// PortNum, it may be called at any time, during and after Close too.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// RemoteAddr returns the peer's IP address and port.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.remote }

// PrivateData returns what the peer sent with its request (for a Conn from
// Accept) or reply (from Dial), padded with zeros by the CM to a fixed size
// over InfiniBand and RoCE: 56 bytes for a request and 196 for a reply on
// RC, 180 and 136 on UD. An ibverbs.RemoteMR the peer sent decodes from
// it with UnmarshalBinary, which ignores the padding.
func (c *Conn) PrivateData() []byte {
	if c.ud {
		return c.udParam.PrivateData
	}
	return c.param.PrivateData
}

// Param returns the connection parameters the peer sent.
func (c *Conn) Param() ConnParam { return c.param }

// RemoteUD returns, for a UD Conn from Dial, an address handle for the
// listener and its QPN and QKey, to address sends with
// (ibverbs.SendWR.AH, RemoteQPN, RemoteQKey); for one from
// JoinMulticast, the group's. Otherwise it returns nil.
// The AH belongs to the Conn. A receive buffer on a UD QP starts with the
// 40-byte GRH, and must hold 40 bytes more than the datagram: a shorter
// one moves the QP to the error state on soft-RoCE, which leaves Done
// open and Err nil (see Conn).
func (c *Conn) RemoteUD() (ah *ibverbs.AH, qpn, qkey uint32) {
	if c.ah == nil {
		return nil, 0, 0
	}
	return c.ah, c.udParam.QPNum, c.udParam.QKey
}

// UD returns, for a UD Conn, the parameters of the event that made it
// (struct rdma_ud_param): from Dial the listener's, from JoinMulticast the
// group's, whose AHAttr carries the group's multicast LID on InfiniBand,
// which the group's senders address (AHAttr.DLID). It returns the zero
// UDParam for a connected Conn.
func (c *Conn) UD() UDParam { return c.udParam }

// Done returns a channel that closes when the connection ends, and Err
// then says why.
//
// When an event ends it (the peer disconnected, DISCONNECTED; the peer's
// address became unreachable, UNREACHABLE; the device went away,
// DEVICE_REMOVAL), or reading the events fails, the Conn sets Err and
// moves its QP to the error state, so that the work requests posted on it complete,
// flushed (WCWRFlushErr), and a CQ.Wait for them returns, then closes
// Done at once. Nothing is freed: the QP, CQs and PD stay, to poll the
// last completions from, until Close.
//
// When Close ends it, Done closes as Close returns, once Close has
// disconnected and freed what it could: a goroutine woken by Done finds
// the QP and the CQs the Conn made closed, and their methods return
// ibverbs.ErrClosed. Until then Err is nil. Config.Prepare's cleanup runs
// before, within Close: it must not wait for Done, nor for what stops on
// it.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns nil while the connection is up, then why it ended: an
// error matching ErrDisconnected when the peer disconnected (its
// process's end disconnects too: the kernel does it), ErrUnreachable or
// ErrDeviceRemoved for those events, ErrClosed after Close. When an
// event ends the connection, the Conn sets Err first, then moves the QP
// to the error state, then closes Done: a completion flushed by the end
// (ibverbs.WCWRFlushErr) finds Err set, and so does a goroutine woken by
// Done (ExampleConn_Err). After Close, Err is set as Done closes.
//
// The CM has no keepalive: a peer whose host went down, or whose link was
// cut, is seldom told here. (rdma_cm on RoCE, since Linux 6.8 and in some
// older stable kernels such as Debian's 6.1, ends a connection with
// UNREACHABLE when the kernel's neighbour entry for the peer fails or
// changes its MAC address, as it does after a link goes down once this
// side sends.) The QP's work requests tell it, failing once their retries
// run out (WCRetryExcErr): about 15 s after the peer fell silent, with
// the defaults on soft-RoCE (Config.RetryCount says how long), as
// rdmamsg's keepalives do for a side that has nothing to send. A request
// that fails so moves the QP to the error state, not the Conn: Done stays
// open until the peer's disconnect, or Close.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close disconnects (rdma_disconnect), or leaves the group of a Conn from
// JoinMulticast (rdma_leave_multicast), and frees the connection: the QP
// (rdma_destroy_qp, or ibv_destroy_qp for one made with Config.PathMTU),
// then a UD connection's AH (left open while the QP's Close fails), the
// CQs and PD it made, the ID (rdma_destroy_id) and its channel, and its
// handle on the device. PD, CQs passed in Config stay
// open. Done closes, and Err says ErrClosed, once that is done, as Close
// returns (unless an event had ended the connection before). MRs and
// other objects made on PD() must be closed first: while one is open,
// Close fails with an error matching syscall.EBUSY, having closed what it
// could (the connection is down, the QP and CQs are closed: Done is
// closed), and the PD and the device handle stay. Its error names the
// Conn and each part that failed, a line each ("rdmacm: close
// 198.18.0.2:41234->198.18.0.1:7471: the Conn's PD: ibv_dealloc_pd: 1
// object (an MR, ...) still open ..."), and leaves out the device
// handle that such a PD keeps open (a handle on librdmacm's device,
// whose Close closes no device). Close again once they
// are closed: each Close tries again what failed before, and what closed
// stays closed. Once a Close has returned nil, closing again is a no-op.
func (c *Conn) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	if c.stopWatch != nil {
		c.stopWatch()
		<-c.watchDone
	}
	var errs []error
	// A Conn that no event ended, closed for the first time, disconnects;
	// one that a Close failed to free ended then.
	if c.Err() == nil && !c.ud {
		if err := c.id.Disconnect(); err != nil {
			errs = append(errs, fmt.Errorf("disconnecting: %w", err))
		}
		if c.ownQP {
			// rdma_disconnect moves only a QP that librdmacm made
			// to the error state: the Conn's own goes there too,
			// so that what was posted on it flushes to CQs that
			// stay (Config.SendCQ, RecvCQ) as before its Close.
			c.qp.ToError()
		}
	}
	steps := c.teardownSteps()
	// Done closes once the objects are freed (or Close has failed to
	// free them): a goroutine it wakes finds them closed, not in the
	// middle of their destruction.
	c.end(ErrClosed)
	c.closed = len(steps) == 0
	return c.closeError(append(errs, steps...))
}

// closeError is Close's error of the failures errs, each a line of its
// own that names the Conn: "rdmacm: close 198.18.0.2:41234->198.18.0.1:7471:
// the Conn's PD: ibv_dealloc_pd: 1 object (an MR, ...) still open: ...".
func (c *Conn) closeError(errs []error) error {
	for i, err := range errs {
		errs[i] = fmt.Errorf("rdmacm: close %s->%s: %w", c.local, c.remote, err)
	}
	return errors.Join(errs...)
}
