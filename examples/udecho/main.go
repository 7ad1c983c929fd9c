//go:build linux && cgo

// Command udecho is a datagram echo service on one UD queue pair. The
// server answers each datagram to whoever sent it, knowing the sender only
// from the datagram: its completion and the GRH area in front of its
// payload (ibverbs.PD.CreateAHFromWC), and says who that was
// (ibverbs.ParseGRH). A client learns the server's QP from a TCP
// connection, as ibv_ud_pingpong does, sends its datagrams and waits
// for their echoes.
//
//	udecho -d rxe0 -l 198.18.0.1:18700           # server, until Ctrl-C (or -n datagrams)
//	udecho -d rxe1 -n 5 198.18.0.1:18700         # client: 5 datagrams (default 3)
//
// A UD datagram is one packet, so at most 4096 bytes, the largest MTU,
// and each receive slot holds that much behind the GRH area: a receive
// too small for its datagram fails, and may take the QP to the error
// state with it (rxe's does). So any datagram is taken and echoed. One
// the server cannot echo it reports on standard error, and it serves on.
// A client skips a datagram that is not the echo it waits for (a late
// echo, or one from another sender: anyone who knows a UD QP's number
// and Q_Key can send it datagrams).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

const (
	port   = 1    // the device port
	slots  = 16   // receive slots, each GRHLen + maxMsg bytes
	maxMsg = 4096 // the largest datagram: the largest MTU (ibverbs.MTU4096)
	slot   = ibverbs.GRHLen + maxMsg
)

const usage = "usage: udecho [-d DEV] -l ADDR [-n N] | udecho [-d DEV] [-n N] ADDR"

func main() {
	dev := flag.String("d", "", "RDMA device (default: the first)")
	listen := flag.String("l", "", "serve, with the endpoint told to TCP clients at this address")
	n := flag.Int("n", 0, "datagrams: the server echoes this many (0: until Ctrl-C), a client sends this many (0: 3)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	code := 1 // 2 for a usage error, as the flag package's
	switch {
	case *n < 0:
		err = fmt.Errorf("-n %d: the number of datagrams cannot be negative\n%s", *n, usage)
		code = 2
	case *listen != "" && flag.NArg() == 0:
		err = serve(ctx, *dev, *listen, *n)
	case *listen == "" && flag.NArg() == 1:
		if *n == 0 {
			*n = 3
		}
		err = ping(ctx, *dev, flag.Arg(0), *n)
	default:
		err = errors.New(usage)
		code = 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "udecho:", stopped(ctx, err))
		os.Exit(code)
	}
}

// stopped returns err, saying which signal stopped the program where
// err is the end of ctx that a signal caused and does not say so
// already: a context's own error says only "context canceled"
// (context.Canceled), its cause names the signal (signal.NotifyContext).
func stopped(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (%v)", err, cause)
}

// endpoint is one side's UD queue pair with its memory: slots receive
// slots, then one send slot.
type endpoint struct {
	ctx        *ibverbs.Context
	pd         *ibverbs.PD
	buf        *ibverbs.Buffer
	mr         *ibverbs.MR
	scq, rcq   *ibverbs.CQ
	ch         *ibverbs.CompChannel // the receive CQ's events
	qp         *ibverbs.QP
	me         ibverbs.Endpoint
	gidIndex   int
	closeOrder []interface{ Close() error }
	// stuck says that a send gave up waiting for its completion: its
	// work request may still be queued, and use its address handle,
	// until the QP drops its work requests (skip's reset, or close).
	// Until then closeAH keeps the address handles in ahs.
	stuck bool
	ahs   []*ibverbs.AH
}

func open(dev string) (e *endpoint, err error) {
	e = &endpoint{}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	keep := func(c interface{ Close() error }) { e.closeOrder = append(e.closeOrder, c) }
	if e.ctx, err = ibverbs.Open(dev); err != nil {
		return e, err
	}
	keep(e.ctx)
	gid, err := e.ctx.SelectGID(port, ibverbs.GIDRule{})
	if err != nil {
		return e, err
	}
	e.gidIndex = gid.Entry.Index
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		return e, err
	}
	keep(e.pd)
	if e.buf, err = ibverbs.NewBuffer((slots+1)*slot, ibverbs.BufferOptions{}); err != nil {
		return e, err
	}
	keep(e.buf)
	if e.mr, err = e.pd.RegMR(e.buf, ibverbs.AccessLocalWrite); err != nil {
		return e, err
	}
	keep(e.mr)
	if e.ch, err = e.ctx.CreateCompChannel(); err != nil {
		return e, err
	}
	keep(e.ch)
	if e.scq, err = e.ctx.CreateCQ(slots, nil); err != nil {
		return e, err
	}
	keep(e.scq)
	if e.rcq, err = e.ctx.CreateCQ(slots, e.ch); err != nil {
		return e, err
	}
	keep(e.rcq)
	e.qp, err = e.pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeUD, SendCQ: e.scq, RecvCQ: e.rcq,
		Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: slots, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return e, err
	}
	keep(e.qp)
	if err = e.qp.Connect(ibverbs.Endpoint{}, ibverbs.ConnParams{Port: port, GIDIndex: e.gidIndex}); err != nil {
		return e, err
	}
	if e.me, err = e.qp.Endpoint(port, e.gidIndex); err != nil {
		return e, err
	}
	for i := range slots {
		if err = e.postRecv(i); err != nil {
			return e, err
		}
	}
	return e, nil
}

