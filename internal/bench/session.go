//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
	"github.com/gorperf/gorperf/rdmacm"
)

// Local holds one side's own settings, which never travel to the peer.
type Local struct {
	Device   string // "" for the first device
	Port     int    // 0 for 1
	GIDIndex int    // -1 to choose by GIDRule
	GIDRule  ibverbs.GIDRule
	// IdleTimeout bounds every wait for the peer during a test: a peer
	// that stops answering for this long fails the test, and so does one
	// that sends nothing on the control connection, not even an Alive,
	// once the Setups are swapped. 0 means 10 s.
	IdleTimeout time.Duration
	// Admit, if set, is asked about a client's test before a server
	// (Serve) runs it: an error refuses the test, and the client is told
	// why.
	Admit func(exchange.TestSpec) error
	// ServerMTU, if set, is called on a server once a test's session is
	// open, before its header, with the client's spec and the most this
	// side offers as the path MTU over the GID the test uses (the control
	// connection's, where no flag names one: controlGID), so that it can
	// say where the client's -m is over that. Admit comes before the
	// connection's GID is known: LocalMTU there judged the rule's GID,
	// which may be another netdev's. In a test of several threads it is
	// called for each thread's spec, from its goroutine.
	ServerMTU func(spec exchange.TestSpec, m MTULimit)
	// CMPort is the rdma_cm port of -R tests (the server listens on it);
	// gorperf uses the control connection's port number, in rdma_cm's own
	// port space, as perftest does.
	CMPort int
	// Interval, if set, gets the bandwidth of each Duration-long interval
	// of a RunInfinitely test, as it ends, over its time as measured (a
	// little over Duration): in a bidirectional test, both directions'
	// messages, as the test's result adds them up. Where the peer's
	// messages complete receives here (send, write with immediate data)
	// they are counted as they arrive, on a side that only receives too;
	// the peer's writes, reads and atomics this side does not see, and
	// counts as many as its own, as perftest's intervals do (the passive
	// side of a one-way write or read reports none). The run ends when
	// either side is stopped (its context ends): the other side's run
	// ends with it, and reports a result that is not Interrupted.
	Interval func(elapsed time.Duration, b stats.Bandwidth)
	// Progress, if set, is called about once a second during a long
	// measurement with the size in hand and the messages done of total (0
	// when the run is timed).
	Progress func(size int, done, total uint64)
	// SizeDone, if set, gets each size's result as it is added to the
	// run's Result, once it is complete (after the result swap, or the
	// partial one of a run cut short), from the goroutine that runs the
	// test. In a test of several threads it gets the threads' sum, the
	// Result's, once every thread has ended the size, from the last
	// thread to end it.
	SizeDone func(SizeResult)
	// Queued, if set, is called on a client while its test waits its turn
	// on a server that runs other clients' tests first (gorperf serve),
	// with the tests ahead of it, the one running included, as the
	// server's word (one each keepalive period) is read: from the
	// goroutine that runs the test, in a test of several threads from
	// each, which read it once their own set-up is done.
	Queued func(ahead int)
	// FitMTU, if set, is called on a client once its control connection
	// is up, before its spec goes to the server, with spec and the most
	// this side offers as the path MTU over the GID the test will use
	// (LocalMTU's, with the GID that connection picks where no flag
	// names one: controlGID): it may lower spec's size (UD's default, the
	// largest) to it, and say so. The check before the dial sees the
	// rule's GID, which may be another netdev's: over a VLAN of a
	// smaller MTU, UD's default failed at once. In a test of several
	// threads it is called for each thread's spec, from its goroutine.
	FitMTU func(spec *exchange.TestSpec, m MTULimit)
	// SizeFitted, if set, is called on a client whose UD test has the
	// default size (TestSpec.SizeDefault), spec's, once the two sides
	// have swapped their endpoints, with the largest size the test
	// sends: spec's, or the path MTU they agree on where that is less,
	// which the test then sends instead. So the client can say once
	// what it sends, where FitMTU's figure may be taken down again here.
	// It is called before the header, and in a test of several threads
	// for each thread's spec, from its goroutine. The Result's spec has
	// the size sent.
	SizeFitted func(spec exchange.TestSpec, size int)
	// CMHost, for a client, is the address to dial rdma_cm at, when not the
	// control connection's host (in loopback, the server side's GID).
	CMHost string
	// QPTimeout is this side's RC QPs' local ACK timeout, 4.096 µs × 2^n
	// (perftest's -u); 0 for ibverbs.DefaultAckTimeout (14, about 67
	// ms), with -R too.
	QPTimeout uint8
	// RetryCount is how often this side's RC QPs resend unanswered
	// packets (perftest's --retry_count), as ibverbs.Retries reads it: 0
	// the default of 7, negative none. Through rdma_cm the client's
	// applies to both sides: the connection request carries it.
	RetryCount int
	// Counters names this side's port counters to report for each size
	// (perftest's -W): see counters.Open for the names, "all" for every
	// counter that moves.
	Counters []string
	// CPUUtil reports this process's CPU time during each size
	// (--cpu_util): SizeResult.CPU.
	CPUUtil bool
	// Rate caps what this side sends in a bandwidth test (perftest's
	// --rate_limit with --rate_limit_type SW); each side its own.
	Rate RateLimit
	// PKeyIndex is the index in this side's port's P_Key table of its
	// QPs' partition key (perftest's --pkey_index); not with rdma_cm,
	// which picks the P_Key itself.
	PKeyIndex uint16
	// LatencyGap is, in a latency test, the pause the client takes after
	// each answer or completion before its next request (perftest's
	// --latency_gap), which the samples leave out.
	LatencyGap time.Duration
	// CompVector is the completion vector of this side's CQs (perftest's
	// -X): the interrupt their events come on with -e.
	CompVector int
	// Group is the multicast group of a --mcg test (perftest's -M): the
	// server's QP joins it, the client's the next address. Zero for
	// 239.255.0.1, or ff05::114 with an IPv6 GID.
	Group netip.Addr
	// MapFile, if set, is a file whose pages hold this side's buffer
	// (perftest's --mmap), mapped shared from MapOffset, a multiple of the
	// page size: what the peer writes lands in the file. A regular file
	// must hold the whole buffer; not with TestSpec.HugePages.
	MapFile   string
	MapOffset int64
	// Payload, if set, fills this side's buffer before the test, repeated
	// from the start of each region, so that every message this side
	// sends or lets the peer read begins with it (perftest's
	// --payload_file_path); not with TestSpec.ValidateData, whose pattern
	// the receiver checks.
	Payload []byte
	// BindAddr, if valid, is the local address of a client's control
	// connection (perftest's --bind_source_ip, which also picks the GID
	// through GIDRule).
	BindAddr netip.Addr
	// Network is a client's for its control connection: "tcp6" for IPv6
	// alone (perftest's --ipv6-addr); "" or "tcp" for either.
	Network string
	// ThreadCPUs are, in a test of several threads (TestSpec.Threads),
	// the CPUs the threads' loops take in turn, each thread pinned to
	// one; none leaves them where the process runs.
	ThreadCPUs []int
	// PerftestInline makes a test whose inline size is perftest's
	// default (TestSpec.InlineDefault) inline what perftest's would on
	// this side's device: nothing on rxe and siw, the devices perftest
	// does not recognise (defaultInline); else the spec's size, which a
	// device that inlines less lowers to its most.
	PerftestInline bool

	group *threadGroup // in a test of several threads, this side's
	// maxSamples, where over 0, bounds the latency samples this side
	// keeps, which it thins beyond that: a server's
	// Limits.MaxIterations, which bounds a test of a duration too.
	maxSamples int
	// ctlAddr is this side's address of the control connection, where it
	// is an IP address (run sets it): with no GID flag, its GID is the
	// one chosen (chooseGID).
	ctlAddr netip.Addr
}

// grhLen is the space a UD receive needs for the global route header.
const grhLen = exchange.GRHLen

