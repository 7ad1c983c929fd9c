//go:build linux && cgo

package rdmamsg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// Config tunes Dial, Listen and Accept. The zero value (or nil) takes
// messages of up to 4 KiB, 32 of them posted, and sends from 16 buffers.
type Config struct {
	// MaxMessage is the largest message this side receives, in bytes
	// (default 4096, at most 1 GiB). The peer's Send refuses longer ones.
	MaxMessage int
	// Depth is how many messages this side keeps receives posted for
	// (default 32, 4 to 16384); the peer holds a credit for each. It
	// keeps the last credit for a credit update (flow.go), so it has at
	// most Depth-1 messages on their way (sent and not yet taken by this
	// side's Recv or Read) before it waits for this side to take them:
	// 7 for a Depth of 8 (TestSendWaitsForReceiver). A receive taken
	// and posted again counts for the peer only once this side reports
	// it, in its next message or, once Depth/2 are unreported, in a
	// credit update; so while up to Depth/2-1 of them wait for their
	// report, the peer has as many fewer (more, where this side has no
	// credit left for the update), and the peer's own updates and
	// keepalives take receives too. Its memory is Depth × MaxMessage
	// bytes, registered with the device.
	Depth int
	// SendBuffers is how many of this side's messages may be on their
	// way at once, each in its own registered buffer of the smaller of
	// MaxSend and the peer's MaxMessage (default 16): SendBuffers × 4 MiB,
	// 64 MiB, with the defaults and a peer that claims a MaxMessage of 4
	// MiB or more.
	SendBuffers int
	// MaxSend caps the largest message this side sends, whatever the
	// peer's MaxMessage, and with it the memory its send buffers take
	// (default 4 MiB; at most 1 GiB). Conn.MaxSend is the smaller of the
	// two. The peer's MaxMessage is what its hello claims: a Listener's
	// Accept registers SendBuffers × min(MaxSend, that) bytes for each
	// peer it accepts, so a server that accepts peers it does not trust
	// should set MaxSend (and SendBuffers) to what it means to spend on
	// each.
	MaxSend int
	// KeepAlive is how long this side goes without sending before it
	// sends an empty credit update anyway, or, with no credit to spare, a
	// probe, an RDMA write of no bytes (default 15 s; negative for
	// never): it goes within KeepAlive of the last message, update or
	// keepalive posted, at most a quarter of KeepAlive early. A peer that died
	// silently then shows, through the device's retries running out, even
	// to a side that only receives: within KeepAlive and CM.RetryCount+1
	// ACK timeouts, 7 with the default (rdmacm.DefaultRetryCount+1;
	// rdmacm.Config.RetryCount says how long those take). Keepalives or
	// not, a connection whose sends go without a completion for twice the
	// QP's retries, at least 20 s, and longer by the bytes of the one-sided
	// operations under way at 10 MB/s, fails (the package doc's The end of
	// a connection).
	KeepAlive time.Duration
	// Spin is how long Send, Recv, Read and Write poll the connection's
	// CQ, for the peer's message or for credits, before they sleep on its
	// completion channel (default 0: sleep at once). A spin keeps a CPU
	// busy while it lasts and saves the wake-up of a sleep, which is much
	// of a short message's round trip on a NIC: for a caller that expects
	// an answer within microseconds.
	Spin time.Duration
	// Handshakes, for Listen only, bounds the connection requests a
	// Listener answers at once (default 32, at most 4096). Each holds,
	// from its reply until Accept takes the connection or the handshake
	// fails, this side's receive buffers: (Depth+2) × MaxMessage bytes of
	// registered memory. Requests beyond it wait, in the kernel's
	// backlog, for one to end.
	Handshakes int
	// HandshakesPerAddr, for Listen only, bounds the handshakes under
	// way, not yet completed by the peer, from one IP address (default
	// 8): a request beyond it is rejected at once as busy, which Dial
	// takes as a cue to try again shortly, until its context ends (Dial).
	// Peers at many addresses can still take every one of Handshakes.
	HandshakesPerAddr int
	// HandshakeTimeout is, for Listen, how long a peer has to complete
	// its connection after the Listener's reply, unless CM.Timeout is
	// set, which bounds the whole handshake; and for Handshake whose ctx
	// has no deadline, how long the whole exchange may take (default
	// 10 s).
	HandshakeTimeout time.Duration
	// Device, for Handshake only, names the RDMA device to use ("mlx5_0",
	// or "mlx5_0:2" for port 2) instead of the one with a RoCE GID of the
	// handshake connection's local address. Dial, Listen and Accept,
	// where rdma_cm picks the device by address, refuse it.
	Device string
	// CM is the connection manager's part: the source address, TOS, ACK
	// timeout, retry counts (rdmacm.DefaultRetryCount unless set) and
	// time limits. Cap, CQSize, PrivateData, Prepare, PD, CQs, SharedCQ,
	// SRQ, UD, SigAll, WRAPI and SingleThreadedCQs (callers poll the CQ
	// from more than one goroutine) are this package's to set and must be
	// left zero: the one CQ holds a completion for every receive and send
	// the connection may have posted, and a smaller one would overrun.
	CM rdmacm.Config
}

const (
	defaultMaxMessage  = 4096
	defaultDepth       = 32
	defaultSendBuffers = 16
	defaultMaxSend     = 4 << 20
	defaultKeepAlive   = 15 * time.Second
	// updateSlots is the room kept on the send queue for credit updates
	// beyond the data buffers; two more requests, beyond those, are the
	// abort's (Abort) and the end message's (CloseWrite, Close), which
	// never wait for room.
	updateSlots = 4
)

// withDefaults returns a copy of cfg with its defaults filled in, or an
// error naming a setting out of range.
func (cfg *Config) withDefaults() (Config, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	// The zero value of each field asks for its default.
	c.MaxMessage = cmp.Or(c.MaxMessage, defaultMaxMessage)
	c.Depth = cmp.Or(c.Depth, defaultDepth)
	c.SendBuffers = cmp.Or(c.SendBuffers, defaultSendBuffers)
	c.MaxSend = cmp.Or(c.MaxSend, defaultMaxSend)
	c.KeepAlive = cmp.Or(c.KeepAlive, defaultKeepAlive)
	c.Handshakes = cmp.Or(c.Handshakes, defaultHandshakes)
	c.HandshakesPerAddr = cmp.Or(c.HandshakesPerAddr, defaultHandshakesPerAddr)
	c.HandshakeTimeout = cmp.Or(c.HandshakeTimeout, handshakeTimeout)
	switch {
	case c.Handshakes < 1 || c.Handshakes > maxHandshakes:
		return c, fmt.Errorf("rdmamsg: Config.Handshakes %d: want 1 to %d: %w", c.Handshakes, maxHandshakes, syscall.EINVAL)
	case c.HandshakesPerAddr < 1:
		return c, fmt.Errorf("rdmamsg: Config.HandshakesPerAddr %d: want 1 or more: %w", c.HandshakesPerAddr, syscall.EINVAL)
	case c.HandshakeTimeout < 0:
		return c, fmt.Errorf("rdmamsg: Config.HandshakeTimeout %v: want 0 or more: %w", c.HandshakeTimeout, syscall.EINVAL)
	case c.MaxMessage < 1 || c.MaxMessage > maxMaxMessage:
		return c, fmt.Errorf("rdmamsg: Config.MaxMessage %d: want 1 to %d: %w", c.MaxMessage, maxMaxMessage, syscall.EINVAL)
	case c.Depth < minDepth || c.Depth > maxDepth:
		return c, fmt.Errorf("rdmamsg: Config.Depth %d: want %d to %d: %w", c.Depth, minDepth, maxDepth, syscall.EINVAL)
	case c.MaxSend < 1 || c.MaxSend > maxMaxMessage:
		return c, fmt.Errorf("rdmamsg: Config.MaxSend %d: want 1 to %d: %w", c.MaxSend, maxMaxMessage, syscall.EINVAL)
	case c.Spin < 0:
		return c, fmt.Errorf("rdmamsg: Config.Spin %v: want 0 or more: %w", c.Spin, syscall.EINVAL)
	case c.SendBuffers < 1 || c.SendBuffers > maxDepth:
		return c, fmt.Errorf("rdmamsg: Config.SendBuffers %d: want 1 to %d: %w", c.SendBuffers, maxDepth, syscall.EINVAL)
	case c.CM.Cap != (ibverbs.QPCap{}) || c.CM.CQSize != 0 || c.CM.PrivateData != nil || c.CM.Prepare != nil || c.CM.PD != nil ||
		c.CM.SendCQ != nil || c.CM.RecvCQ != nil || c.CM.SRQ != nil || c.CM.UD || c.CM.SigAll || c.CM.WRAPI ||
		c.CM.SingleThreadedCQs || c.CM.SharedCQ:
		return c, fmt.Errorf("rdmamsg: Config.CM sets the QP, its memory or its private data, which are rdmamsg's: %w", syscall.EINVAL)
	}
	return c, nil
}

// Conn is a connection that carries messages: each Send arrives as one
// Recv on the other side, whole and in order. It is also a byte stream
// (Read, Write), whose writes are cut into messages of the peer's
// MaxMessage.
//
// Any number of goroutines may send (Send, Write, ReadFrom) and receive
// (Recv, Read, WriteTo) at once. Sends take turns, so that one Send's
// message and one Write's messages go whole and together; receives take
// turns too, each Recv taking a whole message; a send and a receive run
// at once. A caller waiting for its turn (behind a ReadFrom blocked in
// its reader, say) stops as it would waiting for a message or a credit:
// when its context ends, its deadline passes or the Conn closes. Close
// and Abort may be called from any goroutine. One-sided RDMA reads and
// writes of the peer's memory (ReadRemote, WriteRemote) take no turn:
// any number run at once, beside the senders and the receivers.
//
// A *Conn is not a net.Conn (LocalAddr and RemoteAddr return a
// netip.AddrPort): NetConn gives one.
type Conn struct {
	link link

	// The receives: depth+2 buffers of maxRecv bytes, request i for
	// buffer i; the two beyond the depth the peer is told of stay free
	// for its end message and its abort (flow.go).
	depth, maxRecv int
	rbuf           *ibverbs.Buffer
	rmr            *ibverbs.MR
	rb             *ibverbs.RecvBatch

	// The sends: request i < sendBuffers sends from buffer i, of maxSend
	// bytes (the smaller of the peer's largest and Config.MaxSend);
	// requests sendBuffers on are the credit update, the probe, the
	// abort, the end and the keepalive's update, which carry no payload.
	sendBuffers, maxSend int
	sbuf                 *ibverbs.Buffer
	smr                  *ibverbs.MR
	sb                   *ibverbs.SendBatch

	spin      time.Duration
	keepAlive time.Duration
	posts     uint64 // requests posted to the send queue, for keepAlive
	// s is how callers take the completions of the connection's one CQ,
	// for sends and receives alike, and sleep for them; wcs takes them,
	// under mu.
	s   sleeper
	wcs []ibverbs.WC

	// sendTurn and recvTurn are the turns of the senders (Send, Write,
	// ReadFrom, CloseWrite) and of the receivers (Recv, Read, WriteTo):
	// one-slot semaphores, which a caller waits for alongside its
	// context, its deadline and Close (takeTurn), as it does for what
	// it waits for once it has its turn.
	sendTurn, recvTurn chan struct{}
	// peerEnds says the peer takes end and abort messages, keeps two
	// receives spare for them and sends an end message before it closes
	// (its hello).
	peerEnds bool

	// mu guards what follows, and every post: posts to the QP must not
	// run at once.
	mu       sync.Mutex
	fl       flow
	free     []int // send buffers not on the wire
	sqOut    int   // requests on the send queue
	upOut    int   // of which credit updates and keepalives
	lost     int   // messages whose send failed or was flushed
	finOut   int   // end and abort messages posted and not acknowledged
	finErr   bool  // one failed with an error of its own (not a flush)
	aborting bool  // the abort message is posted (Abort)
	ready    ring  // received data messages not yet taken, in order
	lens     []int // each receive buffer's message length
	cur      int   // the message Read is part way through, or -1
	off      int   // and how far
	err      error // why the connection failed
	eof      bool  // the peer closed, and everything it sent was taken
	wclosed  bool  // this side's end message is posted (CloseWrite)
	rclosed  bool  // the peer's end message was read
	endIn    bool  // the peer's end message was received
	peerOut  bool  // and it was Close's: the peer takes nothing more
	cut      error // the readers' io.EOF, where the peer ended without an end message
	closing  bool
	dropped  bool // reset disconnected
	started  bool // start finished: Close frees what there is
	// loans counts the buffers in use outside mu (lend); unmapLater says
	// Close left their unmapping to the last giveBack.
	loans      int
	unmapLater bool

	rdl, wdl deadline // SetReadDeadline's, SetWriteDeadline's

	// The one-sided operations (rdma.go): opSlots requests past the
	// others on the send queue, each with its state in ops and its
	// caller's kick in opKick, under mu; opFree holds the slots free,
	// readFree a token for each RDMA read the QP may have outstanding
	// (its initiator depth; nil for none). opWait has bit k set while
	// slot k's caller waits, for wakeOps; rdOut counts the operations on
	// the send queue, beside sqOut's messages and control requests, and
	// opBytes their bytes, for the stall watch. maxOp is the longest
	// operation, the port's largest message (startOps).
	ops       [opSlots]op
	opSGL     [opSlots][1]ibverbs.SGE
	opReadyFn [opSlots]func() bool
	opKick    [opSlots]chan struct{}
	opFree    chan int
	readFree  chan struct{}
	opWait    atomic.Uint64
	rdOut     int
	opBytes   int
	maxOp     int
	// over is closed, under mu, once nothing more can be posted for a
	// reason other than Close: the connection failed (fail), ended
	// (ended), or the peer closed (its Close's end message). sendErr
	// says why. The callers waiting for an operation's slot wake on it,
	// where the slots may never come back.
	over chan struct{}
	// regMu guards the regions registered (RegisterMemory) and their
	// deregistration; regsGone says Close deregistered them. It comes
	// before mu.
	regMu    sync.Mutex
	regions  map[*Region]struct{}
	regsGone bool

	// activity counts the times completions were taken; idle fires
	// checkIdle idleWait after a caller took some while timing was false,
	// and seen is activity as it last found it; couriering says courier
	// runs.
	activity, seen     uint64
	idle               *time.Timer
	idleWait           time.Duration
	timing, couriering bool

	sendKick, recvKick, closeKick, courierKick chan struct{}
	closed                                     chan struct{}
	stop                                       context.CancelFunc
	loops                                      sync.WaitGroup
	closeOnce                                  sync.Once
	closeErr                                   error
}

