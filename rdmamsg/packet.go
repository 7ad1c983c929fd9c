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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// PacketConfig tunes ListenPacket. The zero value (or nil) keeps 64
// receives posted and sends from 16 buffers.
type PacketConfig struct {
	// Depth is how many datagrams this side keeps receives posted for
	// (default 64). A datagram that arrives when every receive holds one
	// not yet read is dropped, as UD drops it.
	Depth int
	// SendBuffers is how many datagrams may be on their way at once
	// (default 16).
	SendBuffers int
	// Backlog bounds the lookups of this side's QP waiting to be answered
	// (rdma_listen); zero takes the kernel's default.
	Backlog int
	// LookupTimeout bounds WriteTo's lookup of a destination (default 5 s),
	// counted from WriteTo's start: the wait for other lookups (see WriteTo)
	// and the lookup itself. A lookup that runs out of it fails with an error
	// that names it and matches context.DeadlineExceeded, whatever WriteTo's
	// context.
	LookupTimeout time.Duration
}

const (
	defaultPacketDepth   = 64
	defaultLookupTimeout = 5 * time.Second
)

// maxLookups bounds the lookups a PacketConn runs at once, each of
// another destination. (A variable for the tests.)
var maxLookups = 4

// maxPeers bounds the destinations a PacketConn keeps an address handle
// for, each one it looked up; a new one beyond it takes the place of one
// written to least recently (see remember), which a later WriteTo looks
// up again. (A variable for the tests.)
var maxPeers = 4096

// PacketConn sends and receives datagrams on one UD queue pair, addressed
// by IP address and port as UDP sockets are. ListenPacket binds an
// rdma_cm ID of the UDP port space at the address, which answers the
// lookups (SIDR) of peers that want this side's QP; WriteTo looks a new
// destination up the same way once, a datagram's sender included, and
// sends to the QP the lookup gave. Datagrams are unreliable and
// unordered, as UD is; each is at most MaxDatagram bytes.
//
// A datagram's sender is not authenticated: its IP address is the one
// the network delivered in the GRH, but its port is the sender's claim,
// which any UD QP can make; do not use it for access control. Answers
// are safe from such claims: only the port's owner answers a lookup, and
// a datagram changes nothing of how WriteTo reaches an address, only has
// it looked up again where it came from another QP than the one known
// there. See the package documentation.
//
// Any number of goroutines may write (WriteTo) and read (ReadFrom) at
// once: writes take turns, and so do reads, each taking a whole datagram;
// a write and a read run at once. One waiting for its turn waits within
// its context, its deadline and Close. Close may be called from any
// goroutine.
type PacketConn struct {
	ch    *rdmacm.EventChannel
	id    *rdmacm.ID
	local netip.AddrPort
	port  int // the device's port
	cfg   PacketConfig
	// maxData is the payload a datagram carries here: the port's MTU
	// less the header.
	maxData int

	dev  *ibverbs.Context // the ID's device, a handle on librdmacm's
	pd   *ibverbs.PD
	cch  *ibverbs.CompChannel // the CQ's
	cq   *ibverbs.CQ          // for the send and the receive queue
	qp   *ibverbs.QP
	rbuf *ibverbs.Buffer
	rmr  *ibverbs.MR
	rb   *ibverbs.RecvBatch
	sbuf *ibverbs.Buffer
	smr  *ibverbs.MR
	slot int // bytes of a receive buffer: the GRH and a datagram

	// sendTurn and recvTurn hold a token while a WriteTo, or a
	// ReadFrom, has its turn; one that waits for its turn waits within
	// its context, its deadline and Close.
	sendTurn, recvTurn chan struct{}
	// lookups holds a token while a lookup runs: maxLookups at once,
	// which a WriteTo waits for within its context, the write deadline
	// and LookupTimeout.
	lookups chan struct{}

	mu    sync.Mutex
	peers map[netip.AddrPort]udPeer
	// lru lists the destinations in peers, the one written to most
	// recently first, each at the index its udPeer's slot names; index
	// 0 is the list's head and tail, no destination. One at an index
	// whose destination is no longer in peers, or is there at another
	// index, is free.
	lru []lruEntry
	// looking holds, for each destination being looked up, a channel
	// closed when its lookup ends, which a WriteTo to it waits for
	// rather than look it up too.
	looking map[netip.AddrPort]chan struct{}
	free    []int
	// sendTo is each send buffer's destination while its send is on the
	// wire (the zero AddrPort when none is), and posted says which
	// receive buffers have a receive posted: a completion for neither is
	// one a restart (restart) already took back, and is dropped.
	sendTo  []netip.AddrPort
	posted  []bool
	lostTo  netip.AddrPort // the destination of the last send that failed
	sqOut   int
	ready   ring
	wcs     []ibverbs.WC // each receive buffer's completion
	pwcs    []ibverbs.WC // what poll takes
	s       sleeper
	swr     [1]ibverbs.SendWR
	sge     [1]ibverbs.SGE
	err     error
	closing bool
	// retired are address handles no longer in peers that a send on the
	// wire, or the WriteTo under way (using), may still need: each is
	// closed once every send posted before it was retired has completed
	// (sent and done count them), or by Close. retireErr keeps their
	// closing's errors, for Close.
	retired    []retiredAH
	using      udPeer
	sent, done uint64
	retireErr  error

	rdl, wdl deadline // SetReadDeadline's, SetWriteDeadline's

	// stats are Stats' counters: atomics, which Stats reads without
	// p.mu.
	stats struct {
		sent, received, cut, malformed, refuted, full, failed atomic.Uint64
	}

	recvKick, sendKick, closeKick chan struct{}
	closed                        chan struct{}
	life                          context.Context // ends with Close
	stop                          context.CancelFunc
	loops                         sync.WaitGroup
	closeOnce                     sync.Once
	closeErr                      error
}

// udPeer is how to reach a destination: its address handle, QP number and
// largest datagram, as a lookup gave them. recheck is set once a datagram
// from its address came from another QP (claimant) or claimed another
// largest datagram: the next WriteTo to it looks it up again (and sends
// to what that lookup says). refuted is a QP that a lookup found not to
// be the address's, whose datagrams ask for no lookup again. addr is the
// address as a net.Addr, made once, which NetPacketConn's ReadFrom gives
// for a datagram from it without allocating one each time. slot is its
// index in PacketConn.lru.
type udPeer struct {
	ah                *ibverbs.AH
	qpn               uint32
	maxData           int
	recheck           bool
	claimant, refuted uint32
	addr              net.Addr
	slot              int
}

