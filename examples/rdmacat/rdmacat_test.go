//go:build linux && cgo

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
	"golang.org/x/sys/unix"
)

// TestMain runs the command itself when a test re-executes its binary.
func TestMain(m *testing.M) {
	rdmatest.RunAsCommand(func() int { main(); return 0 })
	os.Exit(m.Run())
}

// addr is a new address on the test device's IP (RXE_IP in the VM), for
// rdma_cm to listen at.
func addr(t *testing.T) string { return rdmatest.ListenAddr(t, 19500) }

// server is a running rdmacat -l: its process, what it writes to standard
// output, and its standard error.
type server struct {
	cmd    *exec.Cmd
	stdout *bytes.Buffer
	stderr *strings.Builder
	done   chan struct{} // standard error read to its end
}

// startServer starts rdmacat -l a with args and waits until it listens.
func startServer(t *testing.T, ctx context.Context, a string, args ...string) *server {
	t.Helper()
	return startServerTo(t, ctx, a, nil, args...)
}

// startServerTo is startServer with the server's standard output to
// stdout, where it is not nil: its stdout field is then empty.
func startServerTo(t *testing.T, ctx context.Context, a string, stdout *os.File, args ...string) *server {
	t.Helper()
	s := &server{
		cmd:    rdmatest.Command(ctx, append([]string{"-l", a}, args...)...),
		stdout: new(bytes.Buffer),
		stderr: new(strings.Builder),
		done:   make(chan struct{}),
	}
	s.cmd.Stdout = s.stdout
	if stdout != nil {
		s.cmd.Stdout = stdout
	}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill() })
	lines := bufio.NewScanner(pipe)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "listening on "+a) {
		t.Fatalf("server's first line %q", lines.Text())
	}
	go func() {
		defer close(s.done)
		for lines.Scan() {
			s.stderr.WriteString(lines.Text() + "\n")
		}
	}()
	return s
}

// wait waits for the server to exit and returns its standard error.
func (s *server) wait() (string, error) {
	<-s.done
	err := s.cmd.Wait()
	return s.stderr.String(), err
}

func random(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// The example runs as its doc comment says: a stream from standard input,
// or a file, arrives whole on the server's standard output, or in its
// file, and each side reports the bytes it moved.
func TestRdmacat(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		size      int
		files     bool
		link      bool // -o a symbolic link to the file
		hard      bool // the file has another hard link, which sees the stream too
		tcp       bool
		srv, args []string
	}{
		{name: "stdio, messages of 1500 bytes", size: 123_457, srv: []string{"-m", "1500"}},
		{name: "files", size: 1 << 20, files: true},
		{name: "empty", size: 0},
		{name: "files, set up over TCP", size: 1 << 20, files: true, tcp: true},
		{name: "files, -o a symbolic link", size: 100_000, files: true, link: true},
		{name: "files, -o with another hard link", size: 100_000, files: true, hard: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := addr(t)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			data := random(tc.size)
			in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
			srvArgs, cliArgs := tc.srv, []string{a}
			if tc.tcp {
				srvArgs, cliArgs = append(srvArgs, "-tcp"), append([]string{"-tcp"}, cliArgs...)
			}
			if tc.files {
				o := out
				if tc.link {
					o = filepath.Join(dir, "link")
					os.Remove(o)
					if err := os.Symlink("out", o); err != nil {
						t.Fatal(err)
					}
				}
				srvArgs = append(srvArgs, "-o", o)
				// A file there already is replaced whole, its mode
				// kept.
				if err := os.WriteFile(out, []byte("old"), 0o640); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(out, 0o640); err != nil {
					t.Fatal(err)
				}
				if tc.hard {
					os.Remove(filepath.Join(dir, "hard"))
					if err := os.Link(out, filepath.Join(dir, "hard")); err != nil {
						t.Fatal(err)
					}
					defer os.Remove(filepath.Join(dir, "hard"))
				}
			}
			srv := startServer(t, ctx, a, srvArgs...)
			cli := rdmatest.Command(ctx, cliArgs...)
			if tc.files {
				if err := os.WriteFile(in, data, 0o600); err != nil {
					t.Fatal(err)
				}
				cli = rdmatest.Command(ctx, append([]string{"-i", in}, cliArgs...)...)
			} else {
				cli.Stdin = bytes.NewReader(data)
			}
			cliOut, err := cli.CombinedOutput()
			if err != nil {
				t.Fatalf("client: %v\n%s", err, cliOut)
			}
			srvErr, err := srv.wait()
			if err != nil {
				t.Fatalf("server: %v\n%s", err, srvErr)
			}
			got := srv.stdout.Bytes()
			if tc.files {
				if got, err = os.ReadFile(out); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Lstat(out); err != nil || fi.Mode() != 0o640 {
					t.Errorf("the server's file: %v, %v; want a regular file of mode 0640, the file's before", fi.Mode(), err)
				}
				if tc.hard {
					// Written in place: a rename would part the names.
					if other, err := os.ReadFile(filepath.Join(dir, "hard")); err != nil || !bytes.Equal(other, data) {
						t.Errorf("the file's other link holds %d bytes (%v), not the %d sent", len(other), err, len(data))
					}
				}
				if tc.link {
					if to, err := os.Readlink(filepath.Join(dir, "link")); err != nil || to != "out" {
						t.Errorf("the link the server wrote through: %q, %v; want it as it was", to, err)
					}
				}
				noHidden(t, dir, "out")
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("the server wrote %d bytes, not the %d sent", len(got), len(data))
			}
			if want := fmt.Sprintf("sent %d bytes to %s in ", tc.size, a); !strings.HasPrefix(string(cliOut), want) {
				t.Errorf("client printed %q, want %q...", cliOut, want)
			}
			if want := fmt.Sprintf("received %d bytes from ", tc.size); !strings.HasPrefix(srvErr, want) {
				t.Errorf("server printed %q, want %q...", srvErr, want)
			}
		})
	}
}

