//go:build linux && cgo

// Package bench is gorperf's engine: it sets up RDMA resources through the
// public ibverbs API, agrees on a test with the peer over the exchange
// protocol, runs the timed loops and returns what they measured. Rendering
// is left to internal/report.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/counters"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

// Result is one side's account of a test.
type Result struct {
	Spec   exchange.TestSpec
	Role   string // "client" or "server"
	Header report.Header
	Sizes  []SizeResult
	// Mismatches counts data validation failures, both sides together.
	Mismatches  uint64
	Interrupted bool
	// PeerInterrupted reports that the peer was stopped by Ctrl-C or
	// SIGTERM: the run ended there, and this side's figures are what it
	// measured until then. PeerStop says how, in the peer's words:
	// "interrupted (Ctrl-C)", "stopped (SIGTERM)", or a server's
	// "stopped at its --max-duration of 60 s" (Overtime).
	PeerInterrupted bool
	PeerStop        string
	// Overtime is, in the result of a served test of iterations that the
	// server stopped at its maximum duration (Limits.MaxDuration), that
	// maximum in seconds: the run ended there, and this side's figures
	// are what it measured until then. The client's result says so as
	// PeerStop.
	Overtime uint32
	// WarmedUp is the messages each of this side's QPs completed in
	// warm-ups (TestSpec.WarmUp), outside the sizes' results.
	WarmedUp uint64
	// Threads is, in a test of several threads, each thread's part; the
	// sizes above are their sum.
	Threads []ThreadResult
	// Peer is, in the result of a test served by Serve, the address of
	// its client's control connection (its first, with several
	// threads); empty otherwise.
	Peer string
	// Start is when the test began on this side: its QPs connected, its
	// header known, its sizes about to run (with several threads, the
	// first thread's to begin).
	Start time.Time
}

// SizeResult is what one message size measured: bandwidth for bandwidth
// tests (both directions added up when bidirectional), latency for latency
// tests.
type SizeResult struct {
	Size      int
	BW        stats.Bandwidth
	Lat       stats.Latency
	Samples   []float64
	IsLatency bool
	// Iterations is, in a latency test, the iterations the size ran, as
	// perftest's "#iterations" has them: this side's, or where this side
	// only lets its memory be read (the server of read_lat and
	// atomic_lat), the peer's. With a duration and a margin (-D, -f)
	// they are those of the measured span, as the samples are, and as
	// perftest counts them. Lat.N counts the samples, which may be fewer
	// (one in so many kept, a passive side's none).
	Iterations uint64
	// Window is, in a latency test of a duration (-D), the time the
	// Iterations took, measured: from the first one's post to the end
	// of the last, pauses included, perftest's measuring window (with a
	// margin, about the span between the margins; without, the whole
	// run). perftest's t_avg and tps of such a run are computed from it
	// (report.LatDur), not from the samples, which leave gorperf's
	// pauses out. Zero where this side measured nothing (the passive
	// side of read_lat and atomic_lat).
	Window time.Duration
	// Counters is how this side's port counters (Local.Counters) moved
	// from just before the size's run to just after both sides were done.
	Counters []counters.Change
	// CPU is this process's CPU time over the same stretch, with
	// Local.CPUUtil; its Messages are the size's.
	CPU *stats.CPU
	// Local and Remote are, in a bidirectional bandwidth test, what this
	// side and the peer each sent (BW is their sum), as perftest's
	// --report-both shows them; nil otherwise.
	Local, Remote *stats.Bandwidth
}

// Title returns perftest's name for a test, e.g. "RDMA_Write BW Test".
func Title(t exchange.Test) string {
	switch t {
	case exchange.WriteBW:
		return "RDMA_Write BW Test"
	case exchange.WriteLat:
		return "RDMA_Write Latency Test"
	case exchange.ReadBW:
		return "RDMA_Read BW Test"
	case exchange.ReadLat:
		return "RDMA_Read Latency Test"
	case exchange.SendBW:
		return "Send BW Test"
	case exchange.SendLat:
		return "Send Latency Test"
	case exchange.AtomicBW:
		return "Atomic BW Test"
	case exchange.AtomicLat:
		return "Atomic Latency Test"
	}
	return t.String()
}

// specTitle is the header's title for spec, built as perftest builds it:
// the operation, the atomic one, then for bandwidth "Bidirectional" and
// "Post List" where they apply, e.g. "Atomic FETCH_AND_ADD Bidirectional
// BW Test".
func specTitle(spec exchange.TestSpec) string {
	t := spec.Test
	var b strings.Builder
	op := strings.TrimSuffix(strings.TrimSuffix(Title(t), "BW Test"), "Latency Test")
	if spec.Immediate { // perftest's RDMA_Write_imm and Send_imm
		op = strings.TrimSuffix(op, " ") + "_imm "
	}
	b.WriteString(op)
	if t.IsAtomic() {
		b.WriteString(spec.Atomic.String() + " ")
	}
	if t.IsLatency() {
		b.WriteString("Latency Test")
		return b.String()
	}
	if spec.Bidirectional {
		b.WriteString("Bidirectional ")
	}
	if spec.PostList > 1 {
		b.WriteString("Post List ")
	}
	b.WriteString("BW Test")
	return b.String()
}

// Tool is the version string sent in the protocol's hello.
var Tool = "gorperf dev"

// Client connects to a gorperf server at addr (host:port), asks it to run
// spec and runs it. onHeader, if not nil, is called once the QPs are
// connected, before the first measurement, so a caller can print
// perftest's header before the numbers. A local side that fails Check
// fails Client before it connects, as does a message size over its
// device's maximum; it then tells the server why, where one is there
// (giveUp).
func Client(ctx context.Context, addr string, spec exchange.TestSpec, l Local, onHeader func(report.Header)) (*Result, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkSpec(spec, l); err != nil {
		giveUp(ctx, addr, l, err)
		return nil, err
	}
	if l.CMPort == 0 {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		l.CMPort, _ = strconv.Atoi(port)
	}
	if spec.Threads > 1 {
		return clientThreads(ctx, addr, spec, l, onHeader)
	}
	return client(ctx, addr, spec, l, onHeader)
}

// giveUpWait bounds giveUp.
const giveUpWait = 2 * time.Second

// giveUp tells the server at addr, where one answers at once, that this
// client gives up before asking for its test, and why: a server for one
// test started beside it then ends too, with the client's reason, where
// it waited for another client (as perftest's server ends when its
// client fails in their exchange). It dials once, without waiting for a
// server that is not up yet, and takes at most giveUpWait; what fails is
// left unsaid.
func giveUp(ctx context.Context, addr string, l Local, why error) {
	ctx, cancel := context.WithTimeout(ctx, giveUpWait)
	defer cancel()
	nc, err := dialServer(ctx, l.Network, addr, l.BindAddr, 0)
	if err != nil {
		return
	}
	c := exchange.NewConn(nc)
	defer c.Close()
	if _, err := exchange.Handshake(ctx, c, Tool); err == nil {
		c.SendError(ctx, why)
	}
}

