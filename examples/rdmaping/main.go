//go:build linux && cgo

// Command rdmaping measures round trips over an RC connection that the
// RDMA connection manager sets up from an IP address and port
// (rdmacm.Listen, GetRequest and ConnRequest.Accept on the server,
// rdmacm.Dial on the client): the client sends a message, the server
// sends it back, and the client reports the times (least, median, mean;
// past 65,536 round trips the median is that of a sample of as many, so
// that the client's memory does not grow with -c). The server serves one
// client after another until Ctrl-C (or -n clients); a client whose
// connection fails, during the handshake or after, is reported on
// standard error and the server goes on to the next (a failed handshake
// does not count as a client served). So is a client that sends nothing
// for 30 s: the connection manager has no keepalive, and a client that
// went silent, or whose host went down, would hold the server forever.
// While it serves one client the server turns others away: a request
// that finds it busy for a second is rejected, with "server busy" in the
// reject's private data, and that client fails at once saying the server
// is busy serving another client (where it waited out the connection
// manager's timeout, minutes, and said only that nothing answered). The
// client allows each round trip 10 s.
// Ctrl-C stops a client part way, as it does ping(8): it prints the same
// summary, of the round trips made until then, and exits 0, or, where
// not one round trip was made, says what it was waiting for and exits 1.
//
//	rdmaping -l 198.18.0.1:7471            # server
//	rdmaping -c 100 198.18.0.1:7471        # client: 100 round trips
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sync"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

const size = 64 // bytes a message

// rttTimeout bounds each of a client's round trips (a variable, for a
// test to shorten).
var rttTimeout = 10 * time.Second

// idleLimit bounds the server's wait for each of a client's messages (a
// variable, for a test to shorten): a client silent for longer is
// reported, and the next one served.
var idleLimit = 30 * time.Second

// acceptTimeout bounds the server's handshake with a client, so that one
// that goes away half-way does not hold up the next.
const acceptTimeout = 10 * time.Second

const usage = "usage: rdmaping -l ADDR [-n CLIENTS] | rdmaping [-c COUNT] ADDR"

