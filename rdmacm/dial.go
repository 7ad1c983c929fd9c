//go:build linux && cgo

package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Dial connects to a listener at addr ("host:port") and returns the
// connection once it is established. It resolves the address and route
// (rdma_resolve_addr, rdma_resolve_route), makes the PD, CQs and QP on the
// device the route goes through (rdma_create_qp), and connects
// (rdma_connect). ctx bounds all of it; when it ends first, Dial returns
// ctx's error and leaves nothing behind. With Config.PathMTU, on an
// InfiniBand or RoCE device, the QP is made with ibv_create_qp instead,
// and on CONNECT_RESPONSE Dial moves it to RTR, its path MTU capped, and
// RTS (rdma_init_qp_attr, ibv_modify_qp) and completes the connection
// (rdma_establish); an iWARP device's connection ignores PathMTU.
//
// Without a deadline on ctx or a Config.Timeout, each step has a bound
// of its own: resolving the address Config.AddrTimeout, the route
// Config.RouteTimeout (2 s each by default), and the connection request
// DefaultConnectTimeout (2 min, as the kernel's SYN retries bound a TCP
// connect), which ends it with an error matching syscall.ETIMEDOUT and
// context.DeadlineExceeded. The kernel CM's retries alone would not
// always end it in time: a request that gets no answer at all (its host
// drops it: one from an RDMA device's address to 127.0.0.1, say, which
// resolves but which no listener can take) is sent 16 times, each time
// after the CM's response timeout (4.1 s) and twice the path's packet
// lifetime, and fails with ErrUnreachable (ETIMEDOUT), on soft-RoCE
// after 100 s and after 67 s for UD (whose request waits no packet
// lifetime); but a request to a listener whose program does not call
// Accept is answered by the peer's kernel with an MRA (a message
// received acknowledgement), which asks for 4.096 µs × 2^24, about 69 s,
// more, and again on each of the 16 tries: up to 17 min. Set Config.Timeout, or a
// deadline on ctx, for another bound.
//
// Errors are *OpError wrapping: a *RejectedError (matching
// syscall.ECONNREFUSED) when the peer or its CM refused, e.g. nothing
// listens there; ErrAddrResolve, ErrRouteResolve or ErrUnreachable (with
// the errno, e.g. ETIMEDOUT, or ENETUNREACH where no route leads to the
// address and rdma_resolve_addr fails at once) when the peer cannot be
// reached;
// ErrDisconnected when the peer gave up on the connection after it
// replied (its Accept failed or was abandoned, its process ended), where
// librdmacm reports CONNECT_ERROR with EINVAL. A
// destination where no listener can be, a multicast, unspecified or
// broadcast (255.255.255.255) address, is refused at once with an error
// matching syscall.EINVAL, as net.Dial refuses a multicast one.
func Dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	checkContext(ctx, "Dial")
	return op(ctx, "dial", addr, cfg, dial)
}

// checkContext panics where ctx is nil, as the standard library's
// context-taking calls do (net.Dialer.DialContext): the entry points
// call it first, before they make anything, so that a nil Context fails
// at once with the call's name rather than later, or in a goroutine of
// the call's own where no recover can catch it.
func checkContext(ctx context.Context, fn string) {
	if ctx == nil {
		panic("rdmacm." + fn + ": nil Context")
	}
}

// op runs f with cfg, or the defaults for nil, and wraps its error in an
// *OpError for the operation: the exported entry points' common part.
func op[T any](ctx context.Context, name, addr string, cfg *Config, f func(context.Context, string, *Config) (T, error)) (T, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	v, err := f(ctx, addr, cfg)
	if err != nil {
		var zero T
		return zero, &OpError{Op: name, Addr: addr, Err: err}
	}
	return v, nil
}

func dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ctx, cancel := cfg.handshake(ctx)
	defer cancel()
	dst, err := lookupDest(ctx, addr)
	if err != nil {
		return nil, err
	}
	id, err := resolveFrom(ctx, cfg, cfg.portSpace(), dst, addr)
	if err != nil {
		return nil, err
	}
	ch := id.ch.Load()
	fail := func(err error) (*Conn, error) {
		return nil, errors.Join(err, id.Close(), ch.Close())
	}
	if cfg.TOS != 0 {
		if err := id.SetTOS(cfg.TOS); err != nil {
			return fail(err)
		}
	}
	if cfg.AckTimeout != 0 && !cfg.UD {
		if err := id.SetAckTimeout(cfg.AckTimeout); err != nil {
			return fail(err)
		}
	}
	if err := id.ResolveRoute(resolveTimeout(ctx, cfg.RouteTimeout)); err != nil {
		return fail(verbFailed(ErrRouteResolve, err))
	}
	if _, err := ch.Await(ctx, EventRouteResolved); err != nil {
		return fail(fmt.Errorf("resolving route: %w", err))
	}
	if err := id.checkPrivateData("rdma_connect", len(cfg.PrivateData), cmRequest); err != nil {
		return fail(err)
	}
	c, err := newConn(id, cfg, ch)
	if err != nil {
		return nil, err
	}
	if err := c.prepare(cfg); err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	p, err := c.connParam(cfg, nil)
	if err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	// librdmacm brings a QP it made to RTS when the reply comes, and
	// reports ESTABLISHED; the Conn's own (Config.PathMTU) waits for
	// CONNECT_RESPONSE, and the Conn moves it and answers the reply.
	want := EventEstablished
	if c.ownQP {
		p.QPNum, p.SRQ, want = c.qp.Num(), cfg.SRQ != nil, EventConnectResponse
	}
	if err := id.Connect(p); err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	ev, err := awaitConnect(ctx, ch, want, "no answer")
	if err != nil {
		err = id.repliedReason(err) // before the teardown, which frees the ID
		return nil, errors.Join(fmt.Errorf("connecting: %w", err), c.teardown())
	}
	c.param, c.udParam = ev.Param, ev.UD
	if c.ownQP {
		err = c.establish(cfg) // before the teardown, which frees the ID
	} else {
		err = c.setRNRTimer(cfg)
	}
	if err != nil {
		return nil, errors.Join(err, c.teardown())
	}
	if cfg.UD {
		if c.ah, err = c.pd.CreateAH(ev.UD.AHAttr); err != nil {
			return nil, errors.Join(err, c.teardown())
		}
	}
	c.start()
	return c, nil
}

// DefaultConnectTimeout bounds the wait for the answer to a Dial's or
// LookupUD's connection request, and an Accept's wait for ESTABLISHED
// once it has replied, when neither Config.Timeout nor a deadline on ctx
// does (a Listener's Accept: Config.Timeout alone, as its ctx bounds only
// the wait for a request).
const DefaultConnectTimeout = 2 * time.Minute

// connectTimeout is DefaultConnectTimeout; tests shorten it.
var connectTimeout = DefaultConnectTimeout

// awaitConnect waits on ch for want (ESTABLISHED, or CONNECT_RESPONSE
// for a QP the ID did not make), bounded by connectTimeout when ctx has
// no deadline (Config.Timeout gives it one). missing says what did not
// come, for the error when that bound ends the wait.
func awaitConnect(ctx context.Context, ch *EventChannel, want EventType, missing string) (*Event, error) {
	if _, ok := ctx.Deadline(); ok {
		return ch.Await(ctx, want)
	}
	d := connectTimeout
	bctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ev, err := ch.Await(bctx, want)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("%s in %v, the bound DefaultConnectTimeout gives when neither Config.Timeout nor a deadline on ctx does: %w (%w)",
			missing, d, syscall.ETIMEDOUT, context.DeadlineExceeded)
	}
	return ev, err
}

// resolveFrom makes an ID, on a channel of its own, with dst resolved
// from cfg.SrcAddr (or the route's source): on failure it leaves nothing.
// given is the caller's address, which the *OpError shows.
func resolveFrom(ctx context.Context, cfg *Config, ps PortSpace, dst netip.AddrPort, given string) (*ID, error) {
	var src netip.AddrPort
	if cfg.SrcAddr != "" {
		var err error
		if src, err = parseSrcAddr(ctx, cfg.SrcAddr); err != nil {
			return nil, err
		}
	}
	ch, err := CreateEventChannel()
	if err != nil {
		return nil, err
	}
	id, err := resolveAddr(ctx, ch, ps, src, dst, given, resolveTimeout(ctx, cfg.AddrTimeout))
	if err != nil {
		return nil, errors.Join(err, ch.Close())
	}
	return id, nil
}

// verbFailed is the error of a resolving verb (rdma_resolve_addr,
// rdma_resolve_route) that failed at once, err, matching the sentinel
// of the event that would have said so later (ErrAddrResolve,
// ErrRouteResolve) as well as err's errno: an address with no route to
// it, say, fails inside rdma_resolve_addr with ENETUNREACH, where one
// whose neighbour does not answer ends with ADDR_ERROR.
func verbFailed(sentinel, err error) error {
	if errors.Is(err, ErrClosed) {
		return err
	}
	what := "resolving address"
	if sentinel == ErrRouteResolve {
		what = "resolving route"
	}
	return fmt.Errorf("%s: %w (%w)", what, sentinel, err)
}

// resolveSlice bounds one attempt at resolving an address. If the ARP
// reply comes before the kernel has queued the request that waits for it
// (on a veth pair it always does), the kernel looks at the neighbour table
// again only when the attempt times out; short attempts, retried with a
// fresh ID until the whole timeout is spent, bound that wait.
const resolveSlice = 250 * time.Millisecond