// client runs one connection's test with the server at addr.
func client(ctx context.Context, addr string, spec exchange.TestSpec, l Local, onHeader func(report.Header)) (*Result, error) {
	nc, err := dialServer(ctx, l.Network, addr, l.BindAddr, refusedRetry)
	if err != nil && l.BindAddr.IsValid() && errors.Is(err, syscall.EADDRNOTAVAIL) {
		return nil, fmt.Errorf("connecting to the gorperf server at %s from %s (--bind_source_ip): no interface here has that address: %w", addr, l.BindAddr, err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// A server for one test stops listening once its test begins,
		// as perftest's: refused, it may be busy, not missing.
		return nil, fmt.Errorf("connecting to the gorperf server at %s: nothing accepted the connection there within %v: no server is running there, or a server for one test is busy with another client's (start the same test there without a host, or run gorperf serve there, which queues its clients): %w",
			addr, refusedRetry, err)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the gorperf server at %s: %w", addr, err)
	}
	c := exchange.NewConn(&heardConn{Conn: nc})
	defer c.Close()
	if l.Queued != nil {
		c.OnQueued(func(q exchange.Queued) { l.Queued(int(q.Ahead)) })
	}
	hctx, cancel := context.WithTimeout(ctx, clientHelloWait)
	defer cancel()
	if _, err := exchange.Handshake(hctx, c, Tool); err != nil {
		return nil, helloError(addr, err)
	}
	if l.FitMTU != nil {
		fitMTU(&spec, l, nc)
	}
	if err := c.Send(hctx, spec); err != nil {
		return nil, sendError(addr, err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if l.CMHost != "" {
		host = l.CMHost
	}
	res, err := run(ctx, c, spec, l, "client", host, onHeader)
	return res, echoed(addr, err)
}

// fitMTU calls l.FitMTU with spec and the MTU this side offers over
// the GID that the control connection nc picks (LocalMTU with its local
// address, as run gives it to the session); where the device cannot say,
// it is left for the test's own set-up to fail with the reason.
func fitMTU(spec *exchange.TestSpec, l Local, nc net.Conn) {
	if ta, ok := nc.LocalAddr().(*net.TCPAddr); ok {
		l.ctlAddr = ta.AddrPort().Addr().Unmap()
	}
	if m, err := LocalMTU(l); err == nil {
		l.FitMTU(spec, m)
	}
}

// echoed is err, a client's failure at the server at addr, said so where
// the message that came back was a TestSpec, which no gorperf server
// sends: the peer echoes what it is sent (its hello too, which passed for
// a server's), and does not speak the gorperf protocol.
func echoed(addr string, err error) error {
	var ue *exchange.UnexpectedError
	if !errors.As(err, &ue) || ue.Got != exchange.TypeSpec {
		return err
	}
	// ue alone: what err says beside it (with -R, the client's own error
	// message, echoed back as the peer's) is the echo's too.
	return fmt.Errorf("server at %s: %w: it sent this client's own test back (a service that echoes what it is sent?): %w", addr, exchange.ErrNotGorperf, ue)
}

// heardConn is a control connection, which notes when the peer last
// sent it something: while a server runs other clients' tests before a
// client's, what it sends is an Alive now and then (lobby), and the
// client waits for its turn as long as they come; a server waits for its
// client's set-up as long as the client's Alives come (firstWait).
type heardConn struct {
	net.Conn
	last atomic.Int64 // when a read last got something, in Unix nanoseconds
}

// lastHeard is when a read last got something; zero before any.
func (h *heardConn) lastHeard() time.Time {
	if n := h.last.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (h *heardConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if n > 0 {
		h.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// SyscallConn is the connection's own, where it has one (run's s.ctl).
func (h *heardConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := h.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// quietError is a side's first wait for the other once the test was
// asked for (firstWait) that ended for the peer's silence.
type quietError struct {
	role  string // this side's: "client" or "server"
	after time.Duration
}

func (e *quietError) Error() string {
	if e.role == "server" {
		return fmt.Sprintf("the client sent no set-up, nor anything else, for %v after its test was taken (stopped or hung?)", e.after)
	}
	return fmt.Sprintf("the server took the test but sent nothing for %v (stopped or hung?)", e.after)
}

// awaited is err, the failure of this side's first wait for the peer
// on wctx (firstWait), said so: where the peer's silence ended it
// (quieted), and on a server, which waits for its client's set-up as
// long as the client sends Alives, where anything else did, unless the
// client closed the connection (unbegun says so) or said why it gave up.
func awaited(wctx context.Context, role string, err error) error {
	q := quieted(wctx, err)
	if q != err || role != "server" || err == nil || closedByPeer(err) || errors.As(err, new(*exchange.PeerError)) {
		return q
	}
	return fmt.Errorf("waiting for the client's set-up: %w", err)
}

// errStoppedFirst is what a server stopped while it waited for its
// client's set-up tells the client, as its lobby tells those waiting.
var errStoppedFirst = errors.New("the server was stopped before it ran this test")

// firstWait is the context of a side's first wait for the other once the
// test was asked for, on h, where this side's role is role: a server
// that runs other clients' tests first keeps a client in its lobby, and
// sends Alives meanwhile, for as long as that takes; a client that takes
// long to make its set-up sends Alives too. It ends once the peer has
// sent nothing for quiet, its Cause a *quietError, or at once when ctx
// ends: nothing has been measured yet. Its cancel must be called.
func firstWait(ctx context.Context, h *heardConn, quiet time.Duration, role string) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancelCause(ctx)
	start := time.Now()
	go func() {
		t := time.NewTicker(max(quiet/20, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case now := <-t.C:
				if last := time.Unix(0, max(h.last.Load(), start.UnixNano())); now.Sub(last) >= quiet {
					cancel(&quietError{role, quiet})
					return
				}
			}
		}
	}()
	return wctx, func() { cancel(nil) }
}

// quieted is err, the failure of the wait on wctx (firstWait), said so
// where the peer's silence ended it; it wraps the *quietError too.
func quieted(wctx context.Context, err error) error {
	var q *quietError
	if err != nil && errors.As(context.Cause(wctx), &q) {
		return fmt.Errorf("%w: %w", q, err)
	}
	return err
}

// helloError is the failure of a client's greeting of the server at
// addr, said so that it helps: no hello within the handshake's wait
// (clientHelloWait) is a server that greets no connection, stopped
// (Ctrl-Z) or hung, the connection waiting in its listener's backlog, or
// one flooded with more connections than it greets at once, faster than
// it closes them (maxGreetings; a server greets clients while a test
// runs, and a one-test server refuses them or has stopped listening);
// the connection reset before the hello, a one-test server that took
// another client and stopped listening. The error wraps err either way.
func helloError(addr string, err error) error {
	at := "server at " + addr + ": "
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &hintError{fmt.Sprintf("%sno hello from the server within %d s: it may be stopped or hung, or flooded with connections", at, int(clientHelloWait/time.Second)), err}
	case errors.Is(err, syscall.ECONNRESET):
		return &hintError{at + "the server closed the connection before its hello: it may have taken another client (a server without serve runs one test)", err}
	}
	return fmt.Errorf("%s%w", at, err)
}

// sendError is the failure of a client's sending its test to the server
// at addr, which has greeted it: a connection reset then is a server
// that stopped after its hello, a one-test server that took another
// client's test. The error wraps err either way.
func sendError(addr string, err error) error {
	at := "server at " + addr + ": "
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return &hintError{at + "the server closed the connection after its hello, before taking the test: it may have taken another client (a server without serve runs one test)", err}
	}
	return fmt.Errorf("%ssending the test: %w", at, err)
}

// hintError is an error said another way, with advice; it wraps the
// error.
type hintError struct {
	msg string
	err error
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.err }

// refusedRetry is how long a client keeps trying a server that refuses
// the connection: one started at the same moment may not listen yet (it
// opens its device first), and a script need not sleep between the two.
const refusedRetry = 3 * time.Second

// dialServer connects to addr over network ("" for "tcp"), from the
// address from if valid, trying again every 50 ms for up to retry while
// the connection is refused.
func dialServer(ctx context.Context, network, addr string, from netip.Addr, retry time.Duration) (net.Conn, error) {
	if network == "" {
		network = "tcp"
	}
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 2 * time.Second}
	if from.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))
	}
	giveUp := time.Now().Add(retry)
	for {
		nc, err := d.DialContext(ctx, network, addr)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(giveUp) {
			return nc, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Limits bound what a server accepts from a client's request.
type Limits = exchange.Limits

// Serve accepts clients on ln and runs the test each asks for, one at a
// time, until ctx ends, or after one test when once is set. A failed test
// is reported through done and does not stop the server; done also gets
// each finished test, and each connection that asked for no test (a
// *notATest), or whose client gave up before it asked (a *GaveUpError,
// which ends a one-test server too). A local side that fails Check fails Serve at once.
// Clients wait their turns in a lobby, first come first served; a test
// over lim (or whose threads' rdma_cm ports would pass 65535) is refused
// as it asks, not at its turn, unless once is set; a one-test server
// answers every other client at once once it has taken its test, and
// those still waiting when Serve ends are told why. ctx's end closes ln.
func Serve(ctx context.Context, ln net.Listener, l Local, lim Limits, once bool, onHeader func(report.Header), done func(*Result, error)) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	if err := Check(l); err != nil {
		return err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && l.CMPort == 0 {
		l.CMPort = a.Port
	}
	return serve(ctx, ln, l, lim, once, onHeader, done)
}

// serve is Serve's loop, once the local side is checked; ctx's end must
// close ln.
func serve(ctx context.Context, ln net.Listener, l Local, lim Limits, once bool, onHeader func(report.Header), done func(*Result, error)) error {
	var check func(exchange.TestSpec) error
	if !once {
		// A test the server would refuse whatever it ran before is
		// refused as it asks, not at its turn. (A one-test server's
		// test is its client's, refused or not.)
		check = func(spec exchange.TestSpec) error { return admissible(&spec, l, lim) }
	}
	lb := openLobby(ctx, ln, l, once, check)
	// why is what the clients still waiting when the server ends are told.
	why := errors.New("the server was stopped before it ran this test")
	defer func() { lb.close(why) }()
	for {
		taken, report, err := lb.take()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			why = fmt.Errorf("the server stopped before it ran this test: %w", err)
			return err
		}
		if report != nil {
			if done != nil {
				done(nil, report)
			}
			if once && errors.As(report, new(*GaveUpError)) {
				// Its client is gone: the test it came for will
				// not come.
				return report
			}
			continue
		}
		r, err := serveSpec(context.WithValue(ctx, handOverKey{}, lb.handOver), taken, l, lim, onHeader)
		if r != nil {
			r.Peer = taken[0].c.NetConn().RemoteAddr().String()
		}
		if !once {
			// serve runs many clients' tests: name the one whose
			// failed.
			err = named(taken[0].c, err)
		}
		for _, w := range taken {
			lb.handOver(w.c)
			w.c.Close()
		}
		if done != nil {
			done(r, err)
		}
		if once && ctx.Err() == nil {
			why = errOneTest
		}
		if once {
			return err
		}
		if ctx.Err() != nil {
			// Clients that gave up while the test ran, which the
			// lobby heard, still reach done.
			for _, rep := range lb.takeReports() {
				if done != nil {
					done(nil, rep)
				}
			}
			return err
		}
	}
}

// named is err, the failure of the test of the client on c (its first
// connection, for a test of several threads), named as NameClient does.
func named(c *exchange.Conn, err error) error {
	return NameClient(c.NetConn().RemoteAddr().String(), err)
}

// NameClient is err, the failure of the test of the client at addr (a
// Result's Peer), as a server that serves many clients reports it:
// "client ADDR: " and err, where err does not begin so already. nil
// stays nil.
func NameClient(addr string, err error) error {
	if err == nil {
		return nil
	}
	if p := "client " + addr + ": "; !strings.HasPrefix(err.Error(), p) {
		return fmt.Errorf("%s%w", p, err)
	}
	return err
}

// errOneTest is what a one-test server tells a client whose test comes
// after the one it has taken.
var errOneTest = errors.New("this server runs one test, and has taken another client's (a server runs one test unless started with serve)")

// handOverKey is the context key of the lobby's handOver, which run calls
// with its connection once it sends its own Alives.
type handOverKey struct{}

// helloWait is how long a server gives a connection to say hello and ask
// for its test, from when it greets it. (A variable for the tests.)
var helloWait = 10 * time.Second

// maxGreetings bounds the connections a server greets at once (and so
// their file descriptors and goroutines): 1024, or a quarter of the
// process's limit on open files where that is less, at least 32. Past it,
// the next connection is accepted and waits for a greeting's place, which
// it gets as a greeting ends or by closing the oldest connection greeted
// once that came greetingOld ago (evict): a gorperf client says hello and
// asks for its test at once, so a flood of connections that say nothing
// (a port scanner, health checks) only holds up the next client by about
// greetingOld, and the connections of a test of many threads, which ask
// at once, are not closed. (A variable for the tests.)
var maxGreetings = greetingsBound()

// greetingOld is how long after it came a connection that a server
// greets, with maxGreetings of them, may be closed to greet a newer one.
// (A variable for the tests.)
var greetingOld = time.Second

// greetingsBound is maxGreetings's default.
func greetingsBound() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 1024
	}
	return int(min(1024, max(32, r.Cur/4)))
}

// clientHelloWait is how long a client waits for the server's hello,
// and to send its test: longer than a server may take to greet it. A
// server sends its hello as it starts a connection's greeting, at once
// or once it has a greeting's place (maxGreetings): up to greetingOld,
// or where it closes no greeting for a newer connection (a gorperf
// before this one), as long as a greeting lasts, helloWait and a frame's
// grace, 15 s.
const clientHelloWait = 20 * time.Second

// maxWaiting bounds the clients in a server's lobby (a test of several
// threads is one client): the next one is told at once that the server
// is busy. (A variable for the tests.)
var maxWaiting = 64

// asked is a client's connection that asked for a test, and the test.
type asked struct {
	c    *exchange.Conn
	spec exchange.TestSpec
}

