//go:build linux && cgo

package ibverbs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// List the devices and their ports.
func ExampleDevices() {
	devs, err := ibverbs.Devices()
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range devs {
		ctx, err := ibverbs.Open(d.Name)
		if err != nil {
			log.Fatal(err)
		}
		pa, err := ctx.QueryPort(1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s port 1: %s, %s, MTU %s\n", d.Name, pa.State, pa.LinkLayer, pa.ActiveMTU)
		ctx.Close()
	}
}

// Pick the RoCE v2 GID to use, and say why.
func ExampleContext_SelectGID() {
	ctx, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	choice, err := ctx.SelectGID(1, ibverbs.GIDRule{Family: 4})
	if err != nil {
		log.Fatal(err) // the error says why each entry was passed over
	}
	fmt.Print(choice.Explain())
}

// An RC connection and one RDMA write. The peer's Endpoint and the
// address and rkey of its memory come over any channel the program likes.
func ExampleQP_Connect() {
	ctx, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	gid, err := ctx.SelectGID(1, ibverbs.GIDRule{})
	if err != nil {
		log.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	buf, err := ibverbs.NewBuffer(1<<20, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	cq, err := ctx.CreateCQ(128, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq,
		Cap: ibverbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64}})
	if err != nil {
		log.Fatal(err)
	}
	defer qp.Close()

	local, err := qp.Endpoint(1, gid.Entry.Index)
	if err != nil {
		log.Fatal(err)
	}
	remote, raddr, rkey := swapWithPeer(local, mr.Addr(), mr.RKey())
	if err := qp.Connect(remote, ibverbs.ConnParams{GIDIndex: gid.Entry.Index}); err != nil {
		log.Fatal(err)
	}
	err = qp.PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{mr.SGE(0, 4096)}, RemoteAddr: raddr, RKey: rkey}})
	if err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 8)
	for {
		n, err := cq.Poll(wcs)
		if err != nil {
			log.Fatal(err)
		}
		if n > 0 {
			if err := wcs[0].Err(); err != nil {
				log.Fatal(err) // a *WCError naming the status
			}
			break
		}
	}
}

// Copy a local 64 KiB block into each 64 KiB of a 64 MiB region of the
// peer, as 16 writes of 4 KiB a round, from a SendBatch built once: each
// round changes only the remote addresses and posts, with no conversion of
// the requests. qp, mr, cq and the peer's
// address and key are those of the QP.Connect example.
func ExampleQP_NewSendBatch() {
	var (
		qp    *ibverbs.QP
		mr    *ibverbs.MR
		cq    *ibverbs.CQ
		raddr uint64
		rkey  uint32
	)
	const chunk, n = 4096, 16
	wrs := make([]ibverbs.SendWR, n)
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite,
			SGL: []ibverbs.SGE{mr.SGE(i*chunk, chunk)}, RemoteAddr: raddr, RKey: rkey}
	}
	wrs[n-1].Flags = ibverbs.SendSignaled // one completion a round
	batch, err := qp.NewSendBatch(wrs)
	if err != nil {
		log.Fatal(err)
	}
	defer batch.Close()
	wcs := make([]ibverbs.WC, 1)
	for off := uint64(0); off < 64<<20; off += n * chunk {
		for i := range n {
			batch.SetRemoteAddr(i, raddr+off+uint64(i*chunk))
		}
		if err := batch.Post(0, n, 1); err != nil { // a doorbell each, one cgo call
			log.Fatal(err)
		}
		for k := 0; k == 0; {
			if k, err = cq.Poll(wcs); err != nil {
				log.Fatal(err)
			}
		}
		if err := wcs[0].Err(); err != nil {
			log.Fatal(err)
		}
	}
}

// Wait for completions without spinning: the goroutine parks in the Go
// netpoller until the CQ's channel fires or the context ends.
func ExampleCQ_Wait() {
	dev, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ch, err := dev.CreateCompChannel()
	if err != nil {
		log.Fatal(err)
	}
	defer ch.Close()
	cq, err := dev.CreateCQ(128, ch)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	// ... a QP on cq, and work posted to it ...
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wcs := make([]ibverbs.WC, 16)
	n, err := cq.Wait(ctx, wcs) // context.DeadlineExceeded if none came
	if err != nil {
		log.Fatal(err)
	}
	for _, wc := range wcs[:n] {
		if err := wc.Err(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(n, "completions")
}

// A loop that owns its thread sleeps on completion events instead of
// spinning, as perftest's -e does: arm the CQ once, then poll it and
// Block while it is empty; Block re-arms the CQ whose event it took.
func ExampleCompChannel_Block() {
	ctx, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	ch, err := ctx.CreateCompChannel()
	if err != nil {
		log.Fatal(err)
	}
	defer ch.Close()
	cq, err := ctx.CreateCQ(128, ch)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	// ... QPs on cq, and 1000 signalled requests posted to them ...
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cq.ReqNotify(false); err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 16)
	for done := 0; done < 1000; {
		n, err := cq.Poll(wcs)
		if err != nil {
			log.Fatal(err)
		}
		for _, wc := range wcs[:n] {
			if err := wc.Err(); err != nil {
				log.Fatal(err)
			}
		}
		done += n
		if n == 0 {
			// At most 10 ms asleep, then whatever else the loop
			// checks (a deadline, a peer) before it polls again.
			if _, err := ch.Block(10 * time.Millisecond); err != nil {
				log.Fatal(err)
			}
		}
	}
}

// Async events (port changes, fatal QP errors) arrive on a channel, which
// closes when the Context does.
func ExampleContext_Events() {
	ctx, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	events, err := ctx.Events()
	if err != nil {
		ctx.Close()
		log.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			log.Printf("%s: %v", ctx.Name(), ev)
		}
	}()
	// ... use the device ...
	if err := ctx.Close(); err != nil { // ends the loop above
		log.Fatal(err)
	}
	<-done
}