// resolveAddr creates an ID on ch and resolves dst from src on it
// (rdma_resolve_addr), within total. given is the caller's address.
func resolveAddr(ctx context.Context, ch *EventChannel, ps PortSpace, src, dst netip.AddrPort, given string, total time.Duration) (*ID, error) {
	deadline := time.Now().Add(total)
	for {
		id, err := ch.CreateID(ps)
		if err != nil {
			return nil, err
		}
		if err = id.resolveAddr(src, dst, min(time.Until(deadline), resolveSlice)); err != nil {
			err = withAddr(dst, given, verbFailed(ErrAddrResolve, err))
		} else if _, err = ch.Await(ctx, EventAddrResolved); err == nil {
			return id, nil
		} else {
			err = fmt.Errorf("resolving address: %w", err)
		}
		if cerr := id.Close(); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		var ee *EventError
		if errors.As(err, &ee) && ee.Event == EventAddrError && errors.Is(err, syscall.ETIMEDOUT) &&
			time.Until(deadline) > 0 && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// lookupDest is lookupAddrPort for a Dial's or LookupUD's destination,
// which must be one host's: a multicast, unspecified or limited broadcast
// address is refused with EINVAL, as net.Dial refuses a multicast one,
// where the connection request went nowhere (a multicast one waited out
// the whole timeout).
func lookupDest(ctx context.Context, addr string) (netip.AddrPort, error) {
	dst, err := lookupAddrPort(ctx, addr, netip.Addr{})
	if err != nil {
		return dst, err
	}
	a := dst.Addr()
	var what string
	switch {
	case a.IsMulticast():
		what = "a multicast address (JoinMulticast joins a group)"
	case a.IsUnspecified():
		what = "the unspecified address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		what = "the broadcast address"
	default:
		return dst, nil
	}
	return dst, fmt.Errorf("%v is %s, where no listener can be: %w", a, what, syscall.EINVAL)
}

// lookupAddrPort parses "host:port", looking the host up if it is a name.
// An empty host is wild, or refused where wild is the zero Addr (a Dial's
// destination).
func lookupAddrPort(ctx context.Context, addr string, wild netip.Addr) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		pn, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", port)
		if lerr != nil {
			return netip.AddrPort{}, fmt.Errorf("invalid port %q: %w", port, syscall.EINVAL)
		}
		p = uint64(pn)
	}
	if host == "" {
		if !wild.IsValid() {
			return netip.AddrPort{}, fmt.Errorf("no host in address %q: %w", addr, syscall.EINVAL)
		}
		return netip.AddrPortFrom(wild, uint16(p)), nil
	}
	ip, err := lookupHost(ctx, host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip, uint16(p)), nil
}

func lookupHost(ctx context.Context, host string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap(), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, ip := range ips { // prefer IPv4, whose RoCE GIDs every device has
		if ip.Unmap().Is4() {
			return ip.Unmap(), nil
		}
	}
	return ips[0], nil
}

// parseSrcAddr parses Config.SrcAddr: "ip", "host" or "host:port".
func parseSrcAddr(ctx context.Context, s string) (netip.AddrPort, error) {
	if _, _, err := net.SplitHostPort(s); err == nil {
		// An empty host binds only the port; IPv4's, as the address a
		// Dial resolves from must be of its destination's family.
		return lookupAddrPort(ctx, s, netip.IPv4Unspecified())
	}
	ip, err := lookupHost(ctx, s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("Config.SrcAddr: %w", err)
	}
	return netip.AddrPortFrom(ip, 0), nil
}

// LookupUD asks the UD endpoint bound at addr ("host:port": a Listen with
// Config.UD, or an ID of PortSpaceUDP listening there) for its QP, as a
// UD Dial does (a SIDR request: rdma_resolve_addr, rdma_resolve_route,
// rdma_connect), without making a QP on this side. The answer says how to
// reach it from any UD QP on this side's device: the address handle's
// attributes, its QP number and Q_Key, and the private data it answered
// with. Of cfg it takes SrcAddr, PrivateData (sent with the request) and
// the time limits.
//
// Errors are as Dial's: a *RejectedError matching syscall.ECONNREFUSED
// when nothing listens there.
func LookupUD(ctx context.Context, addr string, cfg *Config) (*UDParam, error) {
	checkContext(ctx, "LookupUD")
	return op(ctx, "lookup", addr, cfg, lookupUD)
}

func lookupUD(ctx context.Context, addr string, cfg *Config) (*UDParam, error) {
	ctx, cancel := cfg.handshake(ctx)
	defer cancel()
	dst, err := lookupDest(ctx, addr)
	if err != nil {
		return nil, err
	}
	id, err := resolveFrom(ctx, cfg, PortSpaceUDP, dst, addr)
	if err != nil {
		return nil, err
	}
	ch := id.ch.Load()
	defer func() {
		id.Close()
		ch.Close()
	}()
	if err := id.ResolveRoute(resolveTimeout(ctx, cfg.RouteTimeout)); err != nil {
		return nil, verbFailed(ErrRouteResolve, err)
	}
	if _, err := ch.Await(ctx, EventRouteResolved); err != nil {
		return nil, fmt.Errorf("resolving route: %w", err)
	}
	if err := id.Connect(&ConnParam{PrivateData: cfg.PrivateData}); err != nil {
		return nil, err
	}
	ev, err := awaitConnect(ctx, ch, EventEstablished, "no answer")
	if err != nil {
		return nil, fmt.Errorf("looking up the QP: %w", err)
	}
	ud := ev.UD
	return &ud, nil
}