// lobby is where a server's clients wait their turns. One goroutine
// accepts connections for the server's whole life and greets each in a
// goroutine of its own (handshakeSpec), at most maxGreetings at once
// (past that, the next waits for a place, and closes the oldest greeting
// for one: place), so that a connection that says nothing (a TCP health
// check, nc), or a flood of them, holds up no client. A client that
// asked for a test waits in the lobby, first come first served, and is
// sent a Queued every alive period, which says how many tests come before
// its own, until its test is taken; then Alives until run sends its own
// (handOver). One that goes away meanwhile is dropped, and one that has
// sent nothing, not even an Alive, for the server's peer timeout
// (stopped, or its host gone; hear): the lobby reads each waiting
// client's Alives (ReadAhead), and keeps the rest of what it sent for its
// test. The connections of a test of several threads come through the
// lobby too, and are taken together (take).
type lobby struct {
	ctx   context.Context
	ln    net.Listener
	alive time.Duration
	once  bool
	sem   chan struct{} // a greeting's place (maxGreetings)
	quit  chan struct{} // closed by close

	// silence is the server's peer timeout: a client waiting that has
	// sent nothing for as long is dropped.
	silence time.Duration
	// check is what refuses a test as it asks: a test the server would
	// refuse at its turn, whatever ran before; nil checks nothing. Set
	// by openLobby, before its goroutines start.
	check func(exchange.TestSpec) error

	mu        sync.Mutex
	cond      *sync.Cond // on mu: the lobby changed
	waiting   []asked    // oldest first
	held      []asked    // taken, sent Alives until handOver
	running   bool       // a test taken has not ended: take has not been called since
	reports   []error    // connections that asked for no test, for done
	pending   map[net.Conn]*greeting
	oneTaken  bool   // a one-test server took its test
	oneGroup  uint64 // and its group (TestSpec.Group)
	group     uint64 // the last test of several threads taken
	stopWake  func() bool
	acceptErr error
	closed    bool
	wg        sync.WaitGroup

	// A test of several threads at the head of the line, whose
	// connections take waits for until gatherEnd, groupWait from when it
	// came to the head, however often take returns meanwhile for
	// connections that asked for no test; gatherWake wakes take then
	// (gather). On mu.
	gathering   bool
	gatherGroup uint64
	gatherEnd   time.Time
	gatherWake  *time.Timer
	// heard is when tend last read something from each client waiting
	// that has sent something since its test (its Alives). On mu.
	heard map[*exchange.Conn]time.Time
	// refused is each test of several threads that check refused, by its
	// group (TestSpec.Group), until all its connections have come or
	// refusedKeep has passed, at most maxWaiting of them: the test is
	// refused once, and its other connections told the same as they
	// come (refuseTest). On mu.
	refused map[uint64]*refusal
}

// openLobby starts a server's lobby on ln, for a server whose side is l:
// Alives go every alive period (alivePeriod), and a client waiting that
// has sent nothing for its idle timeout is dropped. check, if not nil,
// refuses a test as it asks (lobby.check).
func openLobby(ctx context.Context, ln net.Listener, l Local, once bool, check func(exchange.TestSpec) error) *lobby {
	lb := &lobby{ctx: ctx, ln: ln, alive: alivePeriod(l), silence: idleTimeout(l), once: once, check: check, sem: make(chan struct{}, maxGreetings),
		quit: make(chan struct{}), pending: map[net.Conn]*greeting{}, heard: map[*exchange.Conn]time.Time{}, refused: map[uint64]*refusal{}}
	lb.cond = sync.NewCond(&lb.mu)
	lb.stopWake = context.AfterFunc(ctx, lb.wake)
	lb.wg.Add(2)
	go lb.accept()
	go lb.tend()
	return lb
}

// wake wakes take.
func (lb *lobby) wake() {
	lb.mu.Lock()
	lb.cond.Broadcast()
	lb.mu.Unlock()
}

// greeting is a connection that the lobby greets (lobby.pending, by
// the connection).
type greeting struct {
	at     time.Time // when it was accepted
	closed bool      // closed by evict, to greet a newer connection
}

// accept takes connections from the listener, each into a greeting of
// its own once it has a greeting's place (place), until close, or Accept
// fails for something other than a lack of file descriptors (acceptLater).
func (lb *lobby) accept() {
	defer lb.wg.Done()
	var later time.Duration // acceptLater's backoff
	for {
		nc, err := lb.ln.Accept()
		if err != nil && !lb.isClosed() {
			if d, ok := lb.acceptLater(err, later); ok {
				later = d
				continue
			}
		}
		later = 0
		lb.mu.Lock()
		if err != nil || lb.closed {
			if err == nil {
				nc.Close()
			} else if !lb.closed {
				lb.acceptErr = err
				lb.cond.Broadcast()
			}
			lb.mu.Unlock()
			return
		}
		lb.mu.Unlock()
		at := time.Now()
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetKeepAlive(true)
			tc.SetKeepAlivePeriod(2 * time.Second)
		}
		if !lb.place() {
			nc.Close()
			return
		}
		lb.mu.Lock()
		if lb.closed {
			lb.mu.Unlock()
			<-lb.sem
			nc.Close()
			return
		}
		g := &greeting{at: at}
		lb.pending[nc] = g
		lb.wg.Add(1)
		lb.mu.Unlock()
		go lb.greet(nc, g)
	}
}

// isClosed reports whether close has been called.
func (lb *lobby) isClosed() bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.closed
}

// acceptLater is, where err, Accept's failure, is for a lack of file
// descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), how long
// accept waits before it tries again, after last (0 at first), and true:
// the connection waits in the listener's backlog, and the server goes
// on. The first of a run of them is reported.
func (lb *lobby) acceptLater(err error, last time.Duration) (time.Duration, bool) {
	if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) &&
		!errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.ENOMEM) {
		return 0, false
	}
	if last == 0 {
		lb.mu.Lock()
		lb.report(&notATest{fmt.Errorf("accepting a connection: %w (it waits in the listener's backlog until some close)", err)})
		lb.mu.Unlock()
	}
	d := min(max(2*last, 5*time.Millisecond), time.Second)
	select {
	case <-time.After(d):
	case <-lb.quit:
	}
	return d, true
}

