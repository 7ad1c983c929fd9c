//go:build linux && cgo

package rdmatest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// ender is a testing.TB that records how a test ended, Skip or Fatal
// (both end the goroutine, as testing's do), named name.
type ender struct {
	testing.TB
	name        string
	how, reason string
}

func (e *ender) Helper()      {}
func (e *ender) Name() string { return e.name }
func (e *ender) end(how string, args ...any) {
	e.how, e.reason = how, fmt.Sprint(args...)
	runtime.Goexit()
}
func (e *ender) Skip(args ...any)                 { e.end("skip", args...) }
func (e *ender) Skipf(format string, args ...any) { e.end("skip", fmt.Sprintf(format, args...)) }
func (e *ender) Fatal(args ...any)                { e.end("fail", args...) }
func (e *ender) Fatalf(format string, args ...any) {
	e.end("fail", fmt.Sprintf(format, args...))
}

// ends runs f with an ender and says how it ended ("" where it returned).
func ends(name string, f func(t testing.TB)) (how, reason string) {
	e := &ender{name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(e)
	}()
	<-done
	return e.how, e.reason
}

// TestSkipIfUnsupported: an unsupported verb skips the test, but with
// GORPERF_REQUIRE_DEVICE=1 fails it unless GORPERF_ALLOW_UNSUPPORTED lists
// the verb or the test; another error fails it; no error goes on.
func TestSkipIfUnsupported(t *testing.T) {
	unsupported := fmt.Errorf("alloc MW: %w", os.NewSyscallError("ibv_alloc_mw", syscall.EOPNOTSUPP))
	for _, c := range []struct {
		name, required, allow string
		err                   error
		how, reason           string
	}{
		{"no error", "1", "", nil, "", ""},
		{"unsupported", "", "", unsupported, "skip", "not supported by this device"},
		{"unsupported, required", "1", "", unsupported, "fail", "GORPERF_ALLOW_UNSUPPORTED=ibv_alloc_mw lets"},
		{"unsupported, required, allowed", "1", "ibv_create_srq, ibv_alloc_mw", unsupported, "skip", "GORPERF_ALLOW_UNSUPPORTED lists ibv_alloc_mw"},
		{"unsupported, required, the test allowed", "1", "TestMW", unsupported, "skip", "not supported"},
		{"unsupported, required, another allowed", "1", "ibv_create_srq", unsupported, "fail", "ibv_alloc_mw"},
		{"no verb named, required", "1", "", errors.ErrUnsupported, "fail", "GORPERF_ALLOW_UNSUPPORTED=TestMW lets"},
		{"another error", "", "ibv_alloc_mw", os.NewSyscallError("ibv_alloc_mw", syscall.ENOMEM), "fail", "cannot allocate memory"},
	} {
		t.Setenv(RequireEnv, c.required)
		t.Setenv(AllowUnsupportedEnv, c.allow)
		how, reason := ends("TestMW", func(t testing.TB) { SkipIfUnsupported(t, c.err) })
		if how != c.how || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, how, reason, c.how, c.reason)
		}
	}
}

// TestLacking: what LinkLocalGID does where the device has no link-local
// GID, by GORPERF_REQUIRE_DEVICE and GORPERF_ALLOW_UNSUPPORTED.
func TestLacking(t *testing.T) {
	for _, c := range []struct{ required, allow, how string }{
		{"", "", "skip"}, {"0", "", "skip"}, {"1", "", "fail"}, {"1", "link-local-gid", "skip"}, {"1", "ibv_alloc_mw", "fail"},
	} {
		t.Setenv(RequireEnv, c.required)
		t.Setenv(AllowUnsupportedEnv, c.allow)
		how, reason := ends("TestLinkLocal", func(t testing.TB) {
			Lacking(t, "link-local-gid", "%s port %d has no link-local RoCE v2 GID with a netdev", "rxe0", 1)
		})
		if how != c.how || !strings.Contains(reason, "rxe0 port 1 has no link-local") {
			t.Errorf("%s=%q %s=%q: %s %q, want %s", RequireEnv, c.required, AllowUnsupportedEnv, c.allow, how, reason, c.how)
		}
	}
}

// TestLackingNamed: Lacking, for a reason a test names (ibv_wr_api), skips
// or fails as for link-local-gid, and its failure names the value of
// GORPERF_ALLOW_UNSUPPORTED that lets the test skip.
func TestLackingNamed(t *testing.T) {
	for _, c := range []struct{ required, allow, how, reason string }{
		{"", "", "skip", "rxe0 has no ibv_wr_* API"},
		{"1", "", "fail", "GORPERF_ALLOW_UNSUPPORTED=ibv_wr_api lets the test skip"},
		{"1", "ipv6-gid ibv_wr_api", "skip", "GORPERF_ALLOW_UNSUPPORTED lists ibv_wr_api"},
		{"1", "TestQP/wr_api", "skip", "rxe0 has no ibv_wr_* API"},
		{"1", "link-local-gid", "fail", "rxe0 has no ibv_wr_* API"},
	} {
		t.Setenv(RequireEnv, c.required)
		t.Setenv(AllowUnsupportedEnv, c.allow)
		how, reason := ends("TestQP/wr_api", func(t testing.TB) {
			Lacking(t, "ibv_wr_api", "%s has no ibv_wr_* API", "rxe0")
		})
		if how != c.how || !strings.Contains(reason, c.reason) {
			t.Errorf("%s=%q %s=%q: %s %q, want %s with %q", RequireEnv, c.required, AllowUnsupportedEnv, c.allow, how, reason, c.how, c.reason)
		}
	}
}
