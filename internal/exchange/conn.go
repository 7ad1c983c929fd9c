package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn sends and receives framed messages over a net.Conn. Every wait is
// bounded by the context of the call: its deadline becomes the connection's
// deadline, and cancelling it interrupts the wait at once.
//
// One goroutine may send while another receives. After an error that left
// a frame half written or half read the Conn refuses further sends or
// receives; errors that left the stream intact (a *PeerError, a message of
// the wrong type, a wait that timed out before any byte moved) do not.
type Conn struct {
	nc net.Conn

	rmu  sync.Mutex
	rerr error // sticky receive error
	rhdr [HeaderLen]byte

	wmu  sync.Mutex
	werr error // sticky send error
	wbuf []byte

	silence atomic.Int64 // SetPeerTimeout's, in nanoseconds
	heard   bool         // an Alive has come: the peer runs KeepAlive (rmu)
	fr      frameReader  // recvFrame's reader (rmu)
	queued  func(Queued) // OnQueued's (rmu)
	ahead   []Message    // read by ReadAhead, for the receives to come (rmu)
}

// maxAhead bounds the messages ReadAhead keeps: a client that waits its
// turn sends one (its Setup, or -R's first Sync) among its Alives.
const maxAhead = 8

// lastWordWait bounds LastWord's reading.
const lastWordWait = 2 * time.Second

// frameGrace is how long the rest of a frame begun may take once the
// receive's deadline has passed: its sender wrote it whole, so the rest
// is on its way.
const frameGrace = 5 * time.Second

// frameReader reads one frame from nc. Once a frame's first byte has come,
// a deadline that passes (the receive's context ended, or the peer's
// silence) does not cut it: the rest gets frameGrace more, so that a
// receive stopped at any moment leaves the stream at a frame's boundary,
// and the frame is returned.
type frameReader struct {
	nc    net.Conn
	got   int       // bytes of the frame read
	grace time.Time // when the frame's grace ends, once it has begun
}

func (r *frameReader) Read(p []byte) (int, error) {
	for {
		n, err := r.nc.Read(p)
		r.got += n
		if err == nil || r.got == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		// Every deadline that passes within the grace moves back to
		// its end: two can pass (the peer's silence, then ctx; ctx's
		// deadline, then its AfterFunc's past one).
		now := time.Now()
		if r.grace.IsZero() {
			r.grace = now.Add(frameGrace)
		}
		if !now.Before(r.grace) {
			return n, err
		}
		r.nc.SetReadDeadline(r.grace)
		if n > 0 {
			return n, nil
		}
	}
}

// NewConn returns a Conn over nc. The Conn reads no further than the frames
// it returns, and those ReadAhead keeps for its receives, so nc can be used
// for something else afterwards.
func NewConn(nc net.Conn) *Conn { return &Conn{nc: nc} }

// NetConn returns the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.nc.Close() }

// bound sets the deadline that set controls to ctx's deadline (none if ctx
// has none) and arranges for a deadline in the past when ctx is cancelled.
// The returned stop must be called when the I/O is over; it returns once no
// deadline can be set behind the next call's back.
func bound(ctx context.Context, set func(time.Time) error) (stop func(), err error) {
	dl, _ := ctx.Deadline()
	if err := set(dl); err != nil {
		return nil, err
	}
	fired := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		set(time.Unix(1, 0))
		close(fired)
	})
	return func() {
		if !stopAfter() {
			<-fired
		}
	}, nil
}

