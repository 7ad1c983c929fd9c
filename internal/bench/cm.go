//go:build linux && cgo

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/rdmacm"
)

// cmDevice returns librdmacm's context for the named device, or where
// name is "" for the first (ibverbs.Open's, as without -R). rdmacm.Device
// has librdmacm open that device alone: rdmacm.Devices' list would open
// every device of the host, for as long as the process lives, and where a
// driver cannot take a device back from a process (rxe, siw), `rdma link
// delete` of any of them would wait for serve to exit.
func cmDevice(name string) (*ibverbs.Context, error) {
	if name == "" {
		infos, err := ibverbs.Devices()
		if err != nil {
			return nil, err
		}
		if len(infos) == 0 {
			return nil, fmt.Errorf("rdma_cm finds no RDMA devices")
		}
		name = infos[0].Name
	}
	return rdmacm.Device(name)
}

func (s *session) cmConfig() *rdmacm.Config {
	depth := int(s.spec.OutReads) // 0: the device's maximum, as rdma_cm negotiates
	cfg := &rdmacm.Config{Cap: s.qpCap(), PD: s.pd, SendCQ: s.scq, RecvCQ: s.rcq, SRQ: s.srq,
		Timeout: 30 * time.Second, UD: s.spec.ConnType == ibverbs.QPTypeUD,
		InitiatorDepth: depth, ResponderResources: depth, WRAPI: s.wrapi,
		TOS: s.spec.TrafficClass, RetryCount: s.local.RetryCount}
	if cfg.RetryCount == 0 {
		// perftest's 7, as gorperf's own QPs have, not rdmacm's default
		// (rdmacm.DefaultRetryCount), which is an application's.
		cfg.RetryCount = 7
	}
	if s.spec.ConnType == ibverbs.QPTypeRC {
		// Only an RC QP waits for acknowledgements. Without -u, the 14
		// of a QP gorperf connects itself, as perftest (since 24.10)
		// sets through rdma_cm too, not rdma_cm's, which the path sets
		// (19 on soft-RoCE: 2.1 s before a lost packet is resent).
		cfg.AckTimeout = s.local.QPTimeout
		if cfg.AckTimeout == 0 {
			cfg.AckTimeout = ibverbs.DefaultAckTimeout
		}
	}
	if !cfg.UD {
		// The path MTU the two sides' offers agree on, where it caps
		// the one rdma_cm derives from the route (cmCap); else 0, and
		// rdma_cm's QPs are left as librdmacm moves them.
		cfg.PathMTU = s.cmCap
	}
	return cfg
}

// capCM sets cmCap, the most path MTU of the RC QPs that rdma_cm
// connects (cmConfig), from this side's offer (ownMTU: the port's active
// MTU within -m and what the GID's netdev carries) and the peer's, which
// the two sides swap before they connect (cmConnect): the least of them,
// which a test without -R takes (offeredMTU), where -m is given or it is
// less than the client's offer. rdma_cm sets both sides' QPs from the
// active side's route, the client's, which its netdev caps as the
// client's offer counts it (capNetdevMTU): the server's QPs copy it from
// the request, whatever the server's own netdev carries. A server whose
// VLAN netdev of MTU 700 carries 512, its client's 1024, got 1024, and
// the VLAN dropped its read responses. Where the client offers the least,
// nothing caps the route's, and librdmacm makes and moves the QPs as
// before. On an iWARP device (cmTransport) cmCap stays 0: its QPs have
// no path MTU that rdma_cm sets or -m could cap (rdmacm.Config.PathMTU
// ignores it there), as -m has no effect on iWARP without -R either,
// where a QP that gorperf moves to RTS has no TCP connection under it
// (siw refuses it: no socket); the header shows the path MTU the QPs
// report (cmPathMTU).
func (s *session) capCM(peer ibverbs.MTU, client bool) {
	s.cmCap = s.pathMTUCap(peer, client, s.cmTransport())
}

// pathMTUCap is capCM's cap, for this side's device of transport t.
func (s *session) pathMTUCap(peer ibverbs.MTU, client bool, t ibverbs.TransportType) ibverbs.MTU {
	if t == ibverbs.TransportIWARP {
		return 0
	}
	own := s.ownMTU()
	agreed, active := min(own, peer), peer
	if client {
		active = own
	}
	if s.spec.MTU != 0 || agreed < active {
		return agreed
	}
	return 0
}

// cmTransport is the transport of this side's device (Context.Transport):
// ibverbs.TransportIB for InfiniBand and RoCE, TransportIWARP for iWARP;
// TransportUnknown where none is open, where capCM caps as on InfiniBand
// and rdmacm decides by the device itself.
func (s *session) cmTransport() ibverbs.TransportType {
	if s.ctx == nil {
		return ibverbs.TransportUnknown
	}
	return s.ctx.Transport()
}