// A client without a server, or with bad arguments, fails at once with the
// reason; a server stopped by Ctrl-C while it waits exits with an error.
func TestRdmacatFailures(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	out, err := rdmatest.Command(ctx, a).CombinedOutput()
	if err == nil || !strings.HasPrefix(string(out), "rdmacat: ") || time.Since(start) > 20*time.Second {
		t.Errorf("client without a server: %v after %v: %q", err, time.Since(start), out)
	}
	cmd := rdmatest.Command(ctx, "-l", a, "-i", "x")
	out, _ = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "usage: rdmacat") {
		t.Errorf("-l with -i: exit status %d, %q; want 2 and the usage", code, out)
	}

	start = time.Now()
	out, err = rdmatest.Command(ctx, "-tcp", a).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "connection refused") || time.Since(start) > 20*time.Second {
		t.Errorf("-tcp client without a server: %v after %v: %q", err, time.Since(start), out)
	}

	for _, args := range [][]string{nil, {"-tcp"}} {
		srv := startServer(t, ctx, a, args...)
		if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		msg, err := srv.wait()
		if err == nil || msg != "rdmacat: interrupt signal received\n" {
			t.Errorf("server %v after Ctrl-C: %v: %q; want the signal named", args, err, msg)
		}
	}

	// A client whose input never ends (a terminal, a pipe) stops on
	// Ctrl-C though its copy is blocked reading; the server writes what
	// came, and fails: the stream broke off (the client aborted), where
	// it took the end of what came for the end of the stream and exited
	// 0. The server writes to a file, which tells when the bytes are
	// there: Ctrl-C then comes mid-copy, where after a fixed second a slow
	// client could still be connecting.
	srv, cli, cliOut, outFile := startPartial(t, ctx, a)
	if err := cli.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	err = cli.Wait()
	if err == nil || !strings.HasSuffix(cliOut.String(), ": interrupt signal received\n") || time.Since(start) > 10*time.Second {
		t.Errorf("client after Ctrl-C: %v after %v: %q", err, time.Since(start), cliOut.String())
	}
	msg, err := srv.wait()
	if err == nil || !strings.HasPrefix(msg, "rdmacat: receiving from ") ||
		!strings.Contains(msg, "after 7 bytes") || !strings.Contains(msg, "connection reset by peer") {
		t.Errorf("server after the client's Ctrl-C: %v: %q; want a failure after 7 bytes", err, msg)
	}
	untouched(t, outFile)
}

// noHidden fails t where dir holds a hidden file that a server writing to
// the file name wrote its stream to, and left.
func noHidden(t *testing.T, dir, name string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, "."+name+".rdmacat-*")); len(left) > 0 {
		t.Errorf("the server left %q", left)
	}
}

// untouched fails t where the file that startPartial's server wrote to
// is not as it was before (it holds "before"), or the server left its
// hidden file: a stream that failed leaves no part of itself.
func untouched(t *testing.T, outFile string) {
	t.Helper()
	if got, err := os.ReadFile(outFile); err != nil || string(got) != "before" {
		t.Errorf("the server's -o file after its stream failed: %q, %v; want it as it was", got, err)
	}
	noHidden(t, filepath.Dir(outFile), filepath.Base(outFile))
}

