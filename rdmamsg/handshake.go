//go:build linux && cgo

package rdmamsg

import (
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
	"syscall"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// Handshake makes a Conn over a connection the two sides already have (a
// TCP connection, say) instead of through rdma_cm: each side calls it with
// its end of nc, and they swap their queue pairs' endpoints and their
// hellos over it, as perftest and many RDMA programs do. nc is the Conn's
// from then on, even when Handshake fails: it stays open beside the Conn
// as its control channel, Close closes it, and the peer's end closing is
// the end of the connection, as a disconnect is for a Conn that Dial made.
// Nothing else may read or write nc.
//
// The RDMA port is the one with a RoCE v2 GID for nc's local IP address,
// as rdma_cm would choose, so the messages take the route that nc's
// packets take; Config.Device names a device (and port) instead. Of
// Config.CM, only AckTimeout (default 18, about 1 s, as rdma_cm's on
// RoCE), RetryCount (default rdmacm.DefaultRetryCount, 6, as Dial's),
// RNRRetryCount, MinRNRTimer and TOS apply, each side's to its own QP.
// Handshake returns once both sides' receives are posted, or when ctx
// ends. A ctx without a deadline is bounded by Config.HandshakeTimeout
// (10 s by default), from the call, as a Listener bounds its peers'
// handshakes: a peer that connected and says nothing, or stops half-way,
// fails the Handshake with an error that names the limit and matches
// os.ErrDeadlineExceeded, rather than hold it forever. A ctx with a
// deadline is bounded by that alone.
func Handshake(ctx context.Context, nc net.Conn, cfg *Config) (*Conn, error) {
	checkContext(ctx, "Handshake")
	c, err := cfg.withDefaults()
	if err != nil {
		nc.Close()
		return nil, err
	}
	conn := newConn(&c)
	l, peer, err := handshake(ctx, nc, conn, &c)
	if err != nil {
		return nil, fmt.Errorf("rdmamsg: handshake with %s: %w", nc.RemoteAddr(), err)
	}
	if err := conn.start(l, peer); err != nil {
		return nil, fmt.Errorf("rdmamsg: handshake with %s: %w", nc.RemoteAddr(), err)
	}
	go l.watch()
	return conn, nil
}

// handshakeAckTimeout is a Handshake QP's local ACK timeout unless
// Config.CM.AckTimeout says otherwise: 4.096 µs × 2^18, about 1.07 s, in
// the range rdma_cm derives from a RoCE path (19 on soft-RoCE under Linux
// 6.1), so that a Conn behaves alike however it was made. The verbs'
// default of 14 (67 ms) made rxe under emulation resend while the
// answers were still on their way.
const handshakeAckTimeout = 18

// netLink is the link Handshake makes: a QP on resources of its own,
// connected to the endpoint the peer sent over nc, which stays open to
// tell each side of the other's end.
type netLink struct {
	nc            net.Conn
	local, remote netip.AddrPort

	ctx     *ibverbs.Context
	pd      *ibverbs.PD
	ch      *ibverbs.CompChannel
	cq      *ibverbs.CQ // for the send and the receive queue, as rdmacm.Config.SharedCQ
	qp      *ibverbs.QP
	cleanup func() error // postReceives'

	done      chan struct{}
	mu        sync.Mutex
	err       error
	closing   bool
	closeOnce sync.Once
	closeErr  error
}

func (l *netLink) QP() *ibverbs.QP            { return l.qp }
func (l *netLink) PD() *ibverbs.PD            { return l.pd }
func (l *netLink) SendCQ() *ibverbs.CQ        { return l.cq }
func (l *netLink) RecvCQ() *ibverbs.CQ        { return l.cq }
func (l *netLink) LocalAddr() netip.AddrPort  { return l.local }
func (l *netLink) RemoteAddr() netip.AddrPort { return l.remote }
func (l *netLink) Done() <-chan struct{}      { return l.done }

func (l *netLink) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// watch waits for the peer's end of nc to close (or anything else to come
// on it, which the protocol never sends) and ends the link, moving the QP
// to the error state.
func (l *netLink) watch() {
	var b [1]byte
	n, err := l.nc.Read(b[:])
	l.mu.Lock()
	switch {
	case l.closing:
		l.err = ErrClosed
	case n > 0:
		l.err = fmt.Errorf("rdmamsg: %s sent data on the handshake's connection, which it must not: %w", l.remote, syscall.EPROTO)
	case err == io.EOF:
		l.err = fmt.Errorf("%w: %s closed the handshake's connection", rdmacm.ErrDisconnected, l.remote)
	default:
		l.err = fmt.Errorf("rdmamsg: the handshake's connection to %s: %w", l.remote, err)
	}
	if !l.closing {
		// As rdma_cm does on a disconnect: the peer's QP is gone, and
		// a keepalive or credit update sent to it would fail only when
		// its retries ran out, long after the end was known.
		l.qp.ToError()
	}
	l.mu.Unlock()
	close(l.done)
}

// disconnect moves the QP to the error state, so that the device leaves
// the buffers alone, and closes nc, which the peer takes for the end.
func (l *netLink) disconnect() error {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	err := l.qp.ToError()
	l.nc.Close()
	return err
}

// Close frees the link's resources in reverse order of creation, the
// receives first; after a failed handshake some are nil.
func (l *netLink) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
		var errs []error
		if err := l.nc.Close(); !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err) // disconnect closed it first
		}
		if l.cleanup != nil {
			errs = append(errs, l.cleanup())
		}
		errs = append(errs, closeMade(l.qp), closeMade(l.cq), closeMade(l.ch), closeMade(l.pd), closeMade(l.ctx))
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// closeMade closes r if it was made (is not nil).
func closeMade[R interface {
	comparable
	Close() error
}](r R) error {
	var none R
	if r == none {
		return nil
	}
	return r.Close()
}

