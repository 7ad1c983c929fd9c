//go:build linux && cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestMain runs the command itself when a test re-executes its binary.
func TestMain(m *testing.M) {
	rdmatest.RunAsCommand(func() int { main(); return 0 })
	os.Exit(m.Run())
}

func udecho(ctx context.Context, args ...string) *exec.Cmd { return rdmatest.Command(ctx, args...) }

// startServer starts a server with args and checks its first line.
func startServer(t *testing.T, ctx context.Context, args ...string) rdmatest.Started {
	t.Helper()
	srv := rdmatest.Start(t, ctx, args...)
	if !strings.HasPrefix(srv.Lines.Text(), "serving on ") {
		t.Fatalf("server's first line %q; stderr: %s", srv.Lines.Text(), srv.Stderr.String())
	}
	return srv
}

// endpointAddr is where the server started by startServer gives out its
// endpoint: the end of its first line, "serving on DEV QPN 0x.. (GID
// ...), endpoint at IP:PORT".
func endpointAddr(srv rdmatest.Started) string {
	first := srv.Lines.Text()
	return first[strings.LastIndex(first, " ")+1:]
}

// The example runs as its doc comment says: a server on one device echoes
// three datagrams from a client on another (or the same) device, naming
// the client's address, which it learned from the datagrams alone.
func TestUDEcho(t *testing.T) {
	srvDev := rdmatest.Device(t).Name
	cliDev, ip := os.Getenv("RXE_DEV2"), os.Getenv("RXE_IP")
	if cliDev == "" {
		cliDev = srvDev
	}
	if ip == "" {
		ip = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	srv := startServer(t, ctx, "-d", srvDev, "-l", net.JoinHostPort(ip, "0"), "-n", "3")
	addr := endpointAddr(srv)

	cli, err := udecho(ctx, "-d", cliDev, "-n", "3", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, cli)
	}
	if got := strings.Count(string(cli), "echo of "); got != 3 {
		t.Errorf("client printed %d echoes, want 3:\n%s", got, cli)
	}
	var served []string
	for srv.Lines.Scan() {
		served = append(served, srv.Lines.Text())
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srv.Stderr.String())
	}

	// The server names the client's GID address, from the GRH.
	ctx2, err := ibverbs.Open(cliDev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx2.Close()
	gid, err := ctx2.SelectGID(1, ibverbs.GIDRule{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("to %s QPN", gid.Entry.IP())
	if len(served) != 3 || !strings.Contains(served[0], want) {
		t.Errorf("server printed %q, want three echoes %s ...", served, want)
	}
}

// A client whose server is not there fails at once, with the reason.
func TestUDEchoNoServer(t *testing.T) {
	dev := rdmatest.Device(t).Name
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := udecho(ctx, "-d", dev, addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "connection refused") {
		t.Errorf("client without a server: %v\n%s", err, out)
	}
}

// A server that serves until Ctrl-C stops cleanly on it.
func TestUDEchoInterrupt(t *testing.T) {
	dev := rdmatest.Device(t).Name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := startServer(t, ctx, "-d", dev, "-l", "127.0.0.1:0")
	if err := srv.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := srv.Cmd.Wait(); err != nil || ctx.Err() != nil {
		t.Errorf("server after Ctrl-C: %v (%v); stderr: %s", err, ctx.Err(), srv.Stderr.String())
	}
}

// A negative count, or an address with -l, is refused at once with the
// reason, before any device is touched: a usage error, exit status 2, as
// the flag package's own.
func TestUDEchoBadFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "-1", "127.0.0.1:1"}, "-n -1: the number of datagrams cannot be negative"},
		{[]string{"-n", "-2", "-l", "127.0.0.1:1"}, "-n -2: the number of datagrams cannot be negative"},
		{[]string{"-l", "127.0.0.1:1", "127.0.0.1:2"}, "usage: udecho"},
	} {
		cmd := udecho(ctx, c.args...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.HasPrefix(string(out), "udecho: "+c.want) {
			t.Errorf("udecho %q: exit status %d, %q; want 2 and %q", c.args, code, out, c.want)
		}
	}
}

// clientDev returns the device a test's client uses: the VM's second one,
// else the server's.
func clientDev(srvDev string) string {
	if d := os.Getenv("RXE_DEV2"); d != "" {
		return d
	}
	return srvDev
}

