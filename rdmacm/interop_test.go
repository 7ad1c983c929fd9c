//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// rdma_server and rdma_client (rdmacm-utils) each send 16 bytes of zeros
// once connected: the client first, the server after receiving. Their QPs
// take one send and one receive of 16 bytes, and they disconnect at the end.
const utilMsg = 16

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("RXE_VM") == "1" {
			t.Fatalf("%s is missing from the VM: install rdmacm-utils", name)
		}
		t.Skipf("%s not found (package rdmacm-utils)", name)
	}
	return p
}

// freePort returns a port that nobody listened on a moment ago.
func freePort(t *testing.T, n testNet) uint16 {
	t.Helper()
	l, err := rdmacm.Listen(context.Background(), addr(n.IP, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, l)
	return l.Addr().Port()
}

// TestInteropRdmaServer dials rdma-core's rdma_server.
func TestInteropRdmaServer(t *testing.T) {
	n := device(t)
	tool := lookTool(t, "rdma_server")
	port := freePort(t, n)
	ctx := timeout(t, 60*time.Second)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "-s", n.IP.String(), "-p", strconv.Itoa(int(port)))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// Dial until rdma_server listens.
	var c *rdmacm.Conn
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err = rdmacm.Dial(ctx, addr(n.IP, port), &rdmacm.Config{SrcAddr: n.IP.String()})
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("%v; rdma_server said:\n%s", err, out.String())
	}
	t.Cleanup(func() { closeOK(t, c) })
	m := register(t, c.PD(), 4096, 0)
	b := m.buf.Bytes()
	for i := range b[:64] {
		b[i] = 0xaa
	}
	copy(b[1024:], "0123456789abcdef")
	postRecv(t, c, m, 0, 64)
	err = c.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
		SGL: []ibverbs.SGE{m.mr.SGE(1024, utilMsg)}}})
	if err != nil {
		t.Fatal(err)
	}
	// rdma_server answers once it has the message, and disconnects once
	// its answer has gone; the DISCONNECTED that moves the QP to the
	// error state may come before soft-RoCE's completer has taken the
	// ACK of this side's send, which then completes flushed. That the
	// send got there, rdma_server's answer and its "end 0" say.
	_, sendErr := pollWC(c.SendCQ(), 20*time.Second)
	wc := waitWC(t, c.RecvCQ(), 20*time.Second)
	if wc.ByteLen != utilMsg || !bytes.Equal(b[:utilMsg], make([]byte, utilMsg)) || b[utilMsg] != 0xaa {
		t.Errorf("received %d bytes %x, want rdma_server's 16 zero bytes", wc.ByteLen, b[:32])
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("rdma_server: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "rdma_server: end 0") {
		t.Errorf("rdma_server said:\n%s", out.String())
	}
	if sendErr != nil && !errors.Is(sendErr, ibverbs.WCWRFlushErr) {
		t.Errorf("the send: %v", sendErr)
	} else if sendErr != nil {
		t.Logf("the send completed flushed, after rdma_server had it: %v", sendErr)
	}
	select {
	case <-c.Done():
		if !errors.Is(c.Err(), rdmacm.ErrDisconnected) {
			t.Errorf("Err() = %v after rdma_server disconnected", c.Err())
		}
	case <-time.After(20 * time.Second):
		t.Error("no DISCONNECTED 20s after rdma_server ended")
	}
}

// TestInteropRdmaClient accepts rdma-core's rdma_client.
func TestInteropRdmaClient(t *testing.T) {
	n := device(t)
	tool := lookTool(t, "rdma_client")
	l := listen(t, n.IP, &rdmacm.Config{Cap: ibverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxInline: utilMsg}})
	ctx := timeout(t, 60*time.Second)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "-s", n.IP.String(), "-p", strconv.Itoa(int(l.Addr().Port())))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	c, err := l.Accept(ctx)
	if err != nil {
		t.Fatalf("%v; rdma_client said:\n%s", err, out.String())
	}
	t.Cleanup(func() { closeOK(t, c) })
	m := register(t, c.PD(), 4096, 0)
	b := m.buf.Bytes()
	for i := range b[:64] {
		b[i] = 0xaa
	}
	// rdma_client sends as soon as it is connected; it retries while no
	// receive is posted (RNR retry 7, forever).
	postRecv(t, c, m, 0, 64)
	wc := waitWC(t, c.RecvCQ(), 20*time.Second)
	if wc.ByteLen != utilMsg || !bytes.Equal(b[:utilMsg], make([]byte, utilMsg)) || b[utilMsg] != 0xaa {
		t.Errorf("received %d bytes %x, want rdma_client's 16 zero bytes", wc.ByteLen, b[:32])
	}
	copy(b[1024:], "fedcba9876543210")
	send(t, c, m, 1024, utilMsg)
	if err := cmd.Wait(); err != nil {
		t.Errorf("rdma_client: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "rdma_client: end 0") {
		t.Errorf("rdma_client said:\n%s", out.String())
	}
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Error("no DISCONNECTED 20s after rdma_client ended")
	}
}
