//go:build linux && cgo

package rdmatest

import (
	"context"
	"os"
	"os/exec"
)

// commandEnv tells a test binary that Command started it, to run as its
// package's command rather than its tests.
const commandEnv = "GORPERF_TEST_AS_COMMAND"

// RunAsCommand lets the tests of a command's package run the command as
// a process of its own, as a user would: called first in TestMain, it runs
// main and exits with its code when Command started the binary, and
// returns otherwise.
func RunAsCommand(main func() int) {
	if os.Getenv(commandEnv) == "1" {
		os.Exit(main())
	}
}

// Command returns a command that runs this test binary as its package's
// command (see RunAsCommand) with args, killed when ctx ends.
func Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), commandEnv+"=1")
	return cmd
}
