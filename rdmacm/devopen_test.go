//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/rdmacm"
)

// deviceOpensEnv, in the environment of this test binary, makes
// TestDeviceOpensOnlyIt call Device on the device it names, in a process
// of its own, and print the devices the process then has open.
const deviceOpensEnv = "GORPERF_RDMACM_DEVICE_OPENS"

// TestDeviceOpensOnlyIt: Device has librdmacm open the device it names
// and no other, where rdma_get_devices opened every device of the host
// for as long as the process lived, and `rdma link delete` of any rxe
// device, even one the process never used, waited for it to exit (rxe
// cannot take a device back from a process). Needs two devices.
func TestDeviceOpensOnlyIt(t *testing.T) {
	if name := os.Getenv(deviceOpensEnv); name != "" {
		if name == wildcardListen {
			l, err := rdmacm.Listen(context.Background(), "0.0.0.0:0", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			t.Logf("OPEN %s.", strings.Join(openDevices(t), ","))
			return
		}
		ctx, err := rdmacm.Device(name)
		switch {
		case name == noSuchDevice:
			if !errors.Is(err, syscall.ENODEV) {
				t.Fatalf("Device(%q) = %v, %v; want an error matching ENODEV", name, ctx, err)
			}
		case err != nil:
			t.Fatal(err)
		case ctx.Name() != name:
			t.Fatalf("Device(%q) returned %s", name, ctx.Name())
		}
		t.Logf("OPEN %s.", strings.Join(openDevices(t), ","))
		return
	}
	dev := rdmatest.Device(t)
	infos, err := ibverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) < 2 {
		t.Skipf("needs a second device besides %s (have %d)", dev.Name, len(infos))
	}
	if got := devicesOpenAfter(t, dev.Name); !slices.Equal(got, []string{dev.Name}) {
		t.Errorf("after Device(%q) the process has %q open, want only %s", dev.Name, got, dev.Name)
	}
	// An unknown name is refused before librdmacm opens anything: it
	// fell back to rdma_get_devices, which opened every device first.
	if got := devicesOpenAfter(t, noSuchDevice); len(got) != 0 {
		t.Errorf("after Device(%q) the process has %q open, want none", noSuchDevice, got)
	}
	// A listener on a wildcard address, on no device yet, opens none:
	// the check of its (empty) private data against the devices' limits
	// listed them all (rdma_get_devices), on every Listen of gorperf
	// serve over InfiniBand, where it listens on the wildcard.
	if got := devicesOpenAfter(t, wildcardListen); len(got) != 0 {
		t.Errorf("after a wildcard Listen the process has %q open, want none", got)
	}
}

// wildcardListen, for devicesOpenAfter, has the process Listen on
// 0.0.0.0 instead of calling Device.
const wildcardListen = "listen-on-0.0.0.0"

// noSuchDevice is a device name no host has.
const noSuchDevice = "gorperf-no-such-device"

// devicesOpenAfter runs TestDeviceOpensOnlyIt in a process of its own,
// which calls Device(name) (or Listens: wildcardListen), and returns the devices it then had open.
func devicesOpenAfter(t *testing.T, name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDeviceOpensOnlyIt$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), deviceOpensEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Device(%q): %v\n%s", name, err, out)
	}
	_, list, ok := strings.Cut(string(out), "OPEN ")
	if !ok {
		t.Fatalf("Device(%q): no list of open devices:\n%s", name, out)
	}
	list, _, _ = strings.Cut(list, ".\n")
	if list = strings.TrimSpace(list); list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// openDevices lists the RDMA devices whose uverbs files this process has
// open, sorted.
func openDevices(t *testing.T) []string {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.HasPrefix(target, "/dev/infiniband/uverbs") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/class/infiniband_verbs", filepath.Base(target), "ibdev"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.TrimSpace(string(b)); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