// A link is the connected RC QP under a Conn, and its end: an rdma_cm
// connection (Dial, Accept) or one whose endpoints went over a net.Conn
// (Handshake).
type link interface {
	QP() *ibverbs.QP
	PD() *ibverbs.PD
	SendCQ() *ibverbs.CQ
	RecvCQ() *ibverbs.CQ
	LocalAddr() netip.AddrPort
	RemoteAddr() netip.AddrPort
	// Done is closed when the connection ends; Err then says why, and
	// matches rdmacm.ErrDisconnected when the peer closed it.
	Done() <-chan struct{}
	Err() error
	// disconnect ends the connection from this side, so that the
	// device stops and the peer learns of it; Close then frees it.
	disconnect() error
	Close() error
}

// cmLink is a link made by rdma_cm.
type cmLink struct{ *rdmacm.Conn }

func (l cmLink) disconnect() error { return l.ID().Disconnect() }

var errDeviceForCM = fmt.Errorf("rdmamsg: Config.Device is for Handshake; rdma_cm picks the device by address (Config.CM.SrcAddr): %w", syscall.EINVAL)

// ErrClosed is returned by the methods of a Conn, Listener or PacketConn
// after its Close. It matches rdmacm.ErrClosed, net.ErrClosed and
// os.ErrClosed; and an error of the connection manager's that Dial,
// Listen or Accept returns and that matches rdmacm.ErrClosed matches
// ErrClosed too.
var ErrClosed error = closedError{}

type closedError struct{}

func (closedError) Error() string { return "rdmamsg: object is closed" }

func (closedError) Is(target error) bool {
	return target == rdmacm.ErrClosed || target == net.ErrClosed || target == os.ErrClosed
}

// cmError is an error of rdmacm's that Dial, Listen or Accept returns:
// said as rdmamsg's ("rdmamsg: dial ...", where rdmacm's says "rdmacm:
// dial ..."), it wraps rdmacm's, and matches ErrClosed where that matches
// rdmacm.ErrClosed.
type cmError struct{ err error }

func cmErr(err error) error {
	if err == nil {
		return nil
	}
	return cmError{err}
}

func (e cmError) Error() string {
	s, _ := strings.CutPrefix(e.err.Error(), "rdmacm: ")
	return "rdmamsg: " + s
}

func (e cmError) Unwrap() error { return e.err }

func (e cmError) Is(target error) bool {
	return target == ErrClosed && errors.Is(e.err, rdmacm.ErrClosed)
}

// checkContext panics where ctx is nil, as the standard library's
// context-taking calls do (net.Dialer.DialContext): the entry points
// call it first, before they make or take anything, so that a nil
// Context fails at once with the call's name rather than later, or in a
// goroutine of the call's own where no recover can catch it.
func checkContext(ctx context.Context, fn string) {
	if ctx == nil {
		panic("rdmamsg." + fn + ": nil Context")
	}
}

// Dial connects to an rdmamsg Listener at addr ("host:port") through
// rdma_cm (rdmacm.Dial), telling it this side's depth and largest message
// in the connection request, and posts this side's receives before the
// request goes.
//
// ctx bounds the whole Dial, and so does Config.CM.Timeout where set.
// Resolving the address and the route have limits of their own
// (Config.CM.AddrTimeout and RouteTimeout, 2 s each by default), and
// the connection request after them rdmacm.DefaultConnectTimeout (2
// min) where neither ctx nor Config.CM.Timeout bounds it: where the
// request goes unanswered (a source address that cannot reach the
// listener's, say), the kernel's connection manager gives up retrying it
// first, after about 100 s on soft-RoCE under Linux 6.1 (an error
// matching rdmacm.ErrUnreachable and syscall.ETIMEDOUT). Pass a ctx with
// a deadline, or set Config.CM.Timeout, for a shorter bound.
//
// A Listener busy with as many handshakes from this host as it takes
// (Config.HandshakesPerAddr) rejects the request as busy, and Dial sends
// it again after a pause that starts at 10 ms and doubles, with jitter,
// up to 500 ms, as a TCP connection request waits in the listener's
// backlog: a burst of Dials from one host, a pool of connections opened
// at once, all get in. It tries until ctx ends, or Config.CM.Timeout
// after its start where set, or, where neither bounds it,
// rdmacm.DefaultConnectTimeout (2 min) after the first busy reject, and
// then fails with an error that says the listener was busy, matching
// syscall.EAGAIN and the context's error (a net.Error whose Timeout is
// true, for a deadline), not syscall.ECONNREFUSED.
//
// An address where no Listener can be is refused at once, as
// PacketConn.WriteTo refuses it: an unspecified, multicast or broadcast
// one, or port 0 (syscall.EINVAL; behind a host name too, before the
// name is looked up), and a loopback one (syscall.EADDRNOTAVAIL, as no
// RDMA device has one).
func Dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	checkContext(ctx, "Dial")
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if to, err := netip.ParseAddrPort(addr); err == nil {
		if err := checkDestination("dial", "Listener", netip.AddrPortFrom(to.Addr().Unmap(), to.Port())); err != nil {
			return nil, err
		}
	} else if _, port, err := net.SplitHostPort(addr); err == nil {
		// A host name on port 0: refused before its lookup too.
		if p, err := strconv.ParseUint(port, 10, 16); err == nil && p == 0 {
			return nil, portZeroError("dial", "Listener", addr)
		}
	}
	if c.Device != "" {
		return nil, errDeviceForCM
	}
	conn, cm, err := dialBusy(ctx, addr, &c)
	if err != nil {
		return nil, err
	}
	peer, err := parseHello(cm.PrivateData())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdmamsg: dial %s: %w", addr, err), cm.Close())
	}
	if err := conn.start(cmLink{cm}, peer); err != nil {
		return nil, fmt.Errorf("rdmamsg: dial %s: %w", addr, err)
	}
	return conn, nil
}

// Listener accepts rdmamsg connections. As a TCP listener's kernel does,
// it answers connection requests as they come, up to Config.Handshakes
// (32) at once, and keeps the connections made until Accept takes them. A
// peer that stalls in its handshake is dropped once it has not completed
// the connection within Config.HandshakeTimeout (10 s) of the reply, or
// Config.CM.Timeout of its request when that is set; until then it holds
// one of the Handshakes and this side's receive buffers, (Depth+2) ×
// MaxMessage bytes of registered memory. One IP address has at most
// Config.HandshakesPerAddr (8) handshakes under way, its requests beyond
// them rejected at once as busy (Dial tries again), so that one host's
// stalls do not hold up the others; peers at many addresses can still
// take them all, for HandshakeTimeout at a time.
type Listener struct {
	l   *rdmacm.Listener
	cfg Config

	closed context.Context // ends at Close
	close  context.CancelFunc

	// shaking bounds the handshakes under way; shakers counts those
	// not yet completed from each address, under shakeMu. slots bounds the
	// outcomes made and not yet Accepted: a sender to ready takes one
	// first, and ready holds as many, so that no send on it waits.
	shaking chan struct{}
	shakeMu sync.Mutex
	shakers map[netip.Addr]int
	slots   chan struct{}
	ready   chan accepted
	// removed is closed when take stops for good, after the device's
	// removal, whose error is then gone.
	removed chan struct{}
	gone    error
	// loops counts take and its handshakes; Close waits for them.
	loops sync.WaitGroup
	// closeMu serializes Close; closeDone is set once one has
	// succeeded, so that a Close that failed is tried again by the next.
	closeMu   sync.Mutex
	closeDone bool
}

// accepted is an outcome for Accept: a connection made, which Accept
// starts (its send buffers, sized by the peer, are made only then), or
// this side's failure to make one.
type accepted struct {
	c    *Conn
	cm   *rdmacm.Conn
	peer hello
	err  error
}

// close closes a connection made that no Accept took.
func (a accepted) close() {
	if a.cm != nil {
		a.cm.Close()
	}
}

// A Listener's bounds: the connections it makes before Accept asks for
// them (Config.CM.Backlog when smaller), each of which holds its
// registered receive buffers; the handshakes under way at once
// (Config.Handshakes), and from one address (HandshakesPerAddr); and the
// time a peer has to complete one when Config.CM.Timeout is unset
// (HandshakeTimeout's default).
const (
	aheadOfAccept            = 8
	defaultHandshakes        = 32
	maxHandshakes            = 4096
	defaultHandshakesPerAddr = 8
)

var handshakeTimeout = 10 * time.Second // a var for tests

// Listen listens for rdmamsg connections at addr ("host:port"; port 0
// picks one) through rdma_cm (rdmacm.Listen), and begins answering
// connection requests.
func Listen(ctx context.Context, addr string, cfg *Config) (*Listener, error) {
	checkContext(ctx, "Listen")
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Device != "" {
		return nil, errDeviceForCM
	}
	rl, err := rdmacm.Listen(ctx, addr, &c.CM)
	if err != nil {
		return nil, cmErr(err)
	}
	n := aheadOfAccept
	if c.CM.Backlog > 0 {
		n = min(n, c.CM.Backlog)
	}
	l := &Listener{l: rl, cfg: c, shaking: make(chan struct{}, c.Handshakes), shakers: make(map[netip.Addr]int),
		slots: make(chan struct{}, n), ready: make(chan accepted, n), removed: make(chan struct{})}
	l.closed, l.close = context.WithCancel(context.Background())
	l.loops.Add(1)
	go l.take()
	return l, nil
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() netip.AddrPort { return l.l.Addr() }

// Accept returns the next connection made, waiting for one. A request
// that does not come from an rdmamsg Dial (its private data has no hello)
// is rejected with the reason. So is one whose connection fails before it
// is up, as a TCP listener's Accept never returns a client's failed
// handshake: its peer went away, or refused the reply, or did not
// complete the connection in time (Config.HandshakeTimeout, 10 s, after
// the reply, or within Config.CM.Timeout when set). Accept returns this
// side's own failures (making a connection's resources, taking a
// request, making the send buffers of the connection it returns), ctx's
// error when ctx ends, and ErrClosed after Close.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	checkContext(ctx, "(*Listener).Accept")
	select {
	case a := <-l.ready:
		return l.outcome(a)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed.Done():
		return nil, ErrClosed
	case <-l.removed:
		// No request comes again; a connection made before still
		// goes to Accept.
		select {
		case a := <-l.ready:
			return l.outcome(a)
		default:
			return nil, l.acceptError(l.gone)
		}
	}
}

