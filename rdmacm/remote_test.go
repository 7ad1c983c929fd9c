//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestRemoteMRPrivateData exchanges ibverbs.RemoteMRs as the package doc
// says: the client sends its own in Dial's private data, the server reads
// it from the request and replies with its own in the Config of
// ConnRequest.Accept; each arrives padded by the CM (56 bytes in a
// request, 196 in a reply) and decodes. The client then RDMA-writes into
// the server's region and reads it back, and the server reads the
// client's. Last, the client closes, and a receive the server had posted
// completes flushed, which Conn.Err explains as ErrDisconnected
// (ExampleConn_Err's pattern).
func TestRemoteMRPrivateData(t *testing.T) {
	n := device(t)
	_, spd := devicePD(t, n)
	_, cpd := devicePD(t, n)
	access := ibverbs.AccessRemoteWrite | ibverbs.AccessRemoteRead
	smem := register(t, spd, 8192, access)
	cmem := register(t, cpd, 8192, access)
	sadv, err := smem.mr.Remote().AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	cadv, err := cmem.mr.Remote().AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}

	l := listen(t, n.IP, &rdmacm.Config{PD: spd})
	ctx := timeout(t, 60*time.Second)
	type accepted struct {
		c    *rdmacm.Conn
		req  []byte
		peer ibverbs.RemoteMR
		err  error
	}
	acc := make(chan accepted, 1)
	go func() {
		r, err := l.GetRequest(ctx)
		if err != nil {
			acc <- accepted{err: err}
			return
		}
		a := accepted{req: r.PrivateData()}
		if err := a.peer.UnmarshalBinary(r.PrivateData()); err != nil {
			a.err = errors.Join(fmt.Errorf("the client's RemoteMR: %w", err), r.Reject(nil))
			acc <- a
			return
		}
		a.c, a.err = r.Accept(ctx, &rdmacm.Config{PD: spd, PrivateData: sadv})
		acc <- a
	}()
	cli, err := rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: n.IP.String(), PD: cpd, PrivateData: cadv})
	a := <-acc
	if a.c != nil {
		t.Cleanup(func() { closeOK(t, a.c) })
	}
	if cli != nil {
		t.Cleanup(func() { closeOK(t, cli) })
	}
	if err != nil || a.err != nil {
		t.Fatalf("Dial: %v; Accept: %v", err, a.err)
	}
	srv := a.c
	if len(a.req) != 56 || len(cli.PrivateData()) != 196 {
		t.Errorf("private data of %d bytes in the request and %d in the reply; the docs say 56 and 196",
			len(a.req), len(cli.PrivateData()))
	}
	if want := cmem.mr.Remote(); a.peer != want {
		t.Errorf("the server decoded %+v from the request, want the client's %+v", a.peer, want)
	}
	var peer ibverbs.RemoteMR
	if err := peer.UnmarshalBinary(cli.PrivateData()); err != nil {
		t.Fatalf("the server's RemoteMR from the reply %x: %v", cli.PrivateData(), err)
	}
	if want := smem.mr.Remote(); peer != want {
		t.Fatalf("the client decoded %+v from the reply, want the server's %+v", peer, want)
	}

	// The client writes into the server's region at 4000, and reads the
	// bytes back into its own at 6000.
	data := []byte("RDMA WRITE through a RemoteMR from private data")
	copy(cmem.buf.Bytes()[100:], data)
	rdma := func(c *rdmacm.Conn, op ibverbs.Opcode, sge ibverbs.SGE, r ibverbs.RemoteMR, off uint64) {
		t.Helper()
		wr := ibverbs.SendWR{ID: uint64(op), Opcode: op, Flags: ibverbs.SendSignaled, SGL: []ibverbs.SGE{sge}}
		if err := wr.SetRemote(r, off); err != nil {
			t.Fatal(err)
		}
		if err := c.QP().PostSend([]ibverbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		if wc, err := waitEvent(c.SendCQ(), 20*time.Second); err != nil || wc.WRID != uint64(op) {
			t.Fatalf("%v: completion %+v, %v", op, wc, err)
		}
	}
	rdma(cli, ibverbs.OpRDMAWrite, cmem.mr.SGE(100, len(data)), peer, 4000)
	if got := smem.buf.Bytes()[4000 : 4000+len(data)]; !bytes.Equal(got, data) {
		t.Errorf("the server's region at 4000 holds %q, want %q", got, data)
	}
	rdma(cli, ibverbs.OpRDMARead, cmem.mr.SGE(6000, len(data)), peer, 4000)
	if got := cmem.buf.Bytes()[6000 : 6000+len(data)]; !bytes.Equal(got, data) {
		t.Errorf("read back %q, want %q", got, data)
	}
	// And the server reads the client's region, through the RemoteMR of
	// the request.
	rdma(srv, ibverbs.OpRDMARead, smem.mr.SGE(0, len(data)), a.peer, 100)
	if got := smem.buf.Bytes()[:len(data)]; !bytes.Equal(got, data) {
		t.Errorf("the server read %q from the client, want %q", got, data)
	}
	// A request past the end of the server's region is refused before it
	// is posted.
	wr := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, SGL: []ibverbs.SGE{cmem.mr.SGE(0, 64)}}
	if err := wr.SetRemote(peer, 8192-63); err == nil {
		t.Errorf("SetRemote of 64 bytes at %d of a region of 8192: no error", 8192-63)
	}

	// The client goes; the server's pending receive flushes, and Err says
	// why.
	recvd := make(chan error, 1)
	if err := srv.QP().PostRecv([]ibverbs.RecvWR{{ID: 5, SGL: []ibverbs.SGE{smem.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := waitEvent(srv.RecvCQ(), 20*time.Second)
		recvd <- err
	}()
	closeOK(t, cli)
	err = <-recvd
	if !errors.Is(err, ibverbs.WCWRFlushErr) {
		t.Fatalf("the server's receive once the client closed: %v, want WCWRFlushErr", err)
	}
	err = fmt.Errorf("%w: %w", err, srv.Err())
	if !errors.Is(err, rdmacm.ErrDisconnected) || !errors.Is(err, ibverbs.WCWRFlushErr) {
		t.Errorf("the flush explained: %v; want it to match ErrDisconnected and WCWRFlushErr", err)
	}
}