// lruEntry is a destination in PacketConn.lru, and the indices of the
// ones before and after it.
type lruEntry struct {
	to         netip.AddrPort
	prev, next int
}

// ListenPacket makes a datagram endpoint at addr ("ip:port"; port 0 picks
// one), which must be an address of an RDMA device's port: the device
// whose UD QP sends and receives.
func ListenPacket(ctx context.Context, addr string, cfg *PacketConfig) (pc *PacketConn, err error) {
	checkContext(ctx, "ListenPacket")
	c := PacketConfig{}
	if cfg != nil {
		c = *cfg
	}
	c.Depth = cmp.Or(c.Depth, defaultPacketDepth) // a zero field asks for its default
	c.SendBuffers = cmp.Or(c.SendBuffers, defaultSendBuffers)
	c.LookupTimeout = cmp.Or(c.LookupTimeout, defaultLookupTimeout)
	if c.Depth < 1 || c.Depth > maxDepth || c.SendBuffers < 1 || c.SendBuffers > maxDepth || c.LookupTimeout < 0 || c.Backlog < 0 {
		return nil, fmt.Errorf("rdmamsg: PacketConfig %+v: Depth and SendBuffers 1 to %d, the rest 0 or more: %w", c, maxDepth, syscall.EINVAL)
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rdmamsg: listen %q: want ip:port: %w", addr, syscall.EINVAL)
	}
	if ap.Addr().IsUnspecified() {
		return nil, fmt.Errorf("rdmamsg: listen %s: a datagram endpoint needs the address of one RDMA device: %w", addr, syscall.EINVAL)
	}
	p := &PacketConn{
		cfg:       c,
		peers:     make(map[netip.AddrPort]udPeer),
		looking:   make(map[netip.AddrPort]chan struct{}),
		recvKick:  make(chan struct{}, 1),
		sendKick:  make(chan struct{}, 1),
		closeKick: make(chan struct{}, 1),
		closed:    make(chan struct{}),
		lookups:   make(chan struct{}, maxLookups),
		sendTurn:  make(chan struct{}, 1),
		recvTurn:  make(chan struct{}, 1),
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("rdmamsg: listen %s: %w", addr, err), p.teardown())
			pc = nil
		}
	}()
	if p.ch, err = rdmacm.CreateEventChannel(); err != nil {
		return p, err
	}
	if p.id, err = p.ch.CreateID(rdmacm.PortSpaceUDP); err != nil {
		return p, err
	}
	if err = p.id.BindAddr(ap); err != nil {
		if e := errors.Unwrap(err); e != nil {
			err = e // without the address, which listen's error names
		}
		return p, err
	}
	if err = p.id.Listen(c.Backlog); err != nil {
		return p, err
	}
	p.local, p.port = p.id.LocalAddr(), p.id.PortNum()
	if p.dev, err = p.id.Context(); err != nil {
		return p, err
	}
	dev := p.dev
	pa, err := dev.QueryPort(p.port)
	if err != nil {
		return p, err
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		// On InfiniBand a datagram within a subnet comes without a GRH,
		// and so without its sender's IP address.
		return p, fmt.Errorf("port %d of %s is %s: datagram endpoints are RoCE only: %w", p.port, dev.Name(), pa.LinkLayer, errors.ErrUnsupported)
	}
	p.maxData = pa.ActiveMTU.Bytes() - packetHeaderLen
	p.slot = ibverbs.GRHLen + pa.ActiveMTU.Bytes()
	if err = p.makeQP(dev); err != nil {
		return p, err
	}
	p.s = sleeper{mu: &p.mu, cq: p.cq, poll: p.poll, fail: p.fail, closed: p.closed,
		kicks: []chan struct{}{p.sendKick, p.recvKick, p.closeKick}}
	p.rdl.onChange, p.wdl.onChange = p.s.interrupt, p.s.interrupt
	p.life, p.stop = context.WithCancel(context.Background())
	p.loops.Add(1)
	go p.answerLookups(p.life)
	return p, nil
}

// makeQP makes the PD, CQs, UD QP and buffers on dev, and posts the
// receives.
func (p *PacketConn) makeQP(dev *ibverbs.Context) (err error) {
	if p.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	if p.cch, err = dev.CreateCompChannel(); err != nil {
		return err
	}
	if p.cq, err = dev.CreateCQ(p.cfg.SendBuffers+p.cfg.Depth, p.cch); err != nil {
		return err
	}
	p.qp, err = p.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeUD, SendCQ: p.cq, RecvCQ: p.cq,
		Cap: ibverbs.QPCap{MaxSendWR: p.cfg.SendBuffers, MaxRecvWR: p.cfg.Depth, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	if err = p.qp.Connect(ibverbs.Endpoint{}, ibverbs.ConnParams{Port: p.port, QKey: rdmacm.UDPQKey}); err != nil {
		return err
	}
	if p.rbuf, p.rmr, err = register(p.pd, p.cfg.Depth*p.slot, ibverbs.AccessLocalWrite); err != nil {
		return err
	}
	wrs := make([]ibverbs.RecvWR, p.cfg.Depth)
	for i := range wrs {
		wrs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{p.rmr.SGE(i*p.slot, p.slot)}}
	}
	if p.rb, err = p.qp.NewRecvBatch(wrs); err != nil {
		return err
	}
	if err = p.rb.Post(0, p.cfg.Depth); err != nil {
		return err
	}
	sendSize := packetHeaderLen + p.maxData
	if p.sbuf, p.smr, err = register(p.pd, p.cfg.SendBuffers*sendSize, 0); err != nil {
		return err
	}
	p.free = make([]int, p.cfg.SendBuffers)
	for i := range p.free {
		p.free[i] = i
	}
	p.sendTo = make([]netip.AddrPort, p.cfg.SendBuffers)
	p.posted = make([]bool, p.cfg.Depth)
	for i := range p.posted {
		p.posted[i] = true
	}
	p.ready = newRing(p.cfg.Depth)
	p.wcs = make([]ibverbs.WC, p.cfg.Depth)
	p.pwcs = make([]ibverbs.WC, p.cfg.Depth+p.cfg.SendBuffers)
	return nil
}