// close closes what open made, children first, and the address handles
// that closeAH kept once the QP is gone.
func (e *endpoint) close() {
	for i := len(e.closeOrder) - 1; i >= 0; i-- {
		e.closeOrder[i].Close()
		if e.closeOrder[i] == e.qp {
			e.closeAHs()
		}
	}
}

// closeAH closes ah, which sends used, once no work request can use it:
// at once, unless a send gave up waiting for its completion (stuck); then
// once the QP has dropped its work requests.
func (e *endpoint) closeAH(ah *ibverbs.AH) {
	if e.stuck {
		e.ahs = append(e.ahs, ah)
		return
	}
	ah.Close()
}

// closeAHs closes the address handles that closeAH kept. The QP must have
// dropped its work requests: reset, or destroyed.
func (e *endpoint) closeAHs() {
	for _, ah := range e.ahs {
		ah.Close()
	}
	e.ahs, e.stuck = nil, false
}

func (e *endpoint) postRecv(i int) error {
	return e.qp.PostRecv([]ibverbs.RecvWR{{ID: uint64(i), SGL: []ibverbs.SGE{e.mr.SGE(i*slot, slot)}}})
}

// send sends p to the QP qpn behind ah and waits for the send to
// complete, for at most 5 s. The caller closes ah with closeAH: a send
// that gave up waiting may still be queued, and use it.
func (e *endpoint) send(ctx context.Context, p []byte, ah *ibverbs.AH, qpn, qkey uint32) error {
	off := slots * slot
	n := copy(e.buf.Bytes()[off:off+maxMsg], p)
	err := e.qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{e.mr.SGE(off, n)}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}})
	if err != nil {
		return err
	}
	wcs := make([]ibverbs.WC, 1)
	for deadline := time.Now().Add(5 * time.Second); ; {
		k, err := e.scq.Poll(wcs)
		if err != nil || k == 1 {
			if err == nil {
				err = wcs[0].Err()
			}
			return err
		}
		if ctx.Err() != nil {
			e.stuck = true
			return fmt.Errorf("the send did not complete: %w", context.Cause(ctx))
		}
		if time.Now().After(deadline) {
			e.stuck = true
			return errors.New("the send did not complete within 5s")
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// recv waits for a datagram, for at most d, and returns its completion and
// its slot's bytes: the GRH area, then the payload. A completion in error
// (a receive flushed, the QP in the error state) it returns with a
// *WCError.
func (e *endpoint) recv(ctx context.Context, d time.Duration) (ibverbs.WC, []byte, error) {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	wcs := make([]ibverbs.WC, 1)
	if _, err := e.rcq.Wait(ctx, wcs); err != nil {
		return ibverbs.WC{}, nil, err
	}
	if err := wcs[0].Err(); err != nil {
		return wcs[0], nil, fmt.Errorf("receiving: %w", err)
	}
	i := int(wcs[0].WRID)
	return wcs[0], e.buf.Bytes()[i*slot : i*slot+int(wcs[0].ByteLen)], nil
}

// skip gives the slot of a datagram whose receive or echo failed back to
// the QP, and says what else it did. A QP that left RTS for an error
// state (a failed send takes it there) has flushed its other receives
// too: then it goes back through RESET to RTS, keeping its number, and
// gets all its slots again. Datagrams that come meanwhile are lost, as UD
// may lose any.
func (e *endpoint) skip(wc ibverbs.WC) (string, error) {
	state, err := e.qp.State()
	if err != nil {
		return "", err
	}
	if state == ibverbs.QPStateRTS {
		return "", e.postRecv(int(wc.WRID))
	}
	if err := e.qp.Reset(); err != nil {
		return "", err
	}
	// The QP has dropped its work requests: the address handles of sends
	// that gave up can go, and the flushed work requests' completions
	// are dropped.
	e.closeAHs()
	wcs := make([]ibverbs.WC, slots)
	for _, cq := range []*ibverbs.CQ{e.rcq, e.scq} {
		for {
			k, err := cq.Poll(wcs)
			if err != nil {
				return "", err
			}
			if k == 0 {
				break
			}
		}
	}
	if err := e.qp.Connect(ibverbs.Endpoint{}, ibverbs.ConnParams{Port: port, GIDIndex: e.gidIndex}); err != nil {
		return "", err
	}
	for i := range slots {
		if err := e.postRecv(i); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("; the QP was in state %s, and is back in RTS", state), nil
}

func serve(ctx context.Context, dev, addr string, n int) error {
	e, err := open(dev)
	if err != nil {
		return err
	}
	defer e.close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			json.NewEncoder(c).Encode(e.me)
			c.Close()
		}
	}()
	fmt.Printf("serving on %s QPN %#x (GID %s), endpoint at %s\n", e.ctx.Name(), e.me.QPN, e.me.GID.Addr(), ln.Addr())
	for done := 0; n == 0 || done < n; {
		wc, b, err := e.recv(ctx, 0)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			var wce *ibverbs.WCError
			if !errors.As(err, &wce) {
				return err
			}
			// Only this datagram is lost: say so, and serve on.
			fmt.Fprintf(os.Stderr, "udecho: a datagram in slot %d: %v", wc.WRID, err)
			note, err := e.skip(wc)
			fmt.Fprintln(os.Stderr, note)
			if err != nil {
				return fmt.Errorf("recovering from a failed receive: %w", err)
			}
			continue
		}
		grh, payload := b[:ibverbs.GRHLen], b[ibverbs.GRHLen:]
		from := "a sender without a GRH"
		if g, err := ibverbs.ParseGRH(grh); err == nil {
			from = g.Src.Addr().String()
		}
		ah, err := e.pd.CreateAHFromWC(&wc, grh, port)
		if err != nil {
			// No way back to this sender: say so, and serve on.
			fmt.Fprintf(os.Stderr, "udecho: a datagram from %s QPN %#x: %v\n", from, wc.SrcQP, err)
			if err := e.postRecv(int(wc.WRID)); err != nil {
				return err
			}
			continue
		}
		err = e.send(ctx, payload, ah, wc.SrcQP, e.me.QKey)
		e.closeAH(ah)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			if st, serr := e.qp.State(); serr != nil || st == ibverbs.QPStateRTS {
				return err
			}
			// The echo failed and took the QP to the error state: put
			// it back, and serve on.
			fmt.Fprintf(os.Stderr, "udecho: the echo to %s QPN %#x: %v", from, wc.SrcQP, err)
			note, err := e.skip(wc)
			fmt.Fprintln(os.Stderr, note)
			if err != nil {
				return fmt.Errorf("recovering from a failed echo: %w", err)
			}
			continue
		}
		done++
		fmt.Printf("echoed %d bytes to %s QPN %#x\n", len(payload), from, wc.SrcQP)
		if err := e.postRecv(int(wc.WRID)); err != nil {
			return err
		}
	}
	return nil
}