func main() {
	listen := flag.String("l", "", "serve at this address")
	clients := flag.Int("n", 0, "server: clients to serve (0: until Ctrl-C)")
	count := flag.Int("c", 10, "client: round trips (at least 1)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	code := 1 // 2 for a usage error, as the flag package's
	switch {
	case *listen != "" && flag.NArg() == 0 && *clients >= 0:
		err = serve(ctx, *listen, *clients)
	case *listen == "" && flag.NArg() == 1 && *count >= 1:
		err = ping(ctx, flag.Arg(0), *count)
	case *clients < 0:
		err = fmt.Errorf("-n %d: the number of clients cannot be negative\n%s", *clients, usage)
		code = 2
	case *count < 1:
		err = fmt.Errorf("-c %d: a client makes at least one round trip\n%s", *count, usage)
		code = 2
	default:
		err = errors.New(usage)
		code = 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdmaping:", stopped(ctx, err))
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

// buffers is a connection's registered memory: a receive half and a send
// half of size bytes each, so that a receive can be posted while a send
// is in flight.
type buffers struct {
	buf *ibverbs.Buffer
	mr  *ibverbs.MR
}

func newBuffers(c *rdmacm.Conn) (*buffers, error) {
	buf, err := ibverbs.NewBuffer(2*size, ibverbs.BufferOptions{})
	if err != nil {
		return nil, err
	}
	mr, err := c.PD().RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		buf.Close()
		return nil, err
	}
	return &buffers{buf, mr}, nil
}

func (b *buffers) close() error {
	return errors.Join(b.mr.Close(), b.buf.Close())
}

func (b *buffers) recvd() []byte { return b.buf.Bytes()[:size] }
func (b *buffers) out() []byte   { return b.buf.Bytes()[size:] }

// postRecv posts the receive half.
func (b *buffers) postRecv(c *rdmacm.Conn) error {
	return c.QP().PostRecv([]ibverbs.RecvWR{{SGL: []ibverbs.SGE{b.mr.SGE(0, size)}}})
}

// send sends the send half and waits for its completion.
func (b *buffers) send(ctx context.Context, c *rdmacm.Conn) error {
	err := c.QP().PostSend([]ibverbs.SendWR{{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{b.mr.SGE(size, size)}}})
	if err != nil {
		return err
	}
	if err := wait(ctx, c.SendCQ()); err != nil {
		return fmt.Errorf("sending: %w", err)
	}
	return nil
}

// wait waits for one completion on cq, which must succeed.
func wait(ctx context.Context, cq *ibverbs.CQ) error {
	wcs := make([]ibverbs.WC, 1)
	if _, err := cq.Wait(ctx, wcs); err != nil {
		return err
	}
	return wcs[0].Err()
}

// busyWait is how long a connection request waits for the server to be
// free before it is rejected as busy: a client that comes as the one
// before it leaves is served, one that comes while another is served is
// told at once.
const busyWait = time.Second

// busyReason is the private data of the server's reject of a request
// that found it busy, which the client tells from other rejects (ping).
var busyReason = []byte("rdmaping: server busy, serving another client")

// serve accepts one client at a time and echoes its messages. Only a
// failure to take requests at all (or Ctrl-C) ends it: a client whose
// handshake or echoes fail is reported, and the next one served. Requests
// are taken while a client is served (take), and those that find the
// server busy rejected.
func serve(ctx context.Context, addr string, clients int) error {
	l, err := rdmacm.Listen(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Printf("listening on %s\n", l.Addr())
	tctx, stopTaking := context.WithCancel(ctx)
	reqs := make(chan *rdmacm.ConnRequest)
	failed := make(chan error, 1)
	var taking sync.WaitGroup
	taking.Go(func() { failed <- take(tctx, l, reqs) })
	defer taking.Wait() // before the Listener's Close
	defer stopTaking()
	for served := 0; clients == 0 || served < clients; {
		var r *rdmacm.ConnRequest
		select {
		case r = <-reqs:
		case err := <-failed:
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			return err
		}
		peer := r.RemoteAddr()
		c, b, err := accept(ctx, r)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			fmt.Fprintf(os.Stderr, "rdmaping: client %s: %v\n", peer, err)
			continue
		}
		served++
		n, err := echo(ctx, c, b)
		c.Close() // and b, as the connection's cleanup
		if ctx.Err() != nil {
			return nil // Ctrl-C
		}
		if err != nil && !errors.Is(err, rdmacm.ErrDisconnected) {
			fmt.Fprintf(os.Stderr, "rdmaping: client %s, after %d messages: %v\n", peer, n, err)
			continue
		}
		fmt.Printf("echoed %d messages to %s\n", n, peer)
	}
	return nil
}

// take takes connection requests as they come and hands each to serve
// over reqs, where serve takes it within busyWait; one that it does not
// is rejected with busyReason, and reported. It returns GetRequest's
// error, ctx's once ctx ends, rejecting the request it holds.
func take(ctx context.Context, l *rdmacm.Listener, reqs chan<- *rdmacm.ConnRequest) error {
	busy := time.NewTimer(busyWait)
	defer busy.Stop()
	for {
		r, err := l.GetRequest(ctx)
		if err != nil {
			return err
		}
		busy.Reset(busyWait)
		select {
		case reqs <- r:
		case <-busy.C:
			fmt.Fprintf(os.Stderr, "rdmaping: client %s: turned away, busy serving another client\n", r.RemoteAddr())
			r.Reject(busyReason)
		case <-ctx.Done():
			r.Reject(nil)
			return ctx.Err()
		}
	}
}

// accept accepts r, with the connection's buffers registered and the
// first receive posted before the reply goes out (Config.Prepare), so
// that the client's first message finds it. The buffers close with the
// connection.
func accept(ctx context.Context, r *rdmacm.ConnRequest) (*rdmacm.Conn, *buffers, error) {
	var b *buffers
	cfg := &rdmacm.Config{Timeout: acceptTimeout, Prepare: func(c *rdmacm.Conn) (func() error, error) {
		var err error
		if b, err = newBuffers(c); err != nil {
			return nil, err
		}
		if err := b.postRecv(c); err != nil {
			return nil, errors.Join(err, b.close())
		}
		return b.close, nil
	}}
	c, err := r.Accept(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, b, nil
}

// echo sends each message back until the client disconnects, or sends
// nothing for idleLimit, and returns how many it echoed. The receive half
// must be posted when it starts (accept posts it).
func echo(ctx context.Context, c *rdmacm.Conn, b *buffers) (int, error) {
	// The connection's context ends when the peer disconnects.
	outer := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-c.Done():
			cancel(c.Err())
		case <-ctx.Done():
		}
	}()
	for n := 0; ; n++ {
		if err := receive(ctx, c); err != nil {
			return n, ended(outer, c, err)
		}
		copy(b.out(), b.recvd())
		// The receive half is free again: post it before the echo goes
		// out, so that the client's next message, which follows the
		// echo, never finds no receive and waits out an RNR NAK.
		if err := b.postRecv(c); err != nil {
			return n, err
		}
		if err := b.send(ctx, c); err != nil {
			return n, ended(outer, c, err)
		}
	}
}

// errIdle says that a client sent nothing for idleLimit.
var errIdle = errors.New("no message")

// receive waits, for at most idleLimit, for a message on c.
func receive(ctx context.Context, c *rdmacm.Conn) error {
	wctx, cancel := context.WithTimeout(ctx, idleLimit)
	defer cancel()
	err := wait(wctx, c.RecvCQ())
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("%w for %v", errIdle, idleLimit)
	}
	if err != nil {
		return fmt.Errorf("receiving: %w", err)
	}
	return nil
}