// answerLookups answers the peers that look this side's QP up (SIDR
// requests to the bound address): with its number, and in the reply's
// private data the hello of a PacketConn and the largest datagram taken.
// Once the PacketConn has failed, it rejects them, so that a peer's
// WriteTo fails (ECONNREFUSED) rather than send to a QP that takes
// nothing.
func (p *PacketConn) answerLookups(ctx context.Context) {
	defer p.loops.Done()
	reply := packetHello(p.maxData)
	for {
		ev, err := p.ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.mu.Lock()
				p.fail(fmt.Errorf("rdmamsg: answering lookups at %s: %w", p.local, err))
				p.mu.Unlock()
				p.s.wake(nil)
				p.s.interrupt()
			}
			return
		}
		if ev.Type == rdmacm.EventDeviceRemoval {
			// The kernel has closed the ID: no lookup is answered again,
			// and the QP is gone with the device.
			p.mu.Lock()
			p.fail(fmt.Errorf("rdmamsg: %s: the RDMA device went away: %w", p.local, rdmacm.ErrDeviceRemoved))
			p.mu.Unlock()
			p.s.wake(nil)
			p.s.interrupt()
			return
		}
		if ev.Type == rdmacm.EventConnectRequest && ev.ID != nil {
			p.mu.Lock()
			failed := p.err != nil
			p.mu.Unlock()
			// A failed answer leaves the peer's lookup to time out,
			// which its WriteTo reports.
			if failed {
				ev.ID.Reject(packetFailed)
			} else {
				ev.ID.Accept(&rdmacm.ConnParam{QPNum: p.qp.Num(), PrivateData: reply})
			}
			ev.ID.Close()
		}
	}
}

func (p *PacketConn) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// packetFailed is the reason a failed PacketConn's rejects of lookups
// give.
var packetFailed = []byte("rdmamsg: the PacketConn has failed")

// poll takes the completions there are, with p.mu held, and returns how
// many: a send's frees its buffer, a receive's queues its datagram for
// ReadFrom. A send or receive that failed (not flushed) is a datagram
// lost, as UDP loses one: the QP, which the failure may have taken out of
// RTS, is brought back (restart). It is p.s's poll.
func (p *PacketConn) poll() int {
	n, err := p.cq.Poll(p.pwcs)
	if err != nil {
		p.fail(fmt.Errorf("rdmamsg: %w", err))
		return 0
	}
	bad := -1
	for i := range p.pwcs[:n] {
		if p.complete(&p.pwcs[i]) && bad < 0 {
			bad = i
		}
	}
	if bad >= 0 && !p.closing && p.err == nil {
		p.restart(p.pwcs[bad])
	}
	if len(p.retired) > 0 {
		p.freeRetired()
	}
	return n
}

// complete takes one completion, with p.mu held, and reports whether it
// failed, other than by a flush. One whose buffer a restart took back is
// dropped.
func (p *PacketConn) complete(wc *ibverbs.WC) (failed bool) {
	if wc.WRID&sendTag != 0 {
		i := int(wc.WRID &^ sendTag)
		if i >= len(p.sendTo) || !p.sendTo[i].IsValid() {
			return false
		}
		to := p.sendTo[i]
		p.sendTo[i] = netip.AddrPort{}
		p.sqOut--
		p.done++
		p.free = append(p.free, i)
		if wc.Status == ibverbs.WCSuccess {
			return false
		}
		if !p.closing {
			p.stats.failed.Add(1)
		}
		if wc.Status == ibverbs.WCWRFlushErr {
			return false
		}
		p.lostTo = to
		return true
	}
	i := int(wc.WRID)
	if i >= len(p.posted) || !p.posted[i] {
		return false
	}
	p.posted[i] = false
	switch wc.Status {
	case ibverbs.WCSuccess:
		p.wcs[i] = *wc
		p.ready.push(i)
		if p.ready.len() == p.cfg.Depth {
			p.stats.full.Add(1) // no receive is posted now
		}
		return false
	case ibverbs.WCWRFlushErr:
		return false
	}
	return true
}

// restart brings the QP back to RTS after the failed completion wc, with
// p.mu held, and posts again the receives it lost; where that fails, the
// PacketConn fails with an error that says so. A UD QP whose send fails
// goes to SQE, from which it returns to RTS at once (its receives go on);
// soft-RoCE's goes to ERR instead, which only RESET leaves: the receives
// and sends it held are dropped, those whose completions are still on
// the CQ too, and the QP goes through INIT and RTR to RTS again. A send
// it dropped is a datagram lost (PacketStats.Failed), a receive is posted
// again.
func (p *PacketConn) restart(wc ibverbs.WC) {
	err := p.bringBack()
	if err == nil && restartHook != nil {
		err = restartHook()
	}
	if err == nil {
		err = p.repost()
	}
	if err == nil {
		return
	}
	what := fmt.Sprintf("receive at %s", p.local)
	if wc.WRID&sendTag != 0 {
		what = fmt.Sprintf("datagram to %s from %s", p.lostTo, p.local)
	}
	p.fail(fmt.Errorf("rdmamsg: %s: %w; the QP could not be brought back, which ends the PacketConn: %w", what, wc.Err(), err))
}

// restartHook, if set, runs in restart once the QP is back, and an error
// it returns is taken for restart's (for the tests).
var restartHook func() error

// bringBack returns the QP to RTS, with p.mu held (see restart).
func (p *PacketConn) bringBack() error {
	st, err := p.qp.State()
	switch {
	case err != nil:
		return err
	case st == ibverbs.QPStateRTS:
		return nil
	case st == ibverbs.QPStateSQE:
		return p.qp.Modify(&ibverbs.QPAttr{State: ibverbs.QPStateRTS}, ibverbs.QPAttrState)
	}
	if err := p.qp.Reset(); err != nil {
		return fmt.Errorf("from %s: %w", st, err)
	}
	// Nothing completes in RESET: what is on the CQ goes, and what was on
	// the queues is taken back.
	for range p.cfg.Depth + p.cfg.SendBuffers + 1 {
		n, err := p.cq.Poll(p.pwcs)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		for i := range p.pwcs[:n] {
			p.complete(&p.pwcs[i])
		}
	}
	for i, to := range p.sendTo {
		if to.IsValid() {
			p.sendTo[i] = netip.AddrPort{}
			p.sqOut--
			p.done++
			p.free = append(p.free, i)
			p.stats.failed.Add(1)
		}
	}
	clear(p.posted)
	return p.qp.Connect(ibverbs.Endpoint{}, ibverbs.ConnParams{Port: p.port, QKey: rdmacm.UDPQKey})
}

// repost posts the receives of the buffers that hold no datagram for
// ReadFrom and have none posted, with p.mu held.
func (p *PacketConn) repost() error {
	// The datagrams queued are marked posted for a moment, to be passed
	// over.
	mark := func(v bool) {
		for k := range p.ready.size {
			p.posted[p.ready.buf[(p.ready.head+k)%len(p.ready.buf)]] = v
		}
	}
	mark(true)
	defer mark(false)
	for i, ok := range p.posted {
		if ok {
			continue
		}
		if err := p.rb.Post(i, 1); err != nil {
			return err
		}
		p.posted[i] = true
	}
	return nil
}