// place takes a greeting's place (lb.sem) for a connection just
// accepted, waiting until one is free: past maxGreetings at once, it
// closes the oldest greeting once its connection came greetingOld ago
// (evict). It reports false where the lobby closed first.
func (lb *lobby) place() bool {
	for {
		select {
		case lb.sem <- struct{}{}:
			return true
		case <-lb.quit:
			return false
		default:
		}
		// A greeting that evict closed ends at once, and frees its
		// place; else wait for one to end, or to be old enough.
		d, ok := lb.evict()
		if !ok || d == 0 {
			d = time.Hour
		}
		t := time.NewTimer(d)
		select {
		case lb.sem <- struct{}{}:
			t.Stop()
			return true
		case <-lb.quit:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// evict closes the oldest greeting, where its connection came
// greetingOld ago, and reports true; where it came later, it reports
// true and how long until then; where there is none to close, false
// (each one's place is freed as it ends).
func (lb *lobby) evict() (time.Duration, bool) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var oldest net.Conn
	for nc, g := range lb.pending {
		if !g.closed && (oldest == nil || g.at.Before(lb.pending[oldest].at)) {
			oldest = nc
		}
	}
	if oldest == nil {
		return 0, false
	}
	g := lb.pending[oldest]
	if d := time.Until(g.at.Add(greetingOld)); d > 0 {
		return d, true
	}
	g.closed = true
	oldest.Close()
	return 0, true
}

// greet greets nc, accepted at g.at, and lets the client into the lobby,
// or answers it at once where it cannot wait there.
func (lb *lobby) greet(nc net.Conn, g *greeting) {
	defer lb.wg.Done()
	defer func() { <-lb.sem }()
	c := exchange.NewConn(&heardConn{Conn: nc})
	spec, err := handshakeSpec(lb.ctx, c, g.at, helloWait)
	var bad error
	if err == nil && lb.check != nil {
		bad = lb.check(spec)
	}
	lb.mu.Lock()
	delete(lb.pending, nc)
	if g.closed { // closed by evict, perhaps as its greeting ended
		err = &notATest{fmt.Errorf("connection from %s: asked for no test in %v, and was closed to greet a newer one (%d connections were being greeted at once: a flood of connections?)",
			nc.RemoteAddr(), waited(g.at), maxGreetings)}
	}
	var refuse error
	switch {
	case err == nil && !lb.closed && (bad != nil || lb.refusedTest(spec) != nil):
		// Refused as it would be at its turn, and reported so once.
		refuse = lb.refuseTest(c, spec, bad)
	default:
		refuse = lb.arrive(asked{c, spec}, err)
	}
	lb.mu.Unlock()
	if refuse != nil {
		lb.tell(c, refuse)
	}
}

// waited is the time since at, for a message: to the tenth of a second
// from a second up, as one is waited for here.
func waited(at time.Time) time.Duration {
	d := time.Since(at)
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// refusal is a test of several threads refused as it asked (check).
type refusal struct {
	err  error     // why, what each of its connections is told
	at   time.Time // when
	seen int       // its connections that have come
}

// refusedKeep is how long after a test of several threads was refused
// the lobby waits for the rest of its connections, to tell them the
// same: as long as a connection may take to ask for its test, and the
// lobby would have waited for them.
func refusedKeep() time.Duration { return helloWait + groupWait }

// refusedTest is the refusal of the test of several threads spec is a
// connection of, where check refused one of its connections, or nil;
// lb.mu is held. It forgets the refusals past refusedKeep.
func (lb *lobby) refusedTest(spec exchange.TestSpec) *refusal {
	now := time.Now()
	for g, r := range lb.refused {
		if now.Sub(r.at) >= refusedKeep() {
			delete(lb.refused, g)
		}
	}
	if spec.Threads <= 1 || spec.Group == 0 {
		return nil
	}
	return lb.refused[spec.Group]
}

// RefusedError is a test that Serve refused, as its done reports it, once
// a test: over the server's limits (--max-size and the like: Limits), as
// the client asks or at its turn; refused by Local.Admit; or a test of
// several threads whose connections do not ask for one test. Spec is the
// test the client asked for (of a test of several threads, the
// connection's that was refused first), Err why, which the client was
// told.
type RefusedError struct {
	Spec exchange.TestSpec
	Err  error
}

// Error says "refused: " and why.
func (e *RefusedError) Error() string {
	if e.Err == nil {
		return "refused"
	}
	return "refused: " + e.Err.Error()
}

// Unwrap returns why.
func (e *RefusedError) Unwrap() error { return e.Err }

// refuseTest refuses the test that spec, a greeted client's, asks for,
// as it asks, and returns what the client is told: bad, what check
// found, or for a connection of a test of several threads already
// refused, that refusal. A test is reported refused once: a test of
// several threads as the first of its connections is, whichever thread
// it is (the first asks for the most), whose refusal its connections
// waiting in the lobby are then told (they would wait there for it,
// and hold up the clients behind, until groupWait), and those that
// come after as they come, named by the connection's client, c. lb.mu
// is held.
func (lb *lobby) refuseTest(c *exchange.Conn, spec exchange.TestSpec, bad error) error {
	// What done is told, where this is the test's first refusal (bad is
	// nil for a connection of a test of several threads refused already).
	refused := func() error { return named(c, &RefusedError{Spec: spec, Err: bad}) }
	if spec.Threads <= 1 || spec.Group == 0 { // a test of one connection, or not a group (invalid)
		lb.report(refused())
		return bad
	}
	if r := lb.refusedTest(spec); r != nil {
		if r.seen++; r.seen >= int(spec.Threads) {
			delete(lb.refused, spec.Group)
		}
		return r.err
	}
	if len(lb.refused) >= maxWaiting {
		var oldest uint64
		first := true
		for g, r := range lb.refused {
			if first || r.at.Before(lb.refused[oldest].at) {
				oldest, first = g, false
			}
		}
		delete(lb.refused, oldest)
	}
	r := &refusal{err: bad, at: time.Now(), seen: 1}
	lb.waiting = slices.DeleteFunc(lb.waiting, func(w asked) bool {
		if w.spec.Threads <= 1 || w.spec.Group != spec.Group {
			return false
		}
		delete(lb.heard, w.c)
		lb.farewell(w.c, bad)
		r.seen++
		return true
	})
	if r.seen < int(spec.Threads) {
		lb.refused[spec.Group] = r
	}
	lb.report(refused())
	return bad
}

// arrive lets a greeted client into the lobby, or returns why it cannot
// wait there (nil where the connection asked for no test, reported for
// done); lb.mu is held.
func (lb *lobby) arrive(a asked, err error) error {
	thread := a.spec.Threads > 1
	switch {
	case lb.closed:
		if err != nil {
			a.c.Close()
			return nil
		}
		return errors.New("the server was stopped before it ran this test")
	case err != nil:
		a.c.Close()
		lb.report(err)
		return nil
	case lb.once && lb.oneTaken && !(thread && a.spec.Group == lb.oneGroup):
		return errOneTest
	case thread && a.spec.Group == lb.group:
		return fmt.Errorf("this server is busy: the other connections of this test of %d threads were taken without this one", a.spec.Threads)
	}
	if n := lb.clients(); n >= maxWaiting && !(thread && slices.ContainsFunc(lb.waiting, func(w asked) bool { return w.spec.Threads > 1 && w.spec.Group == a.spec.Group })) {
		return fmt.Errorf("this server is busy: %d clients are waiting", n)
	}
	lb.waiting = append(lb.waiting, a)
	lb.heard[a.c] = time.Now() // its silence counts from here (hear)
	lb.cond.Broadcast()
	return nil
}

// clients counts the clients waiting, a test of several threads as one;
// lb.mu is held.
func (lb *lobby) clients() int {
	n, groups := 0, map[uint64]bool{}
	for _, w := range lb.waiting {
		if w.spec.Threads <= 1 || !groups[w.spec.Group] {
			n++
			groups[w.spec.Group] = w.spec.Threads > 1
		}
	}
	return n
}

// tell sends a client why its test will not run, within a second, and
// closes its connection.
func (lb *lobby) tell(c *exchange.Conn, why error) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(lb.ctx), time.Second)
	c.SendError(hctx, why)
	cancel()
	c.Close()
}

// tend sends each client waiting a Queued with the tests ahead of its
// own, and those taken an Alive until run sends its own, every alive
// period, reads the Alives of those waiting, and drops those that have
// gone away, or that have sent nothing for the server's peer timeout.
func (lb *lobby) tend() {
	defer lb.wg.Done()
	t := time.NewTicker(lb.alive)
	defer t.Stop()
	for {
		select {
		case <-lb.quit:
			return
		case <-t.C:
		}
		lb.mu.Lock()
		all := lb.word()
		lb.mu.Unlock()
		var gone []*exchange.Conn
		heard := map[*exchange.Conn]bool{}
		for _, w := range all {
			ctx, cancel := context.WithTimeout(lb.ctx, lb.alive)
			if err := w.c.Send(ctx, w.m); (err != nil && lb.ctx.Err() == nil) || peerLeft(w.c.NetConn()) {
				gone = append(gone, w.c)
			}
			cancel()
			if _, waits := w.m.(exchange.Queued); waits && w.c.ReadAhead() > 0 {
				heard[w.c] = true
			}
		}
		lb.mu.Lock()
		for _, c := range gone {
			lb.drop(c)
		}
		lb.hear(heard)
		lb.mu.Unlock()
	}
}

// hear notes the clients waiting that tend heard from, and drops those
// that have sent nothing for the server's peer timeout since they last
// did, or since they came into the lobby (arrive): a client sends its
// first Alive as soon as it has asked for its test, and keeps alive, so
// one that sends none is stopped or hung as well. lb.mu is held.
func (lb *lobby) hear(heard map[*exchange.Conn]bool) {
	now := time.Now()
	var silent []*exchange.Conn
	for _, w := range lb.waiting {
		last, ok := lb.heard[w.c]
		switch {
		case heard[w.c] || !ok:
			lb.heard[w.c] = now
		case now.Sub(last) >= lb.silence:
			silent = append(silent, w.c)
		}
	}
	for c := range lb.heard {
		if !slices.ContainsFunc(lb.waiting, func(w asked) bool { return w.c == c }) {
			delete(lb.heard, c)
		}
	}
	for _, c := range silent {
		i := slices.IndexFunc(lb.waiting, func(w asked) bool { return w.c == c })
		lb.waiting = slices.Delete(lb.waiting, i, i+1)
		delete(lb.heard, c)
		// A client only stopped (Ctrl-Z) finds why when it goes on.
		lb.farewell(c, fmt.Errorf("the server gave up on this client, which had sent nothing for %v while it waited its turn, not even a keepalive (was it stopped, with Ctrl-Z or SIGSTOP, or hung?)", lb.silence))
		lb.report(&notATest{fmt.Errorf("client %s sent nothing for %v while it waited its turn (stopped or hung?), and was dropped", c.NetConn().RemoteAddr(), lb.silence)})
	}
}

// word is what tend sends each client: those waiting a Queued with the
// tests ahead of theirs (the one running, and those before it in the
// lobby, a test of several threads counted once), those taken an Alive;
// lb.mu is held.
func (lb *lobby) word() []said {
	all := make([]said, 0, len(lb.waiting)+len(lb.held))
	ahead := uint32(0)
	if lb.running {
		ahead = 1
	}
	groups := map[uint64]uint32{} // a test of several threads: its place
	for _, w := range lb.waiting {
		at := ahead
		if w.spec.Threads > 1 {
			if n, ok := groups[w.spec.Group]; ok {
				at = n
			} else {
				groups[w.spec.Group] = ahead
				ahead++
			}
		} else {
			ahead++
		}
		all = append(all, said{w.c, exchange.Queued{Ahead: at}})
	}
	for _, w := range lb.held {
		all = append(all, said{w.c, exchange.Alive{}})
	}
	return all
}

// said is a message for a client's connection.
type said struct {
	c *exchange.Conn
	m exchange.Message
}

// drop removes the client on c from the lobby, where it waits, closes
// its connection and reports it gone; lb.mu is held.
func (lb *lobby) drop(c *exchange.Conn) {
	i := slices.IndexFunc(lb.waiting, func(w asked) bool { return w.c == c })
	if i < 0 {
		return
	}
	lb.waiting = slices.Delete(lb.waiting, i, i+1)
	delete(lb.heard, c)
	c.Close()
	lb.report(&notATest{fmt.Errorf("client %s went away while it waited its turn", c.NetConn().RemoteAddr())})
}

// report keeps err, a connection's that asked for no test, for done, up
// to maxWaiting of them; lb.mu is held.
func (lb *lobby) report(err error) {
	if len(lb.reports) < maxWaiting {
		lb.reports = append(lb.reports, err)
	}
	lb.cond.Broadcast()
}

// peerLeft reports whether nc is a TCP connection its peer has closed,
// as peerGone reads it.
func peerLeft(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	return err == nil && (&session{ctl: rc}).peerGone(time.Now()) != nil
}

// takeReports returns what take would return for done before its next
// test: the reports of connections that asked for no test.
func (lb *lobby) takeReports() []error {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	r := lb.reports
	lb.reports = nil
	return r
}

// take returns the next connection that asked for no test, for done, or
// else the next test, oldest first, waiting until one comes, or the
// listener's failure, or ctx's end. A test of several threads is taken
// with all its connections, which take waits for, up to groupWait from
// when it came to the head of the line, across take's returns for
// connections that asked for no test; other clients keep their places
// meanwhile. A one-test server's test is the one take returns: it turns
// away the other clients then. The connections taken are sent Alives
// until handOver.
func (lb *lobby) take() (taken []asked, report error, err error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.running = false
	for {
		if len(lb.reports) > 0 {
			report = lb.reports[0]
			lb.reports = lb.reports[1:]
			return nil, report, nil
		}
		if err := lb.ctx.Err(); err != nil {
			return nil, nil, err
		}
		for len(lb.waiting) > 0 && peerLeft(lb.waiting[0].c.NetConn()) {
			lb.drop(lb.waiting[0].c)
		}
		if len(lb.waiting) == 0 {
			lb.gather(nil)
			if lb.acceptErr != nil {
				return nil, nil, lb.acceptErr
			}
			lb.cond.Wait()
			continue
		}
		first := lb.waiting[0]
		own := func(w asked) bool {
			return w.c == first.c || first.spec.Threads > 1 && w.spec.Threads > 1 && w.spec.Group == first.spec.Group
		}
		if first.spec.Threads > 1 {
			if !lb.gathering || lb.gatherGroup != first.spec.Group {
				lb.gather(&first)
			}
			threads := map[uint16]bool{}
			for _, w := range lb.waiting {
				if own(w) && w.spec.Threads == first.spec.Threads {
					threads[w.spec.Thread] = true
				}
			}
			if len(threads) < int(first.spec.Threads) && time.Now().Before(lb.gatherEnd) {
				lb.cond.Wait()
				continue
			}
			lb.group = first.spec.Group
		}
		lb.gather(nil)
		if lb.once {
			lb.oneTaken, lb.oneGroup = true, first.spec.Group
		}
		lb.waiting = slices.DeleteFunc(lb.waiting, func(w asked) bool {
			switch {
			case own(w):
				taken = append(taken, w)
				return true
			case lb.once:
				lb.farewell(w.c, errOneTest)
				return true
			}
			return false
		})
		for _, w := range taken {
			delete(lb.heard, w.c)
		}
		lb.held = append(lb.held, taken...)
		lb.running = true
		return taken, nil, nil
	}
}

// gather starts the wait for the connections of the test of several
// threads first, at the head of the line, up to groupWait, or with nil
// ends the wait under way; lb.mu is held.
func (lb *lobby) gather(first *asked) {
	if lb.gatherWake != nil {
		lb.gatherWake.Stop()
		lb.gatherWake = nil
	}
	lb.gathering = first != nil
	if first != nil {
		lb.gatherGroup, lb.gatherEnd = first.spec.Group, time.Now().Add(groupWait)
		lb.gatherWake = time.AfterFunc(groupWait, lb.wake)
	}
}

// handOver ends the lobby's Alives to a connection taken, once run sends
// its own.
func (lb *lobby) handOver(c *exchange.Conn) {
	lb.mu.Lock()
	lb.held = slices.DeleteFunc(lb.held, func(w asked) bool { return w.c == c })
	lb.mu.Unlock()
}

// farewell tells a client why its test will not run, within a second,
// in a goroutine of its own; lb.mu is held.
func (lb *lobby) farewell(c *exchange.Conn, why error) {
	lb.wg.Add(1)
	go func() {
		defer lb.wg.Done()
		lb.tell(c, why)
	}()
}

// close ends accepting and every greeting, tells the clients waiting why
// their tests will not run (why), and waits for all of it: the
// listener is the caller's again, without a deadline, where ctx has not
// closed it.
func (lb *lobby) close(why error) {
	lb.stopWake()
	lb.mu.Lock()
	lb.closed = true
	close(lb.quit)
	for nc := range lb.pending {
		nc.Close()
	}
	for _, w := range lb.waiting {
		lb.farewell(w.c, why)
	}
	lb.waiting = nil
	lb.gather(nil)
	lb.cond.Broadcast()
	lb.mu.Unlock()
	dl, ok := lb.ln.(interface{ SetDeadline(time.Time) error })
	if !ok {
		lb.ln.Close()
	} else if dl.SetDeadline(time.Unix(1, 0)) == nil {
		defer dl.SetDeadline(time.Time{})
	}
	lb.wg.Wait()
}

// serveSpec runs the test taken, whose first connection is its client's
// or a test of several threads' first (taken[0]).
func serveSpec(ctx context.Context, taken []asked, l Local, lim Limits, onHeader func(report.Header)) (*Result, error) {
	c, spec := taken[0].c, taken[0].spec
	if err := admit(&spec, l, lim); err != nil {
		for _, w := range taken {
			hctx, cancel := context.WithTimeout(ctx, time.Second)
			w.c.SendError(hctx, err)
			cancel()
		}
		return nil, &RefusedError{Spec: spec, Err: err}
	}
	tctx, stop := boundTime(ctx, spec, lim)
	defer stop()
	var res *Result
	var err error
	if spec.Threads > 1 {
		res, err = serveThreads(tctx, asked{c, spec}, taken[1:], l, lim, onHeader)
	} else {
		// A test of a duration keeps as many samples as its time holds:
		// the limit on a test's iterations bounds them too.
		l.maxSamples = int(min(lim.MaxIterations, 1<<40))
		res, err = run(tctx, c, spec, l, "server", "", onHeader)
	}
	return overtimeOutcome(ctx, tctx, res, err)
}

// admit is a server's verdict on a client's test: admissible, and as
// l.Admit says.
func admit(spec *exchange.TestSpec, l Local, lim Limits) error {
	if err := admissible(spec, l, lim); err != nil {
		return err
	}
	if l.Admit != nil {
		return l.Admit(*spec)
	}
	return nil
}

// admissible is what of admit depends on the test and the server's
// settings alone: within its limits, its threads' rdma_cm ports (one
// each, from l.CMPort) within the port space. A deep default RX depth is
// first lowered to what the limits take (TestSpec.FitRXDepth).
func admissible(spec *exchange.TestSpec, l Local, lim Limits) error {
	spec.FitRXDepth(lim)
	if err := spec.CheckLimits(lim); err != nil {
		return err
	}
	if n := max(int(spec.Threads), 1); spec.RdmaCM && l.CMPort+n-1 > 65535 {
		return fmt.Errorf("%d threads over rdma_cm need ports %d to %d of this server, past 65535 (run the server with -p %d or lower)",
			n, l.CMPort, l.CMPort+n-1, 65535-n+1)
	}
	return nil
}

// handshakeSpec greets a client on c, accepted at at, and reads the
// test it asks for, within wait of ctx; a failure is a *notATest, which
// says what did not come, and in how long since at: a connection may
// have waited for its greeting's place (maxGreetings), and a frame begun
// as the wait ends gets a frame's grace more.
func handshakeSpec(ctx context.Context, c *exchange.Conn, at time.Time, wait time.Duration) (exchange.TestSpec, error) {
	hctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// late says what err, a wait cut short by wait, means.
	late := func(err error, what string) error {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &hintError{fmt.Sprintf(what, waited(at)), err}
		}
		return err
	}
	from := c.NetConn().RemoteAddr()
	if _, err := exchange.Handshake(hctx, c, Tool); err != nil {
		err = late(err, "sent no gorperf hello in %v (not a gorperf client?)")
		return exchange.TestSpec{}, &notATest{fmt.Errorf("connection from %s: %w", from, err)}
	}
	spec, err := c.RecvSpec(hctx)
	if pe := (*exchange.PeerError)(nil); errors.As(err, &pe) {
		return exchange.TestSpec{}, &GaveUpError{Addr: from.String(), Err: pe}
	}
	if err != nil {
		err = late(err, "said hello but asked for no test in %v")
		if closedByPeer(err) {
			// Its hello waited in the socket: a client that gave up on
			// a server stopped or flooded (it waits 20 s for the hello).
			err = fmt.Errorf("closed its connection before it asked for a test (it gave up waiting for this server's hello, or exited): %w", err)
		}
		return exchange.TestSpec{}, &notATest{fmt.Errorf("client %s: %w", from, err)}
	}
	return spec, nil
}