// listenIP returns the address a test's server tells its endpoint at.
func listenIP() string {
	if ip := os.Getenv("RXE_IP"); ip != "" {
		return ip
	}
	return "127.0.0.1"
}

// interrupt stops a server that serves until Ctrl-C, which must exit
// cleanly, and returns what else it printed on standard output and its
// standard error.
func interrupt(t *testing.T, srv rdmatest.Started) (lines []string, stderr string) {
	t.Helper()
	if err := srv.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for srv.Lines.Scan() {
		lines = append(lines, srv.Lines.Text())
	}
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("server after Ctrl-C: %v; stderr: %s", err, srv.Stderr.String())
	}
	return lines, srv.Stderr.String()
}

// A client without -n sends three datagrams, as its help says.
func TestUDEchoClientDefault(t *testing.T) {
	srvDev := rdmatest.Device(t).Name
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := startServer(t, ctx, "-d", srvDev, "-l", net.JoinHostPort(listenIP(), "0"))
	addr := endpointAddr(srv)
	cli, err := udecho(ctx, "-d", clientDev(srvDev), addr).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, cli)
	}
	if got := strings.Count(string(cli), "echo of "); got != 3 {
		t.Errorf("client without -n printed %d echoes, want 3:\n%s", got, cli)
	}
	if served, _ := interrupt(t, srv); len(served) != 3 {
		t.Errorf("server printed %q, want three echoes", served)
	}
}