// outcome is Accept's outcome a, taken from ready, whose slot it frees;
// it starts a's connection.
func (l *Listener) outcome(a accepted) (*Conn, error) {
	<-l.slots
	if l.closed.Err() != nil {
		a.close()
		return nil, l.acceptError(ErrClosed)
	}
	if a.err != nil {
		return nil, l.acceptError(a.err)
	}
	if err := a.c.start(cmLink{a.cm}, a.peer); err != nil {
		return nil, l.acceptError(oneConnFailed{fmt.Errorf("rdmamsg: accept from %s: %w", a.cm.RemoteAddr(), err)})
	}
	return a.c, nil
}

// closeReady closes a connection made that no Accept took, and reports
// whether there was an outcome waiting.
func (l *Listener) closeReady() bool {
	select {
	case a := <-l.ready:
		a.close()
		return true
	default:
		return false
	}
}

// take takes connection requests while fewer than Config.Handshakes are
// under way, and answers each in a goroutine of its own (handshake), until
// Close. Its own failure to take one goes to Accept; after the device's
// removal it stops, and Accept returns that.
func (l *Listener) take() {
	defer l.loops.Done()
	for {
		select {
		case l.shaking <- struct{}{}:
		case <-l.closed.Done():
			return
		}
		req, err := l.l.GetRequest(l.closed)
		if err != nil {
			err = cmErr(err)
			<-l.shaking
			if l.closed.Err() != nil {
				return
			}
			if errors.Is(err, rdmacm.ErrDeviceRemoved) {
				l.gone = err
				close(l.removed)
				return
			}
			if tooMany(err) {
				// This request's own event channel: the listener
				// is fine.
				err = oneConnFailed{err}
			}
			if !l.deliver(accepted{err: err}) {
				return
			}
			continue
		}
		from := req.RemoteAddr().Addr()
		if !l.enter(from) {
			rejectWith(req, busyMark+fmt.Sprintf("rdmamsg: too many handshakes from %s under way (Config.HandshakesPerAddr, %d)", from, l.cfg.HandshakesPerAddr))
			<-l.shaking
			continue
		}
		peer, err := parseHello(req.PrivateData())
		if err != nil {
			rejectWith(req, "rdmamsg: "+err.Error())
			l.leave(from)
			<-l.shaking
			continue
		}
		l.loops.Add(1)
		go l.handshake(req, peer, from)
	}
}

// rejectWith rejects req, saying why in the reject's private data, which
// holds 148 bytes over InfiniBand and RoCE: the rest is cut.
func rejectWith(req *rdmacm.ConnRequest, why string) {
	b := []byte(why)
	req.Reject(b[:min(len(b), 148)])
}

// tooMany reports whether err is a want of file descriptors or memory,
// which a TCP listener's Accept returns as temporary.
func tooMany(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOMEM)
}

// deliver hands a to Accept once a slot is free, and reports whether it
// did: after Close it closes a's connection instead.
func (l *Listener) deliver(a accepted) bool {
	select {
	case l.slots <- struct{}{}:
		l.ready <- a
		return true
	case <-l.closed.Done():
		a.close()
		return false
	}
}

// handshake accepts req, under one of take's handshakes, and hands the
// connection to Accept, or this side's failure; a peer's failure only ends
// the handshake: it refused the reply, went away, or did not complete the
// connection within Config.CM.Timeout or, when that is unset, within
// Config.HandshakeTimeout of the reply (this side's set-up before the reply,
// which may register much memory, is not the peer's to answer for).
func (l *Listener) handshake(req *rdmacm.ConnRequest, peer hello, from netip.Addr) {
	defer l.loops.Done()
	// Until its outcome is delivered: a connection made holds its
	// receive buffers while it waits for a slot.
	defer func() { <-l.shaking }()
	ctx, cancel := context.WithCancelCause(l.closed)
	defer cancel(nil)
	conn := newConn(&l.cfg)
	cmc := conn.cmConfig(&l.cfg)
	if cmc.Timeout == 0 {
		prepare := cmc.Prepare
		var timer *time.Timer
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		cmc.Prepare = func(c *rdmacm.Conn) (func() error, error) {
			cleanup, err := prepare(c)
			if err == nil { // the reply goes next
				timer = time.AfterFunc(l.cfg.HandshakeTimeout, func() { cancel(errPeerSlow) })
			}
			return cleanup, err
		}
	}
	cm, err := req.Accept(ctx, &cmc)
	// Completed or failed: no longer the peer's to stall.
	l.leave(from)
	switch {
	case err != nil && (l.closed.Err() != nil || peersFailure(err) || context.Cause(ctx) == errPeerSlow):
	case err != nil:
		l.deliver(accepted{err: oneConnFailed{cmErr(err)}})
	default:
		l.deliver(accepted{c: conn, cm: cm, peer: peer})
	}
}

// enter counts a handshake from the address from, and reports whether
// there was room for it (Config.HandshakesPerAddr).
func (l *Listener) enter(from netip.Addr) bool {
	l.shakeMu.Lock()
	defer l.shakeMu.Unlock()
	if l.shakers[from] >= l.cfg.HandshakesPerAddr {
		return false
	}
	l.shakers[from]++
	return true
}

// leave uncounts a handshake from the address from, which enter counted.
func (l *Listener) leave(from netip.Addr) {
	l.shakeMu.Lock()
	defer l.shakeMu.Unlock()
	if l.shakers[from]--; l.shakers[from] == 0 {
		delete(l.shakers, from)
	}
}

// errPeerSlow ends a handshake whose peer has not completed the
// connection within Config.HandshakeTimeout of the reply.
var errPeerSlow = errors.New("rdmamsg: the peer did not complete the connection")

// oneConnFailed is an Accept's failure to make one connection's
// resources (memory, registration, the QP): the listener itself is fine,
// and another Accept may succeed. NetListener's Accept says such an error
// is temporary, as net/http's Serve wants to go on accepting.
type oneConnFailed struct{ error }

func (e oneConnFailed) Unwrap() error { return e.error }

// temporary is an error net.Error says is temporary (Temporary, which
// net/http's Serve still asks).
type temporary struct{ error }

func (e temporary) Unwrap() error   { return e.error }
func (e temporary) Timeout() bool   { return false }
func (e temporary) Temporary() bool { return true }

// peersFailure reports whether err, from accepting a request, is the
// peer's doing: it refused the reply, went away or never completed the
// connection (rdma_cm's event, or Config.CM.Timeout), where this side's
// own failures (making its resources) are not.
func peersFailure(err error) bool {
	if errors.Is(err, rdmacm.ErrDeviceRemoved) {
		return false
	}
	var ev *rdmacm.EventError
	var rej *rdmacm.RejectedError
	return errors.As(err, &ev) || errors.As(err, &rej) || errors.Is(err, rdmacm.ErrDisconnected) ||
		errors.Is(err, context.DeadlineExceeded)
}

// acceptError is err, which ended an Accept, or ErrClosed with it when
// the listener's Close ended it.
func (l *Listener) acceptError(err error) error {
	if l.closed.Err() != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("rdmamsg: accept: %w (%w)", ErrClosed, err)
	}
	return err
}

// Close stops listening (rdmacm.Listener.Close), ends Accepts under way
// with ErrClosed, and closes the connections made that no Accept took,
// with no end message, as a TCP listener resets them: their peers read an
// error matching io.ErrUnexpectedEOF. Connections accepted stay open. If
// the rdmacm listener's Close fails, the next Close tries it again; once
// one has returned nil, closing again is a no-op.
func (l *Listener) Close() error {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if l.closeDone {
		return nil
	}
	l.close()
	err := l.l.Close()
	l.loops.Wait()
	for l.closeReady() {
	}
	l.closeDone = err == nil
	return err
}

func newConn(cfg *Config) *Conn {
	c := &Conn{
		spin:        cfg.Spin,
		keepAlive:   cfg.KeepAlive,
		depth:       cfg.Depth,
		maxRecv:     cfg.MaxMessage,
		sendBuffers: cfg.SendBuffers,
		maxSend:     cfg.MaxSend, // until start takes the peer's into account
		cur:         -1,
		sendTurn:    make(chan struct{}, 1),
		recvTurn:    make(chan struct{}, 1),
		sendKick:    make(chan struct{}, 1),
		recvKick:    make(chan struct{}, 1),
		closeKick:   make(chan struct{}, 1),
		courierKick: make(chan struct{}, 1),
		closed:      make(chan struct{}),
		opFree:      make(chan int, opSlots),
		maxOp:       maxOp,
		over:        make(chan struct{}),
	}
	for k := range c.opKick {
		c.opKick[k] = make(chan struct{}, 1)
		c.opReadyFn[k] = func() bool { return c.ops[k].done }
		c.opFree <- k
	}
	return c
}

// cmConfig returns the connection manager's settings: cfg.CM with the
// QP's capacity, this side's hello, and prepare to post the receives.
func (c *Conn) cmConfig(cfg *Config) rdmacm.Config {
	cm := cfg.CM
	cm.Cap = ibverbs.QPCap{
		MaxSendWR: c.sendWRs(), MaxSendSGE: 1,
		MaxRecvWR: c.recvWRs(), MaxRecvSGE: 1,
	}
	cm.PrivateData = c.hello().encode()
	cm.Prepare = c.prepare
	cm.SharedCQ = true
	return cm
}

// sendWRs is the room the send queue needs: the data buffers', the
// updates' and probes', the abort's and the end's, and the one-sided
// operations'; recvWRs is the receive queue's, the depth and the two
// spares. The CQ holds both.
func (c *Conn) sendWRs() int { return c.sendBuffers + updateSlots + 2 + opSlots }
func (c *Conn) recvWRs() int { return c.depth + 2 }

// hello is what this side tells its peer.
func (c *Conn) hello() hello { return hello{depth: c.depth, maxMessage: c.maxRecv, ends: true} }

// prepare registers the receive buffers and posts a receive in each,
// before the connection is made: rdmacm.Config.Prepare.
func (c *Conn) prepare(cm *rdmacm.Conn) (cleanup func() error, err error) {
	return c.postReceives(cm.PD(), cm.QP())
}

// postReceives registers the receive buffers on pd and posts a receive in
// each to qp. Its cleanup frees them, before the QP closes.
func (c *Conn) postReceives(pd *ibverbs.PD, qp *ibverbs.QP) (cleanup func() error, err error) {
	n := c.recvWRs()
	c.rbuf, c.rmr, err = register(pd, n*c.maxRecv, ibverbs.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	wrs := make([]ibverbs.RecvWR, n)
	for i := range wrs {
		wrs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{c.rmr.SGE(i*c.maxRecv, c.maxRecv)}}
	}
	cleanup = func() error {
		var errs []error
		if c.rb != nil {
			errs = append(errs, c.rb.Close())
		}
		errs = append(errs, c.rmr.Close())
		if !c.started {
			// Once started, Close unmaps the buffers, when no
			// ReadFrom or WriteTo uses them any more.
			errs = append(errs, c.rbuf.Close())
		}
		return errors.Join(errs...)
	}
	if c.rb, err = qp.NewRecvBatch(wrs); err == nil {
		err = c.rb.Post(0, n)
	}
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	c.lens = make([]int, n)
	c.ready = newRing(n)
	return cleanup, nil
}

// register maps size bytes off the Go heap and registers them.
func register(pd *ibverbs.PD, size int, access ibverbs.Access) (*ibverbs.Buffer, *ibverbs.MR, error) {
	buf, err := ibverbs.NewBuffer(size, ibverbs.BufferOptions{})
	if err != nil {
		return nil, nil, err
	}
	mr, err := pd.RegMR(buf, access)
	if err != nil {
		return nil, nil, errors.Join(err, buf.Close())
	}
	return buf, mr, nil
}

