//go:build linux && cgo

package rdmamsg_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmamsg"
)

// TestPeerWriteWithImm: the peer writes n bytes into a region this side
// registered for remote writes with immediate data (RDMA_WRITE_WITH_IMM),
// posted on its QP behind rdmamsg's back: the write takes a receive,
// which completes as RECV_RDMA_WITH_IMM with the write's length. Recv
// fails the connection (EPROTO), naming the opcode and the length, and
// so does Send after. Where Recv took the completion for a message of
// the write's length, it panicked under the Conn's mutex (past the
// receive buffers: 300000), returned the stale bytes of a receive buffer
// as a message (longer than MaxMessage, within the buffers: 5000) or an
// empty message (0).
func TestPeerWriteWithImm(t *testing.T) {
	for _, n := range []int{0, 5000, 300000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			srv, cli := pair(t, nil, nil)
			ctx := timeout(t, 30*time.Second)
			r, err := srv.RegisterMemory(1<<20, ibverbs.AccessRemoteWrite|ibverbs.AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			// The server's receive buffers hold messages of their own
			// before the write.
			for i := range 20 {
				if err := cli.Send(ctx, bytes.Repeat([]byte{byte('a' + i)}, srv.MaxRecv())); err != nil {
					t.Fatal(err)
				}
				if _, err := srv.Recv(ctx, make([]byte, srv.MaxRecv())); err != nil {
					t.Fatal(err)
				}
			}
			src, err := cli.RegisterMemory(max(n, 1), 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range src.Bytes() {
				src.Bytes()[i] = 'H'
			}
			rem := r.Remote()
			wr := ibverbs.SendWR{ID: 1 << 63, Opcode: ibverbs.OpRDMAWriteWithImm, RemoteAddr: rem.Addr, RKey: rem.RKey}
			if n > 0 {
				wr.SGL = []ibverbs.SGE{rdmamsg.RegionSGE(src, 0, n)}
			}
			if err := cli.QP().PostSend([]ibverbs.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			type result struct {
				n     int
				err   error
				panic any
			}
			out := make(chan result, 1)
			go func() {
				var got result
				defer func() {
					got.panic = recover()
					out <- got
				}()
				got.n, got.err = srv.Recv(ctx, make([]byte, 1<<20))
			}()
			var got result
			select {
			case got = <-out:
			case <-time.After(20 * time.Second):
				t.Fatal("Recv still waits 20 s after the peer's RDMA_WRITE_WITH_IMM")
			}
			if got.panic != nil {
				// The Conn's mutex stays held: leave the pair as it is.
				t.Fatalf("Recv after the peer's RDMA_WRITE_WITH_IMM of %d bytes panicked: %v", n, got.panic)
			}
			want := fmt.Sprintf("RECV_RDMA_WITH_IMM of %d bytes", n)
			if !errors.Is(got.err, syscall.EPROTO) || !strings.Contains(got.err.Error(), want) {
				t.Errorf("Recv after the peer's RDMA_WRITE_WITH_IMM of %d bytes = %d, %v; want an error matching EPROTO that says %q", n, got.n, got.err, want)
			}
			if err := srv.Send(ctx, []byte("x")); !errors.Is(err, syscall.EPROTO) {
				t.Errorf("Send after: %v, want the connection's failure (EPROTO)", err)
			}
			cli.Abort()
			srv.Close()
			if err := r.Close(); err != nil {
				t.Error(err)
			}
			if err := src.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}
