package exchange

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func pipe(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewConn(a), NewConn(b)
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// byteConn is a net.Conn that reads from fixed bytes, then io.EOF, and
// discards writes.
type byteConn struct{ r *bytes.Reader }

func (c byteConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c byteConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c byteConn) Close() error                     { return nil }
func (c byteConn) LocalAddr() net.Addr              { return nil }
func (c byteConn) RemoteAddr() net.Addr             { return nil }
func (c byteConn) SetDeadline(time.Time) error      { return nil }
func (c byteConn) SetReadDeadline(time.Time) error  { return nil }
func (c byteConn) SetWriteDeadline(time.Time) error { return nil }

func bytesConn(b []byte) *Conn { return NewConn(byteConn{bytes.NewReader(b)}) }

// A whole session, the way gorperf's client and server run it.
func TestSession(t *testing.T) {
	client, server := pipe(t)
	ctx := timeout(t, 10*time.Second)
	spec := testSpec()
	setup := func(base uint32) Setup {
		var s Setup
		for i := range spec.NumQPs {
			e := fullEndpoint()
			e.QPN = base + uint32(i)
			s.QPs = append(s.QPs, QPInfo{Endpoint: e, RKey: base, Addr: 4096, Len: uint64(spec.MaxSize())})
		}
		return s
	}
	serverResult := Result{Iterations: 5000, Bytes: 5000 * 65536, Elapsed: time.Second}

	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if h, err := Handshake(ctx, server, "server"); err != nil || h.Tool != "client" {
				return errors.Join(err, errors.New("server handshake: peer "+h.Tool))
			}
			got, err := server.RecvSpec(ctx)
			if err != nil {
				return err
			}
			if err := got.CheckLimits(DefaultLimits()); err != nil {
				return err
			}
			remote, err := server.SwapSetup(ctx, setup(0x100))
			if err != nil {
				return err
			}
			if err := remote.Check(got); err != nil {
				return err
			}
			if err := server.Barrier(ctx, 1); err != nil {
				return err
			}
			_, err = server.SwapResult(ctx, serverResult)
			return err
		}()
	}()

	if h, err := Handshake(ctx, client, "client"); err != nil || h.Tool != "server" {
		t.Fatalf("client handshake: %+v, %v", h, err)
	}
	if err := client.Send(ctx, spec); err != nil {
		t.Fatal(err)
	}
	remote, err := client.SwapSetup(ctx, setup(0x200))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(remote, setup(0x100)) {
		t.Fatalf("client got setup %+v", remote)
	}
	if err := remote.Check(spec); err != nil {
		t.Fatal(err)
	}
	if err := client.Barrier(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res, err := client.SwapResult(ctx, Result{Iterations: 1})
	if err != nil || res != serverResult {
		t.Fatalf("SwapResult = %+v, %v", res, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
}

// The server refuses a test over its limits; the client learns why.
func TestPeerError(t *testing.T) {
	client, server := pipe(t)
	ctx := timeout(t, 10*time.Second)
	go func() {
		spec, err := server.RecvSpec(ctx)
		if err == nil {
			err = spec.CheckLimits(DefaultLimits())
		}
		server.SendError(ctx, err)
	}()
	spec := testSpec()
	spec.NumQPs = 1000
	if err := client.Send(ctx, spec); err != nil {
		t.Fatal(err)
	}
	_, err := client.RecvSetup(ctx)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Code != CodeOverLimit || !errors.Is(err, ErrOverLimit) {
		t.Fatalf("RecvSetup = %v; want a *PeerError matching ErrOverLimit", err)
	}
	if !strings.HasPrefix(err.Error(), "peer: ") || !strings.Contains(err.Error(), "1000 QPs") {
		t.Fatalf("error text %q", err)
	}
}

func TestErrorMsgCodes(t *testing.T) {
	for _, tc := range []struct {
		err      error
		code     ErrorCode
		sentinel error // what the peer's *PeerError matches
	}{
		{errors.New("boom"), CodeFailed, nil},
		{testSpec().CheckLimits(Limits{}), CodeOverLimit, ErrOverLimit},
		{TestSpec{}.Validate(), CodeInvalidSpec, ErrInvalidSpec},
		{errors.ErrUnsupported, CodeUnsupported, errors.ErrUnsupported},
		{context.Canceled, CodeAborted, context.Canceled},
		{&PeerError{Code: 77, Text: "relayed"}, 77, nil},
		{fmt.Errorf("connecting: %w", coded{CodeGIDMismatch}), CodeGIDMismatch, nil},
		{coded{CodeUDSize}, CodeUDSize, nil},
	} {
		m := NewErrorMsg(tc.err)
		if m.Code != tc.code || m.Text != tc.err.Error() {
			t.Errorf("NewErrorMsg(%v) = %+v, want code %v", tc.err, m, tc.code)
		}
		pe := &PeerError{Code: m.Code, Text: m.Text}
		if tc.sentinel != nil && !errors.Is(pe, tc.sentinel) {
			t.Errorf("%v does not match %v", pe, tc.sentinel)
		}
		for _, other := range []error{ErrOverLimit, ErrInvalidSpec, errors.ErrUnsupported, context.Canceled} {
			if other != tc.sentinel && errors.Is(pe, other) {
				t.Errorf("%v matches %v", pe, other)
			}
		}
	}
	if s := (&PeerError{Code: CodeAborted}).Error(); s != "peer: aborted" {
		t.Errorf("empty PeerError = %q", s)
	}
	if s := (&PeerError{Code: CodeUDSize, Text: "too\nlong"}).Said(); s != "too\ufffdlong" {
		t.Errorf("Said = %q, want the text made printable, without \"peer: \"", s)
	}
	// A Result's error comes from the peer as well: Err sanitizes it.
	if err := (Result{}).Err(); err != nil {
		t.Errorf("Result without an error: Err = %v", err)
	}
	err := (Result{Error: "boom\x1b]0;owned\x07\x1b[2J\r"}).Err()
	if pe := (*PeerError)(nil); !errors.As(err, &pe) || pe.Code != CodeFailed || strings.ContainsAny(err.Error(), "\x1b\x07\r") ||
		!strings.HasPrefix(err.Error(), "peer: boom") {
		t.Errorf("Result's error: %q", err)
	}
	if s := (&PeerError{Text: "bad\x1b[2J\nthing"}).Error(); strings.ContainsAny(s, "\x1b\n") {
		t.Errorf("PeerError passes control characters: %q", s)
	}
}

func TestUnexpectedType(t *testing.T) {
	a, b := pipe(t)
	ctx := timeout(t, 10*time.Second)
	go a.Send(ctx, Result{})
	_, err := b.RecvSetup(ctx)
	if !errors.Is(err, ErrUnexpected) || !strings.Contains(err.Error(), "expected Setup, got Result") {
		t.Fatalf("RecvSetup = %v", err)
	}
	// The stream is intact: the Conn still works.
	go a.Send(ctx, Sync{Seq: 3})
	if s, err := b.RecvSync(ctx); err != nil || s.Seq != 3 {
		t.Fatalf("after an unexpected type: %+v, %v", s, err)
	}
}

// TestBarrierPeerFailed: a peer whose run failed sends its Result while
// this side waits at a barrier; the barrier's error carries the peer's
// reason, not only the unexpected type.
func TestBarrierPeerFailed(t *testing.T) {
	a, b := pipe(t)
	ctx := timeout(t, 10*time.Second)
	go a.Send(ctx, Result{Error: "no completion for 10s"})
	err := b.Barrier(ctx, 1<<31|1)
	var pe *PeerError
	if !errors.Is(err, ErrUnexpected) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "the peer's run failed") ||
		!strings.Contains(err.Error(), "no completion for 10s") {
		t.Fatalf("Barrier = %v", err)
	}
}

func TestBarrierOutOfStep(t *testing.T) {
	a, b := pipe(t)
	ctx := timeout(t, 10*time.Second)
	go a.Barrier(ctx, 2)
	if err := b.Barrier(ctx, 1); err == nil || !strings.Contains(err.Error(), "out of step") {
		t.Fatalf("Barrier = %v", err)
	}
}

func TestVersionMismatch(t *testing.T) {
	a, b := pipe(t)
	ctx := timeout(t, 10*time.Second)
	go func() {
		h := NewHello("gorperf 9.0")
		h.Version = ProtocolVersion + 1
		a.Send(ctx, h)
		a.Recv(ctx)
	}()
	_, err := Handshake(ctx, b, "gorperf 0.1")
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Local != ProtocolVersion || ve.Remote != ProtocolVersion+1 {
		t.Fatalf("Handshake = %v; want *VersionError", err)
	}
	for _, want := range []string{fmt.Sprintf("version %d", ProtocolVersion), fmt.Sprintf("version %d", ProtocolVersion+1), "gorperf 9.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

// TestHelloFrameFixed: a Hello's frame is written out here byte by byte,
// as every version sends it (type 1, reserved 0, length, "GRPF", the
// version, the tool's length and bytes), from version 3: a side of any
// later version reads it as a gorperf of another version, not as
// something else.
func TestHelloFrameFixed(t *testing.T) {
	a, b := pipe(t)
	ctx := timeout(t, 10*time.Second)
	tool := "gorperf 0.0.3"
	raw := append([]byte{1, 0, 0, byte(4 + 2 + 1 + len(tool)), 'G', 'R', 'P', 'F', 0, 3, byte(len(tool))}, tool...)
	go func() {
		a.NetConn().Write(raw)
		a.Recv(ctx)
	}()
	_, err := Handshake(ctx, b, "gorperf 0.1")
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Remote != 3 || ve.RemoteTool != tool {
		t.Fatalf("Handshake with version 3's hello = %v; want *VersionError naming version 3 and %q", err, tool)
	}
	if got, _ := AppendFrame(nil, Hello{Magic: [4]byte([]byte(Magic)), Version: 3, Tool: tool}); !bytes.Equal(got, raw) {
		t.Errorf("this version writes version 3's hello as % x, want % x", got, raw)
	}
}

func TestNotGorperf(t *testing.T) {
	badMagic, _ := AppendFrame(nil, Hello{Magic: [4]byte{'R', 'D', 'M', 'A'}, Version: ProtocolVersion})
	for _, tc := range []struct {
		name string
		peer []byte
	}{
		// perftest's ethernet exchange: LID:QPN:PSN:RKey:VAddr[:GID].
		{"perftest", []byte("0000:000011:9f1c3a:00000000:0000000000000000:fe:80:00:00:00:00:00:00:02:15:5d:ff:fe:34:01:08")},
		{"perftest version", []byte("6.19\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")},
		{"http", []byte("HTTP/1.1 400 Bad Request\r\n\r\n")},
		{"ssh", []byte("SSH-2.0-OpenSSH_9.6\r\n")},
		{"closed", nil},
		{"half header", []byte{1, 0}},
		{"bad magic", badMagic},
		{"truncated hello", badMagic[:8]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Handshake(timeout(t, 10*time.Second), bytesConn(tc.peer), "gorperf")
			if !errors.Is(err, ErrNotGorperf) {
				t.Fatalf("Handshake = %v; want ErrNotGorperf", err)
			}
			t.Log(err)
		})
	}
}

// perftest's server talks over a real socket and, having written its line,
// waits for ours: Handshake must not wait for a payload it would refuse.
func TestNotGorperfPipe(t *testing.T) {
	ours, theirs := pipe(t)
	go func() {
		theirs.NetConn().Write([]byte("0000:000011:9f1c3a:00000000:0000000000000000"))
		io.Copy(io.Discard, theirs.NetConn()) // then never says more
	}()
	start := time.Now()
	_, err := Handshake(timeout(t, 10*time.Second), ours, "gorperf")
	if !errors.Is(err, ErrNotGorperf) || time.Since(start) > 5*time.Second {
		t.Fatalf("Handshake = %v after %v", err, time.Since(start))
	}
}

func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		b := make([]byte, rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%2 == 0 && len(b) > 0 {
			b[0] = byte(TypeHello) // get past the type byte sometimes
			if len(b) > 1 {
				b[1] = 0
			}
		}
		_, err := Handshake(t.Context(), bytesConn(b), "gorperf")
		if !errors.Is(err, ErrNotGorperf) {
			var pe *PeerError
			if errors.As(err, &pe) || errors.Is(err, ErrUnexpected) {
				continue // garbage that happens to be a well-formed frame
			}
			t.Fatalf("garbage %x: Handshake = %v", b, err)
		}
		c := bytesConn(b)
		for range 10 {
			if _, err := c.Recv(t.Context()); err != nil {
				break
			}
		}
	}
}

// A peer that says nothing: every wait ends with the context.
func TestStall(t *testing.T) {
	const bound = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		op   func(context.Context, *Conn) error
	}{
		{"recv", func(ctx context.Context, c *Conn) error { _, err := c.Recv(ctx); return err }},
		{"send", func(ctx context.Context, c *Conn) error { return c.Send(ctx, Sync{}) }}, // nobody reads the pipe
		{"handshake", func(ctx context.Context, c *Conn) error { _, err := Handshake(ctx, c, "x"); return err }},
		{"barrier", func(ctx context.Context, c *Conn) error { return c.Barrier(ctx, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pipe(t)
			ctx, cancel := context.WithTimeout(t.Context(), bound)
			defer cancel()
			start := time.Now()
			err := tc.op(ctx, a)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v; want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > bound+2*time.Second {
				t.Fatalf("returned after %v, bound %v", d, bound)
			}
			// No byte moved, so the Conn still works both ways.
			ctx = timeout(t, 10*time.Second)
			go b.Send(ctx, Sync{Seq: 9})
			if s, err := a.RecvSync(ctx); err != nil || s.Seq != 9 {
				t.Fatalf("Recv after a timeout: %+v, %v", s, err)
			}
			go b.Recv(ctx)
			if err := a.Send(ctx, Sync{Seq: 10}); err != nil {
				t.Fatalf("Send after a timeout: %v", err)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	a, _ := pipe(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := a.Recv(ctx)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("Recv = %v after %v; want context.Canceled", err, time.Since(start))
	}
	// An already cancelled context touches nothing.
	if err := a.Send(ctx, Sync{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v", err)
	}
}

// A frame cut off mid-way leaves the Conn unusable, with a clear error.
func TestBrokenStream(t *testing.T) {
	a, b := tcpPair(t)
	frame, _ := AppendFrame(nil, Result{Error: "x"})
	// The frame's first 10 bytes are there before the receive begins;
	// the rest never come.
	if _, err := b.NetConn().Write(frame[:10]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv = %v", err)
	}
	_, err := a.Recv(timeout(t, 10*time.Second))
	if err == nil || !strings.Contains(err.Error(), "unusable") || !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv after a half-read frame = %v", err)
	}
}

// tcpPair returns the two ends of a TCP connection over loopback.
func tcpPair(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		acc <- nc
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-acc
	if b == nil {
		a.Close()
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewConn(a), NewConn(b)
}

// A peer that keeps alive may take several peer timeouts to say its next
// word; the receive skips its Alives and gets that word. The peer timeout
// is long beside the Alives' period, so that a stall of the whole process
// (CI's machines under load) of up to about 970 ms cuts no wait short.
func TestKeepAliveOutlastsPeerTimeout(t *testing.T) {
	a, b := tcpPair(t)
	b.SetPeerTimeout(time.Second)
	stop := a.KeepAlive(30 * time.Millisecond)
	defer stop()
	ctx := timeout(t, 10*time.Second)
	go func() {
		time.Sleep(3 * time.Second)
		a.Send(ctx, Sync{Seq: 7})
	}()
	start := time.Now()
	got, err := b.RecvSync(ctx)
	if err != nil || got.Seq != 7 {
		t.Fatalf("RecvSync after %v: %+v, %v; want Sync 7", time.Since(start), got, err)
	}
	if d := time.Since(start); d < 3*time.Second {
		t.Errorf("the Sync came after %v, before it was sent", d)
	}
}

// TestQueued: a receive passes each Queued to OnQueued and skips it, as
// it skips an Alive, and either one starts the peer timeout.
func TestQueued(t *testing.T) {
	a, b := tcpPair(t)
	var got []uint32
	b.OnQueued(func(q Queued) { got = append(got, q.Ahead) })
	b.SetPeerTimeout(300 * time.Millisecond)
	ctx := timeout(t, 10*time.Second)
	for _, m := range []Message{Queued{Ahead: 2}, Alive{}, Queued{Ahead: 1}, Sync{Seq: 9}} {
		if err := a.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := b.RecvSync(ctx); err != nil || s.Seq != 9 {
		t.Fatalf("RecvSync after Queued, Alive, Queued: %+v, %v; want Sync 9", s, err)
	}
	if !slices.Equal(got, []uint32{2, 1}) {
		t.Errorf("OnQueued got %v; want [2 1]", got)
	}
	// A Queued alone, as a lobby sends, starts the peer timeout too.
	c, d := tcpPair(t)
	d.SetPeerTimeout(150 * time.Millisecond)
	if err := c.Send(ctx, Queued{Ahead: 1}); err != nil {
		t.Fatal(err)
	}
	var se *SilenceError
	if _, err := d.RecvSync(ctx); !errors.As(err, &se) {
		t.Errorf("RecvSync after a Queued and silence: %v; want a SilenceError", err)
	}
}

// TestPeerTimeoutCutFrame: a peer that has kept alive and then stops
// part way through a frame is not silent: the receive, after the frame's
// grace, says the frame was cut short, not that the peer sent nothing.
func TestPeerTimeoutCutFrame(t *testing.T) {
	a, b := tcpPair(t)
	b.SetPeerTimeout(150 * time.Millisecond)
	ctx := timeout(t, 20*time.Second)
	if err := a.Send(ctx, Alive{}); err != nil {
		t.Fatal(err)
	}
	a.NetConn().Write([]byte{byte(TypeSync), 0}) // half a header
	_, err := b.RecvSync(ctx)
	var se *SilenceError
	if err == nil || errors.As(err, &se) || !errors.Is(err, os.ErrDeadlineExceeded) ||
		!strings.Contains(err.Error(), "stopped part way through a frame: 2 bytes of it came") {
		t.Errorf("RecvSync after half a header = %v; want the frame cut short", err)
	}
}

// A peer that has kept alive and then sends nothing fails the receive
// once the peer timeout has passed, long before the context's end, with a
// *SilenceError; the Conn stays usable. A context that ends first gives
// its own error.
func TestPeerTimeoutSilentPeer(t *testing.T) {
	a, b := tcpPair(t)
	b.SetPeerTimeout(150 * time.Millisecond)
	ctx := timeout(t, 10*time.Second)
	if err := a.sendAlive(time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := b.RecvSync(ctx)
	var se *SilenceError
	if !errors.As(err, &se) || se.After != 150*time.Millisecond || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("RecvSync from a silent peer: %v; want a SilenceError after 150ms", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("the receive gave up after %v, want about 150ms", d)
	}
	if !strings.Contains(err.Error(), "stopped or hung") {
		t.Errorf("the error does not say what the silence means: %v", err)
	}
	if err := a.Send(ctx, Sync{Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.RecvSync(ctx); err != nil || got.Seq != 3 {
		t.Errorf("RecvSync after the silence: %+v, %v", got, err)
	}

	b.SetPeerTimeout(5 * time.Second)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := b.RecvSync(short); !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &se) {
		t.Errorf("RecvSync past its context's deadline: %v, want context.DeadlineExceeded", err)
	}
}

// TestLastWord: the ErrorMsg a peer sent before it closed is found past
// the messages before it; none is found where the peer closed without
// one, or sent nothing, and LastWord does not wait for one.
func TestLastWord(t *testing.T) {
	ctx := timeout(t, 10*time.Second)
	closed := func(t *testing.T, send ...Message) *Conn {
		a, b := tcpPair(t)
		for _, m := range send {
			if err := a.Send(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		for !readable(b.NetConn()) { // its end, at least
			if ctx.Err() != nil {
				t.Fatal("the peer's end never reached the socket")
			}
			time.Sleep(time.Millisecond)
		}
		return b
	}
	// A peer's whole timeout of Alives (30 s of them, 4 a second) and
	// its Sync come before its ErrorMsg.
	said := make([]Message, 121)
	for i := range 120 {
		said[i] = Alive{}
	}
	said[60] = Sync{Seq: 2}
	said[120] = NewErrorMsg(errors.New("the client gave up on this server"))
	b := closed(t, said...)
	var pe *PeerError
	if err := b.LastWord(); !errors.As(err, &pe) || pe.Text != "the client gave up on this server" {
		t.Errorf("LastWord after the peer's Alives, Sync and ErrorMsg: %v; want its ErrorMsg", err)
	}
	if err := closed(t, Sync{Seq: 3}).LastWord(); err != nil {
		t.Errorf("LastWord of a peer that closed without an ErrorMsg: %v; want nil", err)
	}
	_, quiet := tcpPair(t)
	start := time.Now()
	if err := quiet.LastWord(); err != nil || time.Since(start) > time.Second {
		t.Errorf("LastWord of a peer that sent nothing: %v after %v; want nil at once", err, time.Since(start))
	}
	if err := quiet.Send(ctx, Sync{Seq: 4}); err != nil {
		t.Errorf("Send after LastWord: %v", err)
	}
}

// TestPeerTimeoutFrameWaiting: a receive whose peer timeout passes with
// the peer's next frame, or its end, already waiting in the socket, as
// when this process was stopped or starved past the timeout and the
// deadline's timer ran before the read, reads it: the peer was not
// silent. (A 1 ns timeout passes before every read.) With nothing
// waiting, the silence is still reported. (The receive blamed the peer
// with a SilenceError, the frame or its end unread.)
func TestPeerTimeoutFrameWaiting(t *testing.T) {
	a, b := tcpPair(t)
	ctx := timeout(t, 10*time.Second)
	if err := a.sendAlive(time.Second); err != nil {
		t.Fatal(err)
	}
	b.SetPeerTimeout(time.Nanosecond)
	var se *SilenceError
	if _, err := b.RecvSync(ctx); !errors.As(err, &se) {
		t.Fatalf("RecvSync from a peer silent past 1ns: %v; want a SilenceError", err)
	}
	waiting := func() {
		t.Helper()
		for !readable(b.NetConn()) {
			if ctx.Err() != nil {
				t.Fatal("what the peer sent never reached the socket")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := a.Send(ctx, Sync{Seq: 4}); err != nil {
		t.Fatal(err)
	}
	waiting()
	if got, err := b.RecvSync(ctx); err != nil || got.Seq != 4 {
		t.Errorf("RecvSync with the peer's Sync waiting past the timeout: %+v, %v; want Sync 4", got, err)
	}
	a.Close()
	waiting()
	if _, err := b.RecvSync(ctx); !errors.Is(err, io.EOF) || errors.As(err, &se) {
		t.Errorf("RecvSync with the peer's end waiting past the timeout: %v; want io.EOF", err)
	}
}

// The peer timeout counts once the peer's first Alive has come: a side can
// set it before the peer has started its KeepAlive, and a receive waits for
// that peer as long as its context allows. KeepAlive's first Alive goes at
// once, not a period later, so that the timeout counts from then.
func TestPeerTimeoutBeforeFirstAlive(t *testing.T) {
	a, b := tcpPair(t)
	b.SetPeerTimeout(100 * time.Millisecond)
	ctx := timeout(t, 10*time.Second)
	short, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	if _, err := b.RecvSync(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RecvSync from a peer that never kept alive: %v, want its context's end", err)
	}
	stop := a.KeepAlive(time.Hour)
	defer stop()
	start := time.Now()
	var se *SilenceError
	if _, err := b.RecvSync(ctx); !errors.As(err, &se) {
		t.Fatalf("RecvSync after one Alive and silence: %v, want a SilenceError", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the receive gave up after %v, want about 100ms", d)
	}
}

// KeepAlive's sender ends by itself when the connection does, before
// stop is called.
func TestKeepAliveStops(t *testing.T) {
	// A period of 0, which time.NewTicker refuses with a panic, is
	// taken as the shortest.
	a0, _ := tcpPair(t)
	a0.KeepAlive(0)()
	a, b := tcpPair(t)
	n0 := runtime.NumGoroutine()
	stop := a.KeepAlive(10 * time.Millisecond)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	b.Close() // the peer's end only: a's sends fail
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > n0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d goroutines 5 s after the connection closed, %d before KeepAlive", runtime.NumGoroutine(), n0)
		}
	}
}

// Alives cost nothing per Alive: a side sends one without allocating, and
// a receive that skips ten allocates no more than one that skips one.
func TestAliveAllocations(t *testing.T) {
	a, b := tcpPair(t)
	b.SetPeerTimeout(5 * time.Second)
	if n := testing.AllocsPerRun(100, func() { a.sendAlive(time.Second) }); n != 0 {
		t.Errorf("sendAlive: %v allocations", n)
	}
	ctx := timeout(t, 10*time.Second)
	recvAfter := func(alives int) float64 {
		return testing.AllocsPerRun(20, func() {
			for range alives {
				a.sendAlive(time.Second)
			}
			a.Send(ctx, Sync{Seq: 1})
			if _, err := b.RecvSync(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	a.Send(ctx, Sync{Seq: 1})
	if _, err := b.RecvSync(ctx); err != nil { // the 100 Alives above, and warm-up
		t.Fatal(err)
	}
	one, ten := recvAfter(1), recvAfter(10)
	if ten > one {
		t.Errorf("a receive after ten Alives: %v allocations, after one: %v", ten, one)
	}
}

// TestRecvFrameGraceTwice: a frame begun is finished when two deadlines
// pass in it, the peer's silence and then the receive's context, or a
// context's deadline and then its AfterFunc's; the grace was one-shot,
// and the second cut the frame and left the connection unusable.
func TestRecvFrameGraceTwice(t *testing.T) {
	ctx := timeout(t, 20*time.Second)
	for _, tc := range []struct {
		name string
		// recv readies b and returns what makes the receive's context,
		// which its goroutine calls just before it receives.
		recv func(b *Conn) func() (context.Context, context.CancelFunc)
	}{
		{"silence then cancel", func(b *Conn) func() (context.Context, context.CancelFunc) {
			b.SetPeerTimeout(50 * time.Millisecond)
			return func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
		}},
		{"deadline", func(*Conn) func() (context.Context, context.CancelFunc) {
			return func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 50*time.Millisecond) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A receive whose first deadline passed before it read
			// anything (its goroutine ran late) tests nothing, and
			// is tried again.
			for done, late := 0, 0; done < 5; {
				a, b, w := watchedTCPPair(t)
				a.sendAlive(time.Second) // the silence counts from here
				// Until the Alive is read: a receive that first runs
				// after its deadline reads nothing.
				for tries := 0; w.dataReads() == 0; tries++ {
					if tries == 100 {
						t.Fatal("100 receives read no Alive")
					}
					if _, err := b.RecvSync(timeout(t, 50*time.Millisecond)); !isTimeout(err) {
						t.Fatalf("a receive with only an Alive to read: %v", err)
					}
				}
				// Past the first deadline, then the cancel.
				err := recvSplitSync(t, a, b, w, tc.recv(b), 150*time.Millisecond)
				switch {
				case errors.Is(err, errNotBegun) && late < 20:
					late++
					t.Logf("try again: %v", err)
				case err != nil:
					t.Fatalf("the receive cut in a frame: %v; want the frame", err)
				default:
					done++
				}
			}
		})
	}
}

// watchConn is a net.Conn that tells of its reads that return data.
type watchConn struct {
	net.Conn
	mu    sync.Mutex
	reads int           // the reads that returned data
	next  chan struct{} // closed by the next one, if not nil
}

func (c *watchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.reads++
		if c.next != nil {
			close(c.next)
			c.next = nil
		}
		c.mu.Unlock()
	}
	return n, err
}

// dataReads returns the number of reads that returned data so far.
func (c *watchConn) dataReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// nextRead returns a channel that the next read that returns data closes.
func (c *watchConn) nextRead() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(chan struct{})
	}
	return c.next
}

// watchedTCPPair is tcpPair, with b's reads watched by the watchConn.
func watchedTCPPair(t *testing.T) (*Conn, *Conn, *watchConn) {
	t.Helper()
	a, b := tcpPair(t)
	w := &watchConn{Conn: b.NetConn()}
	return a, NewConn(w), w
}

// errNotBegun is recvSplitSync's error when the receive ended before it
// read any of the frame.
var errNotBegun = errors.New("the receive ended before it read any of the frame")

// recvSplitSync receives a Sync of 7 on b, whose reads w watches, with a
// context that newCtx makes in the receiving goroutine just before the
// receive. a sends the Sync in two parts: its first two bytes; then, once
// the receive has read them, after wait, the cancel of the context and
// 100 ms more, the rest. It returns the receive's error, which wraps
// errNotBegun if the receive ended before it read the first part. Any
// data of b's before the Sync must have been read.
func recvSplitSync(t *testing.T, a, b *Conn, w *watchConn, newCtx func() (context.Context, context.CancelFunc), wait time.Duration) error {
	t.Helper()
	frame, err := AppendFrame(nil, Sync{Seq: 7})
	if err != nil {
		t.Fatal(err)
	}
	begun := w.nextRead()
	if _, err := a.NetConn().Write(frame[:2]); err != nil {
		t.Fatal(err)
	}
	cancels := make(chan context.CancelFunc, 1)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := newCtx()
		cancels <- cancel
		s, err := b.RecvSync(ctx)
		if err == nil && s.Seq != 7 {
			err = fmt.Errorf("Sync %d, want 7", s.Seq)
		}
		got <- err
	}()
	cancel := <-cancels
	defer cancel()
	select {
	case <-begun:
	case err := <-got:
		select {
		case <-begun: // it ended in the frame
			return err
		default:
			return fmt.Errorf("%w: %w", errNotBegun, err)
		}
	}
	// The frame is begun: a deadline that newCtx's context or b's peer
	// timeout set, wait or less after it, passes in it.
	time.Sleep(wait)
	cancel()
	time.Sleep(100 * time.Millisecond)
	if _, err := a.NetConn().Write(frame[2:]); err != nil {
		t.Fatal(err)
	}
	return <-got
}

// A receive whose context ends while a frame is half read finishes the
// frame, and returns it: the stream stays at a frame's boundary and the
// Conn usable, where the next receive failed with "connection unusable"
// and the frame was lost (a stop of gorperf's peer watch at that moment
// lost the peer's abort).
func TestRecvFinishesAFrameBegun(t *testing.T) {
	a, b, w := watchedTCPPair(t)
	ctx := timeout(t, 10*time.Second)
	// The receive reads the first bytes, then is cancelled.
	newCtx := func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
	if err := recvSplitSync(t, a, b, w, newCtx, 100*time.Millisecond); err != nil {
		t.Errorf("the receive cut short in a frame: %v; want the frame", err)
	}
	if err := a.Send(ctx, Sync{Seq: 8}); err != nil {
		t.Fatal(err)
	}
	if s, err := b.RecvSync(ctx); err != nil || s.Seq != 8 {
		t.Errorf("the next receive: Sync %d, %v", s.Seq, err)
	}
	// A receive whose context has ended and that has read nothing still
	// says so at once, after an Alive too.
	a.sendAlive(time.Second)
	over, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	if _, err := b.RecvSync(over); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("a receive with its context ended: %v after %v", err, time.Since(start))
	}
}

// TestBarrierPeerClosed: a barrier whose peer closed the control
// connection, its process gone (an end of stream, or a reset where it
// left bytes unread or was killed), says so in ErrPeerClosed's words,
// the error it met after them, and matches both. It said only
// "barrier 1: receiving: read tcp ...: connection reset by peer".
func TestBarrierPeerClosed(t *testing.T) {
	for _, reset := range []bool{false, true} {
		a, b := tcpPair(t)
		if reset {
			b.NetConn().(*net.TCPConn).SetLinger(0) // a close that resets
		}
		b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := a.Barrier(ctx, 1)
		cancel()
		if !errors.Is(err, ErrPeerClosed) || !strings.HasPrefix(fmt.Sprint(err), "barrier 1: the peer closed the control connection: it exited or was killed (") {
			t.Errorf("reset %v: %v; want barrier 1: %v (...)", reset, err, ErrPeerClosed)
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Errorf("reset %v: %v matches no EOF, reset or broken pipe", reset, err)
		}
	}
	for _, err := range []error{nil, context.DeadlineExceeded, ErrMalformed} {
		if got := PeerClosed(err); got != err {
			t.Errorf("PeerClosed(%v) = %v, want it as it was", err, got)
		}
	}
	once := PeerClosed(io.EOF)
	if got := PeerClosed(once); got != once {
		t.Errorf("PeerClosed twice: %v", got)
	}
}

// coded is an error of a check both sides make (a Coder).
type coded struct{ code ErrorCode }

func (c coded) Error() string        { return "check " + c.code.String() }
func (c coded) ErrorCode() ErrorCode { return c.code }
