//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"sync"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// A server accepts connections and receives one message on each. The
// receive is posted by Config.Prepare, before the connection is accepted,
// so that the client's first message finds it there. Prepare may run for
// several connections at once, so each one's buffer is kept by its Conn.
func ExampleListen() {
	ctx := context.Background()
	var bufs sync.Map // *rdmacm.Conn to its receive buffer
	cfg := &rdmacm.Config{Prepare: func(c *rdmacm.Conn) (func() error, error) {
		b, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
		if err != nil {
			return nil, err
		}
		mr, err := c.PD().RegMR(b, ibverbs.AccessLocalWrite)
		if err != nil {
			b.Close()
			return nil, err
		}
		cleanup := func() error {
			bufs.Delete(c)
			return errors.Join(mr.Close(), b.Close())
		}
		err = c.QP().PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{mr.SGE(0, 4096)}}})
		if err != nil {
			cleanup()
			return nil, err
		}
		bufs.Store(c, b)
		return cleanup, nil // c.Close calls it
	}}
	l, err := rdmacm.Listen(ctx, "198.18.0.1:7471", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for {
		c, err := l.Accept(ctx)
		if errors.Is(err, rdmacm.ErrClosed) || errors.Is(err, rdmacm.ErrDeviceRemoved) {
			log.Fatal(err)
		} else if err != nil {
			log.Print(err) // one peer's failure, or one connection's
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		wcs := make([]ibverbs.WC, 1)
		_, err = c.RecvCQ().Wait(wctx, wcs)
		cancel()
		if err == nil {
			err = wcs[0].Err() // WCWRFlushErr if the client disconnected first
		}
		if err != nil {
			log.Printf("%s: %v", c.RemoteAddr(), err)
		} else {
			b, _ := bufs.Load(c)
			log.Printf("%s sent %q", c.RemoteAddr(), b.(*ibverbs.Buffer).Bytes()[:wcs[0].ByteLen])
		}
		if err := c.Close(); err != nil { // frees the buffer, through Prepare's cleanup
			log.Print(err)
		}
	}
}

// A client connects, from a given local address, and sends a message.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rdmacm.Dial(ctx, "198.18.0.1:7471", &rdmacm.Config{SrcAddr: "198.18.0.2"})
	if err != nil {
		log.Fatal(err) // errors.Is(err, syscall.ECONNREFUSED) if nobody listens
	}
	defer c.Close()
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := c.PD().RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close() // before c.Close: the MR is on c's PD
	n := copy(buf.Bytes(), "hello")
	err = c.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{mr.SGE(0, n)}}})
	if err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 1)
	if _, err := c.SendCQ().Wait(ctx, wcs); err != nil {
		log.Fatal(err)
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err)
	}
}

// A server looks at each request's private data and refuses some.
func ExampleListener_GetRequest() {
	ctx := context.Background()
	l, err := rdmacm.Listen(ctx, ":7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	r, err := l.GetRequest(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if d := r.PrivateData(); len(d) == 0 || d[0] != 1 {
		// Dial fails with a *rdmacm.RejectedError.
		if err := r.Reject([]byte("go away")); err != nil {
			log.Fatal(err)
		}
		return
	}
	c, err := r.Accept(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	<-c.Done() // the peer disconnected
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
}

// A sender joins a multicast group as a send-only member and sends one
// datagram to every member's QP.
func ExampleJoinMulticast() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rdmacm.JoinMulticast(ctx, "239.255.0.1", &rdmacm.Config{SrcAddr: "198.18.0.1", MulticastSendOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // leaves the group
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := c.PD().RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	n := copy(buf.Bytes(), "to the group")
	ah, qpn, qkey := c.RemoteUD() // the group's address; qpn is 0xffffff
	err = c.QP().PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{mr.SGE(0, n)}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}})
	if err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 1)
	if _, err := c.SendCQ().Wait(ctx, wcs); err != nil {
		log.Fatal(err)
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err)
	}
}