// remember keeps peer as how to reach to, with p.mu held, as the
// destination written to most recently: in place of what was known of to
// (a PacketConn that came back at that address has a new QP), or, with
// maxPeers known, of the one written to least recently (a WriteTo that
// finds its destination known moves it to the front: touch). Both take
// the same few steps, however many are known, and allocate nothing once
// maxPeers are.
func (p *PacketConn) remember(to netip.AddrPort, peer udPeer) {
	if old, ok := p.peers[to]; ok {
		p.retire(old.ah)
		peer.slot = old.slot
		p.peers[to] = peer
		p.touch(peer.slot)
		return
	}
	if len(p.lru) == 0 {
		p.lru = append(p.lru, lruEntry{}) // the head, its own before and after
	}
	if len(p.lru)-1 < maxPeers {
		peer.slot = len(p.lru)
		p.lru = append(p.lru, lruEntry{to: to, prev: peer.slot, next: peer.slot})
	} else {
		// The last, unless free (see lru), goes.
		peer.slot = p.lru[0].prev
		k := p.lru[peer.slot].to
		if old, ok := p.peers[k]; ok && old.slot == peer.slot {
			p.retire(old.ah)
			delete(p.peers, k)
		}
		p.lru[peer.slot].to = to
	}
	p.peers[to] = peer
	p.touch(peer.slot)
}

// touch moves the destination at index i of lru to the front, with p.mu
// held.
func (p *PacketConn) touch(i int) {
	e := &p.lru[i]
	if p.lru[0].next == i {
		return
	}
	p.lru[e.prev].next, p.lru[e.next].prev = e.next, e.prev // out, unless new (its own before and after)
	e.prev, e.next = 0, p.lru[0].next
	p.lru[e.next].prev = i
	p.lru[0].next = i
}

// retiredAH is an address handle retired when sent sends had been
// posted.
type retiredAH struct {
	ah    *ibverbs.AH
	after uint64
}

// retire closes ah, dropped from peers, with p.mu held: now, or, while a
// send that may use it is on the wire or WriteTo holds it, later
// (freeRetired).
func (p *PacketConn) retire(ah *ibverbs.AH) {
	p.retired = append(p.retired, retiredAH{ah, p.sent})
	p.freeRetired()
}

// freeRetired closes the retired handles that no send on the wire and
// not WriteTo may use, with p.mu held.
func (p *PacketConn) freeRetired() {
	kept := p.retired[:0]
	for _, r := range p.retired {
		if r.ah == p.using.ah || p.done < r.after {
			kept = append(kept, r)
			continue
		}
		p.retireErr = errors.Join(p.retireErr, r.ah.Close())
	}
	clear(p.retired[len(kept):])
	p.retired = kept
}

// LocalAddr returns the address the PacketConn is bound to.
func (p *PacketConn) LocalAddr() netip.AddrPort { return p.local }

// MaxDatagram returns the largest datagram this side receives: its port's
// MTU less the 8 bytes of rdmamsg's header. WriteTo refuses longer ones,
// and ones longer than the destination's.
func (p *PacketConn) MaxDatagram() int { return p.maxData }

// QP returns the UD queue pair, for its number and counters. Posting to
// it breaks the PacketConn.
func (p *PacketConn) QP() *ibverbs.QP { return p.qp }

// ReadFrom waits for the next datagram, copies its payload into b and
// returns its length and the sender's address (the sender's IP address,
// from the datagram's GRH, and the port its header claims, which is not
// authenticated: see PacketConn; an answer WriteTo sends to it goes to
// the port's owner, not to whoever claimed it). A payload longer
// than b is cut, and the error matches io.ErrShortBuffer; MaxDatagram
// bytes always suffice. Datagrams that do not come from a PacketConn are
// dropped. Once the read deadline has passed it fails at once, even with
// datagrams waiting, as package net's do, and so does it once ctx is
// done.
func (p *PacketConn) ReadFrom(ctx context.Context, b []byte) (int, netip.AddrPort, error) {
	checkContext(ctx, "(*PacketConn).ReadFrom")
	n, from, _, size, err := p.readFrom(ctx, b)
	if err == nil && n < size {
		err = fmt.Errorf("rdmamsg: a datagram of %d bytes from %s for a buffer of %d: %w", size, from, len(b), io.ErrShortBuffer)
	}
	return n, from, err
}

// readFrom is ReadFrom, less its error for a datagram cut: it returns the
// datagram's size instead, and the sender as a net.Addr where it is a
// known peer (nil otherwise).
func (p *PacketConn) readFrom(ctx context.Context, b []byte) (n int, from netip.AddrPort, addr net.Addr, size int, err error) {
	if p.rdl.passed() && !isClosed(p.closed) {
		return 0, netip.AddrPort{}, nil, 0, os.ErrDeadlineExceeded
	}
	if err := takeTurn(ctx, p.recvTurn, &p.rdl, p.closed); err != nil {
		return 0, netip.AddrPort{}, nil, 0, err
	}
	defer giveTurn(p.recvTurn)
	for {
		p.mu.Lock()
		if p.closing {
			p.mu.Unlock()
			return 0, netip.AddrPort{}, nil, 0, ErrClosed
		}
		if p.ready.len() == 0 {
			p.s.reap(p.recvKick)
		}
		for p.ready.len() > 0 {
			slot := p.ready.pop()
			n, from, addr, size = p.take(slot, b)
			if p.closing {
				break
			}
			if rerr := p.rb.Post(slot, 1); rerr != nil {
				p.fail(fmt.Errorf("rdmamsg: %w", rerr))
			} else {
				p.posted[slot] = true
			}
			if from.IsValid() {
				p.mu.Unlock()
				p.stats.received.Add(1)
				if n < size {
					p.stats.cut.Add(1)
				}
				return n, from, addr, size, nil
			}
		}
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return 0, netip.AddrPort{}, nil, 0, err
		}
		if err := p.s.sleep(ctx, p.recvKick, &p.rdl, p.closed); err != nil {
			return 0, netip.AddrPort{}, nil, 0, err
		}
	}
}

