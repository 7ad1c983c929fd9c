//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
	"github.com/gorperf/gorperf/rdmamsg"
)

// Tests that mostly wait on timers (a timeout, a keepalive, a peer's
// retries) call t.Parallel: they run side by side once all the others
// have ended, each on listeners of its own (port 0). A test that sets a
// package variable or hook (export_test.go, viaHandshake), counts what
// the process or the devices hold (leaks, allocations, RNR NAKs) or
// takes a link down must not, nor one that loads the CPU, which would
// push the others past their bounds in the VM.

func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ends returns the listening side's address and the dialing side's: the
// VM's two devices when it has them, else one device talking to itself.
// Only in the VM (RXE_VM=1) with GORPERF_REQUIRE_DEVICE=1 must the second
// be there (SecondAddr fails the test without it); on a host with a
// device, required or not, the tests run on that one.
func ends(t testing.TB) (srv, cli rdmatest.Net) {
	srv = rdmatest.Addr(t)
	if oneDevice(os.Getenv("RXE_DEV2"), os.Getenv("RXE_VM") == "1", rdmatest.Required()) {
		return srv, srv
	}
	return srv, rdmatest.SecondAddr(t)
}

// oneDevice reports whether ends puts both sides on the test device:
// where no second device is named (dev2, RXE_DEV2), unless the test runs
// in the VM (inVM) and requires the device tests to run (required), where
// a missing second device is a mistake in how the VM was started.
func oneDevice(dev2 string, inVM, required bool) bool {
	return dev2 == "" && !(inVM && required)
}

// TestOneDevice: the rdmamsg device tests run on one device wherever no
// second one is named, GORPERF_REQUIRE_DEVICE=1 included, but in the VM
// started without its second device; a named second device is used.
// (The old rule put them on the second device, SecondAddr, under
// GORPERF_REQUIRE_DEVICE=1 anywhere, and on a host that skipped them all.)
func TestOneDevice(t *testing.T) {
	for _, c := range []struct {
		dev2           string
		inVM, required bool
		want           bool
	}{
		{"", false, false, true},
		{"", false, true, true}, // a host with a device, in CI
		{"", true, false, true},
		{"", true, true, false}, // the VM without -2: SecondAddr fails
		{"rxe1", false, false, false},
		{"rxe1", true, true, false},
	} {
		if got := oneDevice(c.dev2, c.inVM, c.required); got != c.want {
			t.Errorf("oneDevice(%q, in the VM %v, required %v) = %v, want %v", c.dev2, c.inVM, c.required, got, c.want)
		}
	}
}

// connect listens on srv and dials it from cli, each side with its own
// settings, and returns both ends; they close when the test ends.
func connect(t testing.TB, srvCfg, cliCfg *rdmamsg.Config) (s, c *rdmamsg.Conn) {
	t.Helper()
	s, c = pair(t, srvCfg, cliCfg)
	t.Cleanup(func() {
		for _, x := range []*rdmamsg.Conn{c, s} {
			if err := x.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return s, c
}

// viaHandshake makes pair connect through Handshake over TCP instead of
// through rdma_cm: TestHandshake sets it to run other tests that way.
var viaHandshake bool

// pair is connect without the closing.
func pair(t testing.TB, srvCfg, cliCfg *rdmamsg.Config) (s, c *rdmamsg.Conn) {
	t.Helper()
	if viaHandshake {
		return handshakePair(t, srvCfg, cliCfg)
	}
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, acc := listenAccepting(t, ctx, srvNet.IP, srvCfg)
	defer l.Close()
	var cc rdmamsg.Config
	if cliCfg != nil {
		cc = *cliCfg
	}
	cc.CM.SrcAddr = cliNet.IP.String()
	c, err := rdmamsg.Dial(ctx, l.Addr().String(), &cc)
	a := <-acc
	if err != nil || a.err != nil {
		t.Fatalf("dial: %v; accept: %v", err, a.err)
	}
	return a.c, c
}

// accepted is what an Accept returned.
type accepted struct {
	c   *rdmamsg.Conn
	err error
}

// listenAccepting listens on ip with cfg and runs one Accept in the
// background, whose outcome comes on the channel. The caller closes the
// listener.
func listenAccepting(t testing.TB, ctx context.Context, ip netip.Addr, cfg *rdmamsg.Config) (*rdmamsg.Listener, <-chan accepted) {
	t.Helper()
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(ip, 0).String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := l.Accept(ctx)
		acc <- accepted{c, err}
	}()
	return l, acc
}

// rnrNAKs reads how many RNR NAKs the devices under test have received,
// where their driver counts them (rxe: rcvd_rnr_err, mlx5:
// rnr_nak_retry_err), and -1 where it does not.
func rnrNAKs(t *testing.T) int64 {
	srv, cli := ends(t)
	devs := []string{srv.Dev}
	if cli.Dev != srv.Dev {
		devs = append(devs, cli.Dev)
	}
	var sum int64
	for _, d := range devs {
		found := false
		for _, name := range []string{"rcvd_rnr_err", "rnr_nak_retry_err"} {
			b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", d, "ports/1/hw_counters", name))
			if err != nil {
				continue
			}
			v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
			found = true
		}
		if !found {
			return -1
		}
	}
	return sum
}

func message(i, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), uint64(n)))
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// TestMessages sends messages of every edge size both ways, each received
// whole and in order, and checks the sizes each side learnt of the other.
func TestMessages(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{MaxMessage: 3000}, &rdmamsg.Config{MaxMessage: 1000})
	if cli.MaxSend() != 3000 || srv.MaxSend() != 1000 || cli.MaxRecv() != 1000 || srv.MaxRecv() != 3000 {
		t.Fatalf("MaxSend %d and %d, MaxRecv %d and %d", cli.MaxSend(), srv.MaxSend(), cli.MaxRecv(), srv.MaxRecv())
	}
	if !cli.RemoteAddr().IsValid() || cli.RemoteAddr() != srv.LocalAddr() {
		t.Errorf("client's peer %v, server at %v", cli.RemoteAddr(), srv.LocalAddr())
	}
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, 3000)
	for i, size := range []int{0, 1, 64, 999, 1000} {
		m := message(i, size)
		if err := srv.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		n, err := cli.Recv(ctx, buf)
		if err != nil || !bytes.Equal(buf[:n], m) {
			t.Fatalf("message of %d bytes: got %d bytes, %v", size, n, err)
		}
	}
	for i, size := range []int{3000, 0, 2} {
		m := message(i, size)
		if err := cli.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		n, err := srv.Recv(ctx, buf)
		if err != nil || !bytes.Equal(buf[:n], m) {
			t.Fatalf("message of %d bytes: got %d bytes, %v", size, n, err)
		}
	}
	if err := srv.Send(ctx, make([]byte, 1001)); !errors.Is(err, syscall.EMSGSIZE) {
		t.Errorf("1001 bytes to a peer of 1000: %v", err)
	}
	// A side's own MaxSend caps what it sends, below the peer's largest.
	s2, c2 := connect(t, &rdmamsg.Config{MaxMessage: 3000}, &rdmamsg.Config{MaxSend: 2000})
	if c2.MaxSend() != 2000 || s2.MaxSend() != 4096 {
		t.Errorf("MaxSend with Config.MaxSend 2000: %d; the other side's %d", c2.MaxSend(), s2.MaxSend())
	}
	if err := c2.Send(ctx, make([]byte, 2001)); !errors.Is(err, syscall.EMSGSIZE) {
		t.Errorf("2001 bytes with MaxSend 2000: %v", err)
	}
	if err := c2.Send(ctx, message(9, 2000)); err != nil {
		t.Fatal(err)
	}
	if n, err := s2.Recv(ctx, buf); err != nil || !bytes.Equal(buf[:n], message(9, 2000)) {
		t.Errorf("2000 bytes with MaxSend 2000: %d, %v", n, err)
	}
	// A message longer than the buffer stays for the next Recv.
	m := message(7, 500)
	if err := srv.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	if n, err := cli.Recv(ctx, buf[:499]); !errors.Is(err, io.ErrShortBuffer) || n != 0 {
		t.Errorf("Recv of 500 bytes into 499: %d, %v", n, err)
	}
	if n, err := cli.Recv(ctx, buf); err != nil || !bytes.Equal(buf[:n], m) {
		t.Errorf("Recv after the short buffer: %d bytes, %v", n, err)
	}
}