// session is one side's resources for a test: a device, a PD, one buffer
// holding two regions per QP (the source of what this side sends, and the
// target the peer writes or sends into), CQs and QPs.
type session struct {
	spec  exchange.TestSpec
	local Local
	idle  time.Duration
	// wrapi: this side's QPs post through the ibv_wr_* API (asked for,
	// and the provider has it).
	wrapi bool
	// inline is the inline data this side's QPs are made with: the
	// spec's, or where that is perftest's default (InlineDefault) and
	// more than the device can inline, the most it can (fitInline).
	inline int

	ctx      *ibverbs.Context
	port     int
	gid      ibverbs.GIDChoice
	portAttr ibverbs.PortAttr
	// mtuCap, where the GID's netdev carries less than the port's
	// active MTU, is the most it carries (capNetdevMTU), and capWhy
	// says so in the header; else 0 and "".
	mtuCap ibverbs.MTU
	capWhy string
	// capNetdev and netdevMTU, with mtuCap, are the GID's netdev and its
	// MTU.
	capNetdev string
	netdevMTU int
	// cmMTU, where rdma_cm connected the QPs (-R, not UD), is the path
	// MTU they got (cmPathMTU), which the header then shows: rdma_cm
	// sets it from its own count of the active side's route, within
	// cmCap (rdmacm.Config.PathMTU).
	cmMTU ibverbs.MTU
	// cmCap, with -R on RC, is the path MTU the two sides' offers agree
	// on, where it caps rdma_cm's (capCM); else 0.
	cmCap ibverbs.MTU
	// size is the message size the run is at, and passed the largest of
	// the sizes before it, which got through (runSide sets both): a
	// sweep (-a) that stalls where its packets grow past those that got
	// through names the MTU (grownHint).
	size, passed int

	devAttr  ibverbs.DeviceAttr
	pd       *ibverbs.PD
	buf      *ibverbs.Buffer
	mr       *ibverbs.MR   // the whole buffer's, or nil with mrs
	mrs      []*ibverbs.MR // --mr_per_qp: one per QP, over its two regions
	scq, rcq *ibverbs.CQ
	srq      *ibverbs.SRQ // --use-srq: every QP's receives, else nil
	// With an SRQ and --validate: which QPs' messages have landed in
	// each QP's receive region, which any QP's message may fill.
	srqFilled *srqLanded
	// early is the peer's message that came while the server accepted
	// rdma_cm connections (its Setup), for the Setup swap.
	early     exchange.Message
	immBad    uint64               // messages of this size whose immediate data was wrong (immCheck)
	warmed    uint64               // messages each QP posted in warm-ups (WarmUp), so far
	warming   bool                 // the sending loop runs a warm-up: its own length, no reports
	sendRate  float64              // bytes a second the sending loop's last size moved, for completionIdle
	ch        *ibverbs.CompChannel // with -e, the CQs' channel
	qps       []*ibverbs.QP
	ahs       []*ibverbs.AH
	region    int // bytes per region
	remote    []exchange.QPInfo
	peerEnv   exchange.Env // where the peer runs, as its Setup said
	localInfo []exchange.QPInfo
	conns     []*rdmacm.Conn // -R: the connections that own the QPs
	group     netip.Addr     // --mcg: the group this side's QP joined
	member    *net.UDPConn   // --mcg on RoCE: holds the interface's membership of group

	ctl syscall.RawConn // the control connection, watched for the peer's death
	// heard, where set, is when the peer last sent anything on the
	// control connection (its keepalives included), as the receive that
	// runs beside the loops reads it (peerWatch); zero before anything.
	heard func() time.Time
	// got counts the completions and messages this side's loops have
	// polled in the run that show the peer answered (fromPeer): a
	// latency loop's as they come, a bandwidth loop's as it ends. A wait
	// that gives up once some came (these, or the loop's own so far) does
	// not blame the path between the GIDs, which carried them (idleErr).
	got       uint64
	counters  *counters.Set // Local.Counters, or nil
	lastCheck time.Time
	fault     atomic.Pointer[error] // the first fatal async event of the device
	faulted   <-chan struct{}       // closed once fault is set (nil until watchEvents)
}

// watchEvents records the device's fatal async events (port down, QP or CQ
// errors) so that the loops stop with that reason instead of timing out.
func (s *session) watchEvents() error {
	evs, err := s.ctx.Events()
	if err != nil {
		return err
	}
	name, port := s.ctx.Name(), s.port
	faulted := make(chan struct{})
	s.faulted = faulted
	go func() {
		for ev := range evs {
			switch ev.Type {
			case ibverbs.EventPortErr, ibverbs.EventDeviceFatal, ibverbs.EventQPFatal, ibverbs.EventCQErr,
				ibverbs.EventQPReqErr, ibverbs.EventQPAccessErr:
				if ev.Type == ibverbs.EventPortErr && (ev.Port != port || portActive(name, port)) {
					// Another port's, or read after the port came back:
					// rdma_cm's context of the device lives as long as
					// the process, and its queue keeps the events of a
					// link that went down and up before this session.
					continue
				}
				err := fmt.Errorf("%s: async event %v: the test cannot go on (%s)", name, ev, eventHint(ev.Type))
				if s.fault.CompareAndSwap(nil, &err) {
					close(faulted)
				}
			}
		}
	}()
	return nil
}

// eventHint is what an async event that ends a test says of its cause.
func eventHint(t ibverbs.EventType) string {
	switch t {
	case ibverbs.EventPortErr:
		return "the port went down: is its netdev down? see `gorperf doctor`"
	case ibverbs.EventDeviceFatal:
		return "the device failed: it was reset or removed"
	case ibverbs.EventCQErr:
		return "a completion queue overran or failed"
	case ibverbs.EventQPReqErr:
		return "a queue pair got a request that breaks the transport's rules"
	case ibverbs.EventQPAccessErr:
		return "a queue pair got a request beyond the access its memory grants"
	}
	return "a queue pair failed in a way no completion reports"
}

// portActive reports whether the sysfs state of the device's port says
// ACTIVE now. A driver sets the state before it raises the port's event,
// so a PORT_ERR whose port is ACTIVE when it is read is stale.
func portActive(dev string, port int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/state", dev, port))
	return err == nil && strings.Contains(string(b), "ACTIVE")
}

// completionErr explains a failed completion by the device fault behind
// it, if that fault's async event arrives within a moment: a port going
// down flushes the QP's work before its PORT_ERR is read. This waits only
// on the failure path.
func (s *session) completionErr(err error) error {
	for range 20 {
		if f := s.fault.Load(); f != nil {
			return fmt.Errorf("%w (%v)", *f, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if gone := s.gidGone(); gone != "" {
		return fmt.Errorf("%w (%s)", err, gone)
	}
	return err
}

// gidGone says, where this side's RoCE GID has left its table since the
// test chose it (its address was removed), so: a removal fails the QP's
// sends (soft-RoCE: IBV_WC_LOC_QP_OP_ERR) or silences them. It queries
// the table on failure paths only.
func (s *session) gidGone() string {
	e := s.gid.Entry
	if s.ctx == nil || s.portAttr.LinkLayer != ibverbs.LinkLayerEthernet || e.GID.IsZero() {
		return ""
	}
	now, err := s.ctx.QueryGID(s.port, e.Index)
	if !errors.Is(err, syscall.ENODATA) && (err != nil || now.GID == e.GID) {
		return ""
	}
	mine := "this side's GID " + e.IP().String()
	if e.Netdev != "" {
		mine += " on " + e.Netdev
	}
	return fmt.Sprintf("%s (index %d) is gone from %s's GID table: its address was removed during the test", mine, e.Index, s.ctx.Name())
}

// peerGone reports, at most every 500 ms, whether the peer closed the
// control connection: a killed peer process does, at once, so the test
// ends without waiting out the idle timeout. It reads the socket's TCP
// state (the peer may have sent messages not read yet, so a peek would
// not see the end of the stream).
func (s *session) peerGone(now time.Time) error {
	if e := s.fault.Load(); e != nil {
		return *e
	}
	if s.ctl == nil || now.Sub(s.lastCheck) < 500*time.Millisecond {
		return nil
	}
	s.lastCheck = now
	var gone error
	s.ctl.Control(func(fd uintptr) {
		var info [8]byte // the start of struct tcp_info: tcpi_state first
		l := uint32(len(info))
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&l)), 0)
		const tcpClose, tcpCloseWait = 7, 8
		if e == 0 && (info[0] == tcpCloseWait || info[0] == tcpClose) {
			gone = errPeerClosed
		}
	})
	return gone
}