func ping(ctx context.Context, dev, addr string, n int) error {
	e, err := open(dev)
	if err != nil {
		return err
	}
	defer e.close()
	srv, err := serverEndpoint(ctx, addr)
	if err != nil {
		return err
	}
	ah, err := e.pd.CreateAHTo(srv, port, e.gidIndex)
	if err != nil {
		return err
	}
	defer e.closeAH(ah) // before e.close, which closes the AH after the QP if a send gave up
	for i := range n {
		msg := fmt.Appendf(nil, "datagram %d from QPN %#x", i, e.me.QPN)
		start := time.Now()
		if err := e.send(ctx, msg, ah, srv.QPN, srv.QKey); err != nil {
			return err
		}
		if err := e.awaitEcho(ctx, msg, srv.QPN); err != nil {
			return fmt.Errorf("no echo of datagram %d: %w", i, err)
		}
		fmt.Printf("echo of %d bytes from QPN %#x in %v\n", len(msg), srv.QPN, time.Since(start).Round(time.Microsecond))
	}
	return nil
}

// awaitEcho waits for msg to come back from the QP qpn, for at most 5 s.
// Other datagrams it reports and skips.
func (e *endpoint) awaitEcho(ctx context.Context, msg []byte, qpn uint32) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		wc, b, err := e.recv(ctx, 0)
		if err != nil {
			return err
		}
		echo := wc.SrcQP == qpn && bytes.Equal(b[ibverbs.GRHLen:], msg)
		if err := e.postRecv(int(wc.WRID)); err != nil {
			return err
		}
		if echo {
			return nil
		}
		fmt.Fprintf(os.Stderr, "udecho: skipped %d bytes from QPN %#x: not the awaited echo\n", len(b)-ibverbs.GRHLen, wc.SrcQP)
	}
}

// serverEndpoint reads the endpoint of the server's QP from its TCP
// address.
func serverEndpoint(ctx context.Context, addr string) (ibverbs.Endpoint, error) {
	var srv ibverbs.Endpoint
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return srv, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// Ctrl-C ends the read at once, not at the deadline.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewDecoder(c).Decode(&srv); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return srv, fmt.Errorf("reading the server's endpoint: %w", err)
	}
	return srv, nil
}
