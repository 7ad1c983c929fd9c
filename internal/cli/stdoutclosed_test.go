//go:build linux && cgo

package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/internal/rdmatest"
)

// gorperf started with its standard output closed (gorperf ... >&-)
// fails, exit status 1, and says that its output could not be written,
// as it does to /dev/full, where Go's runtime had put /dev/null in its
// place and the output was lost with exit status 0. Output to /dev/null
// that the shell opened is still a success. No device is needed: the
// version and help are output as a report is.
func TestStdoutClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{{"--version"}, {"help", "write-bw"}} {
		for _, redirect := range []string{">&-", ">/dev/null"} {
			self := rdmatest.Command(ctx, args...)
			cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec "$@" ` + redirect, "sh", self.Path}, args...)...)
			cmd.Env = self.Env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if redirect == ">/dev/null" {
				if err != nil || stderr.Len() != 0 {
					t.Errorf("gorperf %q %s: %v, stderr %q; want exit status 0 and nothing on stderr", args, redirect, err, stderr.String())
				}
				continue
			}
			if code != exitError || !strings.Contains(stderr.String(), "gorperf: ") ||
				!strings.Contains(stderr.String(), "standard output was closed at start (>&-): bad file descriptor") {
				t.Errorf("gorperf %q %s: exit status %d, stderr %q; want %d and the closed output named", args, redirect, code, stderr.String(), exitError)
			}
		}
	}
}

// A command that fails, and whose output fails too, keeps its error and
// exit status and says that its output was lost: here devices --json's
// error document, to a full disk, which went unsaid.
func TestOutputLostOnFailure(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	f, _, errOut := newTestFactory(nil, errors.New("no devices here"))
	f.IO.Out = full
	code := run(context.Background(), f, []string{"devices", "--json"})
	if got := errOut.String(); code != exitError || !strings.Contains(got, "gorperf: no devices here\n") ||
		!strings.Contains(got, "gorperf: writing the output: write /dev/full: no space left on device\n") {
		t.Errorf("devices --json, failing, to /dev/full: exit status %d, stderr %q; want %d, the error and the lost output", code, got, exitError)
	}
}