// Datagrams longer than 256 bytes, up to the port's MTU, are echoed as
// any other, and so are the datagrams right behind them, and a later
// client is served: the server's receive slots take the largest datagram,
// where a receive slot too short for one failed its receive and took the
// QP to the error state, losing the datagrams that came before the server
// had put it back.
func TestUDEchoOversize(t *testing.T) {
	srvDev := rdmatest.Device(t).Name
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := startServer(t, ctx, "-d", srvDev, "-l", net.JoinHostPort(listenIP(), "0"))
	addr := endpointAddr(srv)

	e, err := open(clientDev(srvDev))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	srvEnd, err := serverEndpoint(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := e.pd.CreateAHTo(srvEnd, port, e.gidIndex)
	if err != nil {
		t.Fatal(err)
	}
	defer e.closeAH(ah)
	pa, err := e.ctx.QueryPort(port)
	if err != nil {
		t.Fatal(err)
	}

	// One datagram just over 256 bytes and one as long as the port's MTU
	// (1024 bytes on rxe on a 1500-byte link), each with a short one
	// right behind it, posted at once.
	var msgs [][]byte
	var all []byte
	for k, n := range []int{257, 30, pa.ActiveMTU.Bytes(), 31} {
		m := bytes.Repeat([]byte{'a' + byte(k)}, n)
		copy(m, fmt.Sprintf("datagram %d, %d bytes", k, n))
		msgs = append(msgs, m)
		all = append(all, m...)
	}
	buf, err := ibverbs.NewBuffer(len(all), ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := e.pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	copy(buf.Bytes(), all)
	var wrs []ibverbs.SendWR
	off := 0
	for _, m := range msgs {
		wrs = append(wrs, ibverbs.SendWR{Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{mr.SGE(off, len(m))}, AH: ah, RemoteQPN: srvEnd.QPN, RemoteQKey: srvEnd.QKey})
		off += len(m)
	}
	if err := e.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	// The send CQ has no channel to wait on: poll it, as e.send does.
	wcs := make([]ibverbs.WC, len(wrs))
	for got, deadline := 0, time.Now().Add(5*time.Second); got < len(wcs); time.Sleep(100 * time.Microsecond) {
		k, err := e.scq.Poll(wcs[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += k
		if got < len(wcs) && time.Now().After(deadline) {
			t.Fatalf("the sends did not complete")
		}
	}
	for _, wc := range wcs {
		if err := wc.Err(); err != nil {
			t.Fatalf("sending: %v", err)
		}
	}

	// Each comes back once, in whatever order.
	echoed := make([]bool, len(msgs))
	for deadline := time.Now().Add(10 * time.Second); slices.Contains(echoed, false); {
		d := time.Until(deadline)
		if d <= 0 {
			break
		}
		wc, b, err := e.recv(ctx, d)
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Clone(b[ibverbs.GRHLen:])
		if err := e.postRecv(int(wc.WRID)); err != nil {
			t.Fatal(err)
		}
		k := slices.IndexFunc(msgs, func(m []byte) bool { return bytes.Equal(m, got) })
		if k < 0 || wc.SrcQP != srvEnd.QPN {
			t.Fatalf("an echo of %d bytes from QPN %#x, %.30q..., is none of the datagrams sent to %#x", len(got), wc.SrcQP, got, srvEnd.QPN)
		}
		echoed[k] = true
	}
	for k, ok := range echoed {
		if !ok {
			t.Errorf("no echo of datagram %d, %d bytes", k, len(msgs[k]))
		}
	}

	// A later client is served.
	if out, err := udecho(ctx, "-d", clientDev(srvDev), "-n", "1", addr).CombinedOutput(); err != nil {
		t.Errorf("a later client: %v\n%s", err, out)
	}
	served, stderr := interrupt(t, srv)
	if len(served) != len(msgs)+1 || stderr != "" {
		t.Errorf("server printed %q and on standard error %q; want %d echoes and nothing else", served, stderr, len(msgs)+1)
	}
}

// A client stopped by Ctrl-C while it waits for the server's endpoint
// stops at once and says that the interrupt stopped it, where it waited
// out its 5 s and said "i/o timeout".
func TestUDEchoClientInterrupt(t *testing.T) {
	dev := rdmatest.Device(t).Name
	// A TCP listener that never answers: the kernel takes the client's
	// connection, and nothing writes to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := udecho(ctx, "-d", dev, ln.Addr().String())
	var out strings.Builder
	cli.Stdout, cli.Stderr = &out, &out
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(200 * time.Millisecond) // the client reads
	if err := cli.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = cli.Wait()
	if d := time.Since(start); err == nil || d > 3*time.Second ||
		out.String() != "udecho: reading the server's endpoint: interrupt signal received\n" {
		t.Errorf("client after Ctrl-C: %v after %v: %q; want it to stop at once and name the signal", err, d, out.String())
	}
}

// A client skips a datagram that is not the echo it waits for, and waits
// on for the echo: here the test is the server, and before each echo it
// sends the client a datagram that is not it, one longer than 256 bytes,
// and the echo's bytes from another QP.
func TestUDEchoClientSkipsStrays(t *testing.T) {
	dev := rdmatest.Device(t).Name
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	other, err := open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer other.close()
	ln, err := net.Listen("tcp", net.JoinHostPort(listenIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		json.NewEncoder(c).Encode(srv.me)
		c.Close()
	}()

	const n = 2
	cli := udecho(ctx, "-d", clientDev(dev), "-n", fmt.Sprint(n), ln.Addr().String())
	var stdout, stderr strings.Builder
	cli.Stdout, cli.Stderr = &stdout, &stderr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		wc, b, err := srv.recv(ctx, 10*time.Second)
		if err != nil {
			cancel()
			cli.Wait()
			t.Fatalf("datagram %d: %v; the client: %v\n%s%s", i, err, cli.ProcessState, stdout.String(), stderr.String())
		}
		grh, msg := bytes.Clone(b[:ibverbs.GRHLen]), bytes.Clone(b[ibverbs.GRHLen:])
		if err := srv.postRecv(int(wc.WRID)); err != nil {
			t.Fatal(err)
		}
		ah, err := srv.pd.CreateAHFromWC(&wc, grh, port)
		if err != nil {
			t.Fatal(err)
		}
		otherAH, err := other.pd.CreateAHFromWC(&wc, grh, port)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []struct {
			from *endpoint
			ah   *ibverbs.AH
			p    []byte
		}{
			{srv, ah, append([]byte("not the echo: "), msg...)},
			{srv, ah, bytes.Repeat([]byte{'x'}, 300)},
			{other, otherAH, msg},
			{srv, ah, msg},
		} {
			if err := d.from.send(ctx, d.p, d.ah, wc.SrcQP, srv.me.QKey); err != nil {
				t.Fatal(err)
			}
		}
		srv.closeAH(ah)
		other.closeAH(otherAH)
	}
	if err := cli.Wait(); err != nil || strings.Count(stdout.String(), "echo of ") != n {
		t.Errorf("client: %v; want %d echoes:\n%s%s", err, n, stdout.String(), stderr.String())
	}
	// The other QP's last datagram may come after the last echo.
	if k := strings.Count(stderr.String(), "udecho: skipped "); k < 3*n-1 {
		t.Errorf("the client reported %d skipped datagrams, want %d or more:\n%s", k, 3*n-1, stderr.String())
	}
	t.Logf("client's standard error:\n%s", stderr.String())
}