// run is the part both sides share: resources, setup swap, connection,
// then per size a barrier, the loops, and a result swap. Where the peer
// went silent past the idle timeout, it tells the peer so before it
// returns; where it failed otherwise, it looks for what the peer said
// of why (LastWord).
func run(ctx context.Context, c *exchange.Conn, spec exchange.TestSpec, l Local, role, host string, onHeader func(report.Header)) (*Result, error) {
	res, err := runSide(ctx, c, spec, l, role, host, onHeader)
	var se *exchange.SilenceError
	var qe *quietError
	var pe *exchange.PeerError
	var silent time.Duration // how long the peer has sent nothing, where that ended the run
	switch {
	case err == nil || errors.As(err, &pe):
	case errors.As(err, &se):
		silent = se.After
	case errors.As(err, &qe): // its first wait (firstWait)
		silent = qe.after
	default:
		// A peer that gave up on this side (stopped meanwhile, as
		// below), or refused its test, said why before it closed,
		// which explains what this side found: the connection closed,
		// or no completions.
		err = peerWord(c, role, err)
	}
	if silent > 0 {
		// The peer may only be stopped (Ctrl-Z): what this side says
		// waits in its socket, for when it goes on, where it would
		// find the connection closed and no reason.
		peer := "client"
		if role == "client" {
			peer = "server"
		}
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		c.SendError(tctx, fmt.Errorf("the %s gave up on this %s, which had sent nothing for %v, not even a keepalive (was it stopped, with Ctrl-Z or SIGSTOP, or hung?)",
			role, peer, silent))
		cancel()
	}
	return res, err
}

// peerWord is err, a side's failure, with what the peer said of why
// before it closed (LastWord), unless it said it was interrupted
// (withPeerWord). role is this side's.
func peerWord(c *exchange.Conn, role string, err error) error {
	if word := c.LastWord(); !peerAborted(word) {
		return withPeerWord(role, word, err)
	}
	return err
}

// withPeerWord puts said, the Error that the peer sent (why it gave up:
// on this side, stopped meanwhile; or why it refused the test), before
// err, what this side then found, as a *peerSaid, unless said is nil or
// err is the peer's Error itself, or both are the same check's
// (sameCheck): err alone then says it in full, from this side's point of
// view, where the peer's text, cut to exchange.MaxString bytes, said it
// from the peer's. A peer that said why it closed the connection before
// the test began did not exit or get killed, as a *closedEarly says: err
// is then what that wraps (a server that refuses a test as it asks
// closes at once, often before this side has sent its Setup, which then
// fails with a reset). role is this side's.
func withPeerWord(role string, said, err error) error {
	var pe *exchange.PeerError
	if said == nil || errors.As(err, &pe) || sameCheck(said, err) {
		return err
	}
	if ce, ok := err.(*closedEarly); ok {
		err = ce.err
	}
	peer := "server"
	if role == "server" {
		peer = "client"
	}
	return &peerSaid{peer: peer, said: said, err: err}
}

// peerSaid is what the peer said (said, its Error) and what this side
// then found (err), each from its own side's point of view: "the server
// said: ...; this side then found: ...". It matches both.
type peerSaid struct {
	peer      string // "server" or "client"
	said, err error
}

func (e *peerSaid) Error() string {
	what := e.said.Error()
	if pe, ok := e.said.(*exchange.PeerError); ok {
		what = pe.Said()
	}
	return fmt.Sprintf("the %s said: %s; this side then found: %v", e.peer, what, e.err)
}

func (e *peerSaid) Unwrap() []error { return []error{e.said, e.err} }

// checkError is the failure of a check that both sides make alike of
// what they swapped (the GIDs, the path MTU), whose code the peer gets
// with it (exchange.Coder): each side finds the same, from its own point
// of view, and tells the peer.
type checkError struct {
	code exchange.ErrorCode
	msg  string
}

func (e *checkError) Error() string                 { return e.msg }
func (e *checkError) ErrorCode() exchange.ErrorCode { return e.code }

// sameCheck reports whether said, the peer's Error, is the failure of
// the same check as err, this side's (a *checkError of its code).
func sameCheck(said, err error) bool {
	var pe *exchange.PeerError
	var ce *checkError
	return errors.As(said, &pe) && errors.As(err, &ce) && pe.Code == ce.code
}