// ended returns why the connection ended when err may come from its
// end: a flushed work request, or the watch's cancel, once the client has
// gone away. Other failures (a message too long for the receive, a send
// that found no one there, a client silent for idleLimit) it returns as
// they are, and so it does any once outer, the server's context, has
// ended (Ctrl-C): then there is no waiting for the connection's end.
func ended(outer context.Context, c *rdmacm.Conn, err error) error {
	var wce *ibverbs.WCError
	if outer.Err() != nil || errors.Is(err, errIdle) || errors.As(err, &wce) && wce.Status != ibverbs.WCWRFlushErr {
		return err
	}
	select {
	case <-c.Done():
		return c.Err()
	case <-time.After(time.Second):
		return err
	}
}

// ping makes count round trips to the server at addr, each within
// rttTimeout, and reports their times. Where ctx ends (Ctrl-C) after a
// round trip, it reports those made until then, as ping(8) does, and
// returns nil; where it ends before the first, it returns the error.
func ping(ctx context.Context, addr string, count int) error {
	c, err := rdmacm.Dial(ctx, addr, nil)
	var rej *rdmacm.RejectedError
	if errors.As(err, &rej) && bytes.Equal(bytes.TrimRight(rej.PrivateData, "\x00"), busyReason) {
		return fmt.Errorf("%s: server busy, serving another client; try again later", addr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	b, err := newBuffers(c)
	if err != nil {
		return err
	}
	defer b.close()
	var rtts rttStats
	for i := range count {
		rtt, err := roundTrip(ctx, c, b, i)
		if err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil && rtts.n > 0 {
			break // Ctrl-C: the summary of the round trips made
		}
		if err != nil {
			return err
		}
		rtts.add(rtt)
	}
	fmt.Printf("%d round trips of %d bytes to %s on %s: min %v, median %v, mean %v\n", rtts.n, size, c.RemoteAddr(),
		c.Context().Name(), rtts.min, rtts.median(), rtts.mean())
	return nil
}

// maxSamples bounds the round trips that rttStats keeps for the median:
// 65,536 of them (512 KiB), whatever the count asked for, so that
// -c 100000000000 runs until Ctrl-C, as ping does, where memory for every
// round trip, taken at the start, ran out (or could not be asked for at
// all, a makeslice panic).
const maxSamples = 1 << 16

// rttStats sums up round trips as they come, in memory that does not grow
// with their number: the count, the least, the sum, and the times of up
// to maxSamples of them for the median. Past maxSamples round trips each
// later one replaces a kept one with the chance that keeps every round
// trip equally likely to be kept (reservoir sampling), and the median is
// that sample's: exact up to maxSamples round trips, an estimate after.
type rttStats struct {
	n        int
	min, sum time.Duration
	sample   []time.Duration
	rand     *rand.Rand
}

// add counts one round trip.
func (s *rttStats) add(d time.Duration) {
	s.n++
	s.sum += d
	if s.n == 1 || d < s.min {
		s.min = d
	}
	if len(s.sample) < maxSamples {
		s.sample = append(s.sample, d)
		return
	}
	if s.rand == nil {
		// A fixed seed: the same round trips give the same median.
		s.rand = rand.New(rand.NewPCG(1, 2))
	}
	if k := s.rand.IntN(s.n); k < maxSamples {
		s.sample[k] = d
	}
}

// median is the median of the kept round trips, the upper one of the two
// middle ones where their number is even (0 before the first).
func (s *rttStats) median() time.Duration {
	if len(s.sample) == 0 {
		return 0
	}
	v := slices.Clone(s.sample)
	slices.Sort(v)
	return v[len(v)/2]
}

// mean is the mean of all the round trips (0 before the first).
func (s *rttStats) mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return s.sum / time.Duration(s.n)
}

// roundTrip sends message i and waits, for at most rttTimeout, for its
// echo, which it checks.
func roundTrip(ctx context.Context, c *rdmacm.Conn, b *buffers, i int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, rttTimeout)
	defer cancel()
	if err := b.postRecv(c); err != nil {
		return 0, err
	}
	msg := b.out()
	clear(msg)
	copy(msg, fmt.Sprintf("ping %d", i))
	want := bytes.Clone(msg)
	start := time.Now()
	if err := b.send(ctx, c); err != nil {
		return 0, fmt.Errorf("message %d: %w", i, err)
	}
	if err := wait(ctx, c.RecvCQ()); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%v)", err, rttTimeout)
		}
		return 0, fmt.Errorf("no echo of message %d: %w", i, err)
	}
	rtt := time.Since(start)
	if !bytes.Equal(b.recvd(), want) {
		return 0, fmt.Errorf("echo of message %d differs: %q", i, b.recvd())
	}
	return rtt, nil
}
