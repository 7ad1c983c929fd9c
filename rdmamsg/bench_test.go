//go:build linux && cgo

package rdmamsg_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// BenchmarkRoundTrip sends a 64-byte message and its answer: two Sends
// and two Recvs an operation, through both connections' goroutines.
// With Spin, each caller polls for the answer before it sleeps.
func BenchmarkRoundTrip(b *testing.B) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		name := "sleep"
		if spin > 0 {
			name = fmt.Sprintf("spin %v", spin)
		}
		b.Run(name, func(b *testing.B) { benchmarkRoundTrip(b, spin) })
	}
}

func benchmarkRoundTrip(b *testing.B, spin time.Duration) {
	cfg := &rdmamsg.Config{Spin: spin}
	srv, cli := connect(b, cfg, cfg)
	ctx := timeout(b, time.Hour)
	msg, buf := make([]byte, 64), make([]byte, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sbuf := make([]byte, 4096)
		for range b.N {
			n, err := srv.Recv(ctx, sbuf)
			if err != nil {
				b.Error(err)
				return
			}
			if err := srv.Send(ctx, sbuf[:n]); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := cli.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := cli.Recv(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}

// BenchmarkStream sends 4 KiB messages one way as fast as the receiver
// takes them, with the default depth and send buffers.
func BenchmarkStream(b *testing.B) {
	srv, cli := connect(b, nil, nil)
	ctx := timeout(b, time.Hour)
	msg := make([]byte, 4096)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for range b.N {
			if _, err := srv.Recv(ctx, buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	for range b.N {
		if err := cli.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRemote reads or writes 64 bytes of the peer's memory an
// operation (ReadRemote, WriteRemote), one at a time and from 8
// goroutines at once.
func BenchmarkRemote(b *testing.B) {
	for _, par := range []int{1, 8} {
		for _, read := range []bool{true, false} {
			name := fmt.Sprintf("write/%d", par)
			if read {
				name = fmt.Sprintf("read/%d", par)
			}
			b.Run(name, func(b *testing.B) { benchmarkRemote(b, read, par) })
		}
	}
}

func benchmarkRemote(b *testing.B, read bool, par int) {
	srv, cli := connect(b, nil, nil)
	ctx := timeout(b, time.Hour)
	sr := region(b, srv, 64*par)
	cr := region(b, cli, 64*par)
	remote := tellRegion(b, ctx, srv, cli, sr)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for g := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < b.N; i += par {
				var err error
				if read {
					err = cli.ReadRemote(ctx, cr, 64*g, remote, uint64(64*g), 64)
				} else {
					err = cli.WriteRemote(ctx, remote, uint64(64*g), cr, 64*g, 64)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkPacketRoundTrip sends a 64-byte datagram and its answer between
// two PacketConns that know each other.
func BenchmarkPacketRoundTrip(b *testing.B) {
	p, q := packetPair(b)
	ctx := timeout(b, time.Hour)
	msg, buf := make([]byte, 64), make([]byte, p.MaxDatagram())
	if err := q.WriteTo(ctx, msg, p.LocalAddr()); err != nil {
		b.Fatal(err)
	}
	_, from, err := p.ReadFrom(ctx, buf)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := p.WriteTo(ctx, msg, from); err != nil {
			b.Fatal(err)
		}
		if _, _, err := q.ReadFrom(ctx, buf); err != nil {
			b.Fatal(err)
		}
		if err := q.WriteTo(ctx, msg, p.LocalAddr()); err != nil {
			b.Fatal(err)
		}
		if _, _, err := p.ReadFrom(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripVerbs is BenchmarkRoundTrip's floor: the same 64-byte
// message and its answer between the same two addresses, over plain
// rdma_cm connections driven with the verbs alone, so that the difference
// is what rdmamsg costs. Each side keeps one receive posted and reposts it
// before it sends; sends are signalled and reaped without waiting.
// "poll" busy-polls the receive CQ; "wait" sleeps on its completion
// channel (CQ.Wait), one wake-up a message, in the caller itself; "wait,
// handed over" has a goroutine of each side sleep there and pass each
// message to the caller through a Go channel, the two wake-ups a Conn
// without Spin costs.
func BenchmarkRoundTripVerbs(b *testing.B) {
	for _, mode := range []string{"poll", "wait", "wait, handed over"} {
		b.Run(mode, func(b *testing.B) {
			srv, cli := verbsPair(b, mode)
			ctx := timeout(b, time.Hour)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range b.N {
					if err := srv.recv(ctx); err != nil {
						b.Error(err)
						return
					}
					if err := srv.send(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := cli.send(); err != nil {
					b.Fatal(err)
				}
				if err := cli.recv(ctx); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
		})
	}
}

// verbsSide is one end of BenchmarkRoundTripVerbs: a connection, a
// 64-byte message buffer and the batches that post from it.
type verbsSide struct {
	cm       *rdmacm.Conn
	mr       *ibverbs.MR
	rb       *ibverbs.RecvBatch
	sb       *ibverbs.SendBatch
	wcs      []ibverbs.WC
	inFlight int // sends not yet reaped
	mode     string
	// got carries each receive's result from the waiting goroutine, in
	// "wait, handed over".
	got chan error
}

func verbsPair(b *testing.B, mode string) (srv, cli *verbsSide) {
	srvNet, cliNet := ends(b)
	ctx := timeout(b, 60*time.Second)
	srv, cli = &verbsSide{mode: mode}, &verbsSide{mode: mode}
	l, err := rdmacm.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	acc := make(chan error, 1)
	go func() {
		r, err := l.GetRequest(ctx)
		if err == nil {
			srv.cm, err = r.Accept(ctx, &rdmacm.Config{Prepare: srv.prepare})
		}
		acc <- err
	}()
	cli.cm, err = rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: cliNet.IP.String(), Prepare: cli.prepare})
	if aerr := <-acc; err != nil || aerr != nil {
		b.Fatalf("dial: %v; accept: %v", err, aerr)
	}
	for _, s := range []*verbsSide{srv, cli} {
		b.Cleanup(func() {
			if err := s.cm.Close(); err != nil {
				b.Error(err)
			}
		})
		if s.sb, err = s.cm.QP().NewSendBatch([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{s.mr.SGE(0, 64)}}}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.sb.Close() })
		if mode == "wait, handed over" {
			s.got = make(chan error)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go s.handOver(ctx, done)
			b.Cleanup(func() { stop(); <-done })
		}
	}
	return srv, cli
}

// handOver waits for each receive completion and hands it to recv, until
// ctx ends.
func (s *verbsSide) handOver(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	wcs := make([]ibverbs.WC, 1)
	for {
		n, err := s.cm.RecvCQ().Wait(ctx, wcs)
		if err == nil && n > 0 {
			err = wcs[0].Err()
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case s.got <- err:
		case <-ctx.Done():
			return
		}
	}
}

// prepare registers the side's buffer and posts its receive: its
// rdmacm.Config.Prepare.
func (s *verbsSide) prepare(cm *rdmacm.Conn) (func() error, error) {
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		return nil, err
	}
	if s.mr, err = cm.PD().RegMR(buf, ibverbs.AccessLocalWrite); err != nil {
		return nil, errors.Join(err, buf.Close())
	}
	cleanup := func() error {
		var errs []error
		if s.rb != nil {
			errs = append(errs, s.rb.Close())
		}
		return errors.Join(append(errs, s.mr.Close(), buf.Close())...)
	}
	s.wcs = make([]ibverbs.WC, 16)
	if s.rb, err = cm.QP().NewRecvBatch([]ibverbs.RecvWR{{SGL: []ibverbs.SGE{s.mr.SGE(0, 4096)}}}); err == nil {
		err = s.rb.Post(0, 1)
	}
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	return cleanup, nil
}

// send posts the message, first taking the send completions there are
// (spinning while half the send queue is out).
func (s *verbsSide) send() error {
	for {
		n, err := s.cm.SendCQ().Poll(s.wcs)
		if err != nil {
			return err
		}
		for _, wc := range s.wcs[:n] {
			if err := wc.Err(); err != nil {
				return err
			}
		}
		s.inFlight -= n
		if s.inFlight < 8 {
			break
		}
	}
	s.inFlight++
	return s.sb.Post(0, 1, 0)
}

// recv takes the peer's message as s.mode says, and reposts the receive.
func (s *verbsSide) recv(ctx context.Context) error {
	var n int
	var err error
	switch s.mode {
	case "wait, handed over":
		n, err = 1, <-s.got
	case "wait":
		n, err = s.cm.RecvCQ().Wait(ctx, s.wcs[:1])
	default:
		for n == 0 && err == nil {
			n, err = s.cm.RecvCQ().Poll(s.wcs[:1])
		}
	}
	if err == nil && n > 0 && s.got == nil {
		err = s.wcs[0].Err()
	}
	if err != nil {
		return err
	}
	return s.rb.Post(0, 1)
}