// take reads the datagram in receive buffer slot into b, with p.mu held:
// the bytes copied, the sender's address, the sender's net.Addr where it
// is a known peer, and the payload's size, more than the bytes copied if
// b was too short; an invalid address for a datagram to drop. A datagram
// teaches nothing of how to reach its sender, whose address it only
// claims: a WriteTo to a sender looks it up as any new destination. One
// from a known address but another QP, or with another largest datagram,
// has that address looked up again before the next WriteTo to it.
func (p *PacketConn) take(slot int, b []byte) (int, netip.AddrPort, net.Addr, int) {
	wc := &p.wcs[slot]
	if wc.Opcode != ibverbs.WCRecv || int(wc.ByteLen) > p.slot {
		// Not a send's, or longer than the buffer: a UD QP takes no
		// RDMA write, and the device no datagram longer than the
		// receive, but the length must not take the slice past it.
		p.stats.malformed.Add(1)
		return 0, netip.AddrPort{}, nil, 0
	}
	buf := p.rbuf.Bytes()[slot*p.slot : slot*p.slot+int(wc.ByteLen)]
	if len(buf) < ibverbs.GRHLen+packetHeaderLen || wc.Flags&ibverbs.WCWithGRH == 0 {
		// Too short for a header, or without a sender's address to
		// answer.
		p.stats.malformed.Add(1)
		return 0, netip.AddrPort{}, nil, 0
	}
	grh, data := buf[:ibverbs.GRHLen], buf[ibverbs.GRHLen:]
	port, maxData, ok := parsePacketHeader(data)
	if !ok {
		p.stats.malformed.Add(1)
		return 0, netip.AddrPort{}, nil, 0
	}
	g, err := ibverbs.ParseGRH(grh)
	if err != nil {
		p.stats.malformed.Add(1)
		return 0, netip.AddrPort{}, nil, 0
	}
	from := netip.AddrPortFrom(g.Src.Addr().Unmap(), port)
	known, isKnown := p.peers[from]
	if isKnown && wc.SrcQP == known.refuted && wc.SrcQP != known.qpn {
		p.stats.refuted.Add(1)
	}
	if isKnown && !known.recheck && (known.qpn != wc.SrcQP || known.maxData != maxData) && wc.SrcQP != known.refuted {
		// Another QP claims a known address: a PacketConn made again
		// there, or a forger. Only a lookup, which only the port's
		// owner answers, may say which; the next WriteTo to it makes
		// one, and until then what was known stays.
		known.recheck, known.claimant = true, wc.SrcQP
		p.peers[from] = known
	}
	payload := data[packetHeaderLen:]
	return copy(b, payload), from, known.addr, len(payload)
}

// WriteTo sends b as one datagram to the PacketConn at to. The first datagram
// to a destination, a sender ReadFrom gave included, looks its QP up (SIDR;
// Close ends it), and so does the next one after a datagram from to came from
// another QP than the one known, or claimed another largest datagram (see
// PacketConn): a destination where nothing listens fails then, with an error
// matching syscall.ECONNREFUSED. Lookups of different destinations run at
// once, up to 4; a WriteTo to a fifth new destination waits for one of them
// to end, in no set order, and one to a destination being looked up waits for
// that lookup. PacketConfig.LookupTimeout, counted from WriteTo's start,
// bounds the waits and the lookup; so do the context and the write deadline
// (the error matches os.ErrDeadlineExceeded). A lookup holds up no WriteTo to
// a known destination. A datagram longer than MaxDatagram fails at once
// (syscall.EMSGSIZE), as does a destination no PacketConn can be at: an
// unspecified, multicast or broadcast address or port 0 (syscall.EINVAL), or a
// loopback one (syscall.EADDRNOTAVAIL). An IPv4-mapped destination is taken for its
// IPv4 address, as ReadFrom gives it. WriteTo waits while every send buffer
// is on the wire, and returns once the datagram is posted; whether it
// arrives, UD does not say. One whose send the device fails is lost, and
// counted (PacketStats.Failed); the PacketConn goes on (see the package
// documentation). Once the write deadline has passed it fails at
// once, as package net's do, and so does it once ctx is done: nothing
// is posted.
func (p *PacketConn) WriteTo(ctx context.Context, b []byte, to netip.AddrPort) error {
	checkContext(ctx, "(*PacketConn).WriteTo")
	if p.wdl.passed() && !isClosed(p.closed) {
		return os.ErrDeadlineExceeded
	}
	// An IPv4-mapped address is the IPv4 one, as a sender's is in
	// ReadFrom.
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	if len(b) > p.maxData {
		// Too long for any destination: no lookup need say so.
		return fmt.Errorf("rdmamsg: a datagram of %d bytes to %s: at most %d: %w", len(b), to, p.maxData, syscall.EMSGSIZE)
	}
	if err := checkDestination("WriteTo", "PacketConn", to); err != nil {
		return err
	}
	peer, err := p.use(ctx, to, time.Now().Add(p.cfg.LookupTimeout))
	if err != nil {
		return err
	}
	defer giveTurn(p.sendTurn)
	defer p.release()
	if usingHook != nil {
		usingHook(p)
	}
	if len(b) > min(p.maxData, peer.maxData) {
		return fmt.Errorf("rdmamsg: a datagram of %d bytes to %s: at most %d: %w", len(b), to, min(p.maxData, peer.maxData), syscall.EMSGSIZE)
	}
	for {
		p.mu.Lock()
		switch {
		case p.closing:
			p.mu.Unlock()
			return ErrClosed
		case p.err != nil:
			p.mu.Unlock()
			return p.err
		case len(p.free) > 0:
			err := p.post(b, to, peer)
			p.mu.Unlock()
			return err
		case p.s.reap(p.sendKick) > 0:
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		if err := p.s.sleep(ctx, p.sendKick, &p.wdl, p.closed); err != nil {
			return err
		}
	}
}

// checkDestination refuses, for op, the addresses where no PacketConn or
// Listener (what) can be: an unspecified, multicast or broadcast
// address, which UD's unicast and an RC connection cannot reach, a
// loopback one, which ListenPacket and Listen cannot bind (it has no
// RDMA device), and port 0, where a bind takes a free port instead; a
// lookup of one would wait for LookupTimeout for nothing, a Dial failed
// on the route, as if no device were there, and one to port 0 was
// rejected by the peer ("invalid service ID").
func checkDestination(op, what string, to netip.AddrPort) error {
	a := to.Addr()
	switch {
	case !a.IsValid(), a.IsUnspecified(), a.IsMulticast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("rdmamsg: %s %s: not a unicast address: %w", op, to, syscall.EINVAL)
	case a.IsLoopback():
		return fmt.Errorf("rdmamsg: %s %s: no %s is on a loopback address (no RDMA device has one): %w", op, to, what, syscall.EADDRNOTAVAIL)
	case to.Port() == 0:
		return portZeroError(op, what, to.String())
	}
	return nil
}

// portZeroError refuses, for op, a destination to on port 0, where no
// what is.
func portZeroError(op, what, to string) error {
	return fmt.Errorf("rdmamsg: %s %s: no %s is on port 0 (binding port 0 picks a free one): %w", op, to, what, syscall.EINVAL)
}

// usingHook, if set, runs in WriteTo once p.using is set (for the tests).
var usingHook func(p *PacketConn)

// use takes WriteTo's turn and makes to's peer the one WriteTo sends to
// (p.using), looking it up first, by the time by, where it is not known;
// the lookup goes on without the turn, so that a destination that does not
// answer holds up no WriteTo to a known one.
func (p *PacketConn) use(ctx context.Context, to netip.AddrPort, by time.Time) (udPeer, error) {
	for {
		looked, err := p.lookupOnce(ctx, to, by)
		if err != nil {
			return udPeer{}, err
		}
		if err := takeTurn(ctx, p.sendTurn, &p.wdl, p.closed); err != nil {
			return udPeer{}, err
		}
		p.mu.Lock()
		peer, ok := p.peers[to]
		// A datagram may have set recheck since the lookup that made the
		// peer: that lookup answers it.
		ok = ok && (!peer.recheck || peer.ah == looked)
		closing := p.closing
		if ok && !closing {
			p.using = peer
		}
		p.mu.Unlock()
		switch {
		case closing:
			giveTurn(p.sendTurn)
			return udPeer{}, ErrClosed
		case ok:
			return peer, nil
		}
		// Dropped from peers since the lookup (evicted, or replaced and
		// retired), or to be checked again: look it up again.
		giveTurn(p.sendTurn)
	}
}

// release ends WriteTo's use of p.using, with its turn. A handle
// retired meanwhile waits for the send just posted with it too, not only
// for those posted before it was retired.
func (p *PacketConn) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.retired {
		if p.retired[i].ah == p.using.ah {
			p.retired[i].after = p.sent
		}
	}
	p.using = udPeer{}
	p.freeRetired()
}