// ended reports whether ctx is cancelled or past its deadline.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// ctxErr returns the context's error for an I/O error caused by the
// deadlines bound sets, and err otherwise.
func ctxErr(ctx context.Context, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	if e := ctx.Err(); e != nil {
		return e
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return err
}

// Send sends m. It fails without sending for a Setup of more than
// MaxSetupQPs QPs.
func (c *Conn) Send(ctx context.Context, m Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sending %v: %w", m.Type(), err)
	}
	frame, err := AppendFrame(c.wbuf[:0], m)
	if err != nil {
		return err
	}
	c.wbuf = frame[:0]
	stop, err := bound(ctx, c.nc.SetWriteDeadline)
	if err != nil {
		return fmt.Errorf("sending %v: %w", m.Type(), err)
	}
	n, err := c.nc.Write(frame)
	stop()
	if err != nil {
		err = fmt.Errorf("sending %v: %w", m.Type(), ctxErr(ctx, err))
		if n != 0 || !isTimeout(err) {
			c.werr = fmt.Errorf("connection unusable after an earlier error: %w", err)
		}
		return err
	}
	return nil
}

// isTimeout reports whether err is a wait cut short by a deadline or a
// cancelled context.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// Recv receives the next message. An ErrorMsg from the peer is returned as
// a *PeerError.
func (c *Conn) Recv(ctx context.Context) (Message, error) {
	m, err := c.recv(ctx)
	if err != nil {
		return nil, err
	}
	if e, ok := m.(ErrorMsg); ok {
		return nil, &PeerError{Code: e.Code, Text: e.Text}
	}
	return m, nil
}

// LastWord returns, as a *PeerError, the ErrorMsg that waits unread in
// the connection, where the peer sent one, or nil: why a peer that gave
// up on this side said it did before it closed, for a side that then
// finds the connection closed (it was stopped meanwhile, or busy). It
// reads only what has come, past the other messages there (the Alives
// of a peer's whole timeout), for at most lastWordWait, and not after a
// receive that left the stream part way through a frame.
func (c *Conn) LastWord() error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for _, m := range c.ahead {
		if e, ok := m.(ErrorMsg); ok {
			return &PeerError{Code: e.Code, Text: e.Text}
		}
	}
	if c.rerr != nil {
		return nil
	}
	defer c.nc.SetReadDeadline(time.Time{})
	// A frame begun when the time is up gets frameReader's grace more.
	until := time.Now().Add(lastWordWait)
	for time.Now().Before(until) {
		if !readable(c.nc) {
			return nil
		}
		c.nc.SetReadDeadline(until)
		c.fr = frameReader{nc: c.nc}
		m, n, err := readFrame(&c.fr, &c.rhdr)
		if err != nil {
			if n != 0 {
				c.rerr = fmt.Errorf("connection unusable after an earlier error: receiving: %w", err)
			}
			return nil
		}
		if e, ok := m.(ErrorMsg); ok {
			return &PeerError{Code: e.Code, Text: e.Text}
		}
	}
	return nil
}

func (c *Conn) recv(ctx context.Context) (Message, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.ahead) > 0 { // ReadAhead's, read before what follows them
		m := c.ahead[0]
		c.ahead = c.ahead[1:]
		return m, nil
	}
	if c.rerr != nil {
		return nil, c.rerr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("receiving: %w", err)
	}
	stop, err := bound(ctx, c.nc.SetReadDeadline)
	if err != nil {
		return nil, fmt.Errorf("receiving: %w", err)
	}
	defer stop()
	for {
		m, err := c.recvFrame(ctx)
		if err != nil {
			return nil, err
		}
		if !c.control(m) {
			return m, nil
		}
		if err := ctx.Err(); err != nil {
			// Ended while the Alive was read, which a grace may have
			// moved the deadline past.
			return nil, fmt.Errorf("receiving: %w", err)
		}
	}
}