// handshake makes the link: it finds the port, makes the QP, swaps the
// endpoints over nc, connects the QP, posts conn's receives and swaps the
// word that both are ready. On failure it tells the peer why, when it
// can, and closes what it made and nc.
func handshake(ctx context.Context, nc net.Conn, conn *Conn, cfg *Config) (_ *netLink, _ hello, err error) {
	l := &netLink{nc: nc, done: make(chan struct{}),
		local: addrPort(nc.LocalAddr()), remote: addrPort(nc.RemoteAddr())}
	stop := watchHandshake(ctx, nc, cfg.HandshakeTimeout)
	defer func() {
		err = stop(err)
		if err != nil {
			l.Close()
		}
	}()
	var ep ibverbs.Endpoint
	var params ibverbs.ConnParams
	if ep, params, err = l.open(conn, cfg); err != nil {
		sendFrame(nc, frameError, []byte(err.Error()))
		return nil, hello{}, err
	}
	mine := endpoint{mtu: uint8(ep.MTU), lid: ep.LID, qpn: ep.QPN, psn: ep.PSN, gid: ep.GID,
		hello: conn.hello()}
	body, err := swap(nc, frameEndpoint, mine.frame())
	if err != nil {
		return nil, hello{}, err
	}
	theirs, err := parseEndpoint(body)
	if err != nil {
		sendFrame(nc, frameError, []byte(err.Error()))
		return nil, hello{}, err
	}
	params.MTU = min(ep.MTU, ibverbs.MTU(theirs.mtu))
	remote := ibverbs.Endpoint{QPN: theirs.qpn, PSN: theirs.psn, LID: theirs.lid, GID: theirs.gid, MTU: ibverbs.MTU(theirs.mtu)}
	if err = l.qp.Connect(remote, params); err == nil {
		l.cleanup, err = conn.postReceives(l.pd, l.qp)
	}
	if err != nil {
		sendFrame(nc, frameError, []byte(err.Error()))
		return nil, hello{}, err
	}
	if _, err = swap(nc, frameReady, putFrame(frameReady, nil)); err != nil {
		return nil, hello{}, err
	}
	return l, theirs.hello, nil
}