// cmConnect makes the QPs through rdma_cm (-R): the server listens on its
// GID's address, the client may then dial, and one connection is made
// per QP. On RC, the client first sends its Offer and the server, once it
// has it, listens and sends its own (each side's path MTU: capCM); an
// -R test of another kind has a barrier there. Either is each side's
// first wait for the other (first).
func (s *session) cmConnect(ctx context.Context, c *exchange.Conn, role, host string, first func() (context.Context, context.CancelFunc)) error {
	rc := s.spec.ConnType != ibverbs.QPTypeUD
	bctx, cancel := first()
	defer cancel()
	if role == "server" {
		if rc {
			o, err := c.RecvOffer(bctx)
			if err != nil {
				return unbegun(role, awaited(bctx, role, offerError(err)))
			}
			s.capCM(o.MTU, false)
		}
		ln, err := s.cmListen(ctx)
		if err != nil {
			return err
		}
		defer ln.Close()
		if rc {
			err = offerError(c.Send(bctx, exchange.Offer{MTU: s.ownMTU()}))
		} else {
			err = c.Barrier(bctx, 0)
		}
		if err != nil {
			return unbegun(role, awaited(bctx, role, err))
		}
		return s.cmAccept(ctx, c, ln)
	}
	var err error
	if rc {
		if err = c.Send(bctx, exchange.Offer{MTU: s.ownMTU()}); err == nil {
			var o exchange.Offer
			if o, err = c.RecvOffer(bctx); err == nil {
				s.capCM(o.MTU, true)
			}
		}
		err = offerError(err)
	} else {
		err = c.Barrier(bctx, 0)
	}
	if err != nil {
		return unbegun(role, quieted(bctx, err))
	}
	return s.cmDial(ctx, host)
}

// offerError is err, the failure of cmConnect's swap of Offers, said so
// as Barrier says its own.
func offerError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("offer of path MTU: %w", exchange.PeerClosed(err))
}

// GIDAddr is the IP address of a GID for rdma_cm: a link-local IPv6
// address with its netdev as the zone, which the kernel needs to bind it
// or send from it.
func GIDAddr(e ibverbs.GIDEntry) netip.Addr {
	ip := e.IP()
	if ip.Is6() && ip.IsLinkLocalUnicast() && e.Netdev != "" {
		ip = ip.WithZone(e.Netdev)
	}
	return ip
}

// cmSrcAddr is the address this side's rdma_cm connections and joins
// bind to before they resolve the peer's or the group's: the GID's, on
// RoCE. The GID chosen on an InfiniBand port is none (zero: LID routing),
// whose "::" bound IPv6 and failed to resolve an IPv4 server: there it is
// empty, and the route to the peer picks the device's address, as in
// perftest, which binds no source address unless given one.
func (s *session) cmSrcAddr() string {
	if s.gid.Entry.GID.IsZero() {
		return ""
	}
	return GIDAddr(s.gid.Entry).String()
}

// cmListen starts listening for the client's rdma_cm connections on this
// side's GID address, before the client is told to dial.
func (s *session) cmListen(ctx context.Context) (*rdmacm.Listener, error) {
	addr := net.JoinHostPort(GIDAddr(s.gid.Entry).String(), strconv.Itoa(s.local.CMPort))
	return rdmacm.Listen(ctx, addr, s.cmConfig())
}

// cmAccept accepts one connection per QP. The client's dials may fail,
// and then it says why over the control connection c and closes it: c
// is watched meanwhile, and the client's reason, or the connection's end,
// ends the wait at once, where Accept waited out its 30 s and the reason
// went unread. The client's Setup, which it sends once its dials are
// done, may come before the last Accept returns: it is kept for the
// Setup swap (s.early).
func (s *session) cmAccept(ctx context.Context, c *exchange.Conn, ln *rdmacm.Listener) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := watchControl(c, cancel)
	err := s.acceptQPs(ctx, ln)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause // the client's reason, which ended the Accept
	}
	m, werr := w.stop()
	s.early = m
	if err == nil && werr != nil {
		err = werr
	}
	return err
}

func (s *session) acceptQPs(ctx context.Context, ln *rdmacm.Listener) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for range int(s.spec.NumQPs) {
		c, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		if err := s.addConn(c); err != nil {
			return err
		}
	}
	return nil
}

// ctlWatch receives the peer's next message on a control connection
// while this side waits for something else.
type ctlWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	m      exchange.Message
	err    error
}

// watchControl receives c's next message (Alives aside) until stop. A
// failure, the peer's ErrorMsg or the connection's end, is passed to
// fail at once.
func watchControl(c *exchange.Conn, fail context.CancelCauseFunc) *ctlWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &ctlWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.m, w.err = c.Recv(ctx)
		if w.err != nil && ctx.Err() != nil {
			w.err = nil // stopped
		}
		if w.err != nil {
			w.err = fmt.Errorf("the client, while this side accepted its rdma_cm connections: %w", w.err)
			fail(w.err)
		}
	}()
	return w
}

// stop ends the watch and returns the message that came, if any, or the
// failure.
func (w *ctlWatch) stop() (exchange.Message, error) {
	w.cancel()
	<-w.done
	return w.m, w.err
}

// cmDial makes one connection per QP to the server's rdma_cm port, from
// this side's GID address.
func (s *session) cmDial(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg := s.cmConfig()
	cfg.SrcAddr = s.cmSrcAddr()
	addr := net.JoinHostPort(host, strconv.Itoa(s.local.CMPort))
	for range int(s.spec.NumQPs) {
		c, err := rdmacm.Dial(ctx, addr, cfg)
		if err != nil {
			return err
		}
		if err := s.addConn(c); err != nil {
			return err
		}
	}
	return nil
}

func (s *session) addConn(c *rdmacm.Conn) error {
	if s.conns == nil {
		s.conns = []*rdmacm.Conn{}
	}
	s.conns = append(s.conns, c)
	if err := s.addQP(c.QP()); err != nil {
		return err
	}
	if s.spec.ConnType == ibverbs.QPTypeUD {
		// rdma_cm set the UD QP's QKey; tell the peer the real one.
		a, err := c.QP().Query()
		if err != nil {
			return err
		}
		s.localInfo[len(s.localInfo)-1].Endpoint.QKey = a.QKey
	}
	return nil
}