// post sends b from a free buffer, with p.mu held.
func (p *PacketConn) post(b []byte, to netip.AddrPort, peer udPeer) error {
	i := p.free[len(p.free)-1]
	size := packetHeaderLen + p.maxData
	buf := p.sbuf.Bytes()[i*size : (i+1)*size]
	putPacketHeader(buf, p.local.Port(), p.maxData)
	n := copy(buf[packetHeaderLen:], b)
	p.sge[0] = p.smr.SGE(i*size, packetHeaderLen+n)
	p.swr[0] = ibverbs.SendWR{ID: sendTag | uint64(i), Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled, SGL: p.sge[:],
		AH: peer.ah, RemoteQPN: peer.qpn, RemoteQKey: rdmacm.UDPQKey}
	if err := p.qp.PostSend(p.swr[:]); err != nil {
		return fmt.Errorf("rdmamsg: datagram to %s: %w", to, err)
	}
	p.free = p.free[:len(p.free)-1]
	p.sendTo[i] = to
	p.sqOut++
	p.sent++
	p.stats.sent.Add(1)
	return nil
}

// PacketStats counts a PacketConn's datagrams since ListenPacket, those
// it dropped by why; see (*PacketConn).Stats.
type PacketStats struct {
	// Sent counts the datagrams WriteTo posted (ibv_post_send); whether
	// they arrived, UD does not say.
	Sent uint64
	// Received counts the datagrams ReadFrom returned, Cut and Refuted
	// ones included.
	Received uint64
	// Cut counts the datagrams ReadFrom returned cut to a buffer shorter
	// than their payload: what was beyond it is lost.
	Cut uint64
	// Malformed counts the datagrams ReadFrom dropped as no PacketConn's:
	// shorter than rdmamsg's header, without a GRH (so without a
	// sender's address), or whose header or GRH does not parse.
	Malformed uint64
	// Refuted counts the datagrams ReadFrom returned whose sender's QP a
	// lookup found not to be the one at the address they claim: a
	// forger's, or one of a PacketConn no longer there. They are not
	// dropped (the port a datagram claims is not authenticated, see
	// PacketConn), and answers to the address still go to its owner.
	Refuted uint64
	// Full counts the times every receive held a datagram not yet read:
	// until ReadFrom took one, none was posted, and the device dropped,
	// without a word, any datagram that came (the port's counters may
	// count those). A read loop that keeps up, or a larger
	// PacketConfig.Depth, keeps it at zero.
	Full uint64
	// Failed counts the datagrams WriteTo posted that the device failed
	// to send (a work completion with an error: on soft-RoCE, a send
	// while the link is down) or dropped with the QP it brought back
	// after such a failure: lost, as a UDP socket's datagram that its
	// kernel could not send is, while the PacketConn goes on (WriteTo
	// returned nil for each: it returns once a datagram is posted).
	// They are in Sent too.
	Failed uint64
}

// Stats returns the PacketConn's counters. It takes no lock and
// allocates nothing; each counter is read on its own, so one may be a
// datagram ahead of another while ReadFrom or WriteTo runs. It works
// after Close too.
func (p *PacketConn) Stats() PacketStats {
	return PacketStats{
		Sent:      p.stats.sent.Load(),
		Received:  p.stats.received.Load(),
		Cut:       p.stats.cut.Load(),
		Malformed: p.stats.malformed.Load(),
		Refuted:   p.stats.refuted.Load(),
		Full:      p.stats.full.Load(),
		Failed:    p.stats.failed.Load(),
	}
}

