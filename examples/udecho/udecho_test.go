//go:build linux && cgo

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
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
	// "serving on DEV QPN 0x.. (GID ...), endpoint at IP:PORT"
	first := srv.Lines.Text()
	addr := first[strings.LastIndex(first, " ")+1:]

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

// A negative count is refused at once with the reason, before any device
// is touched.
func TestUDEchoBadFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{{"-n", "-1", "127.0.0.1:1"}, {"-n", "-2", "-l", "127.0.0.1:1"}} {
		out, err := udecho(ctx, args...).CombinedOutput()
		want := "udecho: " + args[0] + " " + args[1] + ": the number of datagrams cannot be negative"
		if err == nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("udecho %q: %v, %q; want an error %q", args, err, out, want)
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
	first := srv.Lines.Text()
	addr := first[strings.LastIndex(first, " ")+1:]
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