// start sets up the sends for the peer's largest message and the callers'
// waiting, and starts the goroutines that watch for the connection's end
// and send keepalives. On failure it closes l.
func (c *Conn) start(l link, peer hello) (err error) {
	c.link = l
	c.maxSend = min(c.maxSend, peer.maxMessage)
	c.fl = newFlow(c.depth, peer.depth)
	c.peerEnds = peer.ends
	defer func() {
		if err != nil {
			err = errors.Join(err, c.freeSends(), c.closeBuffer(&c.sbuf), l.Close())
		}
	}()
	if l.RecvCQ() != l.SendCQ() || l.SendCQ().Channel() == nil {
		return fmt.Errorf("rdmamsg: the connection's send and receive queues need one CQ with a channel")
	}
	if c.sbuf, c.smr, err = register(l.PD(), c.sendBuffers*c.maxSend, 0); err != nil {
		return err
	}
	// The send buffers' requests, then an update's, then a probe's: an
	// RDMA write of no bytes, which no MR, receive or credit of the peer's
	// takes (a zero-length write names no memory, IBTA C9-88), and which
	// the peer's device acknowledges all the same; then an abort's, an
	// end message's, and a keepalive's, an update but for its ID, which
	// tells its failure from an update's.
	wrs := make([]ibverbs.SendWR, c.opWR(opSlots))
	c.free = make([]int, c.sendBuffers)
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: sendTag | uint64(i), Opcode: ibverbs.OpSendWithImm, Flags: ibverbs.SendSignaled}
		if i < c.sendBuffers {
			wrs[i].SGL = []ibverbs.SGE{c.smr.SGE(i*c.maxSend, c.maxSend)}
			c.free[i] = c.sendBuffers - 1 - i
		}
	}
	wrs[c.probeWR()].Opcode = ibverbs.OpRDMAWrite
	for k := range opSlots {
		// One SGE, set with the rest at each operation (post).
		wrs[c.opWR(k)].Opcode = ibverbs.OpRDMAWrite
		wrs[c.opWR(k)].SGL = []ibverbs.SGE{c.smr.SGE(0, 0)}
	}
	c.startOps(l.QP())
	if c.sb, err = l.QP().NewSendBatch(wrs); err != nil {
		return err
	}
	c.s = sleeper{mu: &c.mu, cq: l.SendCQ(), poll: c.poll, fail: c.fail, closed: c.closed,
		kicks: []chan struct{}{c.sendKick, c.recvKick, c.closeKick, c.courierKick}, more: c.wakeOps}
	c.wcs = make([]ibverbs.WC, c.recvWRs()+c.sendWRs())
	c.rdl.onChange, c.wdl.onChange = c.s.interrupt, c.s.interrupt
	c.mu.Lock()
	c.idleWait = idleAfter
	c.idle = time.AfterFunc(c.idleWait, c.checkIdle)
	c.timing = true
	c.mu.Unlock()
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.started = true
	c.loops.Add(2)
	go c.keepAlives(ctx, c.stallBound(l.QP()))
	go c.watch(ctx)
	return nil
}

// The send requests past the data buffers'.
func (c *Conn) updateWR() int    { return c.sendBuffers }
func (c *Conn) probeWR() int     { return c.sendBuffers + 1 }
func (c *Conn) abortWR() int     { return c.sendBuffers + 2 }
func (c *Conn) endWR() int       { return c.sendBuffers + 3 }
func (c *Conn) keepAliveWR() int { return c.sendBuffers + 4 }
func (c *Conn) opWR(k int) int   { return c.sendBuffers + 5 + k }

// freeSends frees the send batch and MR that start made; the buffer
// stays mapped.
func (c *Conn) freeSends() error {
	var errs []error
	if c.sb != nil {
		errs = append(errs, c.sb.Close())
	}
	if c.smr != nil {
		errs = append(errs, c.smr.Close())
	}
	return errors.Join(errs...)
}

func (c *Conn) closeBuffer(b **ibverbs.Buffer) error {
	if *b == nil {
		return nil
	}
	err := (*b).Close()
	*b = nil
	return err
}

// lend marks the buffers in use outside c.mu, by a ReadFrom reading into
// a send buffer, a Send copying into one, or a WriteTo writing from a
// receive buffer, with c.mu held: Close, which does not wait for those,
// leaves the buffers mapped until every loan is back. It is false once the
// Conn is closing.
func (c *Conn) lend() bool {
	if c.closing {
		return false
	}
	c.loans++
	return true
}

// giveBack ends a loan; the last one after Close unmaps the buffers.
func (c *Conn) giveBack() {
	c.mu.Lock()
	c.loans--
	last := c.loans == 0 && c.unmapLater
	c.mu.Unlock()
	if last {
		c.unmap()
	}
}

// unmap unmaps both buffers, after Close.
func (c *Conn) unmap() error {
	return errors.Join(c.closeBuffer(&c.rbuf), c.closeBuffer(&c.sbuf))
}

// watch waits for the end of the connection (the peer disconnected, or
// died, or Close): then it takes the last completions, marks the end of
// the stream and wakes every caller, the one asleep on the CQ too.
func (c *Conn) watch(ctx context.Context) {
	defer c.loops.Done()
	select {
	case <-c.link.Done():
		c.mu.Lock()
		for c.s.reap(nil) > 0 {
		}
		c.ended()
		c.mu.Unlock()
		c.s.wake(nil)
		c.s.interrupt()
	case <-ctx.Done():
	}
}

// fail records the connection's first error, with c.mu held.
func (c *Conn) fail(err error) {
	if c.err == nil {
		c.err = err
	}
	c.isOver()
}

// isOver closes c.over, once, with c.mu held: nothing more can be
// posted (sendErr says why).
func (c *Conn) isOver() {
	if !isClosed(c.over) {
		close(c.over)
	}
}

// sendTag marks the send requests' IDs, so that a completion on the
// shared CQ says which queue it is from even when flushed, when its
// opcode is undefined.
const sendTag = 1 << 63

// poll takes the completions there are, with c.mu held, and returns how
// many: a send's frees its buffer, a receive's is a message or credits.
// It is c.s's poll: callers take completions with c.s.reap, which wakes
// the others.
func (c *Conn) poll() int {
	c.activity++
	if !c.couriering && !c.closing {
		c.armIdle()
	}
	n, err := c.s.cq.Poll(c.wcs)
	if err != nil {
		c.fail(fmt.Errorf("rdmamsg: %w", err))
		return 0
	}
	if c.unexplainedFlush(c.wcs[:n]) {
		c.reset()
	}
	for i := range c.wcs[:n] {
		if wc := &c.wcs[i]; wc.WRID&sendTag != 0 {
			c.sent(wc)
		} else {
			c.received(wc)
		}
	}
	if n > 0 {
		c.sendUpdate()
	}
	return n
}

// unexplainedFlush reports, with c.mu held, whether wcs hold a flushed
// completion (ibverbs.WCWRFlushErr) that nothing this side knows of
// explains: it has not closed, no failure is recorded (a request of its
// own that failed completes with its error first, in wcs or before; the
// stall watch records its failure before it moves the QP), the link is
// up (rdmacm and Handshake's link record why it ended before they move
// the QP to the error state) and the peer has not closed (Close's end
// message). The QP went to the error state all the same: as the
// responder of a request of the peer's that this side's device refused,
// which completes nothing here (reset).
func (c *Conn) unexplainedFlush(wcs []ibverbs.WC) bool {
	if c.closing || c.err != nil || c.eof || c.peerOut {
		return false
	}
	flushed := false
	for i := range wcs {
		switch wcs[i].Status {
		case ibverbs.WCSuccess:
		case ibverbs.WCWRFlushErr:
			flushed = true
		default:
			return false // sent or received records the failure
		}
	}
	return flushed && c.link.Err() == nil
}

// reset fails the connection whose QP entered the error state without a
// failure of this side's requests (unexplainedFlush), with c.mu held,
// and disconnects, so that the peer learns of it: where the device
// refuses the peer's RDMA read or write (an rkey it does not know, a
// range past the region, access the region was not registered with),
// soft-RoCE moves the responder's QP to the error state and completes
// none of its requests with an error, only flushes them. Without, the
// sends flushed returned nil, the flushes counted as progress for the
// stall watch, and a Recv waited for good.
func (c *Conn) reset() {
	c.fail(fmt.Errorf("rdmamsg: connection to %s reset: its QP entered the error state without a failure of this side's requests: most likely an RDMA read or write of the peer's was refused here (an rkey this side does not know, a range past a region, or access the region was not registered with): %w",
		c.link.RemoteAddr(), syscall.ECONNRESET))
	c.dropped = true
	c.link.disconnect()
}

// sent takes a send's completion, with c.mu held: it frees its buffer, or
// fails the connection.
func (c *Conn) sent(wc *ibverbs.WC) {
	if i := int(wc.WRID &^ sendTag); i >= c.opWR(0) {
		c.opDone(i-c.opWR(0), wc)
		return
	}
	c.sqOut--
	if i := int(wc.WRID &^ sendTag); i < c.sendBuffers {
		c.free = append(c.free, i)
		if wc.Status != ibverbs.WCSuccess {
			c.lost++
		}
	} else {
		c.upOut--
		if i == c.endWR() || i == c.abortWR() {
			switch wc.Status {
			case ibverbs.WCSuccess:
				c.finOut--
			case ibverbs.WCWRFlushErr:
			default:
				c.finErr = true
			}
		}
	}
	// A flushed request is not a cause: the QP went into the error state
	// because a request failed (which completes with its own status), the
	// peer disconnected, Close did, or the device refused a request of
	// the peer's (poll: reset), and each of those is reported for itself.
	if wc.Status != ibverbs.WCSuccess && wc.Status != ibverbs.WCWRFlushErr {
		c.fail(c.sendFailed(int(wc.WRID&^sendTag), wc))
	}
}

// sendFailed is the connection's failure where send request i completed
// with wc's error: what failed, in words for every caller, a Recv's too
// (the keepalive of a side that only receives is what finds a peer gone).
func (c *Conn) sendFailed(i int, wc *ibverbs.WC) error {
	what := "a message sent to it"
	switch i {
	case c.keepAliveWR(), c.probeWR():
		what = "the keepalive to it"
	case c.updateWR():
		what = "a credit update to it"
	case c.abortWR():
		what = "the abort sent to it"
	case c.endWR():
		what = "the end message sent to it"
	}
	return fmt.Errorf("rdmamsg: connection to %s lost: %s failed: %w", c.link.RemoteAddr(), what, wc.Err())
}

// closeGrace is how long Close waits, once the connection has ended, for
// the completions of the messages still on the send queue.
const closeGrace = time.Second

// closeWait is how long Close waits for the messages sent to reach the
// peer while none does: the wait ends once closeWait passes without a
// send's completion, or at the write deadline (closeBound).
const closeWait = 5 * time.Second

// closeBound is when Close stops waiting for its sends: closeWait after
// the last progress (Close's start, then each send's completion), so
// that a slow transfer with much in flight is not cut while a silent peer
// is; or at the write deadline, where one that had not passed when Close
// began comes sooner. A deadline already passed (a per-write one, or one
// set to unblock a Read) does not cut the wait, as net.Conn's Close
// still delivers: where it did, the disconnect came just after the end
// message was posted and could flush it.
type closeBound struct {
	deadline time.Time // the write deadline, or zero
	stall    time.Time // closeWait after the last progress
}

// newCloseBound is the bound of a Close that began at start, its write
// deadline then wdl (zero for none).
func newCloseBound(start, wdl time.Time) closeBound {
	b := closeBound{stall: start.Add(closeWait)}
	if wdl.After(start) {
		b.deadline = wdl
	}
	return b
}

// progress notes a send's completion at now.
func (b *closeBound) progress(now time.Time) { b.stall = now.Add(closeWait) }

// limit returns when the wait ends, and how to say so.
func (b *closeBound) limit() (time.Time, string) {
	if !b.deadline.IsZero() && b.deadline.Before(b.stall) {
		return b.deadline, "by the write deadline"
	}
	return b.stall, fmt.Sprintf("within %v without progress", closeWait)
}