func swapWithPeer(ibverbs.Endpoint, uint64, uint32) (ibverbs.Endpoint, uint64, uint32) {
	return ibverbs.Endpoint{}, 0, 0
}

// Lend a peer 4 KiB of a registered buffer for one request and take the
// loan back: a type 2 memory window bound on the QP gives the peer a key
// to just that part, and the peer's reply, a send with invalidate,
// revokes the key before this side sees the reply. qp, pd and cq are
// those of the QP.Connect example; mr was registered with AccessMWBind.
func ExamplePD_AllocMW() {
	var (
		qp *ibverbs.QP
		pd *ibverbs.PD
		mr *ibverbs.MR
		cq *ibverbs.CQ
	)
	mw, err := pd.AllocMW(ibverbs.MWType2)
	if err != nil {
		log.Fatal(err) // errors.Is(err, errors.ErrUnsupported) without windows
	}
	defer mw.Close()
	rkey := ibverbs.NextRKey(mw.RKey())
	bind := ibverbs.MWBind{MW: mw, MR: mr, Addr: mr.Addr() + 8192, Length: 4096, Access: ibverbs.AccessRemoteWrite}
	if err := qp.PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpBindMW, Flags: ibverbs.SendSignaled,
		RKey: rkey, Bind: &bind}}); err != nil {
		log.Fatal(err)
	}
	wcs := make([]ibverbs.WC, 1)
	for n := 0; n == 0; {
		if n, err = cq.Poll(wcs); err != nil {
			log.Fatal(err)
		}
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err) // the window is not bound: rkey opens nothing
	}
	// The WCBindMW completion is in: send rkey and the address to the
	// peer; it writes there and replies with OpSendWithInv and Imm: rkey.
	// The reply's receive completion has WCWithInv set and the key in
	// Imm, where the device reports them (soft-RoCE flags it WCIPCsumOK
	// instead, with Imm 0: see WCWithInv); either way the window is
	// invalidated and free to bind again, under NextRKey(rkey).
}