// recvFrame receives the next frame, Alive included, with c.rmu held and
// the read deadline bound to ctx. With a peer timeout it moves the
// deadline to the timeout from now, or ctx's if that is sooner: each
// frame, however small, starts the peer's time again. The timeout counts
// only once an Alive has come. It allocates nothing for an Alive.
func (c *Conn) recvFrame(ctx context.Context) (Message, error) {
	if c.rerr != nil {
		return nil, c.rerr
	}
	var silence time.Duration
	if c.heard {
		silence = time.Duration(c.silence.Load())
	}
	var m Message
	var n int
	var err error
	for retried := false; ; retried = true {
		if silence > 0 {
			wait := silence
			if retried {
				wait = frameGrace
			}
			dl := time.Now().Add(wait)
			if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
				dl = cd
			}
			c.nc.SetReadDeadline(dl)
			if ctx.Err() != nil {
				// Cancelled before the deadline above replaced the one
				// in the past that bound set: set it again.
				c.nc.SetReadDeadline(time.Unix(1, 0))
			}
		}
		c.fr = frameReader{nc: c.nc}
		m, n, err = readFrame(&c.fr, &c.rhdr)
		if silence == 0 || n != 0 || retried || !errors.Is(err, os.ErrDeadlineExceeded) || ended(ctx) || !readable(c.nc) {
			break
		}
		// The peer's next frame (or its end) is here, unread: this
		// process, not the peer, was held up past the timeout
		// (stopped, or starved of CPU), and the deadline's timer ran
		// before the read. Not silence: read it, with a frame's grace.
	}
	if err == nil {
		switch m.(type) {
		case Alive, Queued:
			c.heard = true
		}
		return m, nil
	}
	switch {
	case silence > 0 && errors.Is(err, os.ErrDeadlineExceeded) && !ended(ctx) && n != 0:
		// Not silence: the peer stopped part way through a frame.
		err = fmt.Errorf("the peer stopped part way through a frame: %d bytes of it came, then nothing for %v: %w",
			n, frameGrace, err)
	case silence > 0 && errors.Is(err, os.ErrDeadlineExceeded) && !ended(ctx):
		err = &SilenceError{After: silence} // the peer's silence, not ctx, ended the wait
	default:
		err = ctxErr(ctx, err)
	}
	err = fmt.Errorf("receiving: %w", err)
	if n != 0 || !isTimeout(err) {
		c.rerr = fmt.Errorf("connection unusable after an earlier error: %w", err)
	}
	return nil, err
}

// ReadAhead reads, without waiting, the frames that have come whole, and
// keeps the messages among them for the receives to come, which return
// them first, in order; the Alives and Queued among them it takes as a
// receive does (the peer runs KeepAlive, OnQueued's f). It returns how
// many frames it read: a server reads so the Alives of a client that
// waits its turn, to know that the client is still there, while what the
// client sent for its test (its Setup) waits for the receive that wants
// it. It reads nothing while a receive is under way, once maxAhead
// messages wait, from a frame whose header is not valid on (left to the
// receives, which fail there), or where the connection is not a socket.
func (c *Conn) ReadAhead() int {
	if !c.rmu.TryLock() {
		return 0
	}
	defer c.rmu.Unlock()
	read := 0
	for c.rerr == nil && len(c.ahead) < maxAhead && wholeFrame(c.nc) {
		// The frame is all there: the deadline only guards a read that
		// cannot wait.
		c.nc.SetReadDeadline(time.Now().Add(frameGrace))
		c.fr = frameReader{nc: c.nc}
		m, n, err := readFrame(&c.fr, &c.rhdr)
		if err != nil {
			if n != 0 {
				c.rerr = fmt.Errorf("connection unusable after an earlier error: receiving: %w", err)
			}
			break
		}
		read++
		if !c.control(m) {
			c.ahead = append(c.ahead, m)
		}
	}
	c.nc.SetReadDeadline(time.Time{})
	return read
}

// control takes m, with c.rmu held, where it is the protocol's own, not
// a message for the caller: an Alive or a Queued says the peer runs
// KeepAlive, and a Queued goes to OnQueued's f. It reports whether it
// took m.
func (c *Conn) control(m Message) bool {
	switch q := m.(type) {
	case Alive:
	case Queued:
		if c.queued != nil {
			c.queued(q)
		}
	default:
		return false
	}
	c.heard = true
	return true
}