// TestBothWaysAtOnce has both sides send many more messages than their
// depth at once, each receiving in its own goroutine that stops now and
// then: the credits must keep every message from finding an empty
// receive queue (no RNR NAK counted) and neither side may stall.
//
// With Spin the callers poll the CQs too, alongside the connections'
// goroutines: the messages must still come in order.
func TestBothWaysAtOnce(t *testing.T) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		t.Run(fmt.Sprintf("spin %v", spin), func(t *testing.T) { testBothWaysAtOnce(t, spin) })
	}
}

func testBothWaysAtOnce(t *testing.T, spin time.Duration) {
	const depth, count = 4, 300
	cfg := &rdmamsg.Config{Depth: depth, MaxMessage: 256, SendBuffers: 8, Spin: spin}
	srv, cli := connect(t, cfg, cfg)
	rnr0 := rnrNAKs(t)
	ctx := timeout(t, 120*time.Second)
	errs := make(chan error, 4)
	for k, c := range []*rdmamsg.Conn{srv, cli} {
		go func() {
			for i := range count {
				if err := c.Send(ctx, message(k*count+i, 1+i%256)); err != nil {
					errs <- fmt.Errorf("side %d, send %d: %w", k, i, err)
					return
				}
			}
			errs <- nil
		}()
		go func() {
			buf := make([]byte, 256)
			for i := range count {
				if i%50 == 0 {
					time.Sleep(20 * time.Millisecond) // let the peer fill the queue
				}
				n, err := c.Recv(ctx, buf)
				if err != nil {
					errs <- fmt.Errorf("side %d, receive %d: %w", k, i, err)
					return
				}
				if want := message((1-k)*count+i, 1+i%256); !bytes.Equal(buf[:n], want) {
					errs <- fmt.Errorf("side %d, message %d: %d bytes, not the %d sent", k, i, n, len(want))
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if rnr0 >= 0 {
		if d := rnrNAKs(t) - rnr0; d != 0 {
			t.Errorf("%d RNR NAKs: a message found no receive posted", d)
		}
	}
}

// TestSendWaitsForReceiver checks the back-pressure: a sender whose peer
// takes nothing can post the peer's depth less one and then waits, until
// its context ends; once the peer reads, everything arrives.
func TestSendWaitsForReceiver(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{Depth: 8}, nil)
	ctx := timeout(t, 60*time.Second)
	sent := 0
	for ; sent < 20; sent++ {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := cli.Send(short, message(sent, 10))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if sent != 7 {
		t.Fatalf("sent %d messages to a peer of depth 8 that takes none; want 7 (one credit kept for updates)", sent)
	}
	buf := make([]byte, 64)
	done := make(chan error, 1)
	go func() {
		for i := range 20 {
			n, err := srv.Recv(ctx, buf)
			if err != nil || !bytes.Equal(buf[:n], message(i, 10)) {
				done <- fmt.Errorf("message %d: %d bytes, %v", i, n, err)
				return
			}
		}
		done <- nil
	}()
	for ; sent < 20; sent++ {
		if err := cli.Send(ctx, message(sent, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStream copies bytes through Write and Read, cut into messages of the
// receiver's largest, and ends with the writer's Close: the reader gets
// every byte and then io.EOF, and the writer's further use fails.
func TestStream(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{MaxMessage: 1000}, nil)
	data := message(1, 100_000)
	res := make(chan error, 1)
	go func() {
		got, err := io.ReadAll(srv)
		if err == nil && !bytes.Equal(got, data) {
			err = fmt.Errorf("read %d bytes, not the %d written", len(got), len(data))
		}
		res <- err
	}()
	// Writes of uneven sizes, and an empty message among them, which Read
	// skips.
	for off := 0; off < len(data); {
		n := min(len(data)-off, 1+off%4321)
		if w, err := cli.Write(data[off : off+n]); err != nil || w != n {
			t.Fatalf("write: %d, %v", w, err)
		}
		off += n
		if off > 50_000 && off-n <= 50_000 {
			if err := cli.Send(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeAndCheckEnd(t, srv, cli, res)
}

// TestStreamCopy copies with io.Copy at both ends, which use the Conn's
// ReadFrom (reading straight into the send buffers, here half a read's
// worth at a time) and WriteTo (writing from the receive buffers).
func TestStreamCopy(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{MaxMessage: 4096, Spin: 100 * time.Microsecond}, nil)
	data := message(2, 300_000)
	res := make(chan error, 1)
	go func() {
		var got bytes.Buffer
		n, err := io.Copy(&got, srv)
		if err == nil && (n != int64(len(data)) || !bytes.Equal(got.Bytes(), data)) {
			err = fmt.Errorf("copied %d bytes, %d arrived, not the %d sent", n, got.Len(), len(data))
		}
		res <- err
	}()
	if n, err := io.Copy(cli, iotest.HalfReader(bytes.NewReader(data))); err != nil || n != int64(len(data)) {
		t.Fatalf("copy to the connection: %d, %v", n, err)
	}
	closeAndCheckEnd(t, srv, cli, res)
}

// closeAndCheckEnd closes the writing side and checks that the reader,
// whose result comes on res, saw the whole stream and its end, and that
// neither side can carry on.
func closeAndCheckEnd(t *testing.T, srv, cli *rdmamsg.Conn, res chan error) {
	t.Helper()
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the reader did not see the end of the stream")
	}
	if _, err := cli.Write([]byte("x")); !errors.Is(err, rdmamsg.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	if err := srv.Send(timeout(t, 10*time.Second), []byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("send to a peer that closed: %v", err)
	}
	if n, err := srv.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("read after the end: %d, %v", n, err)
	}
}

// TestCloseWakesWaiters checks that Close ends a Recv and a Send waiting
// in other goroutines with ErrClosed.
func TestCloseWakesWaiters(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{Depth: 4}, nil)
	ctx := timeout(t, 60*time.Second)
	for i := range 3 {
		if err := cli.Send(ctx, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- cli.Send(ctx, []byte("blocked")) }()
	go func() { _, err := cli.Recv(ctx, make([]byte, 10)); errs <- err }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, rdmamsg.ErrClosed) {
			t.Errorf("a waiter got %v, want ErrClosed", err)
		}
	}
	// At once: not when something else (a keepalive, 15 s on) happens
	// to wake the waiter asleep on the CQ.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close and its waiters returned after %v", d)
	}
	// The peer still gets what was sent before, then the end.
	buf := make([]byte, 10)
	for i := range 3 {
		if n, err := srv.Recv(ctx, buf); err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("message %d: %d bytes %v, %v", i, n, buf[:n], err)
		}
	}
	if _, err := srv.Recv(ctx, buf); err != io.EOF {
		t.Errorf("after the peer's Close: %v, want io.EOF", err)
	}
}

// TestEndUnderIO closes (or aborts) connections whose ReadFrom is
// blocked in its reader and whose WriteTo is blocked in its writer: Close
// returns at once, and each returns ErrClosed once its reader or writer
// does, whatever that returned. ReadFrom whose reader then returned
// io.EOF returned nil, as after a whole stream (io.Copy reported success
// after an Abort), and WriteTo returned its writer's own error.
func TestEndUnderIO(t *testing.T) {
	for _, tc := range []struct {
		name       string
		abort, eof bool
	}{
		{"Close", false, false},
		{"Close at EOF", false, true},
		{"Abort at EOF", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := connect(t, nil, nil)
			ctx := timeout(t, 60*time.Second)
			// cli's ReadFrom sends one message, then waits in its reader.
			pr, pw := io.Pipe()
			sent := make(chan error, 1)
			go func() { _, err := cli.ReadFrom(pr); sent <- err }()
			if _, err := pw.Write([]byte("first")); err != nil {
				t.Fatal(err)
			}
			// srv's WriteTo takes that message and waits in its writer,
			// which nobody reads yet.
			wr, ww := io.Pipe()
			wrote := make(chan error, 1)
			go func() { _, err := srv.WriteTo(ww); wrote <- err }()
			time.Sleep(300 * time.Millisecond)
			stops := []func() error{cli.Close, srv.Close}
			if tc.abort {
				stops[0] = cli.Abort
			}
			for _, end := range stops {
				done := make(chan error, 1)
				go func() { done <- end() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-ctx.Done():
					t.Fatal(tc.name + " waited for a reader or writer")
				}
			}
			if tc.eof {
				// The reader ends its stream, (0, io.EOF); the writer fails.
				pw.Close()
				wr.CloseWithError(errors.New("the writer's own failure"))
			} else {
				// The reader gives more; the writer takes its message.
				go pw.Write([]byte("second"))
				got := make([]byte, 5)
				if _, err := io.ReadFull(wr, got); err != nil || string(got) != "first" {
					t.Errorf("the writer got %q, %v", got, err)
				}
			}
			if err := <-sent; !errors.Is(err, rdmamsg.ErrClosed) {
				t.Errorf("ReadFrom after %s: %v, want ErrClosed", tc.name, err)
			}
			if err := <-wrote; !errors.Is(err, rdmamsg.ErrClosed) {
				t.Errorf("WriteTo after %s: %v, want ErrClosed", tc.name, err)
			}
		})
	}
}

// TestNotAPeer checks that each side refuses a plain rdma_cm peer, which
// sends no hello: the listener rejects the request with the reason, and
// Dial fails on a reply without one.
func TestNotAPeer(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accCtx, stop := context.WithCancel(ctx)
	acc := make(chan error, 1)
	go func() { _, err := l.Accept(accCtx); acc <- err }()
	_, err = rdmacm.Dial(ctx, l.Addr().String(), &rdmacm.Config{SrcAddr: cliNet.IP.String()})
	var rej *rdmacm.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(string(rej.PrivateData), "no rdmamsg hello") {
		t.Errorf("a plain rdma_cm Dial: %v, want a rejection that says why", err)
	}
	stop()
	if err := <-acc; !errors.Is(err, context.Canceled) {
		t.Errorf("Accept after a rejected request and the end of its context: %v", err)
	}

	pl, err := rdmacm.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	go func() {
		c, err := pl.Accept(ctx)
		if err == nil {
			<-c.Done()
			c.Close()
		}
	}()
	c, err := rdmamsg.Dial(ctx, pl.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
	if err == nil || !strings.Contains(err.Error(), "not an rdmamsg peer") {
		t.Errorf("Dial of a plain rdma_cm listener: %v, %v", c, err)
	}
}

// TestConfigRefused checks the settings no connection can take.
func TestConfigRefused(t *testing.T) {
	for _, cfg := range []rdmamsg.Config{
		{Depth: 3}, {Depth: 1 << 15}, {MaxMessage: -1}, {MaxMessage: 1<<30 + 1}, {SendBuffers: -2}, {Spin: -1},
		{MaxSend: -1}, {MaxSend: 1<<30 + 1},
		{CM: rdmacm.Config{UD: true}}, {CM: rdmacm.Config{PrivateData: []byte("x")}},
		{CM: rdmacm.Config{SingleThreadedCQs: true}},
		// rdmamsg sizes the CQ for every receive and send it posts: a
		// smaller one overran, and its QP went to the error state.
		{CM: rdmacm.Config{CQSize: 8}}, {CM: rdmacm.Config{CQSize: 1 << 20}},
	} {
		if _, err := rdmamsg.Dial(context.Background(), "198.18.0.1:1", &cfg); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// TestNoAllocations checks that a message there and back allocates
// nothing, in the callers or in the connections' goroutines, and nor do
// a WriteRemote and a ReadRemote.
func TestNoAllocations(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("spin %v", spin), func(t *testing.T) { testNoAllocations(t, spin) })
		t.Run(fmt.Sprintf("one-sided spin %v", spin), func(t *testing.T) { remoteNoAllocations(t, spin) })
	}
	t.Run("idle between", testNoAllocationsIdle)
}

func testNoAllocations(t *testing.T, spin time.Duration) {
	cfg := &rdmamsg.Config{Spin: spin}
	srv, cli := connect(t, cfg, cfg)
	ctx := timeout(t, 60*time.Second)
	msg, buf := make([]byte, 64), make([]byte, 4096)
	round := func() {
		if err := cli.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
		if err := srv.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
	checkNoAllocs(t, round)
}

// testNoAllocationsIdle: a Recv that takes the CQ back from the courier
// of a Conn idle for a while, and sleeps on it with the context of the
// Recvs before, allocates nothing either.
func testNoAllocationsIdle(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	msg, buf := make([]byte, 64), make([]byte, 4096)
	// The client sends a little after each Recv begins.
	start, sent := make(chan struct{}), make(chan error)
	defer close(start)
	go func() {
		for range start {
			time.Sleep(5 * time.Millisecond)
			sent <- cli.Send(ctx, msg)
		}
	}()
	round := func() {
		time.Sleep(50 * time.Millisecond) // a courier takes the CQ
		start <- struct{}{}
		if _, err := srv.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	checkNoAllocsIn(t, 3, 20, round)
}

// checkNoAllocs runs round to warm up and fails t if it then allocates.
func checkNoAllocs(t *testing.T, round func()) {
	t.Helper()
	checkNoAllocsIn(t, 50, 200, round)
}

// checkNoAllocsIn is checkNoAllocs with warm rounds to warm up and runs
// measured.
func checkNoAllocsIn(t *testing.T, warm, runs int, round func()) {
	t.Helper()
	for range warm {
		round()
	}
	if a := testing.AllocsPerRun(runs, round); a != 0 {
		t.Errorf("%.2f allocations a round trip", a)
	}
}

// TestNoLeaks opens and closes connections and checks that neither file
// descriptors, memory, RDMA objects nor goroutines grow.
func TestNoLeaks(t *testing.T) {
	cycle := func() {
		srv, cli := pair(t, nil, nil)
		ctx := timeout(t, 30*time.Second)
		if err := cli.Send(ctx, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Recv(ctx, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		if err := cli.Close(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	checkNoLeaks(t, 6, "connections", cycle)
}

// checkNoLeaks runs cycle once to warm up and then n times, and fails t
// if memory, descriptors, RDMA objects or goroutines grew over the n.
func checkNoLeaks(t *testing.T, n int, what string, cycle func()) {
	t.Helper()
	cycle()
	u0, g0 := rdmatest.Measure(t), runtime.NumGoroutine()
	for range n {
		cycle()
	}
	rdmatest.CheckGrowth(t, u0, rdmatest.Measure(t), n, what)
	// The goroutines end with Close; rdma_cm's own may take a moment,
	// longer on a slow VM: a leak is one still there 5 s later.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > g0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 5 s after %d %s, %d before", runtime.NumGoroutine(), n, what, g0)
		}
	}
}

// TestPeerDies stops the server's QP without a word, as a host that dies
// does: the client's next message is never acknowledged, and its calls
// fail with the device's error instead of waiting for ever.
func TestPeerDies(t *testing.T) {
	// An ACK timeout of 4.096 µs × 2^12, about 17 ms, so that the retries
	// run out in well under a second, even under emulation.
	cfg := &rdmamsg.Config{CM: rdmacm.Config{AckTimeout: 12, RetryCount: 1}}
	srv, cli := pair(t, cfg, cfg)
	t.Cleanup(func() { closeOK(t, srv) })
	ctx := timeout(t, 60*time.Second)
	if err := rdmamsg.StopSilently(srv); err != nil {
		t.Fatal(err)
	}
	recv := make(chan error, 1)
	go func() { _, err := cli.Recv(ctx, make([]byte, 10)); recv <- err }()
	if err := cli.Send(ctx, []byte("anyone?")); err != nil {
		t.Fatal(err)
	}
	err := <-recv
	if !errors.Is(err, ibverbs.WCRetryExcErr) || !strings.Contains(err.Error(), "lost: a message sent to it failed") {
		t.Fatalf("Recv after the peer died: %v, want the failed send", err)
	}
	if err := cli.Send(ctx, []byte("again")); err == nil {
		t.Error("Send after the connection failed succeeded")
	}
	t.Logf("the error: %v", err)
	// Send took the message and returned; Close tells that it was lost.
	err = cli.Close()
	if err == nil || !strings.Contains(err.Error(), "1 message sent may not have reached") || !errors.Is(err, ibverbs.WCRetryExcErr) {
		t.Errorf("Close after a message was lost: %v, want the loss and its cause", err)
	}
}

// rawDial sends an rdmamsg connection request from src to dst through an
// rdma_cm ID of its own, which has no QP, so that the test decides what
// follows the listener's reply. The ID closes when the test ends.
func rawDial(t *testing.T, ctx context.Context, src netip.Addr, dst netip.AddrPort) *rdmacm.ID {
	t.Helper()
	_, id, next := rdmatest.RoutedID(t, ctx, src, dst)
	if err := id.Connect(&rdmacm.ConnParam{PrivateData: rdmamsg.Hello(16, 4096), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventConnectResponse) // the listener has answered
	return id
}

// TestListenerCloseEndsAccept: Close ends an Accept that has answered a
// request and waits for its peer to complete the connection.
func TestListenerCloseEndsAccept(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, acc := listenAccepting(t, ctx, srvNet.IP, nil)
	defer l.Close()
	rawDial(t, ctx, cliNet.IP, l.Addr())
	select {
	case r := <-acc:
		if r.c != nil {
			r.c.Close()
		}
		t.Fatalf("Accept returned before the connection was completed: %v", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	closeOK(t, l)
	select {
	case r := <-acc:
		if r.c != nil {
			r.c.Close()
		}
		if !errors.Is(r.err, rdmamsg.ErrClosed) {
			t.Errorf("Accept after Close: %v, want ErrClosed", r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits 5 s after the listener's Close")
	}
}

// TestAcceptSkipsFailedPeer: a peer that refuses the listener's reply
// fails only its own connection; the same Accept goes on to the next.
func TestAcceptSkipsFailedPeer(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, acc := listenAccepting(t, ctx, srvNet.IP, nil)
	defer l.Close()
	id := rawDial(t, ctx, cliNet.IP, l.Addr())
	if err := id.Reject(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-acc:
		t.Fatalf("Accept returned on a peer's refusal: %v, %v", r.c, r.err)
	case <-time.After(500 * time.Millisecond):
	}
	cli, err := rdmamsg.Dial(ctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, cli)
	r := <-acc
	if r.err != nil {
		t.Fatalf("Accept after a refused reply: %v", r.err)
	}
	defer closeOK(t, r.c)
	if err := cli.Send(ctx, []byte("next")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := r.c.Recv(ctx, buf); err != nil || string(buf[:n]) != "next" {
		t.Errorf("the next peer's message: %q, %v", buf[:n], err)
	}
}

// TestStalledPeerHoldsUpNoOther: a peer that never completes its
// connection (no RTU after the listener's reply) keeps the listener from
// no other peer, also where only one connection may wait for Accept. Accept used to wait on it for the CM's retries, minutes
// with no Config.CM.Timeout, and the next peer's Dial timed out.
func TestStalledPeerHoldsUpNoOther(t *testing.T) {
	for _, backlog := range []int{0, 1} {
		t.Run(fmt.Sprintf("backlog %d", backlog), func(t *testing.T) {
			stalledPeerHoldsUpNoOther(t, &rdmamsg.Config{CM: rdmacm.Config{Backlog: backlog}})
		})
	}
}

func stalledPeerHoldsUpNoOther(t *testing.T, cfg *rdmamsg.Config) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, acc := listenAccepting(t, ctx, srvNet.IP, cfg)
	defer l.Close()
	rawDial(t, ctx, cliNet.IP, l.Addr())
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cli, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
	if err != nil {
		t.Fatalf("Dial while another peer stalls in its handshake: %v", err)
	}
	defer closeOK(t, cli)
	r := <-acc
	if r.err != nil {
		t.Fatalf("Accept while another peer stalls: %v", r.err)
	}
	defer closeOK(t, r.c)
	if err := cli.Send(ctx, []byte("not held up")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := r.c.Recv(ctx, buf); err != nil || string(buf[:n]) != "not held up" {
		t.Errorf("the message: %q, %v", buf[:n], err)
	}
}

// TestStalledPeerDropped: a peer that has not completed its connection
// within the handshake's time after the reply is dropped, and told so
// (its ID gets REJECTED), where the listener's handshake waited for the
// CM's retries, minutes, holding its resources; a listener whose own
// set-up is slow is not timed by it (its Accept is this side's).
func TestStalledPeerDropped(t *testing.T) {
	defer rdmamsg.SetHandshakeTimeout(500 * time.Millisecond)()
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, _ := listenAccepting(t, ctx, srvNet.IP, nil)
	defer l.Close()
	_, id, next := rdmatest.RoutedID(t, ctx, cliNet.IP, l.Addr())
	if err := id.Connect(&rdmacm.ConnParam{PrivateData: rdmamsg.Hello(16, 4096), RetryCount: 7, RNRRetryCount: 7}); err != nil {
		t.Fatal(err)
	}
	next(rdmacm.EventConnectResponse)
	start := time.Now()
	next(rdmacm.EventRejected)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the stalled peer was dropped after %v", d)
	}
}

// TestConnectionsAheadOfAccept: the listener makes connections before
// Accept asks, as a TCP listener's kernel does: Config.CM.Backlog (here
// 1) of them wait for Accept, and one more finishes its handshake and
// waits for room; Accept then returns them in turn. Close closes those
// that no Accept took, and their peers learn of it: as of a connection
// that ended with no end message, io.ErrUnexpectedEOF.
func TestConnectionsAheadOfAccept(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), &rdmamsg.Config{CM: rdmacm.Config{Backlog: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dial := func() *rdmamsg.Conn {
		t.Helper()
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		c, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
		if err != nil {
			t.Fatalf("Dial with no Accept under way: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	buf := make([]byte, 16)
	for _, c := range []*rdmamsg.Conn{dial(), dial()} {
		s, err := l.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer closeOK(t, s)
		want := c.LocalAddr().String()
		if err := c.Send(ctx, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Recv(ctx, buf); err != nil || string(buf[:n]) != want {
			t.Fatalf("Accept's connection got %q, %v; want the message of the peer that dialled first, %q", buf[:n], err, want)
		}
	}
	next := dial()
	closeOK(t, l)
	// As a TCP listener's kernel resets the connections it closes
	// unaccepted: no end message came, the stream did not end.
	if _, err := next.Recv(ctx, buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Recv on a connection the listener closed unaccepted: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestManyConnections has one listener serve several clients at once, a
// goroutine each, every client checking its own answers: connections
// share nothing, and the listener keeps accepting while others run.
func TestManyConnections(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 120*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), &rdmamsg.Config{Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const clients, rounds = 6, 40
	// The server's goroutines end when their clients close, before the
	// test does.
	var served sync.WaitGroup
	served.Add(clients)
	defer served.Wait()
	go func() {
		for i := range clients {
			c, err := l.Accept(ctx)
			if err != nil {
				t.Error(err)
				for range clients - i {
					served.Done()
				}
				return
			}
			go func() {
				defer served.Done()
				defer c.Close()
				buf := make([]byte, c.MaxRecv())
				for {
					n, err := c.Recv(ctx, buf)
					if err != nil {
						if err != io.EOF {
							t.Error(err)
						}
						return
					}
					if err := c.Send(ctx, buf[:n]); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}()
	errs := make(chan error, clients)
	for k := range clients {
		go func() {
			c, err := rdmamsg.Dial(ctx, l.Addr().String(), &rdmamsg.Config{Depth: 8, CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			buf := make([]byte, c.MaxRecv())
			for i := range rounds {
				m := message(k*1000+i, 1+(k*37+i)%500)
				if err := c.Send(ctx, m); err != nil {
					errs <- err
					return
				}
				n, err := c.Recv(ctx, buf)
				if err != nil || !bytes.Equal(buf[:n], m) {
					errs <- fmt.Errorf("client %d, round %d: %d bytes, %v", k, i, n, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeepAlive: a side that only receives finds a peer that died
// silently through its keepalives, with the default retry count (6,
// rdmacm.DefaultRetryCount: soft-RoCE retries for ever on 7, the old
// default, and the Recv waited for good), and on a healthy idle
// connection the keepalives (20 or so each way here) cost no credit that
// messages need and no RNR NAK.
func TestKeepAlive(t *testing.T) {
	ka := 50 * time.Millisecond
	srv, cli := connect(t, &rdmamsg.Config{KeepAlive: ka, Depth: 4}, &rdmamsg.Config{KeepAlive: ka, Depth: 4})
	rnr0 := rnrNAKs(t)
	time.Sleep(time.Second)
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, 100)
	for i := range 20 {
		for _, dir := range [][2]*rdmamsg.Conn{{cli, srv}, {srv, cli}} {
			if err := dir[0].Send(ctx, message(i, 50)); err != nil {
				t.Fatal(err)
			}
			if n, err := dir[1].Recv(ctx, buf); err != nil || !bytes.Equal(buf[:n], message(i, 50)) {
				t.Fatalf("message %d after the keepalives: %d bytes, %v", i, n, err)
			}
		}
	}
	if rnr0 >= 0 {
		if d := rnrNAKs(t) - rnr0; d != 0 {
			t.Errorf("%d RNR NAKs", d)
		}
	}

	// The peer's QP stops without a word; this side only receives. Its
	// keepalive fails after 7 ACK timeouts of 17 ms.
	cfg := &rdmamsg.Config{KeepAlive: 100 * time.Millisecond, CM: rdmacm.Config{AckTimeout: 12}}
	srv, cli = connect(t, &rdmamsg.Config{KeepAlive: -1}, cfg)
	if a, err := cli.QP().Query(); err != nil || a.RetryCnt != rdmacm.DefaultRetryCount {
		t.Errorf("QP's retry count %d, %v; want the default, %d", a.RetryCnt, err, rdmacm.DefaultRetryCount)
	}
	if err := rdmamsg.StopSilently(srv); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := cli.Recv(rctx, buf)
	if !keepAliveFailed(err) {
		t.Errorf("Recv from a peer that died: %v after %v, want the keepalive's failure", err, time.Since(start))
	}
}

// keepAliveFailed reports whether err, a Recv's, says that the connection
// was lost because its keepalive failed, and is that send's completion
// error, where it said "send to": odd on a receive, which sent nothing.
func keepAliveFailed(err error) bool {
	return errors.Is(err, ibverbs.WCRetryExcErr) && !strings.Contains(err.Error(), "send to") &&
		strings.Contains(err.Error(), "lost: the keepalive to it failed")
}

// TestKeepAliveWithoutCredit: a side that has sent all its peer lets it
// (the peer reads nothing) still finds, by its keepalives, that the
// peer's QP is gone: they are then probes, writes of no bytes, which take
// no credit. Its sends all acknowledged and nothing left to post, it
// waited for ever.
func TestKeepAliveWithoutCredit(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{Depth: 4, KeepAlive: -1},
		&rdmamsg.Config{Depth: 4, KeepAlive: 50 * time.Millisecond, CM: rdmacm.Config{AckTimeout: 12}})
	ctx := timeout(t, 60*time.Second)
	for i := range 3 { // the fourth credit is kept for updates
		if err := cli.Send(ctx, message(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := cli.Send(short, message(3, 10))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fourth send: %v, want it to wait for a credit", err)
	}
	if err := rdmamsg.StopSilently(srv); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	long, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = cli.Recv(long, make([]byte, 64))
	if !keepAliveFailed(err) {
		t.Errorf("Recv from a peer that died: %v after %v, want the probe's failure", err, time.Since(start))
	}
}

// TestOwedUpdate: the credit updates a side owes its peer go out while
// its application makes no call and it sends no keepalives (KeepAlive
// -1), so that the peer, waiting to send, is not left waiting for that
// call: updates owed for the receives the peer's own updates used, which
// the peer needs once its data has taken the rest, and for those its
// keepalives used, which would otherwise use them all.
func TestOwedUpdate(t *testing.T) {
	t.Run("PeerUpdates", func(t *testing.T) { testOwedForUpdates(t, false) })
	// The same, where a's last call was a Recv that slept on the CQ until
	// its context ended.
	t.Run("PeerUpdatesAfterRecvTimedOut", func(t *testing.T) { testOwedForUpdates(t, true) })
	t.Run("PeerKeepAlives", func(t *testing.T) {
		a, b := connect(t, &rdmamsg.Config{Depth: 4, KeepAlive: -1}, &rdmamsg.Config{Depth: 4, KeepAlive: 10 * time.Millisecond})
		ctx := timeout(t, 60*time.Second)
		// b's keepalives each use one of a's 4 receives; without a's
		// updates b would have stopped at its last credit after 3.
		time.Sleep(300 * time.Millisecond)
		buf := make([]byte, 64)
		for i := range 6 {
			short, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := b.Send(short, message(i, 10))
			cancel()
			if err != nil {
				t.Fatalf("send %d after the peer's keepalives: %v", i, err)
			}
			if n, err := a.Recv(ctx, buf); err != nil || !bytes.Equal(buf[:n], message(i, 10)) {
				t.Fatalf("message %d: %d bytes, %v", i, n, err)
			}
		}
	})
}

func testOwedForUpdates(t *testing.T, recvTimesOut bool) {
	cfg := func() *rdmamsg.Config { return &rdmamsg.Config{Depth: 4, KeepAlive: -1} }
	a, b := connect(t, cfg(), cfg())
	ctx := timeout(t, 60*time.Second)
	buf := make([]byte, 64)
	next := map[*rdmamsg.Conn]int{} // the next message each side sends
	send := func(from *rdmamsg.Conn, n int) {
		t.Helper()
		for range n {
			if err := from.Send(ctx, message(next[from], 10)); err != nil {
				t.Fatal(err)
			}
			next[from]++
		}
	}
	got := map[*rdmamsg.Conn]int{}
	recv := func(to *rdmamsg.Conn, n int) {
		t.Helper()
		for range n {
			if k, err := to.Recv(ctx, buf); err != nil || !bytes.Equal(buf[:k], message(got[to], 10)) {
				t.Fatalf("message %d: %d bytes, %v", got[to], k, err)
			}
			got[to]++
		}
	}
	// Depth 4 on both sides: 4 credits each, an update for every 2
	// receives reposted (for data taken, or an update that came), and
	// data only while 2 credits are left.
	send(a, 3)
	send(b, 3)
	recv(a, 3)
	send(b, 2)
	recv(a, 2)
	if recvTimesOut {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := a.Recv(short, buf)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Recv with nothing sent: %v, want context.DeadlineExceeded", err)
		}
	}
	// b takes a's messages and reports them in an update, which a's
	// application, making no call from here on, does not take; b is left
	// with 1 credit, which only a's report of the receive that update
	// used tops up.
	recv(b, 3)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.Send(short, message(next[b], 10)); err != nil {
		t.Fatalf("send after the peer took every message: %v (the peer's update, owed, did not come)", err)
	}
	next[b]++
	recv(a, 1)
}

// TestConcurrentWrites: Writes from two goroutines, each of many
// messages, do not interleave: the reader gets one's bytes whole, then
// the other's, as from a TCPConn.
func TestConcurrentWrites(t *testing.T) {
	srv, cli := connect(t, &rdmamsg.Config{Depth: 4}, &rdmamsg.Config{Depth: 4})
	const size = 64 << 10
	var wg sync.WaitGroup
	for _, b := range []byte{'A', 'B'} {
		wg.Go(func() {
			if n, err := cli.Write(bytes.Repeat([]byte{b}, size)); n != size || err != nil {
				t.Errorf("Write of %c: %d, %v", b, n, err)
			}
		})
	}
	got := make([]byte, 2*size)
	srv.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(srv, got); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, half := range [][]byte{got[:size], got[size:]} {
		if c := bytes.Count(half, half[:1]); c != size {
			t.Errorf("a write's %d bytes hold %d of %q and %d others: the writes interleaved", size, c, half[0], size-c)
		}
	}
}

// TestEmptyReadWrite: reading or writing nothing fails as a TCPConn's
// does on a closed Conn, and writing nothing after the write deadline
// too; before, each returned 0, nil.
func TestEmptyReadWrite(t *testing.T) {
	_, cli := connect(t, nil, nil)
	if n, err := cli.Write(nil); n != 0 || err != nil {
		t.Errorf("Write(nil): %d, %v", n, err)
	}
	cli.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := cli.Write(nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Write(nil) after the deadline: %v", err)
	}
	cli.SetWriteDeadline(time.Time{})
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Write(nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write(nil) after Close: %v, want net.ErrClosed", err)
	}
	if _, err := cli.Read(nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read(nil) after Close: %v, want net.ErrClosed", err)
	}
}

// overWriter says it wrote more than it was given.
type overWriter struct{}

func (overWriter) Write(p []byte) (int, error) { return len(p) + 1, nil }

// TestWriteToBadWriter: a writer that says it wrote more than it was
// given fails WriteTo, where the Conn went past the message's end and
// panicked with its lock held.
func TestWriteToBadWriter(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 30*time.Second)
	if err := cli.Send(ctx, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WriteTo(overWriter{}); err == nil || !strings.Contains(err.Error(), "wrote 6 bytes of 5") {
		t.Errorf("WriteTo: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close after: %v", err)
	}
}

// TestNetListenerTemporary: a connection whose resources cannot be made
// (a listener whose receives would take 16 TiB) fails its Accept, and
// NetListener's Accept says that is temporary, as net/http's Serve needs
// to go on; after Close, Accept's error is not.
func TestNetListenerTemporary(t *testing.T) {
	srvNet, cliNet := ends(t)
	ctx := timeout(t, 60*time.Second)
	l, err := rdmamsg.Listen(ctx, netip.AddrPortFrom(srvNet.IP, 0).String(), &rdmamsg.Config{MaxMessage: 1 << 30, Depth: 16384})
	if err != nil {
		t.Fatal(err)
	}
	nl := l.NetListener()
	dialed := make(chan struct{})
	go func() {
		defer close(dialed)
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if c, err := rdmamsg.Dial(dctx, l.Addr().String(), &rdmamsg.Config{CM: rdmacm.Config{SrcAddr: cliNet.IP.String()}}); err == nil {
			c.Close()
		}
	}()
	_, err = nl.Accept()
	// net/http's Serve asks Temporary, deprecated in net.Error.
	var ne interface{ Temporary() bool }
	if !errors.As(err, &ne) || !ne.Temporary() || !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("Accept of a connection that cannot be made: %v; want a temporary net.Error with ENOMEM", err)
	}
	checkOpError(t, "Accept of a connection that cannot be made", err, "accept", nil, nl.Addr(), syscall.ENOMEM)
	<-dialed
	closeOK(t, l)
	if _, err := nl.Accept(); !errors.Is(err, rdmamsg.ErrClosed) || errors.As(err, &ne) && ne.Temporary() {
		t.Errorf("Accept after Close: %v; want ErrClosed, not temporary", err)
	}
}