// A UD server answers whoever sent it a datagram: the receive's buffer
// starts with the GRH area, from which, with the completion, comes an
// address handle back to the sender.
func ExamplePD_CreateAHFromWC() {
	var (
		pd       *ibverbs.PD
		qp       *ibverbs.QP // UD
		rcq, scq *ibverbs.CQ // its receive and send CQs, with completion channels
		mr       *ibverbs.MR // its first GRHLen bytes receive the GRH
		qkey     uint32      // the Q_Key the clients use
	)
	ctx := context.Background()
	wcs := make([]ibverbs.WC, 1)
	if _, err := rcq.Wait(ctx, wcs); err != nil { // a request came
		log.Fatal(err)
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err)
	}
	grh := mr.Bytes()[:ibverbs.GRHLen]
	if wcs[0].Flags&ibverbs.WCWithGRH != 0 { // always on RoCE
		if g, err := ibverbs.ParseGRH(grh); err == nil {
			fmt.Println("request from", g.Src.Addr())
		}
	}
	ah, err := pd.CreateAHFromWC(&wcs[0], grh, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer ah.Close() // once the send that uses it has completed, below
	err = qp.PostSend([]ibverbs.SendWR{{ID: 2, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{mr.SGE(ibverbs.GRHLen, 64)}, AH: ah, RemoteQPN: wcs[0].SrcQP, RemoteQKey: qkey}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := scq.Wait(ctx, wcs); err != nil {
		log.Fatal(err)
	}
	if err := wcs[0].Err(); err != nil {
		log.Fatal(err)
	}
}

// Completion timestamps from the device's clock, where it has one.
func ExampleCQ_PollEx() {
	ctx, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	cq, err := ctx.CreateCQEx(ibverbs.CQInit{Entries: 256, Timestamps: true})
	if errors.Is(err, errors.ErrUnsupported) {
		log.Fatalf("%s has no completion clock: %v", ctx.Name(), err)
	} else if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()
	attr, err := ctx.QueryDevice()
	if err != nil {
		log.Fatal(err)
	}
	// ... QPs on cq, and work posted to them ...
	wcs := make([]ibverbs.WCEx, 64)
	n, err := cq.PollEx(wcs)
	if err != nil {
		log.Fatal(err)
	}
	for _, wc := range wcs[:n] {
		fmt.Printf("WR %d at tick %d (%d kHz)\n", wc.WRID, wc.Timestamp, attr.HCACoreClockKHz)
	}
}

// Tell why a completion failed with errors.Is: the statuses are errors
// that a *WCError wraps. cq is a CQ that reads and writes complete on.
func ExampleWCError() {
	var cq *ibverbs.CQ
	wcs := make([]ibverbs.WC, 16)
	n, err := cq.Poll(wcs)
	if err != nil {
		log.Fatal(err)
	}
	for _, wc := range wcs[:n] {
		err := wc.Err()
		switch {
		case err == nil:
			// done
		case errors.Is(err, ibverbs.WCRemAccessErr):
			// A bad rkey, or an address outside the peer's region:
			// this request's fault, and the QP is now in the error
			// state.
			log.Printf("request %d: the peer refused the access: %v", wc.WRID, err)
		case errors.Is(err, ibverbs.WCWRFlushErr):
			// Flushed after an earlier failure (or ToError): not
			// this request's fault.
		default:
			log.Fatal(err)
		}
	}
}

// Stop a goroutine that polls a CQ by closing the CQ, as one closes a
// connection to end its reader: Close waits for a Poll under way, and
// the poller's next Poll returns ErrClosed. cq is a CQ whose QPs are
// closed.
func ExampleCQ_Close() {
	var cq *ibverbs.CQ
	done := make(chan error)
	go func() {
		wcs := make([]ibverbs.WC, 16)
		for {
			if _, err := cq.Poll(wcs); err != nil {
				done <- err
				return
			}
		}
	}()
	if err := cq.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(<-done, ibverbs.ErrClosed)) // true
}

// Take remote write access away from a region the peer was lent, in
// place where the provider can (the MR, its address and length stay),
// else by registering it anew. Either way the keys may change: the peer
// must not use the old rkey, and this side's requests take their SGEs
// from the MR again.
func ExampleMR_Rereg() {
	ctx, err := ibverbs.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	buf, err := ibverbs.NewBuffer(1<<20, ibverbs.BufferOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	// ... the peer writes into buf, and its last request has completed ...
	err = mr.Rereg(ibverbs.MRChange{Access: ibverbs.AccessLocalWrite, SetAccess: true})
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		// Soft-RoCE among others: the MR is as it was.
		if err := mr.Close(); err != nil {
			log.Fatal(err)
		}
		if mr, err = pd.RegMR(buf, ibverbs.AccessLocalWrite); err != nil {
			log.Fatal(err)
		}
	case err != nil:
		mr.Close() // the error says whether the region was left usable
		log.Fatal(err)
	}
	defer mr.Close()
	fmt.Printf("local write only now: lkey %#x\n", mr.LKey())
}

// A program whose C code forks and goes on running in the child (a cgo
// library's fork, system(3)) makes its registered memory safe from that
// before it registers any: first thing in main. A Go program that only
// starts children with os/exec needs none of it, and on Linux 5.13 and
// later the kernel copies registered pages at fork itself.
func ExampleForkInit() {
	if ibverbs.ForkState() == ibverbs.ForkDisabled {
		if err := ibverbs.ForkInit(); err != nil {
			log.Fatal(err) // EINVAL: memory was registered before
		}
	}
	fmt.Println(ibverbs.ForkState()) // ENABLED, or UNNEEDED
	// ... open devices, register memory, fork ...
}

// A latency test's receiver tells the peer how to let it know a write
// has landed: where this QP's device places a write's bytes in order,
// the peer's plain RDMA write will do, and the receiver polls the last
// byte of the message; elsewhere (soft-RoCE, any device off x86) the
// peer writes with immediate data, and the receiver waits for the
// receive completion that comes with it. qp is an RC QP of the receiver's.
func ExampleQP_DataInOrder() {
	var qp *ibverbs.QP
	inOrder, err := qp.DataInOrder(ibverbs.OpRDMAWrite)
	if err != nil {
		log.Fatal(err) // ErrClosed
	}
	op := ibverbs.OpRDMAWriteWithImm
	if inOrder {
		op = ibverbs.OpRDMAWrite
	}
	fmt.Println("the peer writes with", op) // sent to the peer with the Endpoint, say
}
