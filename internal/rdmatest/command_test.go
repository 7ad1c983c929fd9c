//go:build linux && cgo

package rdmatest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	RunAsCommand(helperMain)
	os.Exit(m.Run())
}

// helperMain is this package's "command", which its tests start (Start):
// "chatter" prints a line and then writes to stderr until killed; "hold
// DEV" holds RDMA objects of DEV until its standard input closes.
func helperMain() int {
	switch os.Args[1] {
	case "chatter":
		fmt.Println("ready")
		for i := 0; ; i++ {
			fmt.Fprintf(os.Stderr, "line %d\n", i)
			time.Sleep(100 * time.Microsecond)
		}
	case "hold":
		return hold(os.Args[2])
	}
	return 2
}

// TestStartStderr reads a started process's stderr while it writes (a data
// race under -race where the two share a plain strings.Builder), and
// checks that once the test ends the process has been killed and waited
// for, not left a zombie.
func TestStartStderr(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var srv Started
	t.Run("chatter", func(t *testing.T) {
		srv = Start(t, ctx, "chatter")
		if srv.Lines.Text() != "ready" {
			t.Fatalf("first line %q", srv.Lines.Text())
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(srv.Stderr.String(), "line 100\n") {
			if time.Now().After(deadline) {
				t.Fatalf("no 100 lines on stderr in 10 s: %q", srv.Stderr.String())
			}
			time.Sleep(time.Millisecond)
		}
	})
	if srv.Cmd == nil {
		t.FailNow()
	}
	if srv.Cmd.ProcessState == nil {
		t.Error("the process was not waited for when its test ended")
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", srv.Cmd.Process.Pid))
	if err == nil {
		t.Errorf("the process is still there when its test has ended: %s", stat)
	}
}

// TestRequired: GORPERF_REQUIRE_DEVICE takes what strconv.ParseBool takes;
// another value panics rather than meaning "not required".
func TestRequired(t *testing.T) {
	for _, c := range []struct {
		in        string
		want, bad bool
	}{
		{"", false, false}, {"1", true, false}, {"true", true, false}, {"0", false, false}, {"false", false, false},
		{"yes", false, true}, {"on", false, true}, {"required", false, true},
	} {
		t.Setenv(RequireEnv, c.in)
		got, bad := func() (v, panicked bool) {
			defer func() {
				if r := recover(); r != nil {
					panicked = true
					if !strings.Contains(fmt.Sprint(r), RequireEnv+"=") {
						t.Errorf("%q: panic %q does not name %s", c.in, r, RequireEnv)
					}
				}
			}()
			return Required(), false
		}()
		if got != c.want || bad != c.bad {
			t.Errorf("%s=%q: Required() = %v, panicked %v; want %v, %v", RequireEnv, c.in, got, bad, c.want, c.bad)
		}
	}
}