// errPeerClosed is peerGone's finding that the peer closed the control
// connection, exchange's: the JSON's code of it is "peer".
var errPeerClosed = exchange.ErrPeerClosed

// createCQ makes one of the session's CQs, of at least n entries, on its
// channel and completion vector. Only the side's one loop uses them, one
// thread at a time, so they are made single-threaded where the device can:
// mlx5 then polls them without a lock, a saving on every poll that
// perftest, which does not ask, does not have.
func (s *session) createCQ(n int) (*ibverbs.CQ, error) {
	return s.ctx.CreateCQEx(ibverbs.CQInit{Entries: n, Channel: s.ch, Vector: s.local.CompVector, SingleThreaded: true})
}

func (s *session) qpCap() ibverbs.QPCap {
	c := ibverbs.QPCap{MaxSendWR: int(max(s.spec.TXDepth, 1)), MaxRecvWR: int(max(s.spec.RXDepth, 1)),
		MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: s.inline}
	if s.srq != nil { // the receives are the SRQ's
		c.MaxRecvWR, c.MaxRecvSGE = 0, 0
	}
	return c
}

// active reports whether this side posts the operations of a bandwidth
// test: the client, or with Reversed the server, or both sides of a
// bidirectional one.
func (s *session) active(client bool) bool {
	return client != s.spec.Reversed || s.spec.Bidirectional
}

// rateLimit is Local.Rate with its burst: by default the TX depth, as
// perftest's.
func (s *session) rateLimit() RateLimit {
	r := s.local.Rate
	if r.Rate > 0 && r.Burst == 0 {
		r.Burst = int(max(s.spec.TXDepth, 1))
	}
	return r
}

// newRecvBatch builds a RecvBatch of wrs for QP i's receives: on the
// QP, or with an SRQ on the SRQ.
func (s *session) newRecvBatch(i int, wrs []ibverbs.RecvWR) (*ibverbs.RecvBatch, error) {
	if s.srq != nil {
		return s.srq.NewRecvBatch(wrs)
	}
	return s.qps[i].NewRecvBatch(wrs)
}

// src and dst are the offsets in the buffer of QP i's two regions.
func (s *session) src(i int) int { return 2 * i * s.region }
func (s *session) dst(i int) int { return (2*i + 1) * s.region }

// sge is the SGE of n bytes at off in the buffer, within QP i's regions,
// in the MR that covers them: the buffer's, or with --mr_per_qp QP i's.
func (s *session) sge(i, off, n int) ibverbs.SGE {
	if s.mrs == nil {
		return s.mr.SGE(off, n)
	}
	return s.mrs[i].SGE(off-s.src(i), n)
}

// remoteKey is the rkey and address the peer writes QP i's target region
// with.
func (s *session) remoteKey(i int) (rkey uint32, addr uint64) {
	if s.mrs == nil {
		return s.mr.RKey(), s.mr.Addr() + uint64(s.dst(i))
	}
	return s.mrs[i].RKey(), s.mrs[i].Addr() + uint64(s.dst(i)-s.src(i))
}

// idleTimeout is l's IdleTimeout, 10 s if unset.
func idleTimeout(l Local) time.Duration {
	if l.IdleTimeout > 0 {
		return l.IdleTimeout
	}
	return 10 * time.Second
}