// lostError says how many messages sent may not have reached the peer,
// those that failed and those still on the send queue, and whether the
// end or abort message may not have, with c.mu held; nil when nothing
// is lost. The end or abort counts when it failed with an error of its
// own, or was still on its way when Close's wait was cut, unless the
// peer disconnected (it closed too: it takes nothing more, and an end
// lost to its disconnect is no loss). The reason is the connection's
// failure or end, else cut (Close's wait ran out), else EPIPE.
func (c *Conn) lostError(cut error) error {
	n := c.lost + c.sqOut - c.upOut
	fin := c.finOut > 0 && (cut != nil || c.finErr) && !errors.Is(c.link.Err(), rdmacm.ErrDisconnected)
	if n == 0 && !fin {
		return nil
	}
	why := c.err
	if why == nil {
		why = c.link.Err()
	}
	if why == nil {
		why = cut
	}
	if why == nil {
		why = syscall.EPIPE
	}
	var what string
	switch {
	case n == 1:
		what = "1 message sent"
	case n > 1:
		what = fmt.Sprintf("%d messages sent", n)
	}
	if fin {
		end := "the end of the stream"
		if c.aborting {
			end = "the abort"
		}
		if what != "" {
			what += " and "
		}
		what += end
	}
	return fmt.Errorf("rdmamsg: close: %s may not have reached %s: %w", what, c.link.RemoteAddr(), why)
}

// ended marks the end of the stream once the connection has ended and
// what arrived before was taken, with c.mu held. A peer that takes end
// messages sends one before it closes: where one disconnected without
// (its process killed, its connection closed by the kernel), the readers
// get io.ErrUnexpectedEOF (cut), after what arrived, not io.EOF; sends
// fail with EPIPE, as after the peer's Close, but say so, and match
// rdmacm.ErrDisconnected too (sendErr).
func (c *Conn) ended() {
	if c.closing {
		return
	}
	err := c.link.Err()
	if f := c.endFailure(err); f != nil {
		c.fail(f)
	} else if c.endCut() {
		c.cut = fmt.Errorf("rdmamsg: %s disconnected without ending its stream: %w (%w)",
			c.link.RemoteAddr(), io.ErrUnexpectedEOF, err)
	}
	c.eof = true
	c.isOver()
}

// endFailure is the connection's failure where the link ended for err
// (Err), with c.mu held: nil where the peer disconnected, which is an
// end, not a failure (ended).
func (c *Conn) endFailure(err error) error {
	if errors.Is(err, rdmacm.ErrDisconnected) {
		return nil
	}
	return fmt.Errorf("rdmamsg: connection to %s: %w", c.link.RemoteAddr(), err)
}

// endCut says, with c.mu held, whether a peer that disconnected did so
// without ending its stream: one that takes end messages, whose end
// message did not come.
func (c *Conn) endCut() bool { return c.peerEnds && !c.endIn }

// spinFor polls the CQ for up to c.spin, until ready says what the
// caller waits for is there, or something ended; self is the caller's
// kick.
func (c *Conn) spinFor(ready func() bool, self chan struct{}) {
	end := time.Now().Add(c.spin)
	for {
		c.mu.Lock()
		c.s.reap(self)
		done := ready() || c.err != nil || c.eof || c.closing
		c.mu.Unlock()
		if done || time.Now().After(end) {
			return
		}
	}
}

// received takes a receive's completion, with c.mu held.
func (c *Conn) received(wc *ibverbs.WC) {
	switch wc.Status {
	case ibverbs.WCSuccess:
	case ibverbs.WCWRFlushErr: // as in sent
		return
	case ibverbs.WCLocLenErr, ibverbs.WCLocQPOpErr:
		// What a device says of a send longer than the receive's
		// buffer (soft-RoCE the second): this side's receives are
		// well formed, and its CQ has room for every request.
		c.fail(fmt.Errorf("rdmamsg: receive from %s: %w (likely a message longer than this side's largest, %d bytes, which the peer's rdmamsg never sends)",
			c.link.RemoteAddr(), wc.Err(), c.maxRecv))
		return
	default:
		c.fail(fmt.Errorf("rdmamsg: receive from %s: %w", c.link.RemoteAddr(), wc.Err()))
		return
	}
	slot := int(wc.WRID)
	if wc.Opcode != ibverbs.WCRecv || int(wc.ByteLen) > c.maxRecv {
		// Not a send's: the peer wrote into a region this side
		// registered with immediate data (RDMA_WRITE_WITH_IMM), which
		// takes a receive, and whose length is the write's, not that
		// of a message in the receive's buffer. Before its immediate
		// data is taken for credits.
		c.fail(fmt.Errorf("rdmamsg: a receive from %s completed as %v of %d bytes, for a buffer of %d, which the protocol never makes: its messages are sends that fit (RECV), and an RDMA write with immediate data into this side's memory takes a receive too: %w",
			c.link.RemoteAddr(), wc.Opcode, wc.ByteLen, c.maxRecv, syscall.EPROTO))
		return
	}
	kind, ok := c.fl.received(wc.Imm)
	if !ok || wc.Flags&ibverbs.WCWithImm == 0 {
		c.fail(fmt.Errorf("rdmamsg: a message from %s that the protocol does not send (immediate data %#x, flags %s): %w",
			c.link.RemoteAddr(), wc.Imm, wc.Flags, syscall.EPROTO))
		return
	}
	switch kind {
	case msgUpdate:
		c.repost(slot)
	case msgAbort:
		// After the messages before it, which the callers take first
		// (next), the connection has failed.
		c.fail(fmt.Errorf("rdmamsg: %s aborted the connection: %w", c.link.RemoteAddr(), syscall.ECONNRESET))
	case msgEnd, msgClose:
		if c.endIn {
			c.fail(fmt.Errorf("rdmamsg: a second end message from %s: %w", c.link.RemoteAddr(), syscall.EPROTO))
			return
		}
		c.endIn = true
		c.peerOut = kind == msgClose
		if c.peerOut {
			c.isOver()
		}
		c.lens[slot] = endOfStream
		c.ready.push(slot)
	default:
		if c.endIn {
			c.fail(fmt.Errorf("rdmamsg: a message from %s after its end message: %w", c.link.RemoteAddr(), syscall.EPROTO))
			return
		}
		c.lens[slot] = int(wc.ByteLen)
		c.ready.push(slot)
	}
}

// endOfStream is the length of the peer's end message in lens: its place
// in ready is the end of what it sends.
const endOfStream = -1

// repost posts receive buffer slot again, with c.mu held, and counts it
// for the peer.
func (c *Conn) repost(slot int) {
	if c.closing {
		return
	}
	if err := c.rb.Post(slot, 1); err != nil {
		c.fail(fmt.Errorf("rdmamsg: %w", err))
		return
	}
	c.fl.reposted(1)
}

// sendUpdate sends a credit update if the protocol calls for one and the
// send queue has room, with c.mu held.
func (c *Conn) sendUpdate() {
	if c.err != nil || c.closing || c.eof || !c.fl.wantUpdate() || c.sqOut >= c.sendBuffers+updateSlots {
		return
	}
	c.postUpdate()
}

// A Conn's callers are idle once they have taken no completion for
// idleAfter, or, while they keep taking some, for up to idleAfterMax:
// each look that finds them at work doubles the wait for the next.
const (
	idleAfter    = time.Millisecond
	idleAfterMax = 16 * time.Millisecond
)

// checkIdle runs when the idle timer fires, armed by a caller that took
// completions while no courier was about: if none has since, and none
// sleeps on the CQ, it becomes the courier. The credit updates this side
// owes go out only as completions are taken (those of the peer's updates
// and keepalives, which use receives this side must report, and those of
// its own sends, which make room for the updates), and its application
// may make no call for a long while: without the courier, a peer that
// waits for credits would wait for that call.
func (c *Conn) checkIdle() {
	c.mu.Lock()
	c.timing = false
	switch {
	case c.sendErr() != nil || c.couriering:
	case c.activity != c.seen: // callers are at work
		c.seen = c.activity
		c.idleWait = min(2*c.idleWait, idleAfterMax)
		c.armIdle()
	case c.s.asleep: // and takes what comes; leaving, it takes completions
	default:
		c.idleWait = idleAfter
		c.couriering = true
		c.loops.Add(1)
		c.mu.Unlock()
		c.courier()
		return
	}
	c.mu.Unlock()
}

// courier takes the completions while no caller does (sleeper.stand):
// until a caller wants the CQ's channel, the Conn ends or it closes. It
// leaves the timer armed, in case the caller that wanted the channel
// went away before it took it.
func (c *Conn) courier() {
	defer c.loops.Done()
	c.s.stand(c.courierKick, func() bool {
		c.sendUpdate() // perhaps owed since before
		return c.sendErr() == nil
	})
	c.couriering = false
	if c.sendErr() == nil {
		c.armIdle()
	}
	c.mu.Unlock()
}

// armIdle arms the idle timer for idleWait unless it is armed, with c.mu
// held.
func (c *Conn) armIdle() {
	if !c.timing {
		c.timing = true
		c.idle.Reset(c.idleWait)
	}
}

// postUpdate posts a credit update, spending a credit, with c.mu held.
func (c *Conn) postUpdate() {
	u := c.updateWR()
	c.sb.SetImm(u, c.fl.update())
	c.postControl(u)
}

// postProbe posts a probe, the keepalive of a side with no credit to
// spare: its peer's device acknowledges it, or the retries fail it when
// the peer is gone. With c.mu held.
func (c *Conn) postProbe() error { return c.postControl(c.probeWR()) }

// postControl posts wr, one of the requests past the data buffers' (an
// update, a probe, an abort, an end), with c.mu held, and counts it: in
// the send queue, and among those not a message of the stream's, for
// lostError (where both sides close at once, the one that closes second
// posts its end as the peer disconnects, and loses it, which is no loss
// to either). A post that fails fails the connection: it returns c.err.
func (c *Conn) postControl(wr int) error {
	if err := c.sb.Post(wr, 1, 0); err != nil {
		c.fail(fmt.Errorf("rdmamsg: %w", err))
		return c.err
	}
	c.sqOut++
	c.upOut++
	c.posts++
	return nil
}

// keepAlives ticks every keepAlive/4, and at most every stall/4 (the
// stall watch's bound, stallBound), for two things. A keepalive: an
// update within keepAlive of this side's last post, so that a peer that
// died is found by the device's retries. It goes as data does, with a
// credit to spare: a keepalive never takes the credit kept for updates
// (flow.go). A side without one (its peer reads nothing, and it has sent
// all it may) sends a probe instead, which takes no credit: without, the
// death of a peer that stopped reading went unnoticed, every send
// acknowledged and nothing more to post. The update goes as a request of
// its own (keepAliveWR), so that its failure says the keepalive failed.
// And the stall watch, keepalives or not: requests on the send queue and
// none completed for stall, and for the bytes of the one-sided
// operations among them at 10 MB/s (opByteTime), fail the connection,
// where the device neither delivers them nor fails them; the QP then
// goes to the error state, so that the device flushes them and the
// operations' slots and regions come back. The ticks compare counts the
// posts keep anyway (pulse): nothing on the path of a message.
func (c *Conn) keepAlives(ctx context.Context, stall time.Duration) {
	defer c.loops.Done()
	tick := stall / 4
	if c.keepAlive > 0 {
		tick = min(tick, c.keepAlive/4)
	}
	tick = max(tick, time.Millisecond)
	p := newPulse(tick, c.keepAlive, stall)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		// Take what came meanwhile, which no caller may have: the sends'
		// completions free room for the keepalive, or show a failure.
		c.s.reap(nil)
		// The one-sided operations count too: a read or write that
		// never completes is a stall as a message is.
		keepAlive, stalled := p.tick(c.posts, c.sqOut+c.rdOut, time.Duration(c.opBytes)*opByteTime)
		switch {
		case c.err != nil || c.closing || c.eof:
		case stalled:
			c.fail(fmt.Errorf("rdmamsg: connection to %s lost: no send completed for %v, %d requests on the send queue: the link or the peer is gone, and the device neither delivers them nor fails them: %w",
				c.link.RemoteAddr(), time.Duration(p.stuck)*tick, c.sqOut+c.rdOut, syscall.ETIMEDOUT))
			// Flush them: without, an operation's slot, and the busy
			// count of its region, never came back, and its callers
			// waited for good. Where the move fails, the QP is gone
			// or in the error state already.
			c.link.QP().ToError()
			c.s.wake(nil)
			c.mu.Unlock()
			c.s.interrupt()
			return
		case !keepAlive:
		case c.canPost():
			k := c.keepAliveWR()
			c.sb.SetImm(k, c.fl.update())
			if c.postControl(k) == nil {
				p.posted(c.posts, c.sqOut+c.rdOut)
			}
		case c.sqOut < c.sendBuffers+updateSlots:
			if c.postProbe() == nil {
				p.posted(c.posts, c.sqOut+c.rdOut)
			}
		}
		c.mu.Unlock()
	}
}