// A client whose input fails (a directory: EISDIR) aborts, and the server
// fails too, where it said "received 0 bytes" and exited 0; a server that
// cannot write the stream (/dev/full: ENOSPC) aborts, and the client
// fails too, where it said "sent" and exited 0, its bytes on their way.
func TestRdmacatBrokenStream(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		var flags []string
		if tcp {
			flags = []string{"-tcp"}
		}
		t.Run(fmt.Sprintf("tcp %v", tcp), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := addr(t)
			srv := startServer(t, ctx, a, flags...)
			dir := t.TempDir()
			out, err := rdmatest.Command(ctx, append(append([]string{"-i", dir}, flags...), a)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "is a directory") {
				t.Errorf("client reading a directory: %v: %q", err, out)
			}
			if msg, err := srv.wait(); err == nil || !strings.Contains(msg, "connection reset by peer") {
				t.Errorf("server of a client whose input failed: %v: %q; want a failure", err, msg)
			}

			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skipf("no /dev/full: %v", err)
			}
			a = addr(t)
			srv = startServer(t, ctx, a, append([]string{"-o", "/dev/full"}, flags...)...)
			in := filepath.Join(dir, "in")
			if err := os.WriteFile(in, random(100_000), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err = rdmatest.Command(ctx, append(append([]string{"-i", in}, flags...), a)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "connection reset by peer") {
				t.Errorf("client of a server that cannot write: %v: %q; want a failure", err, out)
			}
			if msg, err := srv.wait(); err == nil || !strings.Contains(msg, "no space left on device") {
				t.Errorf("server writing to /dev/full: %v: %q", err, msg)
			}
		})
	}
}

// A server whose standard output is a pipe whose reader has gone fails
// as one that cannot write its file does: it aborts, says "broken pipe"
// and exits 1, and its client fails too. Go's default for SIGPIPE on
// standard output killed it without a word.
func TestRdmacatBrokenPipe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	a := addr(t)
	srv := startServerTo(t, ctx, a, w)
	w.Close() // the server's copy is its standard output
	cli := rdmatest.Command(ctx, a)
	cli.Stdin = bytes.NewReader(random(100_000))
	if out, err := cli.CombinedOutput(); err == nil || !strings.HasPrefix(string(out), "rdmacat: ") {
		t.Errorf("client of a server whose output is a broken pipe: %v: %q; want a failure", err, out)
	}
	msg, err := srv.wait()
	if code := srv.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(msg, "broken pipe") {
		t.Errorf("server writing to a broken pipe: %v (exit status %d): %q; want exit status 1 and the reason", err, code, msg)
	}
}

// A server that cannot create its output file fails at once, with the
// reason, and never listens: no client's stream is taken and then lost.
func TestRdmacatOutputFails(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The old server listened first, and waited here for a client.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	const out = "/nonexistent/dir/x"
	srv := rdmatest.Command(sctx, "-l", a, "-o", out)
	msg, err := srv.CombinedOutput()
	if srv.ProcessState == nil || srv.ProcessState.ExitCode() != 1 || sctx.Err() != nil ||
		!strings.HasPrefix(string(msg), "rdmacat: open "+out+": no such file or directory") ||
		strings.Contains(string(msg), "listening on") {
		t.Fatalf("server -o %s: %v (%v): %q; want it to fail at once, without listening", out, err, sctx.Err(), msg)
	}
	cli := rdmatest.Command(ctx, a)
	cli.Stdin = strings.NewReader("lost")
	if msg, err := cli.CombinedOutput(); err == nil || !strings.HasPrefix(string(msg), "rdmacat: ") {
		t.Errorf("client of a server that cannot write: %v: %q", err, msg)
	}
}

// A server may write the stream to a file that cannot be synced, as
// /dev/null cannot (fsync fails with EINVAL): it receives the stream and
// succeeds.
func TestRdmacatDevNull(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := startServer(t, ctx, a, "-o", os.DevNull)
	const size = 100_000
	cli := rdmatest.Command(ctx, a)
	cli.Stdin = bytes.NewReader(random(size))
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	msg, err := srv.wait()
	if err != nil || !strings.HasPrefix(msg, fmt.Sprintf("received %d bytes from ", size)) {
		t.Errorf("server -o %s: %v: %q", os.DevNull, err, msg)
	}
}