// open finds the port and GID, and makes the PD, the CQs and the QP, with
// the parameters to connect it.
func (l *netLink) open(conn *Conn, cfg *Config) (ibverbs.Endpoint, ibverbs.ConnParams, error) {
	var p ibverbs.ConnParams
	var err error
	if l.ctx, p.Port, p.GIDIndex, err = findPort(l.local.Addr(), cfg.Device); err != nil {
		return ibverbs.Endpoint{}, p, err
	}
	// Messages are sends. Remote write admits the peer's keepalive probes,
	// writes of no bytes, and, with remote read, the peer's ReadRemote
	// and WriteRemote; only the regions registered for them
	// (RegisterMemory) give the remote access they need, so nothing else
	// can be read or written (rdma_cm's QPs have the same access).
	p.Access = ibverbs.AccessLocalWrite | ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead
	cm := &cfg.CM
	p.Timeout, p.RetryCnt, p.RNRRetry, p.TrafficClass = cm.AckTimeout, cm.RetryCount, cm.RNRRetryCount, cm.TOS
	if p.Timeout == 0 {
		p.Timeout = handshakeAckTimeout
	}
	if p.RetryCnt == 0 {
		p.RetryCnt = rdmacm.DefaultRetryCount // as Dial's: 7 is forever on soft-RoCE
	}
	if cm.AckTimeout > 31 {
		return ibverbs.Endpoint{}, p, fmt.Errorf("Config.CM.AckTimeout %d: want 0 to 31: %w", cm.AckTimeout, syscall.EINVAL)
	}
	if cm.MinRNRTimer > 31 {
		return ibverbs.Endpoint{}, p, fmt.Errorf("Config.CM.MinRNRTimer %d: want 0 to 31: %w", cm.MinRNRTimer, syscall.EINVAL)
	}
	if cm.MinRNRTimer > 0 {
		p.MinRNRTimer = uint8(cm.MinRNRTimer)
	}
	if l.pd, err = l.ctx.AllocPD(); err != nil {
		return ibverbs.Endpoint{}, p, err
	}
	sendWRs, recvWRs := conn.sendWRs(), conn.recvWRs()
	if l.ch, err = l.ctx.CreateCompChannel(); err != nil {
		return ibverbs.Endpoint{}, p, err
	}
	if l.cq, err = l.ctx.CreateCQ(sendWRs+recvWRs, l.ch); err != nil {
		return ibverbs.Endpoint{}, p, err
	}
	if l.qp, err = l.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: l.cq, RecvCQ: l.cq,
		Cap: ibverbs.QPCap{MaxSendWR: sendWRs, MaxSendSGE: 1, MaxRecvWR: recvWRs, MaxRecvSGE: 1}}); err != nil {
		return ibverbs.Endpoint{}, p, err
	}
	ep, err := l.qp.Endpoint(p.Port, p.GIDIndex)
	return ep, p, err
}

// findPort opens the device and finds the port and GID for Handshake: the
// named device ("name" or "name:port"), or the first whose ports have a
// RoCE v2 GID of ip. On a named device the GID is ip's if it has one, else
// SelectGID's default; on an InfiniBand port, index 0 (the LID routes).
func findPort(ip netip.Addr, device string) (*ibverbs.Context, int, int, error) {
	rule := ibverbs.GIDRule{Addr: ip}
	if device == "" && !ip.IsValid() {
		return nil, 0, 0, fmt.Errorf("the connection's local address is not an IP address, which would name the RDMA port: set Config.Device: %w", syscall.EINVAL)
	}
	if device != "" {
		name, port := device, 1
		if i := strings.LastIndexByte(device, ':'); i >= 0 {
			n, err := strconv.Atoi(device[i+1:])
			if err != nil || n < 1 {
				return nil, 0, 0, fmt.Errorf("Config.Device %q: want a device name, or name:port: %w", device, syscall.EINVAL)
			}
			name, port = device[:i], n
		}
		ctx, err := ibverbs.Open(name)
		if err != nil {
			return nil, 0, 0, err
		}
		gid, err := portGID(ctx, port, rule)
		if err != nil {
			ctx.Close()
			return nil, 0, 0, err
		}
		return ctx, port, gid, nil
	}
	devs, err := ibverbs.Devices()
	if err != nil {
		return nil, 0, 0, err
	}
	var tried []string
	for _, d := range devs {
		ctx, err := ibverbs.Open(d.Name)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", d.Name, err))
			continue
		}
		attr, err := ctx.QueryDevice()
		if err != nil {
			ctx.Close()
			tried = append(tried, fmt.Sprintf("%s: %v", d.Name, err))
			continue
		}
		for port := 1; port <= attr.PhysPortCnt; port++ {
			if ch, err := ctx.SelectGID(port, rule); err == nil {
				return ctx, port, ch.Entry.Index, nil
			}
		}
		ctx.Close()
		tried = append(tried, d.Name+": no RoCE v2 GID of that address")
	}
	if len(devs) == 0 {
		tried = append(tried, "no RDMA devices")
	}
	return nil, 0, 0, fmt.Errorf("no RDMA port has a RoCE v2 GID for the local address %s (%s); set Config.Device: %w",
		ip, strings.Join(tried, "; "), syscall.ENODEV)
}