// SetPeerTimeout makes every receive fail with a *SilenceError once the
// peer has sent nothing, not even an Alive, for d, however long the
// receive's context allows: a peer that runs KeepAlive with a shorter
// period and stays silent is stopped or hung. The timeout counts only
// once the peer's first Alive has come, so it can be set before the peer
// starts its KeepAlive: until then, receives wait as long as their
// context allows. 0, the default, always does. The Conn stays usable
// after such a failure.
func (c *Conn) SetPeerTimeout(d time.Duration) { c.silence.Store(int64(max(d, 0))) }

// OnQueued has receives call f with each Queued they skip, from the
// receiving goroutine: the server's word that the test waits its turn.
// f must not use c. Setting it waits for a receive under way.
func (c *Conn) OnQueued(f func(Queued)) {
	c.rmu.Lock()
	c.queued = f
	c.rmu.Unlock()
}

// KeepAlive sends an Alive at once and then every period until stop is
// called, the Conn is closed or a send fails, so that a peer with
// SetPeerTimeout knows this side is alive while it has nothing else to say. Sends of other messages
// go on meanwhile: each frame goes whole. stop returns once the sender has
// finished.
func (c *Conn) KeepAlive(period time.Duration) (stop func()) {
	period = max(period, minAlivePeriod)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if err := c.sendAlive(period); err != nil && !isTimeout(err) {
				return
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// minAlivePeriod is KeepAlive's shortest period: a shorter one (zero,
// which time.NewTicker refuses) would flood the peer.
const minAlivePeriod = time.Millisecond

// aliveFrame is an Alive's frame: its type and an empty payload.
var aliveFrame = [HeaderLen]byte{byte(TypeAlive)}

// sendAlive sends an Alive, waiting at most d: a peer that reads nothing
// for that long has a full socket buffer, and is no better told by a pile
// of Alives. It allocates nothing.
func (c *Conn) sendAlive(d time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(d)); err != nil {
		return err
	}
	n, err := c.nc.Write(aliveFrame[:])
	c.nc.SetWriteDeadline(time.Time{})
	if err != nil {
		err = fmt.Errorf("sending Alive: %w", err)
		if n != 0 || !isTimeout(err) {
			c.werr = fmt.Errorf("connection unusable after an earlier error: %w", err)
		}
	}
	return err
}

// recvAs receives a message of type T; any other type is an error.
func recvAs[T Message](ctx context.Context, c *Conn) (T, error) {
	var zero T
	m, err := c.Recv(ctx)
	if err != nil {
		return zero, err
	}
	v, ok := m.(T)
	if !ok {
		if r, isResult := m.(Result); isResult && r.Error != "" {
			// The peer's run failed and it went on to the results while
			// this side waited for another step: its reason is the news.
			return zero, fmt.Errorf("the peer's run failed (%w: expected %v, got its %v): %w",
				ErrUnexpected, zero.Type(), m.Type(), &PeerError{Code: CodeFailed, Text: r.Error})
		}
		return zero, &UnexpectedError{Want: zero.Type(), Got: m.Type()}
	}
	return v, nil
}

// RecvSpec receives the client's TestSpec. The server must check it with
// CheckLimits before acting on it.
func (c *Conn) RecvSpec(ctx context.Context) (TestSpec, error) { return recvAs[TestSpec](ctx, c) }

// RecvSetup receives the peer's Setup. Check it against the TestSpec.
func (c *Conn) RecvSetup(ctx context.Context) (Setup, error) { return recvAs[Setup](ctx, c) }

// RecvSync receives the peer's Sync.
func (c *Conn) RecvSync(ctx context.Context) (Sync, error) { return recvAs[Sync](ctx, c) }

// RecvOffer receives the peer's Offer.
func (c *Conn) RecvOffer(ctx context.Context) (Offer, error) { return recvAs[Offer](ctx, c) }

// RecvResult receives the peer's Result.
func (c *Conn) RecvResult(ctx context.Context) (Result, error) { return recvAs[Result](ctx, c) }

// SendError sends NewErrorMsg(err), telling the peer why this side gives up.
func (c *Conn) SendError(ctx context.Context, err error) error {
	return c.Send(ctx, NewErrorMsg(err))
}

// swap sends m while it receives the peer's message of the same type, so
// that neither side's send waits on the other's receive (as it would on an
// unbuffered transport such as net.Pipe).
func swap[T Message](ctx context.Context, c *Conn, m T) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- c.Send(ctx, m) }()
	got, err := recvAs[T](ctx, c)
	if err != nil {
		cancel() // unblock a send the peer will never read
		<-sent
		return got, err
	}
	if err := <-sent; err != nil {
		return got, err
	}
	return got, nil
}

