//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmamsg"
)

const remoteAccess = ibverbs.AccessRemoteRead | ibverbs.AccessRemoteWrite

// region registers size bytes on c for remote reads and writes, closed
// when the test ends.
func region(t testing.TB, c *rdmamsg.Conn, size int) *rdmamsg.Region {
	t.Helper()
	r, err := c.RegisterMemory(size, remoteAccess)
	if err != nil {
		t.Fatalf("register memory: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close region: %v", err)
		}
	})
	return r
}

// tellRegion sends r's RemoteMR from one side to the other in a message,
// as a program would, and returns what the other side decoded.
func tellRegion(t testing.TB, ctx context.Context, from, to *rdmamsg.Conn, r *rdmamsg.Region) ibverbs.RemoteMR {
	t.Helper()
	b, err := r.Remote().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := from.Send(ctx, b); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, to.MaxRecv())
	n, err := to.Recv(ctx, buf)
	if err != nil {
		t.Fatal(err)
	}
	var rm ibverbs.RemoteMR
	if err := rm.UnmarshalBinary(buf[:n]); err != nil {
		t.Fatal(err)
	}
	if rm != r.Remote() {
		t.Fatalf("the region arrived as %+v, want %+v", rm, r.Remote())
	}
	return rm
}

// fill writes a pattern of seed into b.
func fill(b []byte, seed int) {
	for i := range b {
		b[i] = byte(seed*131 + i*7 + i>>8)
	}
}