// A server connects a QP it made itself, with ibverbs, as a C program
// does with rdma_init_qp_attr or a pyverbs one with its CMID: on the
// CONNECT_REQUEST it makes the QP on the request's device, moves it to
// INIT, RTR and RTS with the attributes InitQPAttr gives, posts a
// receive, and accepts with the QP's number. ESTABLISHED comes once the
// client has called Establish (the ID.Establish example).
func ExampleID_InitQPAttr() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		log.Fatal(err)
	}
	defer ch.Close() // after its IDs
	lid, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		log.Fatal(err)
	}
	defer lid.Close()
	if err := lid.BindAddr(netip.MustParseAddrPort("198.18.0.1:7471")); err != nil {
		log.Fatal(err)
	}
	if err := lid.Listen(0); err != nil {
		log.Fatal(err)
	}
	req, err := ch.Await(ctx, rdmacm.EventConnectRequest)
	if err != nil {
		log.Fatal(err)
	}
	id := req.ID // the connection's, on ch: Accept or Reject it
	defer id.Close()
	dev, err := id.Context() // librdmacm's: Close ends only the handle
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	cc, err := dev.CreateCompChannel()
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	cq, err := dev.CreateCQ(16, cc) // for CQ.Wait
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq,
		Cap: ibverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close() // first: the deferred calls run in reverse
	for _, s := range []ibverbs.QPState{ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS} {
		attr, mask, err := id.InitQPAttr(s) // rdma_init_qp_attr
		if err != nil {
			id.Reject(nil)
			log.Fatal(err)
		}
		if err := qp.Modify(&attr, mask); err != nil { // ibv_modify_qp
			id.Reject(nil)
			log.Fatal(err)
		}
	}
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	if err := qp.PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{mr.SGE(0, 4096)}}}); err != nil {
		log.Fatal(err)
	}
	// Depths of 0, as the client's: the QP takes sends and RDMA writes
	// only; depths above 0 on both sides allow RDMA reads (InitQPAttr).
	if err := id.Accept(&rdmacm.ConnParam{QPNum: qp.Num(), RNRRetryCount: 7}); err != nil {
		log.Fatal(err)
	}
	if _, err := ch.Await(ctx, rdmacm.EventEstablished); err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 1)
	if _, err := cq.Wait(ctx, wcs); err != nil {
		log.Fatal(err)
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", buf.Bytes()[:wcs[0].ByteLen])
	if _, err := ch.Await(ctx, rdmacm.EventDisconnected); err != nil {
		log.Fatal(err)
	}
	if err := id.Disconnect(); err != nil { // answers the client's
		log.Fatal(err)
	}
}

// A client connects a QP it made itself, with ibverbs: Connect sends the
// QP's number, and the client gets CONNECT_RESPONSE where a QP from
// CreateQP would get ESTABLISHED. It then moves the QP to INIT (again:
// the attributes are the server's now), RTR and RTS with what InitQPAttr
// gives, and calls Establish (rdma_establish), upon which the server gets
// ESTABLISHED. The server is the ID.InitQPAttr example.
func ExampleID_Establish() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := rdmacm.CreateEventChannel()
	if err != nil {
		log.Fatal(err)
	}
	defer ch.Close()
	id, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		log.Fatal(err)
	}
	defer id.Close()
	src, dst := netip.MustParseAddrPort("198.18.0.2:0"), netip.MustParseAddrPort("198.18.0.1:7471")
	if err := id.ResolveAddr(src, dst, 2*time.Second); err != nil {
		log.Fatal(err)
	}
	if _, err := ch.Await(ctx, rdmacm.EventAddrResolved); err != nil {
		log.Fatal(err)
	}
	if err := id.ResolveRoute(2 * time.Second); err != nil {
		log.Fatal(err)
	}
	if _, err := ch.Await(ctx, rdmacm.EventRouteResolved); err != nil {
		log.Fatal(err)
	}
	dev, err := id.Context() // the device of the route
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq,
		Cap: ibverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()
	move := func(states ...ibverbs.QPState) {
		for _, s := range states {
			attr, mask, err := id.InitQPAttr(s)
			if err != nil {
				log.Fatal(err) // EINVAL for RTR before CONNECT_RESPONSE
			}
			if err := qp.Modify(&attr, mask); err != nil {
				log.Fatal(err)
			}
		}
	}
	move(ibverbs.QPStateInit) // Connect takes the QP in RESET or INIT
	// InitiatorDepth and ResponderResources above 0 would allow RDMA
	// reads; the QP gets them with INIT, RTR and RTS below.
	if err := id.Connect(&rdmacm.ConnParam{QPNum: qp.Num(), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		log.Fatal(err)
	}
	if _, err := ch.Await(ctx, rdmacm.EventConnectResponse); err != nil {
		log.Fatal(err) // a *rdmacm.RejectedError if the server refused
	}
	move(ibverbs.QPStateInit, ibverbs.QPStateRTR, ibverbs.QPStateRTS)
	if err := id.Establish(); err != nil {
		log.Fatal(err)
	}
	defer id.Disconnect() // before qp.Close

	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	n := copy(buf.Bytes(), "hello from my own QP")
	err = qp.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{mr.SGE(0, n)}}})
	if err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 1)
	for k := 0; k == 0; {
		if k, err = cq.Poll(wcs); err != nil {
			log.Fatal(err)
		}
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err)
	}
}