// stallBound is how long the requests on the send queue may go without a
// completion before the connection fails: twice the longest the device
// may take to fail one, (retries+1) ACK timeouts of the QP (ibv_query_qp;
// 8 of 4.3 s where it cannot say, or its timeout is 0, infinite), plus
// the time of the largest message at 10 MB/s, and at least stallAfter
// (20 s); the bytes of the one-sided operations on the send queue add
// theirs at each tick (keepAlives). The device's own failure comes first
// wherever it works.
func (c *Conn) stallBound(qp *ibverbs.QP) time.Duration {
	timeout, retries := 20, 7
	if a, err := qp.Query(); err == nil && a.Timeout != 0 {
		timeout, retries = int(min(a.Timeout, 31)), int(min(a.RetryCnt, 7))
	}
	return stallFor(timeout, retries, c.maxSend)
}

// postAbort posts the abort message, with c.mu held, unless the
// connection has failed or ended, or the peer has closed (its Close's end
// message came: it takes nothing more, and an abort would only fail its
// Close, which waits for its sends). It takes a send request beyond those
// the credits and the updates use, so there is room for it. It fails,
// posting nothing, where the abort cannot go: a peer older than Abort
// with no credit left.
func (c *Conn) postAbort() error {
	if c.closing || c.err != nil || c.eof || c.peerOut || c.link.Err() != nil {
		return nil
	}
	imm, ok := c.fl.abort(c.peerEnds)
	if !ok {
		return fmt.Errorf("rdmamsg: abort to %s: the peer's rdmamsg keeps no receive for an abort, and no credit is left: it takes the end for the end of the stream: %w",
			c.link.RemoteAddr(), errors.ErrUnsupported)
	}
	a := c.abortWR()
	c.sb.SetImm(a, imm)
	if err := c.postControl(a); err != nil {
		return err
	}
	c.finOut++
	c.aborting = true
	return nil
}

// postEnd posts the end message, with c.mu held, unless one went, the
// connection has failed or ended, or the peer takes none; closing marks
// Close's, after which the peer sends nothing more. It takes a send
// request beyond those the credits and the updates use, and a receive
// the peer keeps spare, so it waits for nothing.
func (c *Conn) postEnd(closing bool) error {
	if !c.peerEnds || c.wclosed || c.closing || c.err != nil || c.eof || c.peerOut || c.link.Err() != nil {
		return nil
	}
	e := c.endWR()
	c.sb.SetImm(e, c.fl.end(closing))
	if err := c.postControl(e); err != nil {
		return err
	}
	c.finOut++
	c.wclosed = true
	return nil
}

// SetDeadline sets the read and write deadlines, as net.Conn's does. After
// Close it sets nothing and returns ErrClosed.
func (c *Conn) SetDeadline(t time.Time) error {
	if !c.rdl.set(t) || !c.wdl.set(t) {
		return ErrClosed
	}
	return nil
}

// SetReadDeadline sets when Recv, Read and WriteTo stop waiting for a
// message, or for their turn, and fail with os.ErrDeadlineExceeded (which
// is a net.Error whose Timeout is true), as net.Conn's does, alongside any
// context: the zero time for never. It applies to waits under way too.
// Once it has passed, a read fails at once, even with a message there, as
// package net's do, and a WriteTo stops before its next write. After
// Close it sets nothing and returns ErrClosed.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if !c.rdl.set(t) {
		return ErrClosed
	}
	return nil
}

// SetWriteDeadline sets when Send, Write, ReadFrom and CloseWrite stop
// waiting for a credit, a send buffer or their turn and fail with
// os.ErrDeadlineExceeded, as SetReadDeadline does for reads; once it has
// passed, they fail at once, and a Write or ReadFrom under way sends no
// more. After Close it sets nothing and returns ErrClosed.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if !c.wdl.set(t) {
		return ErrClosed
	}
	return nil
}

// Addr is the address of a Conn, Listener or PacketConn as a net.Addr,
// of network "rdma".
type Addr netip.AddrPort

// Network returns "rdma".
func (a Addr) Network() string { return "rdma" }

// String returns the address as "ip:port" ("[ip6]:port").
func (a Addr) String() string { return netip.AddrPort(a).String() }

// NetConn returns c as a net.Conn, for code written against package net
// (an HTTP client's DialContext, a protocol library): Read, Write, Close
// and the deadlines are c's, and the addresses are Addrs. So are
// ReadFrom, WriteTo and CloseWrite, which io.Copy and code that half-closes
// a TCPConn find on it.
//
// Its errors are those of a TCPConn: a *net.OpError of Net "rdma", Op
// "read", "write", "readfrom", "writeto", "close" (Close and CloseWrite)
// or "set" (the deadlines), Source this side's Addr and Addr the peer's
// (for "set", as package net's, no Source and Addr this side's), whose
// Err is the error c's method returned. The OpError unwraps to it, so
// errors.Is(err, net.ErrClosed), os.ErrDeadlineExceeded and syscall's
// errnos, and errors.As to rdmamsg's own errors, match as they do c's; a
// passed deadline's is a Timeout. Read returns io.EOF itself at the end
// of the stream, as a net.Conn must.
func (c *Conn) NetConn() net.Conn { return netConn{c} }

type netConn struct{ *Conn }

func (n netConn) LocalAddr() net.Addr  { return Addr(n.Conn.LocalAddr()) }
func (n netConn) RemoteAddr() net.Addr { return Addr(n.Conn.RemoteAddr()) }

// opError is err as a TCPConn's method op would return it.
func (n netConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "rdma", Source: n.LocalAddr(), Addr: n.RemoteAddr(), Err: opCause(err)}
}

// setError is err as a TCPConn's deadline setters would return it.
func (n netConn) setError(err error) error {
	if err == nil {
		return nil
	}
	return &net.OpError{Op: "set", Net: "rdma", Addr: n.LocalAddr(), Err: err}
}

func (n netConn) Read(p []byte) (int, error) {
	k, err := n.Conn.Read(p)
	if err != nil && err != io.EOF {
		err = n.opError("read", err)
	}
	return k, err
}

func (n netConn) Write(p []byte) (int, error) {
	k, err := n.Conn.Write(p)
	if err != nil {
		err = n.opError("write", err)
	}
	return k, err
}

func (n netConn) ReadFrom(r io.Reader) (int64, error) {
	k, err := n.Conn.ReadFrom(r)
	if err != nil && err != io.EOF {
		err = n.opError("readfrom", err)
	}
	return k, err
}

func (n netConn) WriteTo(w io.Writer) (int64, error) {
	k, err := n.Conn.WriteTo(w)
	if err != nil && err != io.EOF {
		err = n.opError("writeto", err)
	}
	return k, err
}

func (n netConn) CloseWrite() error {
	if err := n.Conn.CloseWrite(); err != nil {
		return n.opError("close", err)
	}
	return nil
}

func (n netConn) Close() error {
	if err := n.Conn.Close(); err != nil {
		return n.opError("close", err)
	}
	return nil
}

func (n netConn) SetDeadline(t time.Time) error      { return n.setError(n.Conn.SetDeadline(t)) }
func (n netConn) SetReadDeadline(t time.Time) error  { return n.setError(n.Conn.SetReadDeadline(t)) }
func (n netConn) SetWriteDeadline(t time.Time) error { return n.setError(n.Conn.SetWriteDeadline(t)) }

// NetListener returns l as a net.Listener, whose Accept returns NetConns:
// for servers written against package net (net/http's Serve, say). Its
// Close closes l. Its errors are those of a TCPListener: a *net.OpError
// of Net "rdma", Op "accept" or "close" and Addr l's Addr, which unwraps
// to l's error (after Close, one matching net.ErrClosed). An Accept that
// could not make one connection's resources fails with one whose
// Temporary is true, so that net/http's Serve goes on, as after a TCP
// listener's EMFILE.
func (l *Listener) NetListener() net.Listener { return netListener{l} }

type netListener struct{ l *Listener }

func (n netListener) Accept() (net.Conn, error) {
	c, err := n.l.Accept(context.Background())
	if err != nil {
		var one oneConnFailed
		if errors.As(err, &one) && !errors.Is(err, ErrClosed) {
			err = temporary{err}
		}
		return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: n.Addr(), Err: err}
	}
	return c.NetConn(), nil
}

func (n netListener) Close() error {
	if err := n.l.Close(); err != nil {
		return &net.OpError{Op: "close", Net: "rdma", Addr: n.Addr(), Err: err}
	}
	return nil
}

func (n netListener) Addr() net.Addr { return Addr(n.l.Addr()) }

// MaxSend returns the largest message Send takes: the peer's MaxMessage,
// or this side's Config.MaxSend if that is smaller.
func (c *Conn) MaxSend() int { return c.maxSend }

// MaxRecv returns the largest message this side receives: its
// Config.MaxMessage.
func (c *Conn) MaxRecv() int { return c.maxRecv }

// LocalAddr returns this side's address.
func (c *Conn) LocalAddr() netip.AddrPort { return c.link.LocalAddr() }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.link.RemoteAddr() }

// RDMA returns the rdma_cm connection under the messages, for its
// device, QP and counters, or nil for a Conn that Handshake made.
// Posting to its QP or polling its CQs breaks the Conn, and so does
// disconnecting its ID or moving its QP: the Conn then fails as it does
// when its QP leaves RTS for no reason of its own (an error matching
// syscall.ECONNRESET that blames the peer's RDMA operation, refused
// here, the likely cause). End the Conn with Close or Abort instead.
func (c *Conn) RDMA() *rdmacm.Conn {
	if l, ok := c.link.(cmLink); ok {
		return l.Conn
	}
	return nil
}

// QP returns the connection's queue pair, for its device and counters,
// however the Conn was made. Posting to it, polling its CQs or moving it
// to another state breaks the Conn (see RDMA): ReadRemote and
// WriteRemote are its RDMA reads and writes.
func (c *Conn) QP() *ibverbs.QP { return c.link.QP() }

// Send sends p as one message (a send with immediate data, from a
// registered buffer p is copied into). It waits while the peer has no
// receive free for it or every send buffer is on the wire, or another
// sender has its turn, until ctx ends, the write deadline passes or the
// Conn closes, and returns once the message is posted: that it arrived,
// the peer's Recv says. A context already done, or a write deadline
// already passed, fails it with that error before it posts anything, as
// package net's calls fail once their deadline has passed. A message
// longer than MaxSend is refused (EMSGSIZE); an empty one is sent, and
// received as an empty message.
func (c *Conn) Send(ctx context.Context, p []byte) error {
	checkContext(ctx, "(*Conn).Send")
	if c.wdl.passed() && !isClosed(c.closed) {
		return os.ErrDeadlineExceeded
	}
	if len(p) > c.maxSend {
		return fmt.Errorf("rdmamsg: send of %d bytes: the peer takes at most %d: %w", len(p), c.maxSend, syscall.EMSGSIZE)
	}
	if err := takeTurn(ctx, c.sendTurn, &c.wdl, c.closed); err != nil {
		return err
	}
	defer giveTurn(c.sendTurn)
	return c.sendLocked(ctx, p)
}

// takeTurn waits for turn (a Conn's or a PacketConn's sendTurn or
// recvTurn) and takes it, until ctx ends, the deadline dl passes or
// closed (the Conn's or PacketConn's) is closed; once dl has passed, it
// fails at once, as package net's calls do, unless closed is, which they
// tell first, and so it does once ctx is done (ctx.Err()), so that a call
// with a context already cancelled posts and takes nothing. The caller
// gives the turn back (giveTurn). A turn free takes no select on the
// rest, and nothing allocates.
func takeTurn(ctx context.Context, turn chan struct{}, dl *deadline, closed chan struct{}) error {
	if isClosed(closed) {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case turn <- struct{}{}:
	default:
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-dl.done():
			return deadlineErr(closed)
		case <-closed:
			return ErrClosed
		}
	}
	if dl.passed() && !isClosed(closed) {
		giveTurn(turn)
		return os.ErrDeadlineExceeded
	}
	if err := ctx.Err(); err != nil && !isClosed(closed) {
		// It ended as the turn came.
		giveTurn(turn)
		return err
	}
	return nil
}