// TestRemoteWriteRead writes a region of the peer's with WriteRemote and
// reads it back with ReadRemote, whole and in parts, and checks the bytes
// on both sides.
func TestRemoteWriteRead(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	const size = 1 << 20
	sr := region(t, srv, size)
	cr := region(t, cli, 2*size)
	if sr.Len() != size || len(sr.Bytes()) != size {
		t.Fatalf("a region of %d bytes: Len %d, Bytes %d", size, sr.Len(), len(sr.Bytes()))
	}
	remote := tellRegion(t, ctx, srv, cli, sr)

	fill(cr.Bytes()[:size], 1)
	if err := cli.WriteRemote(ctx, remote, 0, cr, 0, size); err != nil {
		t.Fatalf("write: %v", err)
	}
	// A message after the write arrives after its bytes.
	if err := cli.Send(ctx, []byte("written")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recv(ctx, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sr.Bytes(), cr.Bytes()[:size]) {
		t.Fatal("the peer's region does not hold what was written")
	}

	// Parts, at offsets on both sides.
	if err := cli.WriteRemote(ctx, remote, 4096+3, cr, 100, 5000); err != nil {
		t.Fatalf("write a part: %v", err)
	}
	want := make([]byte, size)
	fill(want, 1)
	copy(want[4096+3:], cr.Bytes()[100:5100])
	if err := cli.ReadRemote(ctx, cr, size, remote, 0, size); err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(cr.Bytes()[size:], want) {
		t.Fatal("the bytes read are not the peer's")
	}
	if !bytes.Equal(sr.Bytes(), want) {
		t.Fatal("the peer's region does not hold what was written in parts")
	}
	clear(cr.Bytes())
	if err := cli.ReadRemote(ctx, cr, 7, remote, size-1000, 1000); err != nil {
		t.Fatalf("read the last bytes: %v", err)
	}
	if !bytes.Equal(cr.Bytes()[7:1007], want[size-1000:]) || cr.Bytes()[6] != 0 || cr.Bytes()[1007] != 0 {
		t.Fatal("a read of a part put the wrong bytes, or put them in the wrong place")
	}
	// Reading nothing posts nothing, and succeeds.
	if err := cli.ReadRemote(ctx, cr, 0, remote, size, 0); err != nil {
		t.Fatalf("read nothing: %v", err)
	}
	// The messages still go both ways.
	if err := srv.Send(ctx, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := cli.Recv(ctx, buf); err != nil || string(buf[:n]) != "still here" {
		t.Fatalf("recv after the operations: %q, %v", buf[:n], err)
	}
}

// TestRemoteReadChanging reads a region whose owner changes it between
// reads, and checks that each read sees the content of its time.
func TestRemoteReadChanging(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	sr := region(t, srv, 8192)
	cr := region(t, cli, 8192)
	remote := tellRegion(t, ctx, srv, cli, sr)
	buf := make([]byte, 64)
	for i := range 50 {
		fill(sr.Bytes(), i)
		binary.BigEndian.PutUint32(buf, uint32(i))
		if err := srv.Send(ctx, buf[:4]); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
		if err := cli.ReadRemote(ctx, cr, 0, remote, 0, 8192); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		want := make([]byte, 8192)
		fill(want, i)
		if !bytes.Equal(cr.Bytes(), want) {
			t.Fatalf("read %d: not the region's content of its time", i)
		}
		// The reader says it is done, so the owner changes it only then.
		if err := cli.Send(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRemoteConcurrent runs 8 goroutines of writes and reads, each on a
// part of its own, while a stream goes one way through io.Copy and
// messages the other, and checks every byte.
func TestRemoteConcurrent(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 120*time.Second)
	const goroutines, ops, part = 8, 100, 16 << 10
	sr := region(t, srv, goroutines*part)
	cr := region(t, cli, 2*goroutines*part)
	remote := tellRegion(t, ctx, srv, cli, sr)

	var wg sync.WaitGroup
	errs := make(chan error, goroutines+4)
	// A failure ends the connection, so that no other goroutine waits
	// for what will not come (the stream's reader, for the rest of it).
	var once sync.Once
	failed := func(err error) {
		errs <- err
		once.Do(func() {
			srv.Close()
			cli.Close()
		})
	}
	// The stream, client to server.
	const streamLen = 8 << 20
	stream := make([]byte, streamLen)
	fill(stream, 99)
	wantSum := sha256.Sum256(stream)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(cli, bytes.NewReader(stream)); err != nil {
			failed(fmt.Errorf("copy to the conn: %w", err))
			return
		}
		if err := cli.CloseWrite(); err != nil {
			failed(err)
		}
	}()
	go func() {
		defer wg.Done()
		h := sha256.New()
		n, err := io.Copy(h, srv)
		if err != nil || n != streamLen || !bytes.Equal(h.Sum(nil), wantSum[:]) {
			failed(fmt.Errorf("the stream: %d bytes of %d, %v, or not the bytes sent", n, streamLen, err))
		}
	}()
	// Messages, server to client.
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			if err := srv.Send(ctx, message(i, 100)); err != nil {
				failed(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, cli.MaxRecv())
		for i := range 200 {
			n, err := cli.Recv(ctx, buf)
			if err != nil || !bytes.Equal(buf[:n], message(i, 100)) {
				failed(fmt.Errorf("message %d: %v, or not the bytes sent", i, err))
				return
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := cr.Bytes()[g*part : (g+1)*part]
			dst := cr.Bytes()[(goroutines+g)*part : (goroutines+g+1)*part]
			for i := range ops {
				n := 1 + (i*997)%part
				fill(src[:n], g*1000+i)
				if err := cli.WriteRemote(ctx, remote, uint64(g*part), cr, g*part, n); err != nil {
					failed(fmt.Errorf("goroutine %d, write %d: %w", g, i, err))
					return
				}
				if err := cli.ReadRemote(ctx, cr, (goroutines+g)*part, remote, uint64(g*part), n); err != nil {
					failed(fmt.Errorf("goroutine %d, read %d: %w", g, i, err))
					return
				}
				if !bytes.Equal(dst[:n], src[:n]) {
					failed(fmt.Errorf("goroutine %d, op %d: the bytes read back are not those written", g, i))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRemoteAccessError: an operation the peer's device refuses (an rkey
// it does not know, a range past its region) fails with an error that
// names it, its length and address, and wraps the completion's status;
// the connection has failed, and every call after says so.
func TestRemoteAccessError(t *testing.T) {
	for _, tt := range []struct {
		name string
		read bool
		bad  func(r ibverbs.RemoteMR) (ibverbs.RemoteMR, uint64)
	}{
		{"read with a bad rkey", true, func(r ibverbs.RemoteMR) (ibverbs.RemoteMR, uint64) {
			r.RKey ^= 0x5a5a00
			return r, 64
		}},
		{"write past the region", false, func(r ibverbs.RemoteMR) (ibverbs.RemoteMR, uint64) {
			r.Len += 1 << 20 // a peer that claims more than it registered
			return r, r.Len - 1<<20 + 4096
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, cli := pair(t, nil, nil)
			defer srv.Close()
			defer cli.Close()
			ctx := timeout(t, 60*time.Second)
			sr := region(t, srv, 8192)
			cr := region(t, cli, 8192)
			remote, off := tt.bad(tellRegion(t, ctx, srv, cli, sr))
			var err error
			what := "RDMA write of 64 bytes to"
			if tt.read {
				err = cli.ReadRemote(ctx, cr, 0, remote, off, 64)
				what = "RDMA read of 64 bytes from"
			} else {
				err = cli.WriteRemote(ctx, remote, off, cr, 0, 64)
			}
			if !errors.Is(err, ibverbs.WCRemAccessErr) {
				t.Fatalf("got %v, want an error matching %v", err, ibverbs.WCRemAccessErr)
			}
			addr := fmt.Sprintf("%#x", remote.Addr+off)
			if msg := err.Error(); !strings.Contains(msg, what) || !strings.Contains(msg, addr) {
				t.Errorf("the error %q does not say %q and the address %s", msg, what, addr)
			}
			var we *ibverbs.WCError
			if !errors.As(err, &we) {
				t.Errorf("the error %v wraps no *ibverbs.WCError", err)
			}
			// The connection has failed: every call says why.
			if err2 := cli.Send(ctx, []byte("x")); !errors.Is(err2, ibverbs.WCRemAccessErr) || err2.Error() != err.Error() {
				t.Errorf("send after the failure: %v, want %v", err2, err)
			}
			if _, err2 := cli.Recv(ctx, make([]byte, 64)); !errors.Is(err2, ibverbs.WCRemAccessErr) {
				t.Errorf("recv after the failure: %v, want %v", err2, err)
			}
			good := sr.Remote()
			if err2 := cli.ReadRemote(ctx, cr, 0, good, 0, 64); !errors.Is(err2, ibverbs.WCRemAccessErr) {
				t.Errorf("a good read after the failure: %v, want %v", err2, err)
			}
		})
	}
}

// TestRemoteRefused: ranges outside the local or the remote region, a
// region of another Conn, a passed deadline, a closed region and a
// closed Conn are refused before anything is posted, and the connection
// goes on.
func TestRemoteRefused(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	sr := region(t, srv, 4096)
	cr := region(t, cli, 4096)
	remote := tellRegion(t, ctx, srv, cli, sr)
	for _, tt := range []struct {
		name string
		f    func() error
	}{
		{"negative local offset", func() error { return cli.ReadRemote(ctx, cr, -1, remote, 0, 8) }},
		{"past the local region", func() error { return cli.ReadRemote(ctx, cr, 4090, remote, 0, 8) }},
		{"longer than the local region", func() error { return cli.WriteRemote(ctx, remote, 0, cr, 0, 4097) }},
		{"negative length", func() error { return cli.WriteRemote(ctx, remote, 0, cr, 0, -1) }},
		{"past the remote region", func() error { return cli.ReadRemote(ctx, cr, 0, remote, 4095, 2) }},
		{"remote offset beyond", func() error { return cli.WriteRemote(ctx, remote, 1<<40, cr, 0, 0) }},
		{"no remote region", func() error { return cli.ReadRemote(ctx, cr, 0, ibverbs.RemoteMR{}, 0, 8) }},
		{"another Conn's region", func() error { return cli.WriteRemote(ctx, remote, 0, sr, 0, 8) }},
		{"no region", func() error { return cli.ReadRemote(ctx, nil, 0, remote, 0, 8) }},
	} {
		if err := tt.f(); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", tt.name, err)
		}
	}
	if _, err := cli.RegisterMemory(0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("register no memory: %v, want EINVAL", err)
	}

	cli.SetReadDeadline(time.Now().Add(-time.Second))
	if err := cli.ReadRemote(ctx, cr, 0, remote, 0, 8); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read after the read deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	cli.SetReadDeadline(time.Time{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := cli.ReadRemote(cctx, cr, 0, remote, 0, 8); !errors.Is(err, context.Canceled) && err != nil {
		t.Errorf("read with a cancelled context: %v, want nil or context.Canceled", err)
	}

	// The connection goes on.
	fill(sr.Bytes(), 5)
	if err := cli.ReadRemote(ctx, cr, 0, remote, 0, 4096); err != nil || !bytes.Equal(cr.Bytes(), sr.Bytes()) {
		t.Fatalf("a read after the refusals: %v, or not the bytes", err)
	}

	// A closed region.
	other, err := cli.RegisterMemory(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
	if other.Bytes() != nil || other.Remote() != (ibverbs.RemoteMR{}) {
		t.Errorf("a closed region has bytes or a RemoteMR")
	}
	if err := cli.ReadRemote(ctx, other, 0, remote, 0, 8); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read into a closed region: %v, want net.ErrClosed", err)
	}
}

// TestRemoteAfterClose: after the Conn's Close, operations and
// registrations fail with ErrClosed, and the regions still close.
func TestRemoteAfterClose(t *testing.T) {
	srv, cli := pair(t, nil, nil)
	defer srv.Close()
	ctx := timeout(t, 60*time.Second)
	sr, err := srv.RegisterMemory(4096, remoteAccess)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := cli.RegisterMemory(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	remote := tellRegion(t, ctx, srv, cli, sr)
	if err := cli.WriteRemote(ctx, remote, 0, cr, 0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := cli.ReadRemote(ctx, cr, 0, remote, 0, 8); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close: %v, want net.ErrClosed", err)
	}
	if err := cli.WriteRemote(ctx, remote, 0, cr, 0, 8); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v, want net.ErrClosed", err)
	}
	if _, err := cli.RegisterMemory(4096, 0); !errors.Is(err, net.ErrClosed) {
		t.Errorf("register after close: %v, want net.ErrClosed", err)
	}
	if len(cr.Bytes()) != 4096 {
		t.Errorf("the region's memory is gone before its Close")
	}
	if err := cr.Close(); err != nil {
		t.Errorf("close the region after the Conn: %v", err)
	}
	// The server's region: after its Conn's Close too.
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := sr.Close(); err != nil {
		t.Errorf("close the region after the Conn: %v", err)
	}
}

// TestRemoteCancel: a caller whose context ends while its read is on its
// way returns at once with the context's error; the read still completes,
// and its region refuses to close until then (EBUSY); the connection goes
// on.
func TestRemoteCancel(t *testing.T) {
	srv, cli := connect(t, nil, nil)
	ctx := timeout(t, 60*time.Second)
	// Long enough to be on its way when the hook runs, short enough for
	// soft-RoCE under emulation (about 1 MB/s).
	const size = 4 << 20
	sr := region(t, srv, size)
	big, err := cli.RegisterMemory(size, 0)
	if err != nil {
		t.Fatal(err)
	}
	small := region(t, cli, 4096)
	remote := tellRegion(t, ctx, srv, cli, sr)
	fill(sr.Bytes()[:4096], 3)

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var closeErr error
	restore := rdmamsg.SetOpHook(func() {
		cancel()
		closeErr = big.Close()
	})
	err = cli.ReadRemote(cctx, big, 0, remote, 0, size)
	restore()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("read with its context cancelled under way: %v, want context.Canceled", err)
	}
	if !errors.Is(closeErr, syscall.EBUSY) {
		t.Errorf("close of the region under a read: %v, want EBUSY", closeErr)
	}
	// The next operation completes after the abandoned one.
	if err := cli.ReadRemote(ctx, small, 0, remote, 0, 4096); err != nil || !bytes.Equal(small.Bytes(), sr.Bytes()[:4096]) {
		t.Fatalf("a read after: %v, or not the bytes", err)
	}
	if err := big.Close(); err != nil {
		t.Errorf("close of the region once its read completed: %v", err)
	}
	if err := cli.Send(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Recv(ctx, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
}

// remoteNoAllocations: a write and a read of 64 bytes allocate nothing.
func remoteNoAllocations(t *testing.T, spin time.Duration) {
	cfg := &rdmamsg.Config{Spin: spin}
	srv, cli := connect(t, cfg, cfg)
	ctx := timeout(t, 60*time.Second)
	sr := region(t, srv, 4096)
	cr := region(t, cli, 4096)
	remote := tellRegion(t, ctx, srv, cli, sr)
	round := func() {
		if err := cli.WriteRemote(ctx, remote, 0, cr, 0, 64); err != nil {
			t.Fatal(err)
		}
		if err := cli.ReadRemote(ctx, cr, 64, remote, 0, 64); err != nil {
			t.Fatal(err)
		}
	}
	checkNoAllocs(t, round)
}