// runSide is run, less what it tells a peer that went silent and reads
// of a peer gone.
func runSide(ctx context.Context, c *exchange.Conn, spec exchange.TestSpec, l Local, role, host string, onHeader func(report.Header)) (*Result, error) {
	ctl := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), controlTimeout)
	}
	// refuse tells the peer why this side cannot go on, and says so; run
	// tells a peer gone silent itself, in its own terms. A failure that
	// is the peer's word (a *exchange.PeerError: it gave up first, and
	// said why) goes back to it as nothing: the peer knows its reason,
	// and read its own words back as this side's ("the client said:
	// offer of path MTU: peer: ..." on a server whose rdma_cm port was
	// taken).
	refuse := func(err error) (*Result, error) {
		se, pe := (*exchange.SilenceError)(nil), (*exchange.PeerError)(nil)
		if !errors.As(err, &se) && !errors.As(err, &pe) {
			cctx, cancel := ctl()
			c.SendError(cctx, err)
			cancel()
		}
		return nil, err
	}
	// This side says it is alive while it has nothing else to say, from
	// here to the end, and the peer does the same from its start of run:
	// once its first Alive has come, a wait for the peer fails when it
	// has sent nothing for the idle timeout. Stopped or hung, in its
	// set-up as in the test, it would otherwise be waited for as long as
	// it stays so, or as long as the control protocol's 30 s.
	stopAlive := c.KeepAlive(alivePeriod(l))
	defer stopAlive()
	if handOver, ok := ctx.Value(handOverKey{}).(func(*exchange.Conn)); ok {
		handOver(c) // the server's lobby sent its Alives until here
	}
	c.SetPeerTimeout(idleTimeout(l))
	// first bounds each side's first wait for the other: a client's for
	// the server, which may queue it behind other clients' tests, and a
	// server's for its client's set-up (its Setup, or -R's first Sync),
	// which a client may take long to make (registering a large buffer):
	// as long as the peer sends something, Alives meanwhile, up to
	// controlTimeout without (the peer timeout, once its first Alive has
	// come). It ends at once with ctx (Ctrl-C): nothing has been
	// measured yet.
	first := ctl
	if h, ok := c.NetConn().(*heardConn); ok {
		first = func() (context.Context, context.CancelFunc) { return firstWait(ctx, h, controlTimeout, role) }
	}
	// unready is the failure of this side's first wait for the peer,
	// err: a server stopped meanwhile (ctx's end) tells its client so,
	// or, where another of the test's threads failed, that.
	unready := func(err error) error {
		if role == "server" && ctx.Err() != nil {
			why := errStoppedFirst
			var tf *threadFailure
			if errors.As(context.Cause(ctx), &tf) {
				why = tf
			}
			cctx, cancel := ctl()
			c.SendError(cctx, why)
			cancel()
		}
		return err
	}
	if ta, ok := c.NetConn().LocalAddr().(*net.TCPAddr); ok {
		l.ctlAddr = ta.AddrPort().Addr().Unmap()
	}
	s, err := openSession(spec, l)
	if err != nil {
		return refuse(err)
	}
	defer s.close()
	if role == "server" && l.ServerMTU != nil {
		l.ServerMTU(spec, s.mtuLimit())
	}
	if sc, ok := c.NetConn().(syscall.Conn); ok {
		s.ctl, _ = sc.SyscallConn()
	}
	if h, ok := c.NetConn().(*heardConn); ok {
		s.heard = h.lastHeard
	}
	switch {
	case spec.Multicast && spec.RdmaCM:
		err = s.cmJoin(ctx, role == "client")
	case spec.Multicast:
		err = s.joinGroup(role == "client")
	case spec.RdmaCM:
		err = s.cmConnect(ctx, c, role, host, first)
		if err != nil && role == "server" && ctx.Err() != nil {
			return nil, unready(err)
		}
	}
	if err != nil {
		return refuse(err)
	}
	cctx, cancel := first()
	remote, err := s.swapSetup(cctx, c, exchange.Setup{QPs: s.localInfo, Env: s.env()})
	err = unbegun(role, awaited(cctx, role, err))
	cancel()
	// The test has begun: a Queued the lobby sent as it was taken, read
	// later, says nothing true.
	c.OnQueued(nil)
	if err != nil {
		return nil, unready(err)
	}
	if err := s.connect(remote); err != nil {
		return refuse(err)
	}
	afterConnect(role == "client", s.qps)
	// After a measurement, the side that finished first waits for the
	// other as long as it takes: a passive side cannot know how long the
	// active side's run is, and a dead peer closes the connection (or
	// fails keepalive), while a stuck one hits its own idle timeout and
	// says so. Once interrupted, wait a little for the peer's numbers.
	waitPeer := func() (context.Context, context.CancelFunc) {
		if ctx.Err() != nil {
			return context.WithTimeout(context.WithoutCancel(ctx), interruptWait)
		}
		return context.WithCancel(ctx)
	}
	// abort tells the peer, once, that this side was interrupted, so that
	// it ends its loop at once (peerWatch).
	abort := stopOnce(func() {
		cctx, cancel := ctl()
		c.Send(cctx, exchange.ErrorMsg{Code: exchange.CodeAborted, Text: stopWords(ctx)})
		cancel()
	})
	sizes, err := s.sizes()
	if err != nil {
		return refuse(err)
	}
	client := role == "client"
	if spec.SizeDefault && client && l.SizeFitted != nil {
		l.SizeFitted(spec, int(sizes[len(sizes)-1]))
	}
	if spec.SizeDefault && len(sizes) == 1 && sizes[0] < spec.Size {
		// UD's default, over the path MTU: the size sent is the MTU.
		spec.Size = sizes[0]
	}
	if spec.Receives() {
		if err := s.prepostRecvs(); err != nil {
			return nil, err
		}
	}
	res := &Result{Spec: spec, Role: role, Header: s.header(client), Start: time.Now()}
	if onHeader != nil {
		onHeader(res.Header)
	}
	iters := spec.Iterations
	dur := time.Duration(spec.Duration) * time.Second
	var edges *cpuEdges                               // a passive side's CPU time at the span's edges
	defer func() { edges.span(cpuSample{}, false) }() // its timers, stopped
	for n, size32 := range sizes {
		size := int(size32)
		s.size = size
		if n > 0 {
			s.passed = max(s.passed, int(sizes[n-1])) // it ended, or the run had
		}
		if spec.ValidateData {
			s.fillPatterns(size, client)
		}
		if spec.WarmUp && s.active(client) {
			if spec.ValidateData {
				s.fillWarmUp(size)
			}
			// One-sided operations: the peer need not be at the barrier.
			err := s.warmUp(ctx, size)
			if spec.ValidateData {
				// The sources hold the pattern again, and a reader's
				// targets, where the warm-up's reads put it, the
				// complement.
				s.fillPatterns(size, client)
			}
			res.WarmedUp = s.warmed
			if err != nil && ctx.Err() != nil {
				abort() // the peer waits at the barrier
				res.Interrupted = true
				return res, nil
			}
			if err != nil {
				if word := peerStoppedMeanwhile(c); word != nil {
					// The peer was stopped at the barrier (it sent its
					// abort there) and closed its QPs under the warm-up.
					res.peerStopped(word)
					return res, nil
				}
				return res, fmt.Errorf("warming up: %w", err)
			}
		}
		if l.group != nil {
			l.group.wait() // the side's threads start the size together
		}
		// barrier waits for the peer at step seq, within the time that
		// timeout gives; stop is set where the run ends there.
		barrier := func(seq uint32, timeout func() (context.Context, context.CancelFunc)) (stop bool, err error) {
			cctx, cancel := timeout()
			err = c.Barrier(cctx, seq)
			cancel()
			switch {
			case err != nil && peerAborted(err):
				// The peer was interrupted after the last size's
				// results, or in its warm-up; this side may have been
				// too (loopback's one Ctrl-C).
				res.peerStopped(err)
				res.Interrupted = ctx.Err() != nil
				return true, nil
			case err != nil && ctx.Err() != nil:
				abort()
				res.Interrupted = true
				return true, nil
			}
			return err != nil, err
		}
		if spec.WarmUp {
			// The peer warms up before it comes here, for as long as its
			// messages take (a warm-up that stalls fails there): each
			// side waits for it as for its result, not for the usual
			// 30 s, a passive side and in a bidirectional test an
			// active one too, whose peer's warm-up a rate limit of the
			// peer's may make outlast its own (a dead peer closes the
			// connection or fails keepalive). Past this step both sides' warm-ups are over
			// and their messages have landed, so that the counters'
			// first reading below does not count them: taken before
			// this wait, a passive side's (and in a bidirectional test
			// either side's) could come before the peer's warm-up was
			// done, and -W then counted its messages as the size's.
			if stop, err := barrier(warmedSeq|uint32(n+1), waitPeer); stop {
				return res, err
			}
		}
		// The port's counters, from before the barrier that starts the
		// size (the peer cannot have started) to the end of the result
		// swap (both sides done).
		var before counters.Snapshot
		if s.counters != nil {
			before, _ = s.counters.Read()
		}
		if stop, err := barrier(uint32(n+1), ctl); stop {
			return res, err
		}
		// The process's CPU time, from the barrier to the moment both
		// sides are done (the passive side's loop ends at once). A
		// passive side of a run with a margin takes it at the span's
		// edges too (cpuEdges), where its peer's count is the span's.
		var cpuStart, cpuEnd cpuSample
		edges.span(cpuSample{}, false) // the last size's timers, stopped
		edges = nil
		if s.local.CPUUtil {
			cpuStart = sampleCPU()
			if s.passive(client) && !spec.RunInfinitely {
				edges = newCPUEdges(cpuStart.at, dur, s.margin())
			}
		}
		var mine sideResult
		var peer exchange.Result
		add := func(r SizeResult) {
			if r.IsLatency && !s.passive(client) && r.Lat.N == 0 {
				// A side that times a latency test (the client, a
				// write_lat or send_lat responder): without samples
				// (interrupted at once) it has nothing to report,
				// where a result without samples says that the peer
				// measured it, as on read_lat's server.
				return
			}
			if s.local.CPUUtil && cpuEnd.at.IsZero() {
				cpuEnd = sampleCPU() // before the counters' read, which may wait
			}
			if before != nil {
				if after, err := s.counters.Read(); err == nil {
					r.Counters = s.counters.Diff(before, after)
				}
			}
			if s.local.CPUUtil {
				msgs := r.messages()
				if r.IsLatency { // either side's count: a passive side keeps no samples
					msgs = max(mine.Iters, peer.Iterations)
				}
				from, to := cpuStart, cpuEnd
				if mine.CPU != nil { // -f: the span the counts cover
					from, to = mine.CPU[0], mine.CPU[1]
				} else if f, t, ok := edges.span(cpuEnd, r.IsLatency); ok {
					from, to = f, t // -f on a passive side: the span, by the clock
				}
				r.CPU = to.since(from, msgs)
			}
			res.Sizes = append(res.Sizes, r)
			if l.SizeDone != nil {
				l.SizeDone(r)
			}
		}
		// The peer's messages of the size's end are received while the
		// loop runs: the loop ends when the peer says it was interrupted,
		// when its run failed, and in an infinite run when its loop ended
		// (peerWatch). (No validation barrier in an infinite run:
		// Validate refuses --validate with RunInfinitely.)
		loopCtx, endLoop := context.WithCancelCause(ctx)
		watch := s.watchPeer(ctx, c, endLoop, s.watchesPeer(client))
		var runErr error
		mine, runErr = s.runSize(loopCtx, size, iters, dur, client)
		if peerEnded(loopCtx) && ctx.Err() == nil && errors.Is(runErr, context.Canceled) {
			runErr = nil // the peer's run ended, and so this one did
		}
		endLoop(nil)
		watch.finish()
		interrupted := errors.Is(runErr, context.Canceled)
		if ctx.Err() != nil {
			abort() // before anything else the peer reads
		}
		local := exchange.Result{Iterations: mine.reported(), Bytes: mine.Bytes, Elapsed: mine.Elapsed,
			PeakMessages: mine.Peak.Messages, PeakElapsed: mine.Peak.Elapsed}
		if runErr != nil && !interrupted {
			// The loop's failure, which has no code in a Result: the
			// checks that both sides make alike (a *checkError) fail
			// before the first barrier, and go to the peer in an
			// ErrorMsg with theirs (refuse), so that a peer that
			// finds the same says it once (TestChecksSentAsErrorMsg).
			local.Error = runErr.Error()
		}
		if spec.ValidateData && (runErr == nil || interrupted) {
			// Wait until both sides are done before looking at the data:
			// a passive side's loop ends before the peer's writes do. A
			// side stopped by Ctrl-C comes too, so that the peer, which
			// may be waiting here, gets its Sync, not its Result.
			seq := uint32(1<<31 | n)
			cctx, cancel := ctl()
			err := c.Send(cctx, exchange.Sync{Seq: seq})
			cancel()
			if err == nil {
				var m exchange.Message
				if m, err = watch.await(ctx, abort); err == nil {
					err = recvSync(m, seq)
				}
			} else {
				watch.stop()
			}
			if err != nil && (interrupted || ctx.Err() != nil || watch.wasAborted()) {
				res.Interrupted = interrupted || ctx.Err() != nil
				watch.mark(res)
				add(s.sizeResult(size, mine, exchange.Result{}, client))
				return res, nil
			}
			if err != nil {
				return res, err
			}
			if s.local.CPUUtil {
				cpuEnd = sampleCPU() // both done; the check is not the test's
			}
			watch.mark(res)
			if interrupted || res.PeerInterrupted {
				// A stopped run's last state is not the one the check
				// expects (fetch-and-add's count): only the messages
				// checked as they came count.
				local.Mismatches, s.immBad = s.immBad, 0
			} else {
				beforeValidate(client, s.buf.Bytes())
				local.Mismatches = s.validate(size, client, mine.Iters)
			}
			// The peer's Result comes next, after an Error if it is
			// stopped meanwhile.
			watch = s.watchPeer(ctx, c, func(error) {}, false)
			watch.finish()
		}
		cctx, cancel = ctl()
		err = c.Send(cctx, local)
		cancel()
		if err == nil {
			var m exchange.Message
			if m, err = watch.await(ctx, abort); err == nil {
				peer, err = recvResult(m)
			}
		}
		watch.stop()
		watch.mark(res)
		if l.group != nil {
			l.group.wait() // thread 0's counters and CPU time cover every thread's run
		}
		if runErr != nil && !interrupted {
			if mine.Iters > 0 {
				// Report what this side measured before the failure.
				add(s.sizeResult(size, mine, exchange.Result{}, client))
			}
			return res, withPeerWord(role, watch.peerError(), runErr)
		}
		if err != nil {
			if interrupted || ctx.Err() != nil || res.PeerInterrupted {
				res.Interrupted = interrupted || ctx.Err() != nil
				add(s.sizeResult(size, mine, exchange.Result{}, client))
				return res, nil
			}
			if spec.RunInfinitely && mine.Iters > 0 && closedByPeer(err) {
				// The peer ended the infinite run by exiting before its
				// result (killed): this side's figures are the run's.
				add(s.sizeResult(size, mine, exchange.Result{}, client))
				return res, nil
			}
			if f := s.fault.Load(); f != nil {
				// This side's port went down (await's fault): the
				// peer's silence, or its closing, follows from that.
				return res, *f
			}
			if closedByPeer(err) && !errors.Is(err, errPeerClosed) {
				// Killed, the peer said nothing first: say so, as an
				// active side that finds the connection closed does.
				err = fmt.Errorf("%w (%v)", errPeerClosed, err)
			}
			what := "exchanging results with the peer"
			if s.passive(client) {
				// A passive side's loop ends at once: it waits here
				// through the peer's run.
				what = "waiting for the peer's run and its result"
			}
			return res, withPeerWord(role, watch.peerError(), fmt.Errorf("%s: %w", what, err))
		}
		if err := peer.Err(); err != nil {
			return res, err // "peer: " and its reason, made printable
		}
		res.Mismatches += local.Mismatches + peer.Mismatches
		add(s.sizeResult(size, mine, peer, client))
		stopped := interrupted || ctx.Err() != nil || res.PeerInterrupted
		if spec.Receives() && n+1 < len(sizes) && !stopped {
			// Both sides are done: a message one sent after the other
			// stopped has completed a receive by now.
			if err := s.settleReceives(); err != nil {
				return res, fmt.Errorf("replacing the receives of size %d: %w", size, err)
			}
		}
		if interrupted || ctx.Err() != nil {
			// Stopped after the result swap (a thread waiting for the
			// others, the counters' read): the peer, bound for the next
			// size's barrier, hears of it there, not from a closed
			// connection.
			if n+1 < len(sizes) {
				abort()
			}
			res.Interrupted = true
			return res, nil
		}
		if res.PeerInterrupted || spec.RunInfinitely {
			// The peer stops here; an infinite run's one size ended
			// with the peer's stop.
			return res, nil
		}
	}
	return res, nil
}