// lookupOnce looks to up, by the time by, unless an earlier lookup made
// it known and no datagram since asks for it to be checked again (see
// take); where another WriteTo is looking it up, it waits for that lookup
// instead. Close ends a lookup under way. It returns the address handle
// of the peer it found, or that the lookup it waited for left (nil if
// none), which WriteTo may use though a datagram has asked for another
// lookup since: that one answers it.
func (p *PacketConn) lookupOnce(ctx context.Context, to netip.AddrPort, by time.Time) (*ibverbs.AH, error) {
	waited := false
	for {
		p.mu.Lock()
		if p.closing {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if peer, ok := p.peers[to]; ok && (!peer.recheck || waited) {
			p.touch(peer.slot)
			p.mu.Unlock()
			return peer.ah, nil
		}
		ended, busy := p.looking[to]
		if !busy {
			ended = make(chan struct{})
			p.looking[to] = ended
		}
		p.mu.Unlock()
		if !busy {
			return p.lookupAs(ctx, to, by, ended)
		}
		// Another WriteTo looks to up: once it is done, to is known,
		// or this one looks it up itself.
		if err := p.waitLookup(ctx, to, by, ended, nil, "its lookup by another WriteTo"); err != nil {
			return nil, err
		}
		waited = true
	}
}

// waitLookup waits, for a lookup of to, until ch is closed or, where tok
// is not nil, a token goes into tok, within ctx, the write deadline, the
// time by and Close: what is awaited says what, for its error.
func (p *PacketConn) waitLookup(ctx context.Context, to netip.AddrPort, by time.Time, ch <-chan struct{}, tok chan<- struct{}, what string) error {
	// A nil ch or tok is a case that never comes.
	select {
	case <-ch:
		return nil
	case tok <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case tok <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rdmamsg: looking up %s: waiting for %s: %w", to, what, ctx.Err())
	case <-p.wdl.done():
		return timeoutError{fmt.Errorf("rdmamsg: looking up %s: waiting for %s: %w", to, what, os.ErrDeadlineExceeded)}
	case <-t.C:
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rdmamsg: looking up %s: waiting for %s: %w", to, what, err)
		}
		if callersTime(ctx, by) {
			// ctx's deadline came first, or with by, and its timer
			// has not ended it yet.
			return fmt.Errorf("rdmamsg: looking up %s: waiting for %s: %w", to, what, context.DeadlineExceeded)
		}
		return fmt.Errorf("rdmamsg: looking up %s: waiting for %s beyond PacketConfig.LookupTimeout (%v): %w", to, what, p.cfg.LookupTimeout, context.DeadlineExceeded)
	case <-p.closed:
		return ErrClosed
	}
}

// timeoutError is a passed deadline's error that says more than
// os.ErrDeadlineExceeded, which it wraps: a net.Error whose Timeout is
// true, as that one is, so that code that asserts err.(net.Error), as
// code written for package net does, finds it one.
type timeoutError struct{ error }

func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }
func (e timeoutError) Unwrap() error   { return e.error }

// opCause is err as a *net.OpError's Err: err itself, unless a timeout
// lies deeper in its chain than err (a lookup's context.DeadlineExceeded,
// a stalled connection's ETIMEDOUT), which the OpError's Timeout, asking
// its Err only, would miss, where errors.As to a net.Error found it
// before the OpError wrapped it: then err as a timeoutError.
func opCause(err error) error {
	if _, ok := err.(interface{ Timeout() bool }); ok {
		return err
	}
	var t interface{ Timeout() bool }
	if errors.As(err, &t) && t.Timeout() {
		return timeoutError{err}
	}
	return err
}

// callersTime reports whether a lookup bounded by ctx and the time by
// ran out of ctx's time: ctx has ended, or its deadline comes first.
// rdma_cm's resolution, given the time left, can time out just before ctx
// itself ends.
func callersTime(ctx context.Context, by time.Time) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !d.After(by)
}

// lookupAs looks to up, by the time by, as the one WriteTo that does,
// once a lookup's token is free, and returns the address handle of the
// peer it found; it closes ended when it is done.
func (p *PacketConn) lookupAs(ctx context.Context, to netip.AddrPort, by time.Time, ended chan struct{}) (*ibverbs.AH, error) {
	defer func() {
		p.mu.Lock()
		delete(p.looking, to)
		p.mu.Unlock()
		close(ended)
	}()
	if err := p.waitLookup(ctx, to, by, nil, p.lookups, "other lookups"); err != nil {
		return nil, err
	}
	defer func() { <-p.lookups }()
	lctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	defer context.AfterFunc(p.life, cancel)()
	// The write deadline bounds the lookup too.
	var passed atomic.Bool
	go func(wdl <-chan struct{}) {
		select {
		case <-wdl:
			passed.Store(true)
			cancel()
		case <-lctx.Done():
		}
	}(p.wdl.done())
	peer, err := p.lookup(lctx, to)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		// The lookup's failure, if any, is Close's doing.
		if err == nil {
			return nil, errors.Join(ErrClosed, peer.ah.Close())
		}
		return nil, ErrClosed
	}
	if err != nil && passed.Load() {
		return nil, timeoutError{fmt.Errorf("rdmamsg: looking up %s: the write deadline passed: %w (%w)", to, os.ErrDeadlineExceeded, err)}
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) && !callersTime(ctx, by) {
		// The time that ran out is the lookup's own.
		return nil, fmt.Errorf("rdmamsg: looking up %s: no answer within PacketConfig.LookupTimeout (%v): %w", to, p.cfg.LookupTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("rdmamsg: looking up %s: %w", to, err)
	}
	if old, ok := p.peers[to]; ok {
		peer.refuted = old.refuted
		if old.recheck && old.claimant != peer.qpn {
			peer.refuted = old.claimant // not the address's QP
		}
	}
	peer.addr = Addr(to)
	p.remember(to, peer)
	return peer.ah, nil
}

// lookup asks the PacketConn at to for its QP (rdmacm.LookupUD) and makes
// an address handle for it.
func (p *PacketConn) lookup(ctx context.Context, to netip.AddrPort) (udPeer, error) {
	ud, err := rdmacm.LookupUD(ctx, to.String(), &rdmacm.Config{
		SrcAddr: p.local.Addr().String(), AddrTimeout: p.cfg.LookupTimeout, Timeout: p.cfg.LookupTimeout})
	if err != nil {
		return udPeer{}, err
	}
	maxData, ok := parsePacketHello(ud.PrivateData)
	if !ok || ud.QKey != rdmacm.UDPQKey {
		return udPeer{}, fmt.Errorf("%w: its answer has no PacketConn hello", errNotHello)
	}
	ah, err := p.pd.CreateAH(ud.AHAttr)
	if err != nil {
		return udPeer{}, err
	}
	return udPeer{ah: ah, qpn: ud.QPNum, maxData: maxData}, nil
}

// SetDeadline sets the read and write deadlines, as net.PacketConn's
// does. After Close it sets nothing and returns ErrClosed.
func (p *PacketConn) SetDeadline(t time.Time) error {
	if !p.rdl.set(t) || !p.wdl.set(t) {
		return ErrClosed
	}
	return nil
}

// SetReadDeadline sets when ReadFrom stops waiting for a datagram and
// fails with os.ErrDeadlineExceeded, alongside any context: the zero time
// for never. It applies to a wait under way too. Once it has passed,
// ReadFrom fails at once, even with datagrams there. After Close it sets
// nothing and returns ErrClosed.
func (p *PacketConn) SetReadDeadline(t time.Time) error {
	if !p.rdl.set(t) {
		return ErrClosed
	}
	return nil
}