func openSession(spec exchange.TestSpec, l Local) (_ *session, err error) {
	s := &session{spec: spec, local: l, idle: idleTimeout(l), port: l.Port, inline: int(spec.Inline)}
	if s.port == 0 {
		s.port = 1
	}
	if spec.RdmaCM && l.PKeyIndex != 0 {
		return nil, errors.New("--pkey_index: rdma_cm picks the P_Key of its connections itself; the test asks for -R")
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := s.openPort(spec.RdmaCM); err != nil {
		return nil, err
	}
	if err := s.watchEvents(); err != nil {
		return nil, err
	}
	da := s.devAttr // openPort's
	if l.PerftestInline {
		s.inline = defaultInline(spec, da.VendorID)
	}
	if err := s.sizeFits(spec, da); err != nil {
		return nil, err
	}
	nqp := int(spec.NumQPs)
	// The buffer's shape is the spec's, which a server's --max-memory
	// bounds (TestSpec.Memory counts it).
	s.region = int(spec.RegionLen())
	if s.buf, err = s.local.buffer(int(spec.BufferLen()), spec.HugePages); err != nil {
		return nil, err
	}
	if spec.ValidateData && spec.Test.IsAtomic() {
		// The atomics' targets start from 0, which validate counts
		// from, even in a file's pages (--mmap); before the peer
		// learns of them.
		b := s.buf.Bytes()
		for i := range nqp {
			clear(b[s.dst(i) : s.dst(i)+8])
		}
	}
	if len(s.local.Payload) > 0 {
		if spec.ValidateData {
			return nil, errors.New("--payload_file_path: the test asks for --validate, which sends gorperf's own pattern to check it")
		}
		s.fillPayload()
	}
	access := ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead | ibverbs.AccessRemoteAtomic
	if spec.RelaxedOrdering() {
		// As perftest does by default: the NIC may then reorder its
		// PCIe writes to the buffer, which some hosts need for full
		// bandwidth. libibverbs drops the flag where the kernel or the
		// device does not have it.
		access |= ibverbs.AccessRelaxedOrdering
	}
	if err = s.pdAndMR(access); err != nil {
		return nil, err
	}
	tx, rx := int(max(spec.TXDepth, 1)), int(max(spec.RXDepth, 1))
	if spec.Events {
		if s.ch, err = s.ctx.CreateCompChannel(); err != nil {
			return nil, err
		}
	}
	if s.scq, err = s.createCQ(tx * nqp); err != nil {
		return nil, err
	}
	if spec.Receives() {
		if s.rcq, err = s.createCQ(rx * nqp); err != nil {
			return nil, err
		}
	} else {
		// No receive completes in this test (no send, no write with
		// immediate): as perftest's, the QPs' receive CQ is the send CQ,
		// where one of RX depth × QPs entries could be over the device's
		// largest (write_bw -q 64 with the default -r 512 on rxe).
		s.rcq = s.scq
	}
	if spec.SRQ {
		// As perftest's --use-srq: the RX depth is the SRQ's size, for
		// all the QPs together.
		if s.srq, err = s.pd.CreateSRQ(ibverbs.SRQInit{MaxWR: rx, MaxSGE: 1}); err != nil {
			return nil, fmt.Errorf("a shared receive queue of %d receives (-r): %w", rx, err)
		}
	}
	if s.ch != nil {
		// Armed once; each event's Block re-arms its CQ (sleep).
		for _, cq := range []*ibverbs.CQ{s.scq, s.rcq} {
			if err := cq.ReqNotify(false); err != nil {
				return nil, err
			}
			if s.rcq == s.scq {
				break
			}
		}
	}
	// Sends go through the ibv_wr_* API where the device has it, as
	// perftest's do on the devices it knows to have it, unless
	// --use_old_post_send; a provider that cannot make such a QP gets
	// ibv_post_send.
	s.wrapi = !spec.OldPostSend
	if spec.RdmaCM {
		if s.wrapi {
			// rdma_cm makes the QPs later: find out now whether it can.
			probe, err := s.pd.CreateQP(ibverbs.QPInit{Type: spec.ConnType, SendCQ: s.scq, RecvCQ: s.rcq,
				Cap: ibverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}, WRAPI: true})
			if s.wrapi = err == nil; s.wrapi {
				if err := probe.Close(); err != nil {
					return nil, err
				}
			}
		}
		if s.inline > 0 {
			// rdma_cm makes the QPs later: find out now whether they
			// can inline so much (fitInline).
			qp, err := s.newQP(s.inline)
			if err == nil {
				err = qp.Close()
			} else {
				err = s.fitInline(err)
			}
			if err != nil {
				return nil, err
			}
		}
		return s, nil // the QPs come with the rdma_cm connections
	}
	for i := 0; i < nqp; i++ {
		qp, err := s.newQP(s.inline)
		if err != nil && i == 0 && s.inline > 0 {
			if err = s.fitInline(err); err == nil {
				qp, err = s.newQP(s.inline)
			}
		}
		if err != nil {
			return nil, err
		}
		if err := s.addQP(qp); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newQP makes one of the session's QPs, with inline bytes of inline data:
// through the ibv_wr_* API where s.wrapi, and where the provider refuses
// that QP, for good through ibv_post_send.
func (s *session) newQP(inline int) (*ibverbs.QP, error) {
	c := s.qpCap()
	c.MaxInline = inline
	init := ibverbs.QPInit{Type: s.spec.ConnType, SendCQ: s.scq, RecvCQ: s.rcq, SRQ: s.srq, Cap: c, WRAPI: s.wrapi}
	qp, err := s.pd.CreateQP(init)
	if s.wrapi && err != nil {
		// Not only ErrUnsupported: a provider may refuse one of the
		// send operations asked for (atomics) with EINVAL.
		init.WRAPI = false
		if qp, err = s.pd.CreateQP(init); err == nil {
			s.wrapi = false
		}
	}
	return qp, err
}

// Vendor IDs of the software RDMA devices, as their kernel drivers
// report them: rxe's (soft-RoCE) and siw's (soft-iWARP, "bmt").
const (
	rxeVendorID = 0xffffff
	siwVendorID = 0x626d74
)

// defaultInline is the inline size of spec's QPs on a device of vendor:
// where the size is perftest's default (InlineDefault), none on rxe and
// siw, as perftest's: its ib_dev_name knows neither, and its
// ctx_set_max_inline inlines nothing on a device it does not know; else
// the spec's.
func defaultInline(spec exchange.TestSpec, vendor uint32) int {
	if spec.InlineDefault && (vendor == rxeVendorID || vendor == siwVendorID) {
		return 0
	}
	return int(spec.Inline)
}

// fitInline, where the provider refused a QP with s.inline bytes of
// inline data with err, finds whether the inline size was the cause: a
// provider refuses one over its own largest with EINVAL, as irdma's,
// bnxt_re's, EFA's and siw's do perftest's defaults. Where it was, a
// default size (InlineDefault) comes down to the most the device can
// inline, which the header then says; one the user asked for (-I) fails,
// saying that most. Either way it fails with err where it was not.
func (s *session) fitInline(err error) error {
	if !errors.Is(err, syscall.EINVAL) {
		return err
	}
	most, ok := mostInline(s.inline, func(n int) bool {
		qp, err := s.newQP(n)
		if err != nil {
			return false
		}
		qp.Close()
		return true
	})
	switch {
	case !ok:
		return err // refused with no inline data at all
	case !s.spec.InlineDefault:
		return fmt.Errorf("%s cannot inline %d bytes of data (-I): at most %d here: %w", s.ctx.Name(), s.inline, most, err)
	}
	s.inline = most
	return nil
}

// mostInline finds the largest inline size under refused that the device
// accepts, as accepts tries it: halving, then by bisection between the
// last size refused and the first accepted, some 2 log2(refused) tries.
// It reports false where none is accepted, not even 0.
func mostInline(refused int, accepts func(n int) bool) (int, bool) {
	ok := -1 // the largest size accepted
	for n := refused / 2; ; n /= 2 {
		if accepts(n) {
			ok = n
			break
		}
		refused = n
		if n == 0 {
			return 0, false
		}
	}
	for refused-ok > 1 {
		m := ok + (refused-ok)/2
		if accepts(m) {
			ok = m
		} else {
			refused = m
		}
	}
	return ok, true
}

// addQP adds a QP and the QPInfo that describes it to the peer.
func (s *session) addQP(qp *ibverbs.QP) error {
	i := len(s.qps)
	s.qps = append(s.qps, qp)
	ep, err := qp.Endpoint(s.port, s.gid.Entry.Index)
	if err != nil {
		return err
	}
	ep.MTU = min(ep.MTU, s.ownMTU())
	if s.spec.OutReads != 0 && ep.RdAtomic != 0 {
		ep.RdAtomic = min(ep.RdAtomic, s.spec.OutReads)
	}
	rkey, addr := s.remoteKey(i)
	s.localInfo = append(s.localInfo, exchange.QPInfo{Endpoint: ep, RKey: rkey, Addr: addr, Len: uint64(s.region)})
	return nil
}

// Check opens the device that l names and checks what any test needs of
// it: its port is active and has a GID that fits l. Serve and Client call
// it before they listen or dial, so that a wrong -d, -i or -x, or a host
// with no device, fails at once with the reason, instead of when (or, for
// a server, only if) a peer comes. A GID whose netdev carries no RDMA MTU
// (a *NetdevMTUError) fails it only where a flag names the GID
// (unsetGID).
func Check(l Local) error {
	_, err := LocalMTU(l)
	return unsetGID(l, err)
}

// unsetGID is err, openPort's before the control connection is up, but
// nil for a *NetdevMTUError where no flag names the GID (Local.gidNamed):
// the control connection may then pick another GID than the rule's
// (controlGID), whose netdev openSession judges. A server over a VLAN of
// a small MTU, whose GID came first, refused to start, though its clients
// reach it at another address.
func unsetGID(l Local, err error) error {
	var ne *NetdevMTUError
	if errors.As(err, &ne) && !l.gidNamed() {
		return nil
	}
	return err
}

// gidNamed reports whether l's flags name the GID: an index (-x), or an
// address, subnet or netdev in the rule, where the control connection
// picks none (controlGID).
func (l Local) gidNamed() bool {
	r := l.GIDRule
	return l.GIDIndex >= 0 || r.Addr.IsValid() || r.Prefix.IsValid() || r.Netdev != ""
}

// checkSpec is Check, and that this side's device can take spec's
// messages (sizeFits), and over UD that they fit within the most this
// side offers as the path MTU (checkMTU), which the path MTU cannot
// pass: a client checks so before it dials, so that a size its device
// refuses, or a UD size that sizes would refuse once connected, fails at
// once, not after the connection is made (or, where nothing listens, as
// the connection's error; where a server is busy, after its queue). As
// Check's, a GID whose netdev carries no RDMA MTU fails it only where a
// flag names the GID (unsetGID).
func checkSpec(spec exchange.TestSpec, l Local) error {
	s := &session{local: l, port: max(l.Port, 1)}
	defer s.close()
	if err := unsetGID(l, s.openPort(false)); err != nil {
		return err
	}
	if err := s.sizeFits(spec, s.devAttr); err != nil {
		return err
	}
	if m := s.checkMTU(spec); m != 0 { // 0: not known here
		_, err := udSizes(spec, m)
		return err
	}
	return nil
}

// checkMTU is, before the control connection, the most that this side
// can offer as the path MTU (ownMTU): the port's active MTU within -m,
// and within what the GID's netdev carries only where a flag names the
// GID (Local.gidNamed) and rdma_cm does not choose it: the control
// connection may otherwise pick another GID than the rule's
// (controlGID), over another netdev.
func (s *session) checkMTU(spec exchange.TestSpec) ibverbs.MTU {
	m := s.portAttr.ActiveMTU
	if s.mtuCap != 0 && s.local.gidNamed() && !spec.RdmaCM {
		m = min(m, s.mtuCap)
	}
	if spec.MTU != 0 {
		m = min(m, spec.MTU)
	}
	return m
}

// sizeFits checks spec's largest message against the device's largest
// memory region, da's, and its port's largest message.
func (s *session) sizeFits(spec exchange.TestSpec, da ibverbs.DeviceAttr) error {
	if uint64(spec.MaxSize()) > da.MaxMRSize || spec.MaxSize() > s.portAttr.MaxMsgSize {
		return fmt.Errorf("message size %d is over %s's maximum of %d bytes", spec.MaxSize(), s.ctx.Name(), min(da.MaxMRSize, uint64(s.portAttr.MaxMsgSize)))
	}
	return nil
}

// ActiveMTU returns the active MTU of the port l names, after Check's
// checks, within what the netdev of the GID that l picks carries
// (capNetdevMTU): the most a UD message can carry. It is LocalMTU's MTU.
func ActiveMTU(l Local) (ibverbs.MTU, error) {
	m, err := LocalMTU(l)
	return m.MTU, err
}

// MTULimit is the most that one side offers its peer as the path MTU,
// before -m, and why: its port's active MTU, or less where the netdev of
// its GID carries less (capNetdevMTU).
type MTULimit struct {
	MTU    ibverbs.MTU // Active, or what Netdev carries where that is less
	Active ibverbs.MTU // the port's active MTU
	// Netdev and NetdevMTU, where MTU is under Active, are the GID's
	// netdev (a VLAN's) and its MTU.
	Netdev    string
	NetdevMTU int
}

// LocalMTU is ActiveMTU, and why (MTULimit). Where l names no GID, the
// GID is the rule's; a control connection may pick another (controlGID),
// whose MTU a client's Local.FitMTU and a server's Local.ServerMTU get.
func LocalMTU(l Local) (MTULimit, error) {
	s := &session{local: l, port: max(l.Port, 1)}
	defer s.close()
	if err := s.openPort(false); err != nil {
		return MTULimit{}, err
	}
	return s.mtuLimit(), nil
}

// mtuLimit is the session's MTULimit.
func (s *session) mtuLimit() MTULimit {
	m := MTULimit{MTU: s.portAttr.ActiveMTU, Active: s.portAttr.ActiveMTU}
	if s.mtuCap != 0 && s.mtuCap < m.MTU {
		m.MTU, m.Netdev, m.NetdevMTU = s.mtuCap, s.capNetdev, s.netdevMTU
	}
	return m
}

// queryDevice is how a session queries its device's attributes: tests
// count the queries or make them fail through it.
var queryDevice = (*ibverbs.Context).QueryDevice

// openPort opens the device, through rdma_cm where cm is set, keeps its
// attributes (devAttr: set-up queries the device once, here, for
// capNetdevMTU and openPort's callers) and chooses the port's GID.
func (s *session) openPort(cm bool) (err error) {
	if cm {
		// rdma_cm needs the PD and CQs on its own context of the device.
		s.ctx, err = cmDevice(s.local.Device)
	} else {
		s.ctx, err = ibverbs.Open(s.local.Device)
	}
	if err != nil {
		return err
	}
	if s.devAttr, err = queryDevice(s.ctx); err != nil {
		return fmt.Errorf("%s: %w", s.ctx.Name(), err)
	}
	if s.portAttr, err = s.ctx.QueryPort(s.port); err != nil {
		return err
	}
	if s.portAttr.State != ibverbs.PortActive {
		return fmt.Errorf("%s port %d is %s, not ACTIVE (is its netdev up? see `gorperf doctor`)", s.ctx.Name(), s.port, s.portAttr.State)
	}
	if n := s.portAttr.PKeyTableLen; int(s.local.PKeyIndex) >= n {
		return fmt.Errorf("P_Key index %d is beyond %s port %d's table of %d entries", s.local.PKeyIndex, s.ctx.Name(), s.port, n)
	}
	if n := s.ctx.NumCompVectors(); s.local.CompVector >= n {
		return fmt.Errorf("completion vector %d is beyond %s's %d (0 to %d)", s.local.CompVector, s.ctx.Name(), n, n-1)
	}
	if len(s.local.Counters) > 0 {
		if s.counters, err = counters.Open("/sys", s.ctx.Name(), s.port, s.local.Counters); err != nil {
			return err
		}
	}
	if err := s.chooseGID(); err != nil {
		return err
	}
	return s.capNetdevMTU()
}

// capNetdevMTU caps the path MTU, where the netdev of this side's RoCE
// GID carries less than the port's active MTU, to the largest RDMA MTU
// its MTU carries with the driver's headers (CarriedMTU), as the kernel's
// rdma_cm caps it for RoCE (cma_resolve_iboe_route: iboe_get_mtu of the
// GID's netdev's MTU). The port's active MTU follows the MTU of its own
// netdev; a VLAN or a macvlan over it may have a smaller one, which drops
// the larger packets: a test over its GID timed out. A netdev that carries
// not even 256 bytes fails the test at once (a *NetdevMTUError), where
// every packet would be dropped. A GID with no netdev, or one whose MTU
// cannot be read, is not capped.
func (s *session) capNetdevMTU() error {
	nd := s.gid.Entry.Netdev
	if s.portAttr.LinkLayer != ibverbs.LinkLayerEthernet || nd == "" {
		return nil
	}
	mtu, err := NetdevMTU("", nd)
	if err != nil {
		return nil
	}
	overhead := MTUOverhead(s.devAttr.VendorID == rxeVendorID)
	count := ""
	if s.spec.RdmaCM && s.spec.ConnType != ibverbs.QPTypeUD {
		// rdma_cm sets the connected QPs' path MTU itself, with
		// iboe_get_mtu's count of RoCE's headers on any device, rxe's
		// too: a netdev MTU of 4180 gives rxe's port 4096, rdma_cm's
		// QPs 2048.
		overhead, count = RoCEOverhead, ", as rdma_cm counts them"
	}
	active := s.portAttr.ActiveMTU
	fits, err := capMTU(nd, mtu, overhead, active.Bytes(), count)
	if err != nil || fits == 0 {
		return err
	}
	m, err := ibverbs.MTUFromBytes(fits)
	if err != nil {
		return err
	}
	s.mtuCap, s.capNetdev, s.netdevMTU = m, nd, mtu
	s.capWhy = fmt.Sprintf("path MTU at most %d: %s's MTU %d carries RDMA MTU %d (+%d bytes of headers%s), not the port's active %d",
		fits, nd, mtu, fits, overhead, count, active.Bytes())
	return nil
}

// pdAndMR allocates the PD and registers the buffer: whole, or with
// --mr_per_qp as one MR per QP over its two regions (perftest's
// --mr_per_qp), each with its own keys.
func (s *session) pdAndMR(access ibverbs.Access) error {
	var err error
	if s.pd, err = s.ctx.AllocPD(); err != nil {
		return err
	}
	if !s.spec.MRPerQP {
		s.mr, err = s.pd.RegMR(s.buf, access)
		return err
	}
	s.mrs = make([]*ibverbs.MR, s.spec.NumQPs)
	for i := range s.mrs {
		if s.mrs[i], err = s.pd.RegMRRange(s.buf, s.src(i), 2*s.region, access); err != nil {
			return fmt.Errorf("memory region %d of %d (--mr_per_qp): %w", i+1, len(s.mrs), err)
		}
	}
	return nil
}

func (s *session) chooseGID() error {
	if s.portAttr.LinkLayer != ibverbs.LinkLayerEthernet {
		s.gid = ibverbs.GIDChoice{Entry: ibverbs.GIDEntry{Index: max(s.local.GIDIndex, 0)}, Reason: "InfiniBand port: LID routing"}
		return nil
	}
	var err error
	if s.local.GIDIndex >= 0 {
		e, qerr := s.ctx.QueryGID(s.port, s.local.GIDIndex)
		s.gid, err = checkGivenGID(s.ctx.Name(), s.port, s.local.GIDIndex, e, qerr)
		return err
	}
	if c, ok := s.controlGID(); ok {
		s.gid = c
		return nil
	}
	s.gid, err = SelectGID(s.ctx, s.port, s.local.GIDRule)
	return err
}

// SelectGID is ctx's SelectGID for a test's side, whose error, where an
// entry failed only for being link-local, names the -x that takes it.
func SelectGID(ctx *ibverbs.Context, port int, rule ibverbs.GIDRule) (ibverbs.GIDChoice, error) {
	c, err := ctx.SelectGID(port, rule)
	return c, linkLocalFlag(err)
}

// linkLocalFlag is err, and where it is a *ibverbs.NoGIDError with
// link-local entries that the rule refused for that alone, the -x of the
// first.
func linkLocalFlag(err error) error {
	var nog *ibverbs.NoGIDError
	if errors.As(err, &nog) && len(nog.LinkLocal) > 0 {
		return fmt.Errorf("%w: -x %d", err, nog.LinkLocal[0])
	}
	return err
}

// controlGID is, where no flag names a GID (no address, subnet or netdev
// in the rule; its family, if any, that of the address), the port's RoCE
// v2 GID of the control connection's local address: the peer reached
// this side there, so the two sides' GIDs are the two ends of a path that
// works (the same VLAN and subnet), where the rule's first routable entry
// may be another VLAN's or subnet's than the one the peer is on. A control
// connection over loopback or a management NIC has none on the port, and
// the rule decides.
func (s *session) controlGID() (ibverbs.GIDChoice, bool) {
	r, ip := s.local.GIDRule, s.local.ctlAddr
	if !ip.IsValid() || s.local.gidNamed() || r.Family == 4 && !ip.Is4() || r.Family == 6 && !ip.Is6() {
		return ibverbs.GIDChoice{}, false
	}
	c, err := s.ctx.SelectGID(s.port, ibverbs.GIDRule{Family: r.Family, Addr: ip, AllowLinkLocal: r.AllowLinkLocal})
	if err != nil {
		return ibverbs.GIDChoice{}, false
	}
	c.Reason = "the control connection's local address"
	c.Tied = nil
	return c, true
}

// checkGivenGID judges the RoCE port's entry that -x names, index, as
// QueryGID returned it, e or err (an index past the table, an empty slot
// that the driver answers with ENODATA): it must be a RoCE v2 entry, with
// a GID.
func checkGivenGID(dev string, port, index int, e ibverbs.GIDEntry, err error) (ibverbs.GIDChoice, error) {
	switch {
	case err != nil:
		return ibverbs.GIDChoice{}, err
	case e.GID.IsZero():
		return ibverbs.GIDChoice{}, fmt.Errorf("GID index %d of %s port %d is empty; `gorperf devices` lists the table", index, dev, port)
	case e.Type != ibverbs.GIDTypeRoCEv2:
		return ibverbs.GIDChoice{}, fmt.Errorf("GID index %d of %s port %d is %s (%s), not RoCE v2: pick a RoCE v2 index from `gorperf devices`, or leave -x out to choose one automatically",
			index, dev, port, e.Type, e.GID)
	}
	return ibverbs.GIDChoice{Entry: e, Reason: "given with -x"}, nil
}

// connect brings every QP to RTS against the peer's Setup.
func (s *session) connect(remote exchange.Setup) error {
	if err := remote.Check(s.spec); err != nil {
		return err
	}
	s.remote, s.peerEnv = remote.QPs, remote.Env
	if s.spec.RdmaCM && s.spec.ConnType != ibverbs.QPTypeUD {
		s.cmPathMTU()
		return nil // rdma_cm connected the QPs
	}
	if s.portAttr.LinkLayer == ibverbs.LinkLayerEthernet && !s.spec.RdmaCM && len(remote.QPs) > 0 {
		if err := gidMismatch(s.gid.Entry, remote.QPs[0].Endpoint); err != nil {
			return err
		}
	}
	// The path MTU is the least of this port's active MTU, -m and what
	// the peer offered (its own port's, within its -m), as the header
	// prints it: perftest's set_mtu lowers an -m over the active MTU to
	// it, where passing it on would make a path MTU the port cannot carry.
	cp := ibverbs.ConnParams{Port: s.port, GIDIndex: s.gid.Entry.Index, MTU: s.mtu(), PKeyIndex: s.local.PKeyIndex,
		TrafficClass: s.spec.TrafficClass, SL: s.spec.SL, Timeout: s.local.QPTimeout, RetryCnt: s.local.RetryCount}
	for i, qp := range s.qps {
		r := remote.QPs[i].Endpoint
		cp.FlowLabel = s.spec.FlowLabel(i)
		// Serve as many reads as this side offered; issue as many as the
		// peer offered (ConnParams' default), both within -o.
		cp.MaxDestRdAtomic = s.localInfo[i].Endpoint.RdAtomic
		if s.spec.OutReads != 0 {
			cp.MaxRdAtomic = min(s.spec.OutReads, max(r.RdAtomic, 1))
		}
		if !s.spec.RdmaCM {
			if err := qp.Connect(r, cp); err != nil {
				return err
			}
		}
		if s.spec.ConnType == ibverbs.QPTypeUD {
			ah, err := s.pd.CreateAH(ibverbs.AHAttr{DLID: r.LID, SL: s.spec.SL, Port: uint8(s.port), IsGlobal: !r.GID.IsZero(),
				GRH: ibverbs.GlobalRoute{DGID: r.GID, SGIDIndex: uint8(s.gid.Entry.Index), HopLimit: 64,
					TrafficClass: s.spec.TrafficClass, FlowLabel: cp.FlowLabel}})
			if err != nil {
				return err
			}
			s.ahs = append(s.ahs, ah)
		}
	}
	return nil
}

// cmPathMTU notes the path MTU that rdma_cm gave the QPs it connected
// (the least, should they differ), which may be neither side's offer:
// the passive side's QPs take the active side's path MTU from its
// request, within the least of the two sides' offers where that caps it
// (capCM), and a route's MTU may be less than either offer.
// A QP that cannot be queried leaves the header with the two sides'
// offers, as before.
func (s *session) cmPathMTU() {
	for _, qp := range s.qps {
		a, err := qp.Query()
		if err != nil || a.PathMTU == 0 {
			s.cmMTU = 0
			return
		}
		if s.cmMTU == 0 || a.PathMTU < s.cmMTU {
			s.cmMTU = a.PathMTU
		}
	}
}

func (s *session) close() {
	for _, ah := range s.ahs {
		ah.Close()
	}
	if s.member != nil {
		s.member.Close()
	}
	if s.conns != nil {
		for _, c := range s.conns {
			c.Close() // disconnects and destroys its QP
		}
	} else {
		for _, qp := range s.qps {
			qp.Close()
		}
	}
	if s.srq != nil {
		s.srq.Close()
	}
	if s.scq != nil {
		s.scq.Close()
	}
	if s.rcq != nil && s.rcq != s.scq {
		s.rcq.Close()
	}
	if s.ch != nil {
		s.ch.Close()
	}
	if s.mr != nil {
		s.mr.Close()
	}
	closeAll(s.mrs)
	if s.buf != nil {
		s.buf.Close()
	}
	if s.pd != nil {
		s.pd.Close()
	}
	if s.ctx != nil {
		s.ctx.Close()
	}
}

// buffer allocates this side's buffer of size bytes: anonymous memory, on
// huge pages if asked, or MapFile's pages.
func (l Local) buffer(size int, huge bool) (*ibverbs.Buffer, error) {
	if l.MapFile == "" {
		return ibverbs.NewBuffer(size, ibverbs.BufferOptions{HugePages: huge})
	}
	if huge {
		return nil, fmt.Errorf("--mmap %s: the test asks for huge pages (--use_hugepages), which a file's pages are not", l.MapFile)
	}
	f, err := os.OpenFile(l.MapFile, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("--mmap: %w", err)
	}
	defer f.Close() // the mapping keeps the file
	b, err := ibverbs.MapFile(f, l.MapOffset, size)
	if err != nil {
		return nil, fmt.Errorf("--mmap: %w", err)
	}
	return b, nil
}

// fillPayload writes Local.Payload over the buffer, repeated from the start
// of each region.
func (s *session) fillPayload() {
	b := s.buf.Bytes()
	for off := 0; off < len(b); off += s.region {
		r := b[off : off+s.region]
		for n := 0; n < len(r); {
			n += copy(r[n:], s.local.Payload)
		}
	}
}

// env says where this side runs, as its Setup tells the peer.
func (s *session) env() exchange.Env {
	h := hostEnv()
	return exchange.Env{Host: h.host, Kernel: h.kernel, Device: s.ctx.Name(), FWVer: s.devAttr.FWVer,
		VendorID: s.devAttr.VendorID, VendorPartID: s.devAttr.VendorPartID, LinkKbps: uint32(s.portAttr.Gbps() * 1e6),
		ActiveMTU: uint32(s.portAttr.ActiveMTU.Bytes()), Netdev: s.gid.Entry.Netdev}
}

// reportEnv is e as the report has it.
func reportEnv(e exchange.Env) report.Env {
	return report.Env{Host: e.Host, Kernel: e.Kernel, FWVer: e.FWVer, VendorID: e.VendorID, VendorPartID: e.VendorPartID,
		SpeedGbps: float64(e.LinkKbps) / 1e6, ActiveMTU: int(e.ActiveMTU), Netdev: e.Netdev}
}

// hostEnv is the host's name and kernel release, read once.
var hostEnv = sync.OnceValue(func() (h struct{ host, kernel string }) {
	h.host, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.kernel = unix.ByteSliceToString(u.Release[:])
	}
	return h
})

// header describes the test in perftest's terms, as this side (the
// client's or the server's) prints it.
func (s *session) header(client bool) report.Header {
	cm := s.spec.RdmaCM
	h := report.Header{
		Test: specTitle(s.spec), Device: s.ctx.Name(), Port: s.port, NumQPs: len(s.qps), Transport: "IB",
		Connection: s.spec.ConnType.String(), Mtu: s.mtu().Bytes(), LinkType: linkType(s.portAttr.LinkLayer),
		GIDIndex: s.gid.Entry.Index, GIDReason: gidReason(s.gid, s.mtuWhy()), MaxInline: s.inlineSize(0),
		RdmaCM: cm, DataEx: "Ethernet", ShowRKey: s.spec.Test.UsesRemoteMemory(), WRAPI: s.qps[0].WRAPI(),
		PCIeRelaxOrder: s.spec.RelaxedOrdering(), Events: s.spec.Events, UsingSRQ: s.srq != nil,
		FlowLabels: s.spec.FlowLabels, Env: reportEnv(s.env()), PeerDevice: s.peerEnv.Device, PeerEnv: reportEnv(s.peerEnv),
	}
	if s.group.IsValid() {
		h.Group = s.group.String()
	}
	if cm {
		h.DataEx = "rdma_cm"
	}
	// perftest's rules: the TX depth where requests are posted, the RX
	// depth where a send test receives, and both on both sides of a
	// bidirectional test.
	if s.active(client) {
		h.TXDepth = int(s.spec.TXDepth)
	}
	if s.spec.Receives() && (!s.active(client) || s.spec.Bidirectional) {
		h.RXDepth = int(s.spec.RXDepth)
	}
	if !s.spec.Test.IsLatency() {
		h.PostList = int(s.spec.PostList)
		h.CQModeration = int(max(s.spec.CQModeration, 1))
		if r := s.rateLimit(); r.Rate > 0 && s.active(client) {
			h.RateLimit = r.String()
			if g := s.local.group; g != nil && g.n > 1 {
				// Each thread has its share: say the test's.
				h.RateLimit = r.threads(g.n)
			}
		}
	}
	if s.spec.Test == exchange.ReadBW || s.spec.Test == exchange.ReadLat || s.spec.Test.IsAtomic() {
		// The initiator depth the QP really got, after every cap.
		h.OutstandingReads = 1
		if a, err := s.qps[0].Query(); err == nil && a.MaxRdAtomic > 0 {
			h.OutstandingReads = int(a.MaxRdAtomic)
		}
	}
	for i := range s.qps {
		h.Local = append(h.Local, reportEndpoint(s.localInfo[i]))
		if i < len(s.remote) {
			h.Remote = append(h.Remote, reportEndpoint(s.remote[i]))
		}
	}
	return h
}

// sizes returns the message sizes to run: the spec's, but over UD only
// those within the path MTU, which both sides compute alike once they
// have swapped setups. A larger datagram would be dropped, and the
// receiver wait out its idle timeout: -a stops at the MTU, as perftest's
// does, and a single size over it fails at once, unless it is UD's
// default (SizeDefault), the most the client offers, which is the path
// MTU instead: the server's side may offer less.
func (s *session) sizes() ([]uint32, error) {
	return udSizes(s.spec, s.mtu())
}

// udSizes is sizes with mtu as the path MTU. Its error is a *checkError
// (CodeUDSize): both sides find it alike.
func udSizes(spec exchange.TestSpec, mtu ibverbs.MTU) ([]uint32, error) {
	all := spec.Sizes()
	if spec.ConnType != ibverbs.QPTypeUD {
		return all, nil
	}
	m := uint32(mtu.Bytes())
	if spec.SizeDefault && len(all) == 1 && all[0] > m && !spec.Test.IsAtomic() {
		return []uint32{m}, nil
	}
	n := len(all)
	for n > 0 && all[n-1] > m {
		n--
	}
	if n == 0 {
		return nil, &checkError{code: exchange.CodeUDSize,
			msg: fmt.Sprintf("a UD message is at most the path MTU, %d bytes here, not %d: choose a smaller -s", m, all[len(all)-1])}
	}
	return all[:n], nil
}

// ownMTU is the most this side offers the peer as the path MTU: its
// port's active MTU, within what its GID's netdev carries (mtuCap) and
// -m.
func (s *session) ownMTU() ibverbs.MTU {
	m := s.portAttr.ActiveMTU
	if s.mtuCap != 0 {
		m = min(m, s.mtuCap)
	}
	if s.spec.MTU != 0 {
		m = min(m, s.spec.MTU)
	}
	return m
}

// mtu is the path MTU: the least of this side's (ownMTU) and the
// peer's, or where rdma_cm connected the QPs, the one it gave them
// (cmMTU).
func (s *session) mtu() ibverbs.MTU {
	if s.cmMTU != 0 {
		return s.cmMTU
	}
	return s.offeredMTU()
}

// offeredMTU is the least of the path MTUs that the two sides offered:
// this side's (ownMTU) and the peer's.
func (s *session) offeredMTU() ibverbs.MTU {
	m := s.ownMTU()
	for _, r := range s.remote {
		m = min(m, r.Endpoint.MTU)
	}
	return m
}

// mtuWhy is what the header's GID line says of the path MTU: why this
// side's netdev caps it (capWhy), and where rdma_cm gave the QPs another
// than the two sides offered (its route's, which -m caps but does not
// raise), that.
func (s *session) mtuWhy() string {
	if s.cmMTU == 0 || s.cmMTU == s.offeredMTU() {
		return s.capWhy
	}
	set := fmt.Sprintf("path MTU %d, as rdma_cm set it from the route, where the two sides offered %d", s.cmMTU.Bytes(), s.offeredMTU().Bytes())
	if s.capWhy == "" {
		return set
	}
	return s.capWhy + "; " + set
}

// gidReason is what the header says of the GID c, with capWhy, where
// the netdev's MTU caps the path MTU (capNetdevMTU), after it.
func gidReason(c ibverbs.GIDChoice, capWhy string) string {
	e := c.Entry
	if e.GID.IsZero() {
		return c.Reason
	}
	s := fmt.Sprintf("%s, %s", e.Type, e.IP())
	if e.Netdev != "" {
		s += " on " + e.Netdev
	}
	s += ": " + c.Reason
	if capWhy != "" {
		s += "; " + capWhy
	}
	return s
}

func linkType(l ibverbs.LinkLayer) string {
	if l == ibverbs.LinkLayerEthernet {
		return "Ethernet"
	}
	return "IB"
}

// reportEndpoint is one side's address line: OUT is the reads and atomics
// that side serves at once, as perftest prints it.
func reportEndpoint(q exchange.QPInfo) report.Endpoint {
	return report.Endpoint{LID: q.Endpoint.LID, QPN: q.Endpoint.QPN, PSN: q.Endpoint.PSN, RKey: q.RKey,
		VAddr: q.Addr, OutReads: int(q.Endpoint.RdAtomic), GID: report.FormatGID(q.Endpoint.GID)}
}

// idleError is returned when the peer stopped answering.
type idleError struct {
	what string
	d    time.Duration
	// after is the completions or messages this side had in the run
	// before they stopped coming: where some came, the path between the
	// two sides worked, and the peer stopped answering.
	after uint64
	// silent, where the peer has also sent nothing on the control
	// connection for a while (not even a keepalive), is how long: it is
	// stopped (SIGSTOP, Ctrl-Z) or hung.
	silent time.Duration
	// gids, on RoCE where nothing came in the run, names the two sides'
	// GIDs ("The GIDs are ..."), which may not reach each other: a peer
	// that runs on (the control connection says nothing of the RDMA
	// path) then waits as long. They come last, after the flags to try:
	// the peer gets this side's error cut to exchange.MaxString bytes,
	// and two IPv6 GIDs and a netdev's name take up to 93 of them.
	gids string
	// mtu, with gids, where this side's packets carry more than 256
	// bytes, names a link of a smaller MTU between the two sides as the
	// other cause (mtuHint); with after, where the sizes before this one
	// got through and this size's packets are larger (grownHint).
	mtu string
	// gone, where set, says that this side's GID has left its table
	// since the test chose it (its address was removed): the cause, not
	// the peer.
	gone string
}

func (e *idleError) Error() string {
	switch {
	case e.gone != "":
		return fmt.Sprintf("no %s for %v: %s, so this side's packets cannot reach the peer", e.what, e.d, e.gone)
	case e.after > 0 && e.silent > 0:
		return fmt.Sprintf("the peer stopped answering, %s: no %s for %v, and it has sent nothing for %v, not even a keepalive (was it stopped, with Ctrl-Z or SIGSTOP, or hung, or is the network between the two sides down?)",
			e.count(), e.what, e.d, e.silent.Round(100*time.Millisecond))
	case e.after > 0 && e.mtu != "":
		return fmt.Sprintf("the peer stopped answering, %s: no %s for %v (is it still running? if it is, %s)", e.count(), e.what, e.d, e.mtu)
	case e.after > 0:
		return fmt.Sprintf("the peer stopped answering, %s: no %s for %v (is it still running?)", e.count(), e.what, e.d)
	case e.gids != "" && e.mtu != "":
		return fmt.Sprintf("the peer stopped answering: no %s for %v (is it still running? if it is, %s. Or %s. %s)", e.what, e.d, gidsApart, e.mtu, e.gids)
	case e.gids != "":
		return fmt.Sprintf("the peer stopped answering: no %s for %v (is it still running? if it is, %s. %s)", e.what, e.d, gidsApart, e.gids)
	}
	return fmt.Sprintf("the peer stopped answering: no %s for %v (is it still running?)", e.what, e.d)
}

// gidsApart is the idle error's word on GIDs that cannot reach each
// other, with the flags that choose others, ahead of the GIDs
// themselves (idleError.gids).
const gidsApart = "the two sides' GIDs may not reach each other: different VLANs or subnets? --source_ip or -x picks a GID"

// count says what came from the peer in the run before the silence:
// completions and messages of every size and direction together.
func (e *idleError) count() string {
	if e.after == 1 {
		return "after 1 completion or message from it in the run"
	}
	return fmt.Sprintf("after %d completions and messages from it in the run", e.after)
}

// fromPeer says whether wc, a successful completion, shows that the peer
// answered: a receive, or on RC any completion, which the peer's ACK or
// response makes. On UC and UD a send completes without the peer.
func (s *session) fromPeer(wc *ibverbs.WC) bool {
	return wc.Opcode&ibverbs.WCRecv != 0 || s.spec.ConnType == ibverbs.QPTypeRC
}

// sentFromPeer is what n send completions count in got: on RC each shows
// the peer answered; on UC and UD none does.
func (s *session) sentFromPeer(n uint64) uint64 {
	if s.spec.ConnType == ibverbs.QPTypeRC {
		return n
	}
	return 0
}

// idleErr is idleAfter of what this side's loops got in the run so far
// (s.got): a latency loop's wait.
func (s *session) idleErr(what string, d time.Duration) error { return s.idleAfter(what, d, s.got) }

// idleAfter is the idleError of no what for d, after got completions or
// messages in the run (s.got and the waiting loop's own): where none
// came, with the two sides' GIDs on an Ethernet port; where some did,
// with how long the peer has been silent on the control connection, if
// it has sent nothing, not even a keepalive, for over four of its
// keepalive periods.
func (s *session) idleAfter(what string, d time.Duration, got uint64) error {
	e := &idleError{what: what, d: d, after: got, gone: s.gidGone()}
	if e.gone != "" {
		return e
	}
	if got > 0 {
		if s.heard != nil {
			if last := s.heard(); !last.IsZero() {
				if q := time.Since(last); q > 4*alivePeriod(s.local) {
					e.silent = q
				}
			}
		}
		if e.silent == 0 {
			e.mtu = s.grownHint()
		}
		return e
	}
	if s.portAttr.LinkLayer != ibverbs.LinkLayerEthernet || s.gid.Entry.GID.IsZero() {
		return e
	}
	mine := s.gid.Entry.IP().String()
	if s.gid.Entry.Netdev != "" {
		mine += " on " + s.gid.Entry.Netdev
	}
	if len(s.remote) > 0 && !s.remote[0].Endpoint.GID.IsZero() {
		e.gids = "The GIDs are this side's GID " + mine + " and the peer's " + s.remote[0].Endpoint.GID.Addr().String()
	} else {
		e.gids = "This side's GID is " + mine
	}
	e.mtu = s.mtuHint()
	return e
}

// mtuHint, where this side's packets carry more than 256 bytes (the
// smaller of the largest message and the path MTU), says that a link
// between the two sides may drop them: a netdev of either side (a VLAN's,
// whose MTU the port's active MTU does not follow) or a switch port of a
// smaller MTU drops a packet too large for it, and the RDMA path is
// silent while the control connection's small packets pass. It names a
// smaller -m (-s over UD, whose messages are single packets) to try,
// first: the peer gets this side's error in its Result (or ErrorMsg),
// whose text the protocol cuts to exchange.MaxString bytes (a one-byte
// length, which an older peer's decoder holds to), and the idle error's
// own words come before the hint (its word on the GIDs too, but not the
// GIDs themselves, which come after it); a hint that ended with its flag
// lost it there, the part the peer's user can act on.
func (s *session) mtuHint() string {
	p := min(int(s.spec.MaxSize()), s.mtu().Bytes())
	if p <= 256 {
		return ""
	}
	try := 256
	for try*2 < p && try < 1024 {
		try *= 2
	}
	flag := fmt.Sprintf("-m %d", try)
	if s.spec.ConnType == ibverbs.QPTypeUD {
		flag = fmt.Sprintf("-s %d", try)
	}
	return fmt.Sprintf("try %s: a link between them may drop packets of %d bytes and headers, over its MTU; check the MTUs of both sides' netdevs (`ip link`) and of the switch ports between them", flag, p)
}

// grownHint, where the sizes before this one got through (a sweep, -a)
// and this size's packets (the smaller of the size and the path MTU)
// are larger than theirs and than 256 bytes, says that a link between
// the two sides may drop the larger packets, with an -m of the largest
// that got through to try: the peer answered the small sizes, then fell
// silent, and the idle error asked only whether it still ran. The -m
// comes first, as mtuHint's flag does.
func (s *session) grownHint() string {
	m := s.mtu().Bytes()
	p, q := min(s.size, m), min(s.passed, m)
	if s.passed == 0 || p <= q || p <= 256 {
		return ""
	}
	try := 256
	for try*2 <= q && try < 2048 {
		try *= 2
	}
	return fmt.Sprintf("try -m %d: a link between them may drop packets of %d bytes and headers, over its MTU, where those of %d got through; check the MTUs of both sides' netdevs (`ip link`) and of the switch ports between them", try, p, q)
}

// interrupted reports whether ctx has ended; loops call it every few
// hundred iterations.
func interrupted(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