// swapSetup is c.SwapSetup, unless the peer's message came already
// (s.early, received while the server accepted rdma_cm connections): then
// it sends this side's Setup and takes that one.
func (s *session) swapSetup(ctx context.Context, c *exchange.Conn, local exchange.Setup) (exchange.Setup, error) {
	m := s.early
	if m == nil {
		return c.SwapSetup(ctx, local)
	}
	s.early = nil
	if err := c.Send(ctx, local); err != nil {
		return exchange.Setup{}, err
	}
	r, ok := m.(exchange.Setup)
	if !ok {
		return exchange.Setup{}, &exchange.UnexpectedError{Want: exchange.TypeSetup, Got: m.Type()}
	}
	return r, nil
}

// unbegun is err, the failure of a side's first step with the peer (the
// Setup swap, -R's swap of Offers or first barrier), said so where the
// peer closed the connection: a server killed while its client waited
// its turn, or a client that went as its turn came. It wraps err.
func unbegun(role string, err error) error {
	if err == nil || !closedByPeer(err) {
		return err
	}
	peer := "server"
	if role == "server" {
		peer = "client"
	}
	return &closedEarly{peer, err}
}

// closedEarly is a peer's closing of the control connection before the
// test began (unbegun).
type closedEarly struct {
	peer string // "client" or "server"
	err  error
}

func (e *closedEarly) Error() string {
	return fmt.Sprintf("the %s closed the connection before the test began (it exited or was killed): %v", e.peer, e.err)
}
func (e *closedEarly) Unwrap() error { return e.err }

// Is matches errPeerClosed: the peer closed the control connection, as
// a peer that closes it later does (the JSON's code "peer").
func (e *closedEarly) Is(target error) bool { return target == errPeerClosed }

// alivePeriod is how often a side sends an Alive: every 250 ms, a quarter
// of the shortest --peer-timeout, or a quarter of this side's idle timeout
// if that is shorter still. The peer's timeout is its own and may be the
// shortest: a few Alives may be late before it gives up on this side.
func alivePeriod(l Local) time.Duration { return min(250*time.Millisecond, idleTimeout(l)/4) }

// warmedSeq marks the barrier after a size's warm-ups (TestSpec.WarmUp),
// numbered as the size's own: apart from those, and from --validate's
// (1<<31).
const warmedSeq = 1 << 30

// controlTimeout bounds each step of the control protocol that a peer
// that is still there finishes at once. (A variable for the tests.)
var controlTimeout = 30 * time.Second

// beforeWarmUp runs on the active side before each size's warm-up. (For
// the tests.)
var beforeWarmUp = func() {}

// beforeLoop runs on each side just before its measuring loop starts (and
// so its clock for a duration); a test sets it to start the sides apart.
var beforeLoop = func(client bool) {}

// beforeValidate gets each side's buffer once both sides are done with a
// size and before --validate looks at it, for tests that spoil it.
var beforeValidate = func(client bool, buf []byte) {}

// afterConnect gets each side's QPs once they are connected, for tests
// that look at them.
var afterConnect = func(client bool, qps []*ibverbs.QP) {}

// warmUp is perftest's --perform_warm_up: before a size is measured, each
// QP posts a TX depth of its messages and waits for them, outside the
// measurement, its counters and its CPU time, so that caches and the
// device's translations are warm.
func (s *session) warmUp(ctx context.Context, size int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	beforeWarmUp()
	n := uint64(max(s.spec.TXDepth, 1))
	s.warming = true
	r, err := s.runSender(ctx, size, n, 0)
	s.warming = false
	s.warmed += r.Iters / uint64(len(s.qps)) // fetch-and-add: each adds 1 on its QP's target
	return err
}

// runSize runs one message size on this side.
func (s *session) runSize(ctx context.Context, size int, iters uint64, dur time.Duration, client bool) (sideResult, error) {
	// The measuring loop keeps one OS thread: moved between threads (as
	// after each cgo call whose P was handed off), it also moves between
	// CPUs, and on rxe the data path's kernel work then lands on the other
	// CPU while this one spins (docs/performance.md).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	beforeLoop(client)
	spec := s.spec
	switch spec.Test {
	case exchange.WriteBW, exchange.ReadBW, exchange.AtomicBW, exchange.SendBW:
		// Where messages consume receives (sends, writes with immediate
		// data), the passive side counts them, and in a bidirectional
		// test the sending loop also keeps the receive queues full, one
		// loop for both directions, as perftest's does.
		if s.active(client) {
			return s.runSender(ctx, size, iters, dur)
		}
		if spec.Receives() {
			return s.runReceiver(ctx, size, iters, dur)
		}
		return sideResult{}, nil
	case exchange.WriteLat:
		if spec.Immediate { // each write completes a receive: send_lat's loop
			return s.pingSend(ctx, size, iters, dur, client)
		}
		return s.pingWrite(ctx, size, iters, dur, client)
	case exchange.SendLat:
		return s.pingSend(ctx, size, iters, dur, client)
	case exchange.ReadLat, exchange.AtomicLat:
		if client {
			return s.oneSided(ctx, size, iters, dur)
		}
		return sideResult{}, nil
	}
	return sideResult{}, fmt.Errorf("unknown test %v", spec.Test)
}

// cpuSample is the process's CPU time at one moment (getrusage(2),
// RUSAGE_SELF: every thread, the runtime's too), the host's user and
// idle ticks then (/proc/stat, perftest's --cpu_util), and the moment.
type cpuSample struct {
	user, sys          time.Duration
	hostUser, hostIdle uint64    // both zero: /proc/stat not read
	at                 time.Time // zero: not taken
}

func sampleCPU() cpuSample {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // cannot fail for RUSAGE_SELF
	c := cpuSample{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), at: time.Now()}
	c.hostUser, c.hostIdle = readHostTicks()
	return c
}

// since returns the CPU time from start to c, for msgs messages, and
// the host's ticks between them where both read /proc/stat.
func (c cpuSample) since(start cpuSample, msgs uint64) *stats.CPU {
	r := &stats.CPU{User: c.user - start.user, System: c.sys - start.sys, Wall: c.at.Sub(start.at), Messages: msgs}
	if start.hostUser+start.hostIdle > 0 && c.hostUser >= start.hostUser && c.hostIdle >= start.hostIdle {
		r.HostUser, r.HostIdle = c.hostUser-start.hostUser, c.hostIdle-start.hostIdle
	}
	return r
}

// passive reports whether this side runs no loop of its own in a size,
// as runSize has it: the server of read_lat and atomic_lat, and the
// target of a one-way write (without immediate data), read or atomic
// bandwidth test. Such a side reports what the peer measured. A side
// that receives (send_bw's, write_bw's with immediate data) counts what
// it received, none too: it is not passive for having received nothing.
func (s *session) passive(client bool) bool {
	switch s.spec.Test {
	case exchange.ReadLat, exchange.AtomicLat:
		return !client
	case exchange.WriteLat, exchange.SendLat:
		return false
	}
	return !s.active(client) && !s.spec.Receives()
}

// sizeResult turns the two sides' measurements into the reported numbers.
// Bandwidth is the measuring side's; bidirectional adds the peer's, over
// the longer of the two times, and the two peaks, as perftest's does. A
// passive side reports the peer's figures; a receiver that received
// nothing reports none, not the sender's, and a one-way test's receiver
// no peak (PeakMBps 0).
func (s *session) sizeResult(size int, mine sideResult, peer exchange.Result, client bool) SizeResult {
	passive := s.passive(client)
	if s.spec.Test.IsLatency() {
		r := SizeResult{Size: size, IsLatency: true, Samples: mine.Samples.v, Iterations: mine.reported()}
		if passive {
			r.Iterations = peer.Iterations
		} else if s.spec.Duration > 0 {
			r.Window = mine.Window
		}
		if len(mine.Samples.v) > 0 {
			r.Lat, _ = mine.Samples.summarize()
		}
		return r
	}
	n := s.payload(size)
	if passive { // what the active side measured
		return SizeResult{Size: size, BW: stats.ComputeBandwidthPeak(n, peer.Iterations, peer.Elapsed, peerPeak(peer))}
	}
	local := stats.ComputeBandwidthPeak(n, mine.Iters, mine.Elapsed, mine.Peak)
	if !s.spec.Bidirectional {
		if !s.active(client) {
			// The receiver of a one-way send test (send_bw's, write_bw's
			// with immediate data) times no windows: it has no peak,
			// which report shows as perftest's 0.00, not the average.
			local.PeakMBps = 0
		}
		return SizeResult{Size: size, BW: local}
	}
	remote := stats.ComputeBandwidthPeak(n, peer.Iterations, peer.Elapsed, peerPeak(peer))
	return SizeResult{Size: size, BW: bothWays(local, remote), Local: &local, Remote: &remote}
}