func giveTurn(turn chan struct{}) { <-turn }

// sendLocked is Send's work, with c.sendTurn held: p, as a message.
func (c *Conn) sendLocked(ctx context.Context, p []byte) error {
	i, err := c.buffer(ctx)
	if err != nil {
		return err
	}
	defer c.giveBack()
	copy(c.sendBuf(i), p)
	return c.postBuffer(ctx, i, len(p))
}

// ReadFrom sends what it reads from r until io.EOF, as Write would, but
// reads straight into the registered send buffers: each Read of r that
// returns bytes becomes one message of at most MaxSend bytes. io.Copy to
// the Conn uses it. Once the write deadline has passed it stops, before
// its next Read of r, with os.ErrDeadlineExceeded. A count from r outside
// 0 to the buffer's length fails it, and nothing of that Read is sent.
// Where Close or Abort comes while r's Read runs, nothing of that Read
// is sent either, and ReadFrom returns ErrClosed, whatever the Read
// returned (io.EOF included).
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	ctx := context.Background()
	if err := takeTurn(ctx, c.sendTurn, &c.wdl, c.closed); err != nil {
		return 0, err
	}
	defer giveTurn(c.sendTurn)
	var n int64
	for {
		if c.wdl.passed() && !isClosed(c.closed) {
			return n, os.ErrDeadlineExceeded
		}
		i, err := c.buffer(ctx)
		if err != nil {
			return n, err
		}
		buf := c.sendBuf(i)
		m, rerr := r.Read(buf)
		if m < 0 || m > len(buf) {
			m, rerr = 0, fmt.Errorf("rdmamsg: the reader read %d bytes into %d", m, len(buf))
		}
		if isClosed(c.closed) {
			// A Close or Abort came while the reader had it: nothing of
			// this Read is sent, and the reader's end (io.EOF, or its
			// own error) is not ReadFrom's, which is ErrClosed.
			m, rerr = 0, ErrClosed
		}
		if m > 0 {
			err = c.postBuffer(ctx, i, m)
		} else {
			c.mu.Lock()
			c.free = append(c.free, i)
			c.mu.Unlock()
		}
		c.giveBack()
		if err != nil {
			return n, err
		}
		n += int64(m)
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// waitSend waits until ready holds, spinning first with Config.Spin, and
// returns with c.mu held; or returns why it cannot, without.
func (c *Conn) waitSend(ctx context.Context, ready func() bool) error {
	for spun := false; ; {
		c.mu.Lock()
		if err := c.writeErr(); err != nil {
			c.mu.Unlock()
			return err
		}
		if ready() {
			return nil
		}
		if c.s.reap(c.sendKick) > 0 {
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		if c.spin > 0 && !spun {
			c.spinFor(ready, c.sendKick)
			spun = true
			continue
		}
		if err := c.s.sleep(ctx, c.sendKick, &c.wdl, c.closed); err != nil {
			return err
		}
	}
}

// buffer waits for a free send buffer and takes it, on loan (lend): the
// caller fills it without c.mu, and gives the loan back.
func (c *Conn) buffer(ctx context.Context) (int, error) {
	if err := c.waitSend(ctx, c.haveBuffer); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	if !c.lend() {
		return 0, ErrClosed
	}
	i := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	return i, nil
}

func (c *Conn) haveBuffer() bool { return len(c.free) > 0 }

// sendBuf returns send buffer i.
func (c *Conn) sendBuf(i int) []byte {
	return c.sbuf.Bytes()[i*c.maxSend : (i+1)*c.maxSend]
}

// canPost says whether a message can be posted now, with c.mu held: a
// credit to spare and room on the send queue.
func (c *Conn) canPost() bool {
	return c.fl.canSend() && c.sqOut < c.sendBuffers+updateSlots
}

// postBuffer waits for a credit and sends the first n bytes of buffer i,
// which the caller took; on failure the buffer is free again.
func (c *Conn) postBuffer(ctx context.Context, i, n int) error {
	if err := c.waitSend(ctx, c.canPost); err != nil {
		c.mu.Lock()
		c.free = append(c.free, i)
		c.mu.Unlock()
		return err
	}
	defer c.mu.Unlock()
	c.sb.SetSGE(i, 0, c.smr.SGE(i*c.maxSend, n))
	c.sb.SetImm(i, c.fl.send())
	if err := c.sb.Post(i, 1, 0); err != nil {
		c.free = append(c.free, i)
		c.fail(fmt.Errorf("rdmamsg: %w", err))
		return c.err
	}
	c.sqOut++
	c.posts++
	return nil
}

// sendErr says why nothing more can be sent, credit updates included,
// with c.mu held.
func (c *Conn) sendErr() error { return c.postErr(nil) }

// postErr says why nothing more can be posted, with c.mu held, nil where
// it can: ErrClosed after Close, the connection's failure as it is, the
// error every call returns from then on, or, after the peer's close or
// disconnect, EPIPE (peerGone) in the words of a send, or of operation o
// where o is not nil.
func (c *Conn) postErr(o *op) error {
	switch {
	case c.closing:
		return ErrClosed
	case c.err != nil:
		return c.err
	case c.eof || c.peerOut:
		what := "send to " + c.link.RemoteAddr().String()
		if o != nil {
			what = c.opString(o)
		}
		return c.peerGone(what, c.eof && c.cut != nil)
	}
	return nil
}

// peerGone is the error of what (a send, an operation) after the peer
// closed the connection, or, where cut, disconnected without ending its
// stream (not a close: the peer's process was killed, say, and its
// kernel disconnected; ended), with c.mu held.
func (c *Conn) peerGone(what string, cut bool) error {
	if cut {
		return fmt.Errorf("rdmamsg: %s: the peer disconnected without ending its stream: %w (%w)",
			what, syscall.EPIPE, c.link.Err())
	}
	return fmt.Errorf("rdmamsg: %s: the peer closed the connection: %w", what, syscall.EPIPE)
}

// writeErr says why no message can be sent, with c.mu held: sendErr's
// reasons, or this side's CloseWrite, after which updates still go.
func (c *Conn) writeErr() error {
	if err := c.sendErr(); err != nil {
		return err
	}
	if c.wclosed {
		return fmt.Errorf("rdmamsg: send to %s after CloseWrite: %w", c.link.RemoteAddr(), syscall.EPIPE)
	}
	return nil
}

// Recv waits for the next message, copies it into p and returns its
// length. Where the message is longer than p, Recv copies nothing and
// returns 0 and an error matching io.ErrShortBuffer, and leaves the
// message whole for the next Recv, which may pass a larger buffer;
// MaxRecv bytes always suffice. After the peer closes (or its
// CloseWrite), Recv returns what it sent and then io.EOF; where the
// connection ended without the peer's end message (a peer that takes
// them, and was killed), an error matching io.ErrUnexpectedEOF and
// rdmacm.ErrDisconnected instead, and after its Abort one matching
// syscall.ECONNRESET. If a Read took part of a message, Recv returns the
// rest. Waiting, for a message or for another receiver's turn, ends when
// ctx ends, the read deadline passes or the Conn closes; a context
// already done, or a read deadline already passed, fails it at once with
// that error, even with a message waiting, which stays for the next
// call.
func (c *Conn) Recv(ctx context.Context, p []byte) (int, error) {
	checkContext(ctx, "(*Conn).Recv")
	if err := takeTurn(ctx, c.recvTurn, &c.rdl, c.closed); err != nil {
		return 0, err
	}
	defer giveTurn(c.recvTurn)
	for spun := false; ; {
		c.mu.Lock()
		slot, data, err := c.next()
		if err != nil || slot >= 0 {
			n := 0
			if slot >= 0 {
				if len(p) < len(data) {
					c.mu.Unlock()
					return 0, fmt.Errorf("rdmamsg: a message of %d bytes for a buffer of %d: %w", len(data), len(p), io.ErrShortBuffer)
				}
				n = copy(p, data)
				c.take(slot)
			}
			c.mu.Unlock()
			return n, err
		}
		c.mu.Unlock()
		if err := c.waitRecv(ctx, &spun); err != nil {
			return 0, err
		}
	}
}

// next returns the message to read next, from its unread part on: its
// slot and bytes, or a slot of -1 and the reason there is none (nil while
// one may come), with c.mu held.
func (c *Conn) next() (int, []byte, error) {
	if c.closing {
		return -1, nil, ErrClosed
	}
	if c.cur < 0 && c.ready.len() == 0 {
		c.s.reap(c.recvKick)
	}
	if c.cur < 0 && c.ready.len() > 0 {
		c.cur, c.off = c.ready.pop(), 0
		if c.lens[c.cur] == endOfStream {
			// The peer's end message: nothing more comes. Its receive
			// was a spare, which is not posted again (flow.go).
			c.rclosed = true
			c.cur = -1
		}
	}
	if c.cur >= 0 {
		n := c.lens[c.cur]
		if n < 0 || n > c.maxRecv || c.off > n {
			// received lets no such length through: never read past
			// the message's buffer.
			c.fail(fmt.Errorf("rdmamsg: a message of %d bytes from %s in a buffer of %d: %w", n, c.link.RemoteAddr(), c.maxRecv, syscall.EPROTO))
			c.cur = -1
			return -1, nil, c.err
		}
		start := c.cur * c.maxRecv
		return c.cur, c.rbuf.Bytes()[start+c.off : start+n], nil
	}
	if c.err != nil {
		return -1, nil, c.err
	}
	if c.eof && !c.rclosed && c.cut != nil {
		return -1, nil, c.cut
	}
	if c.eof || c.rclosed {
		return -1, nil, io.EOF
	}
	return -1, nil, nil
}

// take gives the current message's buffer back to the device, with c.mu
// held.
func (c *Conn) take(slot int) {
	c.cur = -1
	c.repost(slot)
	if c.fl.wantUpdate() && c.sqOut >= c.sendBuffers+updateSlots {
		// The sends' completions may make room for the update.
		c.s.reap(c.recvKick)
	}
	c.sendUpdate()
}

// haveMessage says whether a message is there to read, with c.mu held.
func (c *Conn) haveMessage() bool { return c.cur >= 0 || c.ready.len() > 0 }

// waitRecv waits for a message to read: the first time in a caller's
// series (*spun false) by spinning with Config.Spin, if set; then asleep
// (sleep), until a completion or a kick comes, ctx ends, the read
// deadline passes or the Conn closes. The caller looks again after each.
func (c *Conn) waitRecv(ctx context.Context, spun *bool) error {
	if c.spin > 0 && !*spun {
		c.spinFor(c.haveMessage, c.recvKick)
		*spun = true
		return nil
	}
	return c.s.sleep(ctx, c.recvKick, &c.rdl, c.closed)
}

// Read reads the stream of messages as bytes: what is left of the current
// message, up to len(p), or the next message's first bytes. Empty messages
// are skipped. It returns io.EOF once the peer has closed (or its
// CloseWrite) and everything it sent was read, or, as Recv does, an
// error matching io.ErrUnexpectedEOF where the connection ended without
// the peer's end message.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 && isClosed(c.closed) {
		return 0, ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := takeTurn(context.Background(), c.recvTurn, &c.rdl, c.closed); err != nil {
		return 0, err
	}
	defer giveTurn(c.recvTurn)
	for spun := false; ; {
		c.mu.Lock()
		slot, data, err := c.next()
		if slot >= 0 {
			n := copy(p, data)
			c.off += n
			if n == len(data) {
				c.take(slot)
			}
			c.mu.Unlock()
			if n > 0 {
				return n, nil
			}
			continue
		}
		c.mu.Unlock()
		if err != nil {
			return 0, err
		}
		if err := c.waitRecv(context.Background(), &spun); err != nil {
			return 0, err
		}
	}
}

// WriteTo writes the stream of messages to w until the peer closes (or
// its CloseWrite), and then returns a nil error, as Read would, but
// straight from the registered receive buffers; where the connection
// ended without the peer's end message it returns, as Read, an error
// matching io.ErrUnexpectedEOF. io.Copy
// from the Conn uses it. Once the read deadline has passed it stops,
// before its next Write to w, with os.ErrDeadlineExceeded. Where Close
// or Abort comes while w's Write runs, WriteTo returns ErrClosed once it
// returns, whatever it returned.
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	if err := takeTurn(context.Background(), c.recvTurn, &c.rdl, c.closed); err != nil {
		return 0, err
	}
	defer giveTurn(c.recvTurn)
	var n int64
	for spun := false; ; {
		if c.rdl.passed() && !isClosed(c.closed) {
			return n, os.ErrDeadlineExceeded
		}
		c.mu.Lock()
		slot, data, err := c.next()
		if slot >= 0 && !c.lend() {
			slot, err = -1, ErrClosed
		}
		c.mu.Unlock()
		if slot >= 0 {
			// The buffer is this reader's until take reposts it.
			var m int
			var werr error
			if len(data) > 0 { // an empty message, as Read, gives nothing
				m, werr = w.Write(data)
			}
			if m < 0 || m > len(data) {
				m, werr = 0, fmt.Errorf("rdmamsg: the writer wrote %d bytes of %d", m, len(data))
			}
			c.mu.Lock()
			c.off += m
			if m == len(data) {
				c.take(slot)
			}
			c.mu.Unlock()
			c.giveBack()
			n += int64(m)
			if werr == nil && m < len(data) {
				werr = io.ErrShortWrite
			}
			if werr != nil && isClosed(c.closed) {
				// A Close or Abort came while the writer had it: its
				// failure is not WriteTo's, which is ErrClosed.
				werr = ErrClosed
			}
			if werr != nil {
				return n, werr
			}
			spun = false
			continue
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := c.waitRecv(context.Background(), &spun); err != nil {
			return n, err
		}
	}
}

// Write sends p as messages of at most MaxSend bytes, waiting as Send
// does (with no context: until the write deadline passes or the Conn
// closes). It returns the bytes sent before an error; once the write
// deadline has passed, it sends no more of p. Writes from several
// goroutines do not interleave: each one's messages go together, as a
// TCPConn's bytes do. Writing nothing sends nothing, but fails as a write
// would on a closed Conn, after the write deadline or CloseWrite, or once
// the connection has failed or the peer has closed.
func (c *Conn) Write(p []byte) (int, error) {
	if isClosed(c.closed) {
		return 0, ErrClosed
	}
	if c.wdl.passed() {
		return 0, os.ErrDeadlineExceeded
	}
	if len(p) == 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return 0, c.writeErr()
	}
	ctx := context.Background()
	if err := takeTurn(ctx, c.sendTurn, &c.wdl, c.closed); err != nil {
		return 0, err
	}
	defer giveTurn(c.sendTurn)
	n := 0
	for n < len(p) {
		if n > 0 && c.wdl.passed() && !isClosed(c.closed) {
			return n, os.ErrDeadlineExceeded
		}
		m := min(len(p)-n, c.maxSend)
		if err := c.sendLocked(ctx, p[n:n+m]); err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// CloseWrite ends this side's stream and keeps the connection, as a
// TCPConn's CloseWrite (shutdown with SHUT_WR) does: once the peer has
// taken the messages sent before, its Recv and Read return io.EOF, as
// after Close, while it may still send to this side, which reads on. It
// sends an end message, a send with immediate data and no bytes
// (ibv_post_send), after the messages sent before: it waits for its turn
// as Write does (until the write deadline passes or the Conn closes),
// but not for a credit or a send buffer, since it goes into a receive
// the peer keeps spare for it, so it returns at once even when the peer
// reads nothing. Send, Write and ReadFrom then fail with an error
// matching syscall.EPIPE; a second CloseWrite does nothing. After Close
// it returns ErrClosed. A peer whose rdmamsg is older than CloseWrite
// (its hello does not say it takes end messages) cannot be told:
// CloseWrite then fails with an error matching errors.ErrUnsupported, and
// sends nothing.
func (c *Conn) CloseWrite() error {
	if isClosed(c.closed) {
		return ErrClosed
	}
	if !c.peerEnds {
		return fmt.Errorf("rdmamsg: close write to %s: the peer's rdmamsg takes no end message: %w",
			c.link.RemoteAddr(), errors.ErrUnsupported)
	}
	if err := takeTurn(context.Background(), c.sendTurn, &c.wdl, c.closed); err != nil {
		return err
	}
	defer giveTurn(c.sendTurn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wclosed {
		return nil
	}
	if err := c.sendErr(); err != nil {
		return err
	}
	return c.postEnd(false)
}

// Close ends the connection. It sends an end message, unless CloseWrite
// did (to a peer that takes one: its hello says so), so that the peer
// reads io.EOF after what was sent, not io.ErrUnexpectedEOF as it does
// when a connection ends with none (a process killed). It then waits
// until every message sent, and the end, has reached the peer (its send
// completed), or failed, so that the peer receives everything sent
// before Close; but for 5 s at most without progress (the 5 s start
// again each time a send completes, so a slow transfer with much in
// flight is not cut short), or until the write deadline
// (SetWriteDeadline, SetDeadline) where one still to come is set and
// comes sooner, so that a peer that went silent, which answers nothing
// until the QP's retries run out (15 s or so on soft-RoCE with the
// defaults; rdmacm.Config.RetryCount), does not hold Close that long. A
// write deadline that had already passed when Close began (one set for
// each write, or to end a wait) does not cut the wait: as net.Conn's
// Close, this one delivers what was sent and the end. Send returns once a
// message is on its way, so Close is where a message that never arrived
// is told: its error says how many may not have reached the peer, and
// whether the end of the stream may not have (where it had not arrived
// when the wait was cut, or failed), and why (the connection's failure,
// the peer's close, rdmacm.ErrDisconnected, or the end of the wait,
// os.ErrDeadlineExceeded: then the error is itself a net.Error whose
// Timeout is true, as a net.Conn's method reports its deadline). Then it
// disconnects, which flushes what
// is still on the send queue (rdma_disconnect; for a Conn that Handshake
// made, it moves the QP to the error state and closes the net.Conn), and
// frees the connection's QP, memory registrations and the rest. Send,
// Recv, Read and Write waiting in other goroutines, for what they need or
// for their turn, return ErrClosed, and so do the deadlines' setters;
// their timers stop.
// Close does not wait for a ReadFrom blocked in its reader, or a WriteTo
// in its writer: that returns ErrClosed once its reader or writer
// returns, whatever that returned (io.EOF, or an error of its own), and
// the buffers stay mapped until then. Closing twice is a no-op.
//
// The peer takes a Close for the end of the stream (io.EOF); Abort is
// the end of one that failed. The end message, as CloseWrite's, goes
// into a receive the peer keeps spare, so Close does not wait for a
// credit; a Send or Write waiting for one returns ErrClosed, and what it
// had not posted is not sent.
func (c *Conn) Close() error { return c.shut(false) }

// Abort ends the connection as a failure, where Close ends it as the end
// of the stream: the peer's Recv and Read return the messages sent before
// and then an error matching syscall.ECONNRESET, not io.EOF, and its
// sends fail likewise, as a TCP reset tells. It is for a side whose part
// broke off (its input failed, its output could not be written, Ctrl-C),
// so that the peer does not take what arrived for the whole. It posts an
// abort message (ibv_post_send: a send with immediate data and no bytes)
// into a receive the peer keeps spare for it beyond its depth, which
// needs no credit and waits for nothing, then goes on as Close (sending
// no end message), whose error it returns: it waits for the messages sent
// to reach the peer, the abort last (as long as Close waits, at most; an
// abort still on its way when the wait is cut is told as Close tells an
// end: "the abort may not have reached"), then disconnects
// (rdma_disconnect) and frees. After Close or Abort it
// does nothing but return that error.
// Nothing is posted once the connection has failed or the peer has
// closed. A peer whose rdmamsg is older than Abort keeps no spare
// receive: the abort then goes only with a credit to spend, and fails
// that peer all the same, as a message it does not know (EPROTO); without
// one nothing can tell that peer, which takes the end for the end of the
// stream, and Abort returns an error matching errors.ErrUnsupported,
// joined with Close's.
func (c *Conn) Abort() error { return c.shut(true) }

// shutHook, if set, runs in Close and Abort once the end or abort is
// posted, before they wait for the sends (for the tests).
var shutHook atomic.Pointer[func(c *Conn)]

// shut is Close, or Abort when abort is true.
func (c *Conn) shut(abort bool) error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		var told error
		if abort {
			told = c.postAbort()
		} else {
			told = c.postEnd(true)
		}
		c.closing = true
		c.mu.Unlock()
		if h := shutHook.Load(); h != nil {
			(*h)(c)
		}
		// The wait for the sends ends after closeWait without progress,
		// or at a write deadline still to come (closeBound).
		bound := newCloseBound(time.Now(), c.wdl.when())
		close(c.closed)
		c.rdl.stop()
		c.wdl.stop()
		c.s.interrupt()
		if c.idle != nil {
			c.idle.Stop()
		}
		// From here on nothing is posted: every post checks closing.
		// Send, Recv and the rest that wait return ErrClosed; ReadFrom
		// or WriteTo busy in their reader or writer find it when they
		// come back, and the buffers stay mapped until then. Close waits
		// for the sends to complete, and for a caller asleep on the CQ
		// to leave it (interrupted, it does at once): the link's Close
		// frees the channel.
		// Once the connection has ended (the peer closed), messages still
		// on the send queue complete soon: delivered (their ACK was on its
		// way) or flushed, as the QP goes to the error state. Wait a
		// moment for them before counting any as lost. A peer that went
		// silent answers nothing until the QP's retries run out, which
		// may be never (a retry count of 7 on soft-RoCE): the wait ends
		// at the bound, and the disconnect below flushes what is left.
		var lost error
		var ended time.Time
		left := -1
		for {
			c.mu.Lock()
			c.s.reap(c.closeKick)
			now := time.Now()
			if ended.IsZero() && (c.eof || c.link.Err() != nil) {
				ended = now
			}
			if c.sqOut != left { // nothing is posted now: a send completed
				if left >= 0 {
					bound.progress(now)
				}
				left = c.sqOut
			}
			limit, waitFor := bound.limit()
			late := !now.Before(limit)
			sent := c.sqOut == 0 || c.err != nil || late ||
				!ended.IsZero() && (c.sqOut == c.upOut || time.Since(ended) > closeGrace)
			done := sent && !c.s.asleep
			if done {
				var cut error
				if late {
					cut = timeoutError{fmt.Errorf("not acknowledged %s: %w", waitFor, os.ErrDeadlineExceeded)}
				}
				lost = c.lostError(cut)
			}
			c.mu.Unlock()
			if done {
				break
			}
			until, over := limit, c.link.Done()
			if !ended.IsZero() {
				if t := ended.Add(closeGrace); t.Before(until) {
					until = t
				}
				over = nil
			}
			ctx, cancel := context.WithDeadline(context.Background(), until)
			c.s.sleep(ctx, c.closeKick, nil, over)
			cancel()
		}
		c.stop()
		c.loops.Wait()
		// Disconnect first, so that the device no longer touches the
		// buffers; rdmacm's Close then frees the receive side (prepare's
		// cleanup) before the QP.
		disc := c.link.disconnect()
		if c.link.Err() != nil || c.dropped {
			disc = nil // the peer went first, or reset: there is nothing to disconnect
		}
		// The regions go before the PD does; their memory stays
		// mapped until their own Close.
		c.regMu.Lock()
		defer c.regMu.Unlock()
		c.mu.Lock()
		c.s.freed = true
		errs := []error{told, lost, disc, c.freeSends(), c.deregister(), c.link.Close()}
		if c.loans == 0 {
			errs = append(errs, c.unmap())
		} else {
			c.unmapLater = true
		}
		c.mu.Unlock()
		c.closeErr = errors.Join(errs...)
		if errors.As(lost, new(timeoutError)) {
			// The wait was cut, and told (lostError names why the
			// messages may not have arrived: the cut, where nothing
			// else failed): a timeout, as net.Conn's methods report
			// their deadlines, for err.(net.Error) and an OpError.
			c.closeErr = timeoutError{c.closeErr}
		}
	})
	return c.closeErr
}