// portGID picks the GID of a named port: rule's, else SelectGID's
// default on Ethernet, or index 0 on InfiniBand.
func portGID(ctx *ibverbs.Context, port int, rule ibverbs.GIDRule) (int, error) {
	pa, err := ctx.QueryPort(port)
	if err != nil {
		return 0, err
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		return 0, nil
	}
	if rule.Addr.IsValid() {
		if ch, err := ctx.SelectGID(port, rule); err == nil {
			return ch.Entry.Index, nil
		}
	}
	ch, err := ctx.SelectGID(port, ibverbs.GIDRule{})
	if err != nil {
		return 0, err
	}
	return ch.Entry.Index, nil
}

// swap sends frame and reads the peer's frame, which must be of kind
// want, at once, so that a net.Conn without buffering (net.Pipe) does not
// deadlock; it returns the peer's frame's body. An error frame from the
// peer becomes an error with its reason.
func swap(nc net.Conn, want byte, frame []byte) ([]byte, error) {
	sent := make(chan error, 1)
	go func() {
		_, err := nc.Write(frame)
		sent <- err
	}()
	body, rerr := readFrame(nc, want)
	if rerr != nil {
		// The peer may have closed before it read ours.
		return nil, rerr
	}
	if err := <-sent; err != nil {
		return nil, fmt.Errorf("sending the handshake: %w", err)
	}
	return body, nil
}

func readFrame(nc net.Conn, want byte) ([]byte, error) {
	var hdr [frameHdrLen]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return nil, handshakeReadError(err)
	}
	kind, n, err := parseFrameHeader(hdr[:])
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, handshakeReadError(err)
	}
	switch kind {
	case want:
		return body, nil
	case frameError:
		return nil, fmt.Errorf("the peer failed: %s: %w", body, syscall.ECONNREFUSED)
	}
	return nil, fmt.Errorf("%w: a handshake frame %q where %q belongs", errNotHello, kind, want)
}

func handshakeReadError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the peer closed the connection during the handshake: %w", syscall.ECONNRESET)
	}
	return err
}

// sendFrame tells the peer why this side gives up, as far as it can
// within a second, and ignores failure: the caller reports its own error
// and closes nc. Where nc can close its writing half (TCP), it does so
// after the frame and reads what the peer sent until the peer closes, for
// up to another second: closing a TCP connection with bytes unread sends
// a reset, which can overtake the frame and leave the peer with
// "connection reset" instead of the reason.
func sendFrame(nc net.Conn, kind byte, body []byte) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write(putFrame(kind, body)); err != nil {
		return
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		nc.SetReadDeadline(time.Now().Add(time.Second))
		io.Copy(io.Discard, nc)
	}
}

// watchContext bounds nc's reads and writes by ctx for the handshake: its
// deadline, and its cancellation, which sets a deadline past. stop ends
// that, clears nc's deadlines and returns ctx's error in place of the
// timeout it caused. A cancellation that comes as stop runs does not
// set the past deadline after stop has cleared it.
func watchContext(ctx context.Context, nc net.Conn) (stop func(error) error) {
	return watchHandshake(ctx, nc, 0)
}

// watchHandshake is watchContext, with nc's reads and writes bounded by
// limit from now where ctx has no deadline and limit is above 0
// (Config.HandshakeTimeout): stop returns an error that names the limit
// in place of the timeout it caused.
func watchHandshake(ctx context.Context, nc net.Conn, limit time.Duration) (stop func(error) error) {
	d, bounded := ctx.Deadline()
	if !bounded && limit > 0 {
		d = time.Now().Add(limit)
	}
	if !d.IsZero() {
		nc.SetDeadline(d)
	}
	var mu sync.Mutex
	stopped := false
	unwatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			nc.SetDeadline(time.Unix(1, 0))
		}
	})
	return func(err error) error {
		unwatch()
		mu.Lock()
		stopped = true
		nc.SetDeadline(time.Time{})
		mu.Unlock()
		if err == nil {
			return nil
		}
		cause := ctx.Err()
		if cause == nil && !d.IsZero() && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
			if !bounded {
				return fmt.Errorf("the peer did not complete it within %v (Config.HandshakeTimeout): %w", limit, err)
			}
			cause = context.DeadlineExceeded // nc's deadline came before ctx's timer
		}
		if cause != nil {
			return fmt.Errorf("%w (%v)", cause, err)
		}
		return err
	}
}

// addrPort is a net.Addr's IP address (unmapped, without a zone) and
// port, where it has them.
func addrPort(a net.Addr) netip.AddrPort {
	if a == nil {
		return netip.AddrPort{}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}