// A side killed, or stopped by SIGTERM, is not taken for one that
// finished. The client of a server killed (SIGKILL) after the client had
// sent everything, while it waits for the server's word, fails, where it
// said "sent" and exited 0 (the server's disconnect read as its Close);
// the server of a client stopped by SIGTERM, or killed, fails, where it
// wrote what came and exited 0.
func TestRdmacatPeerKilled(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		var flags []string
		if tcp {
			flags = []string{"-tcp"}
		}
		t.Run(fmt.Sprintf("server killed, tcp %v", tcp), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := addr(t)
			// The server writes to a pipe that nobody reads: once it is
			// full, the server waits in its write, and holds the rest of
			// the stream in its receives.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			srv := startServerTo(t, ctx, a, w, flags...)
			w.Close()
			cli := rdmatest.Command(ctx, append(flags, a)...)
			cli.Stdin = bytes.NewReader(random(300_000))
			var cliOut strings.Builder
			cli.Stdout, cli.Stderr = &cliOut, &cliOut
			if err := cli.Start(); err != nil {
				t.Fatal(err)
			}
			for {
				n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
				if err != nil {
					t.Fatal(err)
				}
				if n >= 65536 {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("the server wrote %d bytes to its pipe", n)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// The client's other bytes fit in the server's receives: it
			// has sent them and waits for the server's word.
			time.Sleep(500 * time.Millisecond)
			if err := srv.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			srv.wait()
			err = cli.Wait()
			if err == nil || strings.Contains(cliOut.String(), "sent ") || !strings.Contains(cliOut.String(), "unexpected EOF") {
				t.Errorf("client of a server killed: %v: %q; want a failure", err, cliOut.String())
			}
		})
	}
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(fmt.Sprintf("client %v", sig), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := addr(t)
			srv, cli, cliOut, outFile := startPartial(t, ctx, a)
			if err := cli.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cli.Wait()
			if sig == syscall.SIGTERM && (err == nil || !strings.HasSuffix(cliOut.String(), ": terminated signal received\n")) {
				t.Errorf("client after SIGTERM: %v: %q; want it to abort", err, cliOut.String())
			}
			want := "connection reset by peer" // the client's abort
			if sig == syscall.SIGKILL {
				want = "unexpected EOF" // no end message
			}
			msg, err := srv.wait()
			if err == nil || !strings.Contains(msg, "after 7 bytes") || !strings.Contains(msg, want) {
				t.Errorf("server of a client stopped by %v: %v: %q; want a failure after 7 bytes: %s", sig, err, msg, want)
			}
			untouched(t, outFile)
		})
	}
}

