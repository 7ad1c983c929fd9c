//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// A server lends each client 1 MiB for RDMA reads and writes: it reads
// the client's ibverbs.RemoteMR from the request's private data, and
// replies with its own in the Config of the Accept. The memory is
// registered before the reply, so on a PD of the server's (Config.PD),
// on the device the listener's address is on.
func ExampleConnRequest_Accept() {
	ctx := context.Background()
	dev, err := rdmacm.Device("rxe0") // the device 198.18.0.1 is on
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close() // after the Conn, which leaves a Config.PD open
	l, err := rdmacm.Listen(ctx, "198.18.0.1:7471", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	r, err := l.GetRequest(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var client ibverbs.RemoteMR
	if err := client.UnmarshalBinary(r.PrivateData()); err != nil { // padded to 56 bytes: ignored
		r.Reject([]byte("no RemoteMR"))
		log.Fatal(err)
	}
	buf, err := ibverbs.NewBuffer(1<<20, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	mine, err := mr.Remote().AppendBinary(nil) // 20 bytes of the reply's 196
	if err != nil {
		log.Fatal(err)
	}
	c, err := r.Accept(ctx, &rdmacm.Config{PD: pd, PrivateData: mine})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Printf("%s lends %d bytes with rkey %#x\n", c.RemoteAddr(), client.Len, client.RKey)
	<-c.Done() // the client reads and writes mr's memory until it goes
}

// A client sends its ibverbs.RemoteMR with its request, reads the
// server's from the reply, writes 5 bytes into the server's memory at
// offset 4096 and reads them back. Its memory must exist before Dial, to
// go in the request, so it is on a PD of its own (Config.PD) on the
// device of its address.
func ExampleDial_remoteMR() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dev, err := rdmacm.Device("rxe1") // the device 198.18.0.2 is on
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteRead)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	mine, err := mr.Remote().AppendBinary(nil)
	if err != nil {
		log.Fatal(err)
	}
	c, err := rdmacm.Dial(ctx, "198.18.0.1:7471", &rdmacm.Config{SrcAddr: "198.18.0.2", PD: pd, PrivateData: mine})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var server ibverbs.RemoteMR
	if err := server.UnmarshalBinary(c.PrivateData()); err != nil { // padded to 196 bytes: ignored
		log.Fatal(err)
	}
	n := copy(buf.Bytes(), "hello")
	wcs := make([]ibverbs.WC, 1)
	for _, wr := range []ibverbs.SendWR{
		{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{mr.SGE(0, n)}},
		{Opcode: ibverbs.OpRDMARead, SGL: []ibverbs.SGE{mr.SGE(2048, n)}},
	} {
		wr.Flags = ibverbs.SendSignaled
		if err := wr.SetRemote(server, 4096); err != nil { // the server's bytes 4096 to 4100
			log.Fatal(err) // past the end of the server's region
		}
		if err := c.QP().PostSend([]ibverbs.SendWR{wr}); err != nil {
			log.Fatal(err)
		}
		if _, err := c.SendCQ().Wait(ctx, wcs); err != nil {
			log.Fatal(err)
		}
		if err := wcs[0].Err(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%s\n", buf.Bytes()[2048:2048+n]) // hello
}

// A failed completion of WCWRFlushErr says only that the QP was in the
// error state. When an event ended the connection (the peer's
// disconnect, say), the Conn put it there after it set Err, which says
// why. Where Err is nil, the connection failed otherwise: a request of
// this side's, whose completion says why, or of the peer's.
func ExampleConn_Err() {
	var c *rdmacm.Conn // from Dial or Accept, with a receive posted
	ctx := context.Background()
	wcs := make([]ibverbs.WC, 1)
	if _, err := c.RecvCQ().Wait(ctx, wcs); err != nil {
		log.Fatal(err) // ctx's, or ErrClosed after c.Close
	}
	err := wcs[0].Err()
	if errors.Is(err, ibverbs.WCWRFlushErr) && c.Err() != nil {
		err = fmt.Errorf("%w: %w", err, c.Err())
	}
	if errors.Is(err, rdmacm.ErrDisconnected) {
		fmt.Println("the peer went away:", err)
	} else if err != nil {
		log.Fatal(err)
	}
}
