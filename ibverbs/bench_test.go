//go:build linux && cgo

package ibverbs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// BenchmarkWritePostPoll posts RDMA writes of 64 bytes in lists of the
// given length, only the last signalled, and polls the completion: the
// library's whole hot path. ns/op is per list; allocs/op must be 0.
func BenchmarkWritePostPoll(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			p := benchPair(b)
			wrs := writes(p, batch)
			wcs := make([]ibverbs.WC, 16)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := p.a.qp.PostSend(wrs); err != nil {
					b.Fatal(err)
				}
				pollOne(b, p.a.cq, wcs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/write")
		})
	}
}

// BenchmarkWriteSinglePosts posts 16 writes of 64 bytes, each in its own
// ibv_post_send (a doorbell each, as with perftest's default post list of
// 1), the last signalled, and polls its completion: "loop" calls PostSend
// 16 times, "lists" makes one PostSendLists call. The difference is the
// cost of 15 cgo calls and their Go-side set-up. "wr_api" is "lists" on a
// QP that posts through the ibv_wr_* API (QPInit.WRAPI); "batch" posts
// the same 16 from a SendBatch, built once, with Post(0, 16, 1), and
// "batch_wr_api" does so on a WRAPI QP, as gorperf's sender does by
// default. ns/write is per write; allocs/op must be 0.
func BenchmarkWriteSinglePosts(b *testing.B) {
	for _, mode := range []string{"loop", "lists", "wr_api", "batch", "batch_wr_api"} {
		b.Run(mode, func(b *testing.B) {
			p := newPair(b, pairOpts{typ: ibverbs.QPTypeRC, wrapi: mode == "wr_api" || mode == "batch_wr_api"})
			const n = 16
			wrs := writes(p, n)
			wcs := make([]ibverbs.WC, 16)
			batch, err := p.a.qp.NewSendBatch(wrs)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { closeOK(b, batch) })
			b.ReportAllocs()
			for b.Loop() {
				if mode == "batch" || mode == "batch_wr_api" {
					if err := batch.Post(0, n, 1); err != nil {
						b.Fatal(err)
					}
				} else if mode != "loop" {
					if err := p.a.qp.PostSendLists(wrs, 1); err != nil {
						b.Fatal(err)
					}
				} else {
					for i := range wrs {
						if err := p.a.qp.PostSend(wrs[i : i+1]); err != nil {
							b.Fatal(err)
						}
					}
				}
				pollOne(b, p.a.cq, wcs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/write")
		})
	}
}

// BenchmarkSendRecv sends 16 messages of 64 bytes and receives them, as
// send_bw's two sides do: the receiver posts 16 receives from a RecvBatch,
// as one list ("one list", Post), in lists of 4 or singly (PostLists, as
// --recv_post_list), all in one cgo call; the sender posts 16 sends from
// a SendBatch as one list, the last signalled; both CQs are polled until
// every completion is in, the receiver's with PollEx in "one list,
// PollEx", whose CQs ibv_create_cq_ex made. ns/msg is per message;
// allocs/op must be 0.
func BenchmarkSendRecv(b *testing.B) {
	for _, c := range []struct {
		name string
		list int
		ex   bool
	}{{"one list", 0, false}, {"lists of 4", 4, false}, {"singly", 1, false}, {"one list, PollEx", 0, true}} {
		b.Run(c.name, func(b *testing.B) {
			p := newPair(b, pairOpts{typ: ibverbs.QPTypeRC, cqEx: c.ex})
			const n = 16
			recvs, sends := make([]ibverbs.RecvWR, n), make([]ibverbs.SendWR, n)
			for i := range n {
				recvs[i] = ibverbs.RecvWR{ID: uint64(i), SGL: []ibverbs.SGE{p.b.mr.SGE(i*64, 64)}}
				sends[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpSend, SGL: []ibverbs.SGE{p.a.mr.SGE(i*64, 64)}}
			}
			sends[n-1].Flags = ibverbs.SendSignaled
			rb, err := p.b.qp.NewRecvBatch(recvs)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { closeOK(b, rb) })
			sb, err := p.a.qp.NewSendBatch(sends)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { closeOK(b, sb) })
			wcs, wcx := make([]ibverbs.WC, n), make([]ibverbs.WCEx, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := rb.PostLists(0, n, c.list); err != nil {
					b.Fatal(err)
				}
				if err := sb.Post(0, n, 0); err != nil {
					b.Fatal(err)
				}
				pollOne(b, p.a.cq, wcs)
				if c.ex {
					takeN(b, wcx, p.b.cq.PollEx, func(w *ibverbs.WCEx) error { return w.Err() })
				} else {
					takeN(b, wcs, p.b.cq.Poll, (*ibverbs.WC).Err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
	}
}

// takeN polls with poll until len(wcs) completions came, failing b at the
// first whose failed says it failed.
func takeN[W any](b *testing.B, wcs []W, poll func([]W) (int, error), failed func(*W) error) {
	for got := 0; got < len(wcs); {
		k, err := poll(wcs[:len(wcs)-got])
		if err != nil {
			b.Fatal(err)
		}
		for i := range wcs[:k] {
			if err := failed(&wcs[i]); err != nil {
				b.Fatal(err)
			}
		}
		got += k
	}
}

// BenchmarkPollEmpty is the cost of one cgo call that finds nothing.
func BenchmarkPollEmpty(b *testing.B) {
	p := benchPair(b)
	wcs := make([]ibverbs.WC, 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.a.cq.Poll(wcs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadPostPoll reads 64 bytes from the peer and waits for the
// completion, as read_lat does: "post+poll" with Post and then Poll until
// the completion comes, "PostPoll" with one PostPoll call, which spins in
// C, "post+Block" with Post, then Poll and, while the CQ is empty, a
// CompChannel.Block that sleeps until its event (read_lat -e).
// allocs/op must be 0.
func BenchmarkReadPostPoll(b *testing.B) {
	for _, mode := range []string{"post+poll", "PostPoll", "post+Block"} {
		b.Run(mode, func(b *testing.B) {
			p := newPair(b, pairOpts{typ: ibverbs.QPTypeRC, events: mode == "post+Block"})
			if p.ch != nil {
				if err := p.a.cq.ReqNotify(false); err != nil {
					b.Fatal(err)
				}
			}
			batch, err := p.a.qp.NewSendBatch([]ibverbs.SendWR{{Opcode: ibverbs.OpRDMARead, Flags: ibverbs.SendSignaled,
				SGL: []ibverbs.SGE{p.a.mr.SGE(0, 64)}, RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { closeOK(b, batch) })
			wcs := make([]ibverbs.WC, 1)
			b.ReportAllocs()
			for b.Loop() {
				if mode == "PostPoll" {
					k, err := batch.PostPoll(0, 1, 0, p.a.cq, wcs, time.Second)
					if err != nil || k != 1 || wcs[0].Err() != nil {
						b.Fatalf("PostPoll: %d, %v, %+v", k, err, wcs[0])
					}
					continue
				}
				if err := batch.Post(0, 1, 0); err != nil {
					b.Fatal(err)
				}
				if mode == "post+Block" {
					blockOne(b, p.ch, p.a.cq, wcs)
					continue
				}
				pollOne(b, p.a.cq, wcs)
			}
		})
	}
}

// blockOne polls cq for one successful completion, sleeping in ch.Block
// while it is empty.
func blockOne(b *testing.B, ch *ibverbs.CompChannel, cq *ibverbs.CQ, wcs []ibverbs.WC) {
	for {
		k, err := cq.Poll(wcs[:1])
		if err != nil || k == 1 && wcs[0].Err() != nil {
			b.Fatalf("Poll: %v, %+v", err, wcs[0])
		}
		if k == 1 {
			return
		}
		if got, err := ch.Block(5 * time.Second); err != nil || got != cq {
			b.Fatalf("Block = %p, %v; want %p", got, err, cq)
		}
	}
}

// writes returns n RDMA writes of 64 bytes from p.a to p.b, only the last
// signalled.
func writes(p *pair, n int) []ibverbs.SendWR {
	wrs := make([]ibverbs.SendWR, n)
	sgl := []ibverbs.SGE{p.a.mr.SGE(0, 64)}
	for i := range wrs {
		wrs[i] = ibverbs.SendWR{ID: uint64(i), Opcode: ibverbs.OpRDMAWrite, SGL: sgl,
			RemoteAddr: p.b.mr.Addr(), RKey: p.b.mr.RKey()}
	}
	wrs[n-1].Flags = ibverbs.SendSignaled
	return wrs
}

// pollOne spins on cq until a completion comes, and fails b unless it
// succeeded.
func pollOne(b *testing.B, cq *ibverbs.CQ, wcs []ibverbs.WC) {
	for {
		k, err := cq.Poll(wcs)
		if err != nil {
			b.Fatal(err)
		}
		if k > 0 {
			if err := wcs[0].Err(); err != nil {
				b.Fatal(err)
			}
			return
		}
	}
}

func benchPair(b *testing.B) *pair { return newPair(b, pairOpts{typ: ibverbs.QPTypeRC}) }

// BenchmarkPollExEmpty is BenchmarkPollEmpty with PollEx, on a CQ that
// ibv_create_cq_ex made.
func BenchmarkPollExEmpty(b *testing.B) {
	p := newPair(b, pairOpts{typ: ibverbs.QPTypeRC, cqEx: true})
	wcs := make([]ibverbs.WCEx, 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.a.cq.PollEx(wcs); err != nil {
			b.Fatal(err)
		}
	}
}