// startPartial starts a server at a that writes to a file, which holds
// "before", and a client whose input stays open, which sends it 7 bytes;
// it returns once the server has written them (to its hidden file beside
// the file): the copy is under way, neither side done.
func startPartial(t *testing.T, ctx context.Context, a string) (srv *server, cli *exec.Cmd, cliOut *strings.Builder, outFile string) {
	t.Helper()
	outFile = filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(outFile, []byte("before"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv = startServer(t, ctx, a, "-o", outFile)
	cli = rdmatest.Command(ctx, a)
	stdin, err := cli.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	cliOut = new(strings.Builder)
	cli.Stdout, cli.Stderr = cliOut, cliOut
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	for {
		hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(outFile), ".out.rdmacat-*"))
		if len(hidden) == 1 {
			if fi, err := os.Stat(hidden[0]); err == nil && fi.Size() == 7 {
				return srv, cli, cliOut, outFile
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the server did not write the client's 7 bytes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client whose input is idle (a pipe that stays open: tail -f, a
// terminal) learns at once that its server is gone, whether the server
// was killed (no end message: unexpected EOF) or stopped by a signal (its
// abort: connection reset by peer), and fails, where it waited for its
// input to yield more or end, which it may never do (it waited 27 s for
// a pipe that ended 30 s on). The three cases, each a server and client
// of their own, run side by side (t.Parallel).
func TestRdmacatServerGoneWhileIdle(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGKILL, "unexpected EOF"},
		{syscall.SIGINT, "connection reset by peer"},
		{syscall.SIGTERM, "connection reset by peer"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := addr(t)
			srv, cli, cliOut, _ := startPartial(t, ctx, a)
			if err := srv.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			srv.wait()
			exited := make(chan error, 1)
			go func() { exited <- cli.Wait() }()
			select {
			case err := <-exited:
				out := cliOut.String()
				if err == nil || !strings.HasPrefix(out, "rdmacat: sending to "+a+": ") || !strings.Contains(out, tc.want) {
					t.Errorf("client of a server stopped by %s: %v: %q; want a failure: %s", unix.SignalName(tc.sig), err, out, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("client of a server stopped by %s, its input idle: still running after 10s: %q", unix.SignalName(tc.sig), cliOut.String())
				cli.Process.Kill()
				<-exited
			}
		})
	}
}

// -m out of its range (1 KiB to 64 MiB), 0 included, which rdmamsg took
// for its own default (4096), and 1, which it took and crawled with, is
// a usage error, as a -m that is not a number is: exit status 2, the
// reason and the usage, before anything is set up. One in range is
// taken. The 15 commands run side by side (t.Parallel): none of them
// gets as far as a device.
func TestRdmacatBadSize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	for _, c := range []struct{ m, want string }{
		{"0", `invalid value "0" for flag -m: want 1024 to 67108864 bytes`},
		{"1", `invalid value "1" for flag -m: want 1024 to 67108864 bytes`},
		{"1023", `invalid value "1023" for flag -m: want 1024 to 67108864 bytes`},
		{"-5", `invalid value "-5" for flag -m: want 1024 to 67108864 bytes`},
		{"67108865", `invalid value "67108865" for flag -m: want 1024 to 67108864 bytes`},
		{"64k", `invalid value "64k" for flag -m: not a whole number of bytes`},
	} {
		for _, args := range [][]string{{"-m", c.m, "127.0.0.1:1"}, {"-l", "127.0.0.1:1", "-m", c.m}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				cmd := rdmatest.Command(ctx, args...)
				out, _ := cmd.CombinedOutput()
				if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.HasPrefix(string(out), c.want+"\n") ||
					!strings.Contains(string(out), "largest message this side receives") {
					t.Errorf("rdmacat %q: exit status %d, %q; want 2 and %q, then the usage", args, code, out, c.want)
				}
			})
		}
	}
	// In range, -m is taken, and the command goes on to fail otherwise:
	// no server there.
	for _, m := range []string{"1024", "0x10000", "67108864"} {
		t.Run("-m "+m+" 127.0.0.1:1", func(t *testing.T) {
			t.Parallel()
			cmd := rdmatest.Command(ctx, "-m", m, "127.0.0.1:1")
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 1 || strings.Contains(string(out), "-m") {
				t.Errorf("rdmacat -m %s to no server: exit status %d, %q; want 1, not about -m", m, code, out)
			}
		})
	}
}

// A -tcp server takes the connections that come at once: one that says
// nothing does not hold up the client behind it, and one that is not an
// rdmacat client's (here an HTTP request) is reported on standard error
// while the server waits on, and then serves the client. The old server
// ran one handshake, without a time limit, on the first connection
// alone: the silent one held it and the client forever, and the junk one
// ended it.
func TestRdmacatTCPStrayPeers(t *testing.T) {
	a := addr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := startServer(t, ctx, a, "-tcp")
	silent, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	junk, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer junk.Close()
	if _, err := junk.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// The server closes the junk connection once it has read the
	// request's first bytes (a reset, with the rest unread); the client
	// starts after that.
	junk.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, junk); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the junk connection, 10 s on: %v; want it closed by the server", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	cli := rdmatest.Command(cctx, "-tcp", a)
	cli.Stdin = strings.NewReader("hello")
	start := time.Now()
	out, err := cli.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sent 5 bytes to "+a) {
		srv.cmd.Process.Kill()
		msg, _ := srv.wait()
		t.Fatalf("client beside a silent and a junk connection: %v after %v: %q\nserver: %s", err, time.Since(start), out, msg)
	}
	msg, err := srv.wait()
	if err != nil || srv.stdout.String() != "hello" {
		t.Fatalf("server: %v, wrote %q: %s", err, srv.stdout.String(), msg)
	}
	if !strings.Contains(msg, "not an rdmamsg peer") || !strings.Contains(msg, "; still listening\n") || !strings.Contains(msg, "received 5 bytes from ") {
		t.Errorf("server's standard error %q: want the junk connection reported, and the stream", msg)
	}
	t.Logf("server:\n%s", msg)
}

// A -tcp client whose server takes the TCP connection and then says
// nothing gives up after rdmamsg's Config.HandshakeTimeout (10 s),
// saying so, where it waited forever.
func TestRdmacatTCPSilentServer(t *testing.T) {
	t.Parallel()
	a := addr(t)
	ln, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	tcpClientGivesUp(t, a, "Config.HandshakeTimeout", "a silent server")
}
