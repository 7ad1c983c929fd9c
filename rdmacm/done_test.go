//go:build linux && cgo

package rdmacm_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// TestDoneAfterClose: when Close ends a connection, Done closes once
// Close has freed it: while Close frees (Prepare's cleanup runs, just
// before the QP is destroyed) Done is open and Err nil, and a goroutine
// that Done wakes finds the QP and CQs closed, their methods returning
// ibverbs.ErrClosed. The peer's Done, which its disconnect closes, finds
// its QP in the error state and still there. (Done closed as Close
// began: such a goroutine raced the QP's destruction, and ibv_query_qp
// failed with ENOENT, or crashed.)
func TestDoneAfterClose(t *testing.T) {
	n := device(t)
	l := listen(t, n.IP, nil)
	duringClose := make(chan string, 1)
	cfg := &rdmacm.Config{Prepare: func(c *rdmacm.Conn) (func() error, error) {
		return func() error {
			s := "Done open, Err nil"
			select {
			case <-c.Done():
				s = "Done closed"
			default:
			}
			if err := c.Err(); err != nil {
				s += ", Err " + err.Error()
			}
			select {
			case duringClose <- s:
			default:
			}
			return nil
		}, nil
	}}
	srv, cli := connect(t, l, n.IP, cfg)
	type seen struct{ state, poll, err error }
	woken := make(chan seen, 1)
	go func() {
		<-cli.Done()
		_, state := cli.QP().State()
		_, poll := cli.SendCQ().Poll(make([]ibverbs.WC, 1))
		woken <- seen{state, poll, cli.Err()}
	}()
	closeOK(t, cli)
	select {
	case s := <-duringClose:
		if s != "Done open, Err nil" {
			t.Errorf("while Close freed the connection (Prepare's cleanup): %s; want Done open, Err nil", s)
		}
	default:
		t.Error("Close did not run Prepare's cleanup")
	}
	select {
	case s := <-woken:
		if !errors.Is(s.state, ibverbs.ErrClosed) || !errors.Is(s.poll, ibverbs.ErrClosed) {
			t.Errorf("woken by Done after Close: QP.State %v, SendCQ.Poll %v; want ibverbs.ErrClosed from both", s.state, s.poll)
		}
		if !errors.Is(s.err, rdmacm.ErrClosed) {
			t.Errorf("woken by Done after Close: Err %v, want ErrClosed", s.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Done is open 10 s after Close returned")
	}

	select {
	case <-srv.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the peer saw no disconnect 20 s after Close")
	}
	if st, err := srv.QP().State(); err != nil || st != ibverbs.QPStateError {
		t.Errorf("the peer's QP once its Done closed for the disconnect: %v, %v; want %v", st, err, ibverbs.QPStateError)
	}
}

// TestUnreachableFlushes: an established connection that rdma_cm ends
// with UNREACHABLE moves its QP to the error state before Done closes: a
// receive posted flushes, and a CQ.Wait for it returns. rdma_cm on RoCE
// sends UNREACHABLE when the kernel's neighbour entry for the peer's
// address fails (a link down, once something is sent) or changes its MAC
// address: here the dialer's entry for the listener is replaced by one
// with a MAC no one has. The other events that end a connection
// (CONNECT_ERROR, DEVICE_REMOVAL, a failed read of the events) take the
// same path, Conn.stop. (The QP stayed in RTS, and the Wait waited for
// its deadline.) It needs the rxe VM's two devices and their netdevs.
func TestUnreachableFlushes(t *testing.T) {
	n, n2 := device(t), secondDevice(t)
	nd, nd2 := os.Getenv("RXE_NETDEV"), os.Getenv("RXE_NETDEV2")
	if nd == "" || nd2 == "" || os.Getenv("GORPERF_TEST_DEVICE") != os.Getenv("RXE_DEV") {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("in the rxe VM but RXE_NETDEV or RXE_NETDEV2 is unset")
		}
		t.Skip("needs the rxe VM's netdevs (RXE_NETDEV, RXE_NETDEV2), to change a neighbour entry")
	}
	mac, err := os.ReadFile("/sys/class/net/" + nd + "/address")
	if err != nil {
		t.Fatal(err)
	}
	neigh := func(lladdr string) {
		t.Helper()
		args := []string{"neigh", "replace", n.IP.String(), "lladdr", lladdr, "dev", nd2}
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	l := listen(t, n.IP, nil)
	_, cli := connect(t, l, n2.IP, &rdmacm.Config{})
	m := register(t, cli.PD(), 4096, 0)
	postRecv(t, cli, m, 0, 64)
	waited := make(chan error, 1)
	go func() {
		_, err := waitEvent(cli.RecvCQ(), 30*time.Second)
		waited <- err
	}()
	neigh("02:00:00:00:00:01") // locally administered, no one's
	t.Cleanup(func() { neigh(strings.TrimSpace(string(mac))) })
	select {
	case <-cli.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no event 10 s after the peer's neighbour entry changed its MAC: this kernel's rdma_cm sends no UNREACHABLE for it")
	}
	if err := cli.Err(); !errors.Is(err, rdmacm.ErrUnreachable) {
		t.Fatalf("the connection ended with %v, want ErrUnreachable", err)
	}
	if st, err := cli.QP().State(); err != nil || st != ibverbs.QPStateError {
		t.Errorf("QP once Done closed for UNREACHABLE: %v, %v; want %v", st, err, ibverbs.QPStateError)
	}
	select {
	case err := <-waited:
		var we *ibverbs.WCError
		if !errors.As(err, &we) || we.Status != ibverbs.WCWRFlushErr {
			t.Errorf("the Wait for a receive posted: %v, want it flushed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a Wait for a receive posted still waits 5 s after UNREACHABLE ended the connection")
	}
}