// SetWriteDeadline sets when WriteTo stops waiting for a send buffer, its
// turn or a lookup (see WriteTo), and fails with os.ErrDeadlineExceeded;
// once it has passed, WriteTo fails at once. It applies to a wait or a
// lookup under way too. After Close it sets nothing and returns
// ErrClosed.
func (p *PacketConn) SetWriteDeadline(t time.Time) error {
	if !p.wdl.set(t) {
		return ErrClosed
	}
	return nil
}

// NetPacketConn returns p as a net.PacketConn, for code written against
// package net: ReadFrom gives the sender as an Addr, and WriteTo takes an
// Addr, a *net.UDPAddr or *net.TCPAddr, or any net.Addr whose String is
// "ip:port". It behaves as a UDP socket does: ReadFrom cuts a datagram
// longer than its buffer without an error, and its errors are a
// *net.OpError of Net "rdma", Op "read", "write", "close" or "set" (the
// deadlines), Source p's Addr and Addr WriteTo's destination, as the
// caller gave it (as package net's, "set" has no Source and Addr p's
// Addr; the others no Addr), whose Err is the error p's method returned.
// The OpError unwraps to it, so errors.Is(err, net.ErrClosed) after
// Close, os.ErrDeadlineExceeded and syscall's errnos (a destination
// refused: EINVAL, EADDRNOTAVAIL, ECONNREFUSED), and errors.As to
// rdmamsg's own errors, match as they do p's; a passed deadline's is a
// Timeout.
func (p *PacketConn) NetPacketConn() net.PacketConn { return netPacketConn{p} }

type netPacketConn struct{ *PacketConn }

// ReadFrom gives a known peer's address (one WriteTo reached) as the
// same Addr each time, made when it was looked up, so that reading
// allocates nothing; only a sender not known is made an Addr anew.
func (n netPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	// A datagram cut goes without a word, as a UDP socket's.
	k, from, addr, _, err := n.PacketConn.readFrom(context.Background(), b)
	if err != nil {
		err = &net.OpError{Op: "read", Net: "rdma", Source: n.LocalAddr(), Err: opCause(err)}
	}
	switch {
	case !from.IsValid():
		return k, nil, err
	case addr == nil:
		addr = Addr(from)
	}
	return k, addr, err
}

func (n netPacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if err := n.writeTo(b, addr); err != nil {
		return 0, &net.OpError{Op: "write", Net: "rdma", Source: n.LocalAddr(), Addr: addr, Err: opCause(err)}
	}
	return len(b), nil
}

func (n netPacketConn) writeTo(b []byte, addr net.Addr) error {
	var to netip.AddrPort
	switch a := addr.(type) {
	case nil:
		// As a *net.UDPConn's WriteTo refuses it.
		return fmt.Errorf("rdmamsg: WriteTo: no address (nil net.Addr): %w", syscall.EINVAL)
	case Addr:
		to = netip.AddrPort(a)
	case *net.UDPAddr:
		to = a.AddrPort()
	case *net.TCPAddr:
		to = a.AddrPort()
	default:
		var err error
		if to, err = netip.ParseAddrPort(addr.String()); err != nil {
			return fmt.Errorf("rdmamsg: WriteTo %s: not ip:port: %w", addr, syscall.EINVAL)
		}
	}
	return n.PacketConn.WriteTo(context.Background(), b, netip.AddrPortFrom(to.Addr().Unmap(), to.Port()))
}

func (n netPacketConn) LocalAddr() net.Addr { return Addr(n.PacketConn.LocalAddr()) }

func (n netPacketConn) Close() error {
	if err := n.PacketConn.Close(); err != nil {
		return &net.OpError{Op: "close", Net: "rdma", Source: n.LocalAddr(), Err: err}
	}
	return nil
}

// setError is err as a UDPConn's deadline setters would return it.
func (n netPacketConn) setError(err error) error {
	if err == nil {
		return nil
	}
	return &net.OpError{Op: "set", Net: "rdma", Addr: n.LocalAddr(), Err: err}
}

func (n netPacketConn) SetDeadline(t time.Time) error { return n.setError(n.PacketConn.SetDeadline(t)) }
func (n netPacketConn) SetReadDeadline(t time.Time) error {
	return n.setError(n.PacketConn.SetReadDeadline(t))
}
func (n netPacketConn) SetWriteDeadline(t time.Time) error {
	return n.setError(n.PacketConn.SetWriteDeadline(t))
}

// Close stops answering lookups, moves the QP to the error state so that
// the device lets go of the buffers, and frees everything. A ReadFrom or
// WriteTo waiting in another goroutine returns ErrClosed. Closing twice is
// a no-op.
func (p *PacketConn) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closing = true
		p.mu.Unlock()
		close(p.closed)
		p.rdl.stop()
		p.wdl.stop()
		p.s.interrupt()
		p.s.awake(p.closeKick)
		p.stop()
		p.loops.Wait()
		// No ReadFrom or WriteTo touches the buffers once closing is
		// set: each checks it under p.mu before it does. A lookup in
		// progress has been cancelled (p.stop); wait for it to end, and
		// free its handle.
		for range cap(p.lookups) {
			p.lookups <- struct{}{}
		}
		p.mu.Lock()
		p.s.freed = true
		p.mu.Unlock()
		p.closeErr = p.teardown()
	})
	return p.closeErr
}

// teardown frees what ListenPacket made, children first.
func (p *PacketConn) teardown() error {
	var errs []error
	closeIf := func(x interface{ Close() error }, ok bool) {
		if ok {
			errs = append(errs, x.Close())
		}
	}
	if p.qp != nil {
		errs = append(errs, p.qp.ToError())
	}
	// Under p.mu: a WriteTo begun after Close still looks at peers (and
	// finds closing).
	p.mu.Lock()
	peers, retired := p.peers, p.retired
	p.peers, p.retired = map[netip.AddrPort]udPeer{}, nil
	errs = append(errs, p.retireErr)
	p.mu.Unlock()
	for _, peer := range peers {
		errs = append(errs, peer.ah.Close())
	}
	for _, r := range retired {
		errs = append(errs, r.ah.Close())
	}
	closeIf(p.rb, p.rb != nil)
	closeIf(p.qp, p.qp != nil)
	closeIf(p.rmr, p.rmr != nil)
	closeIf(p.smr, p.smr != nil)
	closeIf(p.rbuf, p.rbuf != nil)
	closeIf(p.sbuf, p.sbuf != nil)
	closeIf(p.cq, p.cq != nil)
	closeIf(p.cch, p.cch != nil)
	closeIf(p.pd, p.pd != nil)
	closeIf(p.dev, p.dev != nil)
	closeIf(p.id, p.id != nil)
	closeIf(p.ch, p.ch != nil)
	return errors.Join(errs...)
}
