//go:build linux && cgo

package bench

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestSetUpQueriesDeviceOnce: each of set-up's openings of the device
// (checkSpec, LocalMTU, a test's session) queries its attributes once,
// in openPort, which keeps them for capNetdevMTU and its callers;
// capNetdevMTU queried the device for its vendor, then checkSpec and
// openSession queried it again. Only bench's own queries count here:
// ibverbs' own (a Context's read and atomic limits, once per Context)
// are not bench's to keep.
func TestSetUpQueriesDeviceOnce(t *testing.T) {
	info := rdmatest.Device(t)
	l := Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 256, Iterations: 10, NumQPs: 1, TXDepth: 1, RXDepth: 1}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	n := 0
	restoreAtEnd(t, &queryDevice)
	query := queryDevice
	queryDevice = func(c *ibverbs.Context) (ibverbs.DeviceAttr, error) {
		n++
		return query(c)
	}
	for _, step := range []struct {
		name string
		f    func() error
	}{
		{"checkSpec", func() error { return checkSpec(spec, l) }},
		{"LocalMTU", func() error { _, err := LocalMTU(l); return err }},
		{"openSession", func() error {
			s, err := openSession(spec, l)
			if err == nil {
				s.close()
			}
			return err
		}},
	} {
		n = 0
		if err := step.f(); err != nil {
			rdmatest.SkipIfUnsupported(t, err)
			t.Fatalf("%s: %v", step.name, err)
		}
		if n != 1 {
			t.Errorf("%s queried %s %d times, want once", step.name, info.Name, n)
		}
	}
}

// TestQueryDeviceFails: where the device's attributes cannot be read,
// each opening of it fails with the device's name and the verb's, the
// errno kept; LocalMTU's path (Check, a client's FitMTU) took the port's
// MTU without the vendor's count of the netdev's headers, and went on.
func TestQueryDeviceFails(t *testing.T) {
	info := rdmatest.Device(t)
	l := Local{Device: info.Name, Port: info.Port, GIDIndex: -1}
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 256, Iterations: 10, NumQPs: 1, TXDepth: 1, RXDepth: 1}
	restoreAtEnd(t, &queryDevice)
	queryDevice = func(*ibverbs.Context) (ibverbs.DeviceAttr, error) {
		return ibverbs.DeviceAttr{}, os.NewSyscallError("ibv_query_device_ex", syscall.EIO)
	}
	want := info.Name + ": ibv_query_device_ex: "
	for name, f := range map[string]func() error{
		"checkSpec": func() error { return checkSpec(spec, l) },
		"LocalMTU":  func() error { _, err := LocalMTU(l); return err },
		"Check":     func() error { return Check(l) },
		"openSession": func() error {
			s, err := openSession(spec, l)
			if err == nil {
				s.close()
			}
			return err
		},
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, syscall.EIO) {
			t.Errorf("%s with the device's attributes unread: %v, want an error with %q, of EIO", name, err, want)
		}
	}
}
