//go:build linux && cgo

package rdmatest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// CommandEnv, in a test binary's environment, makes it run as its
// package's command rather than its tests (see RunAsCommand): Command sets
// it, and so must a test that starts the binary through another program
// (setpriv, script).
const CommandEnv = "GORPERF_TEST_AS_COMMAND=1"

// RunAsCommand lets the tests of a command's package run the command as
// a process of its own, as a user would: called first in TestMain, it runs
// main and exits with its code when Command started the binary, and
// returns otherwise.
func RunAsCommand(main func() int) {
	if k, v, _ := strings.Cut(CommandEnv, "="); os.Getenv(k) == v {
		os.Exit(main())
	}
}

// Command returns a command that runs this test binary as its package's
// command (see RunAsCommand) with args, killed when ctx ends.
func Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), CommandEnv)
	return cmd
}

// Started is a command that Start started: its standard output's lines,
// the first already read (Lines.Text), and its standard error so far.
type Started struct {
	Cmd    *exec.Cmd
	Lines  *bufio.Scanner
	Stderr *Output
}

// Output keeps what a process writes, for a test to read at any time,
// also while the process still runs and writes.
type Output struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns what was written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// waitDelay bounds how long the cleanup of a Start waits, after killing
// the process, for its standard error to close (a child of its own may
// hold it open).
const waitDelay = 5 * time.Second

// Start starts this test binary as its package's command with args, as
// Command does, and waits for the first line it prints, failing t if it
// prints none. When t ends, the process is killed if it still runs and
// waited for, unless the test waited for it (Cmd.Wait) itself.
func Start(t testing.TB, ctx context.Context, args ...string) Started {
	t.Helper()
	s := Started{Cmd: Command(ctx, args...), Stderr: new(Output)}
	out, err := s.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.Cmd.Stderr = s.Stderr
	s.Cmd.WaitDelay = waitDelay
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.Cmd.ProcessState != nil { // the test waited for it
			return
		}
		s.Cmd.Process.Kill()
		s.Cmd.Wait()
	})
	s.Lines = bufio.NewScanner(out)
	if !s.Lines.Scan() {
		t.Fatalf("%v printed nothing: %v; stderr: %s", args, s.Lines.Err(), s.Stderr.String())
	}
	return s
}
