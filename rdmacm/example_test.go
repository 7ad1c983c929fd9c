//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// A server accepts connections and receives one message on each. The
// receive is posted by Config.Prepare, before the connection is accepted,
// so that the client's first message finds it there.
func ExampleListen() {
	ctx := context.Background()
	var buf *ibverbs.Buffer // the receive buffer of the connection Accept makes
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
		cleanup := func() error { return errors.Join(mr.Close(), b.Close()) }
		err = c.QP().PostRecv([]ibverbs.RecvWR{{ID: 1, SGL: []ibverbs.SGE{mr.SGE(0, 4096)}}})
		if err != nil {
			cleanup()
			return nil, err
		}
		buf = b
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
			log.Printf("%s sent %q", c.RemoteAddr(), buf.Bytes()[:wcs[0].ByteLen])
		}
		if err := c.Close(); err != nil { // frees buf, through Prepare's cleanup
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
