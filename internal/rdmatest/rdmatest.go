//go:build linux && cgo

// Package rdmatest finds the RDMA device that device tests run on.
//
// A device test calls Device or Open first. Without a usable device the
// test is skipped, unless GORPERF_REQUIRE_DEVICE=1 is set (as CI does), when
// it fails: in CI no device test may silently not run. GORPERF_TEST_DEVICE
// names the device to use; if it names one that is missing, the test fails.
//
// A test of what a device may lack (SkipIfUnsupported, LinkLocalGID,
// Lacking) skips where it lacks it, but with GORPERF_REQUIRE_DEVICE=1 it
// fails unless GORPERF_ALLOW_UNSUPPORTED lists what is missing (the
// failure names it): GORPERF_ALLOW_UNSUPPORTED=ibv_alloc_mw,link-local-gid
// lets the tests of memory windows and of a link-local GID skip on a
// device without them.
package rdmatest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/gorperf/gorperf/ibverbs"
)

// Info names the device and port under test.
type Info struct {
	Name string
	Port int
}

// Required reports whether GORPERF_REQUIRE_DEVICE asks for device tests to
// fail rather than skip. It is unset, or a value strconv.ParseBool takes
// (1, 0, true, false, ...); any other value (yes, on) panics, failing the
// test binary, rather than quietly letting device tests skip.
func Required() bool {
	v, err := parseRequired(os.Getenv(RequireEnv))
	if err != nil {
		panic(err)
	}
	return v
}

// RequireEnv names the variable that Required reads.
const RequireEnv = "GORPERF_REQUIRE_DEVICE"

func parseRequired(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%s=%q: not a boolean; set it to 1 (device tests fail without a device) or 0", RequireEnv, s)
	}
	return v, nil
}

// unavailable skips the test, or fails it when a device is required.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("GORPERF_REQUIRE_DEVICE=1 but "+format, args...)
	}
	t.Skipf("no RDMA device: "+format, args...)
}

// Device returns the device to test on: GORPERF_TEST_DEVICE, else the
// first device with an active port.
func Device(t testing.TB) Info {
	t.Helper()
	devs, err := ibverbs.Devices()
	if err != nil {
		unavailable(t, "listing devices: %v", err)
	}
	want := os.Getenv("GORPERF_TEST_DEVICE")
	for _, d := range devs {
		if want != "" && d.Name != want {
			continue
		}
		port, err := activePort(d.Name)
		if err != nil {
			if want != "" {
				t.Fatalf("GORPERF_TEST_DEVICE=%s: %v", want, err)
			}
			continue
		}
		return Info{Name: d.Name, Port: port}
	}
	if want != "" {
		t.Fatalf("GORPERF_TEST_DEVICE=%s: no such device (have %d devices)", want, len(devs))
	}
	unavailable(t, "no device with an active port among %d devices", len(devs))
	return Info{}
}

func activePort(name string) (int, error) {
	ctx, err := ibverbs.Open(name)
	if err != nil {
		return 0, err
	}
	defer ctx.Close()
	da, err := ctx.QueryDevice()
	if err != nil {
		return 0, err
	}
	for p := 1; p <= da.PhysPortCnt; p++ {
		pa, err := ctx.QueryPort(p)
		if err == nil && pa.State == ibverbs.PortActive {
			return p, nil
		}
	}
	return 0, errors.New("no active port")
}

// Open opens the test device and closes it when the test ends.
func Open(t testing.TB) (*ibverbs.Context, Info) {
	t.Helper()
	info := Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatalf("open %s: %v", info.Name, err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Errorf("closing %s: %v", info.Name, err)
		}
	})
	return ctx, info
}

// GIDIndex returns the index of the port's RoCE v2 GID that SelectGID
// picks with the default rule, for tests that need one.
func GIDIndex(t testing.TB, ctx *ibverbs.Context, port int) int {
	t.Helper()
	pa, err := ctx.QueryPort(port)
	if err != nil {
		t.Fatal(err)
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		return 0
	}
	ch, err := ctx.SelectGID(port, ibverbs.GIDRule{})
	if err != nil {
		t.Fatal(err)
	}
	return ch.Entry.Index
}

// SkipIfUnsupported skips the test when err says the device does not
// support what it tried (errors.ErrUnsupported); any other error fails it.
// With GORPERF_REQUIRE_DEVICE=1 an unsupported verb fails it too, unless
// GORPERF_ALLOW_UNSUPPORTED lists the verb (the failed call's name, from
// its *os.SyscallError: ibv_alloc_mw) or the test's name.
func SkipIfUnsupported(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
	what := t.Name()
	if se := (*os.SyscallError)(nil); errors.As(err, &se) {
		what = se.Syscall
	}
	Lacking(t, what, "not supported by this device: %v", err)
}

// AllowUnsupportedEnv names the variable that lists, by commas or spaces,
// what the device under test may lack with GORPERF_REQUIRE_DEVICE=1 (see
// the package's doc).
const AllowUnsupportedEnv = "GORPERF_ALLOW_UNSUPPORTED"

// Lacking skips the test, which needs what the device under test lacks;
// with GORPERF_REQUIRE_DEVICE=1 it fails it, unless GORPERF_ALLOW_UNSUPPORTED
// lists what, or the test's name. what is the name by which the
// documentation (docs/testing-on-soft-roce.md) and the failure call it:
// besides a verb's (SkipIfUnsupported) and link-local-gid (LinkLocalGID),
// ibv_wr_api (a QP that posts through the ibv_wr_* calls), ipv4-gid and
// ipv6-gid (a RoCE v2 GID of that family) and send_rnr_err (the hardware
// counter of the RNR NAKs a port sent). format and args say what is
// missing, for the skip's message and the failure's.
func Lacking(t testing.TB, what, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if !Required() {
		t.Skip(msg)
	}
	allowed := strings.FieldsFunc(os.Getenv(AllowUnsupportedEnv), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if slices.Contains(allowed, what) || slices.Contains(allowed, t.Name()) {
		t.Skipf("%s (%s lists %s)", msg, AllowUnsupportedEnv, what)
	}
	t.Fatalf("GORPERF_REQUIRE_DEVICE=1 but %s; where the device under test lacks it, %s=%s lets the test skip",
		msg, AllowUnsupportedEnv, what)
}

// Panic runs f and returns what it panicked with, nil where it returned:
// for the tests of a call that must panic, with what message.
func Panic(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