// SwapSetup sends this side's Setup and returns the peer's. Check the
// peer's against the TestSpec.
func (c *Conn) SwapSetup(ctx context.Context, local Setup) (Setup, error) {
	return swap(ctx, c, local)
}

// SwapResult sends this side's Result and returns the peer's.
func (c *Conn) SwapResult(ctx context.Context, local Result) (Result, error) {
	return swap(ctx, c, local)
}

// Barrier sends Sync{seq} and waits for the peer's Sync, which must carry
// the same seq: when it returns nil, both sides have reached it.
func (c *Conn) Barrier(ctx context.Context, seq uint32) error {
	got, err := swap(ctx, c, Sync{Seq: seq})
	if err != nil {
		return fmt.Errorf("barrier %d: %w", seq, PeerClosed(err))
	}
	if got.Seq != seq {
		return fmt.Errorf("barrier out of step: this side is at %d, the peer at %d", seq, got.Seq)
	}
	return nil
}

// ErrPeerClosed is the finding that the peer closed the control
// connection, its process gone (it exited or was killed) without a word:
// the stream ended, or the connection was reset.
var ErrPeerClosed = errors.New("the peer closed the control connection: it exited or was killed")

// PeerClosed is err, from receiving or sending on a control connection,
// as ErrPeerClosed where it says that the peer closed the connection (an
// end of stream, a reset, a broken pipe), err after it in parentheses,
// both matched by errors.Is; any other err, nil and one that is
// ErrPeerClosed already as they are.
func PeerClosed(err error) error {
	if err == nil || errors.Is(err, ErrPeerClosed) || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		return err
	}
	return fmt.Errorf("%w (%w)", ErrPeerClosed, err)
}

// Handshake sends this side's Hello, naming tool (e.g. "gorperf 0.1.0"),
// and checks the peer's; both sides call it first. It returns the peer's
// Hello, or ErrNotGorperf when the peer's first bytes are not a gorperf
// Hello (perftest's key exchange, another service, a connection closed or
// reset before them, as a port scanner's), or
// a *VersionError when the peer speaks another ProtocolVersion. Give ctx a
// short deadline: a peer that speaks another protocol may wait for bytes we
// never send.
func Handshake(ctx context.Context, c *Conn, tool string) (Hello, error) {
	h, err := swap(ctx, c, NewHello(tool))
	if err != nil {
		var pe *PeerError
		switch {
		case errors.As(err, &pe), errors.Is(err, ErrUnexpected):
			// A gorperf peer that sent something else.
		case errors.Is(err, ErrMalformed):
			err = fmt.Errorf("%w: %w", ErrNotGorperf, err)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			err = fmt.Errorf("%w: connection closed before its hello: %w", ErrNotGorperf, err)
		case errors.Is(err, syscall.ECONNRESET):
			// A port scanner's connect and reset.
			err = fmt.Errorf("%w: connection closed (reset) before its hello: %w", ErrNotGorperf, err)
		}
		return Hello{}, err
	}
	if string(h.Magic[:]) != Magic {
		return h, fmt.Errorf("%w: hello magic %q", ErrNotGorperf, h.Magic[:])
	}
	if h.Version != ProtocolVersion {
		return h, &VersionError{Local: ProtocolVersion, Remote: h.Version, RemoteTool: h.Tool}
	}
	return h, nil
}