// peerPeak is the peak window a peer's Result carries.
func peerPeak(r exchange.Result) stats.Window {
	return stats.Window{Messages: r.PeakMessages, Elapsed: r.PeakElapsed}
}

// bothWays is a bidirectional test's figure, as perftest's
// print_full_bw_report makes it: each direction's bandwidth and message
// rate over its own time, added (and the peaks too, at least the
// average). The messages are this side's, as perftest prints them in its
// row and its JSON (Local and Remote keep each direction's); the time is
// the longer one.
func bothWays(local, remote stats.Bandwidth) stats.Bandwidth {
	bw := stats.ComputeBandwidth(local.Bytes, local.Iterations+remote.Iterations, max(local.Elapsed, remote.Elapsed), 0)
	bw.Iterations = local.Iterations
	bw.AvgMBps = local.AvgMBps + remote.AvgMBps
	bw.MsgRateMpps = local.MsgRateMpps + remote.MsgRateMpps
	bw.PeakMBps = max(bw.AvgMBps, local.PeakMBps+remote.PeakMBps)
	return bw
}

// messages is what a size's CPU time is spread over: its messages, both
// directions' in a bidirectional test, whose loop here serves both.
func (r SizeResult) messages() uint64 {
	if r.Local != nil && r.Remote != nil {
		return r.Local.Iterations + r.Remote.Iterations
	}
	return r.BW.Iterations
}

// fillPatterns writes the validation pattern where this side's data comes
// from: the source regions, and for read tests the target regions the
// peer reads. Where this side's own data lands, the target regions of a
// one-way reader and of a side that receives writes or sends, it writes
// the pattern's complement, so that a size whose messages did not land
// shows, even where the region held the pattern before (a file's pages,
// --mmap; a warm-up's reads). write_lat's last byte, which the loop
// polls for the peer's message number, gets 0, no number. Before the
// barrier that starts the size, which the peer's messages come after.
func (s *session) fillPatterns(size int, client bool) {
	b := s.buf.Bytes()
	t := s.spec.Test
	read := t == exchange.ReadBW || t == exchange.ReadLat
	reader := read && s.active(client) && !s.spec.Bidirectional
	receiver := (t == exchange.WriteBW || t == exchange.SendBW) && (!s.active(client) || s.spec.Bidirectional) ||
		t == exchange.WriteLat || t == exchange.SendLat
	for i := range s.qps {
		pattern(b[s.src(i):s.src(i)+size], size, i)
		switch {
		case read:
			dst := b[s.dst(i) : s.dst(i)+size]
			pattern(dst, size, i)
			if reader {
				complement(dst)
			}
		case receiver:
			off := s.recvOffset(i)
			dst := b[off : off+size]
			pattern(dst, size, i)
			complement(dst)
			if t == exchange.WriteLat && !s.spec.Immediate {
				dst[size-1] = 0
			}
		}
	}
}

// complement inverts every bit of b.
func complement(b []byte) {
	for j := range b {
		b[j] = ^b[j]
	}
}

// fillWarmUp makes the sources a validating side's warm-up sends hold the
// pattern's complement, so that the warm-up's writes cannot leave in the
// peer's targets what the size's own must: fillPatterns writes the
// pattern again after the warm-up.
func (s *session) fillWarmUp(size int) {
	b := s.buf.Bytes()
	for i := range s.qps {
		src := b[s.src(i) : s.src(i)+size]
		pattern(src, size, i)
		complement(src)
	}
}

// validate checks, on each side that received data, that the last message
// on each QP arrived intact, and returns the number of QPs where it did
// not, plus the messages whose immediate data was wrong (immCheck). Writes
// and sends land in the receiver's target region (after the GRH on UD),
// reads in the reader's; fetch-and-add fetches one less than the number of
// operations on the QP, and compare-and-swap (compare 0, swap 0) always 0.
// done is the messages this side's loop completed. TestSpec.Validate
// refuses what cannot be checked: a bidirectional read_bw, whose reads
// land where the pattern already is, FETCH_AND_ADD bandwidth for a
// duration, whose count per QP is not known, and infinite runs.
func (s *session) validate(size int, client bool, done uint64) uint64 {
	t := s.spec.Test
	bad := s.immBad
	s.immBad = 0
	if t.IsLatency() {
		if !s.latencyIntact(size, client, done) {
			bad++
		}
		return bad
	}
	active := s.active(client) // this side posted the operations
	passive := !active || s.spec.Bidirectional
	b := s.buf.Bytes()
	want := make([]byte, size)
	for i := range s.qps {
		switch {
		case (t == exchange.WriteBW || t == exchange.SendBW) && passive,
			t == exchange.ReadBW && active:
			off := s.recvOffset(i)
			if s.srqFilled == nil {
				pattern(want, size, i)
				if string(b[off:off+size]) != string(want) {
					bad++
				}
				break
			}
			// Through an SRQ, a region holds what the last messages of
			// the QPs that landed there left: two receives into one
			// region may be filled at once, packet by packet, so each
			// byte must be the byte at its place of the message of one
			// of the QPs whose messages completed a receive there in
			// this size's run. The regions of this size's run are
			// checked.
			if filled, from := s.srqFilled.landed(i); filled && !anyPattern(b[off:off+size], want, from) {
				bad++
			}
			s.srqFilled.reset(i)
		case t == exchange.AtomicBW && active && s.spec.Atomic == exchange.CmpSwap:
			if fetchedValue(b[s.src(i):]) != 0 {
				bad++
			}
		case t == exchange.AtomicBW && active:
			if fetchedValue(b[s.src(i):]) != s.warmed+s.spec.Iterations-1 {
				bad++
			}
		}
	}
	return bad
}

// recvOffset is where a message to QP i lands in this side's buffer: its
// target region, after the GRH on UD.
func (s *session) recvOffset(i int) int {
	if s.spec.ConnType == ibverbs.QPTypeUD {
		return s.dst(i) + grhLen
	}
	return s.dst(i)
}

// latencyIntact reports whether the last message of a latency test's
// size arrived intact on this side, which ran done iterations. The tests
// run on QP 0. write_lat's and send_lat's sides both receive: the peer's
// messages land in the target region, a write's last byte being its
// number (seqByte), the last that came done-1, and through an SRQ in any QP's region. A read_lat or
// atomic_lat client reads into its target region or fetches into its
// source; their server receives nothing.
func (s *session) latencyIntact(size int, client bool, done uint64) bool {
	b := s.buf.Bytes()
	want := make([]byte, size)
	pattern(want, size, 0)
	switch t := s.spec.Test; {
	case t == exchange.WriteLat && !s.spec.Immediate:
		// The last byte is the number of the last message that came, the
		// peer's message done-1: the whole of a 1-byte message.
		off := s.dst(0)
		if done > 0 && b[off+size-1] != seqByte(done-1) {
			return false
		}
		return string(b[off:off+size-1]) == string(want[:size-1])
	case t == exchange.WriteLat, t == exchange.SendLat:
		regions := 1
		if s.srq != nil {
			regions = len(s.qps) // the receives posted first took every region
		}
		for i := range regions {
			if off := s.recvOffset(i); string(b[off:off+size]) == string(want) {
				return true
			}
		}
		return false
	case t == exchange.ReadLat && client:
		off := s.dst(0)
		return string(b[off:off+size]) == string(want)
	case t == exchange.AtomicLat && client && s.spec.Atomic == exchange.CmpSwap:
		return fetchedValue(b[s.src(0):]) == 0
	case t == exchange.AtomicLat && client:
		return done == 0 || fetchedValue(b[s.src(0):]) == done-1
	}
	return true
}

// anyPattern reports whether each byte of got is that of the pattern of
// one of the QPs qps, at its place; want is scratch of got's length.
func anyPattern(got, want []byte, qps []int) bool {
	ok := make([]bool, len(got))
	for _, qp := range qps {
		pattern(want, len(got), qp)
		for j := range got {
			ok[j] = ok[j] || got[j] == want[j]
		}
	}
	return !slices.Contains(ok, false)
}

// srqLanded records, for --validate through an SRQ, which QPs' messages
// completed a receive into each region in a size's run: the receive's ID
// is its region (recvWR), the completion's QP number the QP the message
// came to, whose peer sent that QP's pattern.
type srqLanded struct {
	index  map[uint32]int // QP number to the QP's index
	filled []bool         // whether any message landed in each region
	bits   [][]uint64     // each region's QPs, a bit each
}

func newSRQLanded(qps []*ibverbs.QP) *srqLanded {
	l := &srqLanded{index: make(map[uint32]int, len(qps)), filled: make([]bool, len(qps)), bits: make([][]uint64, len(qps))}
	for i, qp := range qps {
		l.index[qp.Num()] = i
		l.bits[i] = make([]uint64, (len(qps)+63)/64)
	}
	return l
}

// add records a message to the QP numbered qpn in region i. One to a QP
// that is not the session's, which the device would not complete here,
// fills the region with no QP's pattern to match.
func (l *srqLanded) add(i int, qpn uint32) {
	if i >= len(l.bits) {
		return
	}
	l.filled[i] = true
	if q, ok := l.index[qpn]; ok {
		l.bits[i][q/64] |= 1 << (q % 64)
	}
}

// landed reports whether messages landed in region i in this size's run,
// and the QPs they came to.
func (l *srqLanded) landed(i int) (filled bool, qps []int) {
	for w, b := range l.bits[i] {
		for ; b != 0; b &= b - 1 {
			qps = append(qps, w*64+bits.TrailingZeros64(b))
		}
	}
	return l.filled[i], qps
}

// reset forgets what landed in region i, for the next size.
func (l *srqLanded) reset(i int) {
	l.filled[i] = false
	clear(l.bits[i])
}

// notATest is a control connection that ended before asking for a test:
// not a gorperf client, or a client that gave up. Servers keep waiting.
// KeepsWaiting reports whether err, given to Serve's done with no
// result, left Serve waiting for the next client even when serving once:
// the connection was not a gorperf client's test (another program, or a
// client that gave up before asking for one).
func KeepsWaiting(err error) bool {
	var nt *notATest
	return errors.As(err, &nt)
}

type notATest struct{ err error }

// GaveUpError is a client that, greeted, said why it gave up instead of
// asking for its test (giveUp): a one-test server's Serve ends with it,
// as it would with the failure of that client's test. Addr is the
// client's address (its control connection's, as a Result's Peer), Err
// what it said.
type GaveUpError struct {
	Addr string
	Err  *exchange.PeerError
}

// Error says "client ADDR gave up before it asked for a test: " and the
// client's own words, without PeerError's "peer: ".
func (e *GaveUpError) Error() string {
	return fmt.Sprintf("client %s gave up before it asked for a test: %s", e.Addr, strings.TrimPrefix(e.Err.Error(), "peer: "))
}

// Unwrap returns what the client said.
func (e *GaveUpError) Unwrap() error { return e.Err }

func (e *notATest) Error() string { return e.err.Error() }
func (e *notATest) Unwrap() error { return e.err }
