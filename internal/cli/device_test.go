//go:build linux && cgo

package cli

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// These tests run the real commands on the test device (rdmatest.Device):
// in CI, rxe0 in the soft-RoCE VM.

func realFactory(t *testing.T) (*Factory, *strings.Builder, *strings.Builder) {
	t.Helper()
	var out, errOut strings.Builder
	f := newFactory()
	f.IO = &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	return f, &out, &errOut
}

func TestDevicesOnDevice(t *testing.T) {
	dev := rdmatest.Device(t)
	f, out, errOut := realFactory(t)
	if code := run(context.Background(), f, []string{"devices", "-d", dev.Name}); code != 0 {
		t.Fatalf("gorperf devices -d %s: exit status %d\n%s%s", dev.Name, code, out, errOut)
	}
	t.Logf("gorperf devices -d %s:\n%s", dev.Name, out)
	s := out.String()
	for _, want := range []string{dev.Name, "ACTIVE"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if ip := os.Getenv("RXE_IP"); ip != "" {
		// The default GID: "* <index>  ::ffff:<ip>  RoCE v2  <netdev>  <ip>".
		re := regexp.MustCompile(`\* \d+\s+::ffff:` + regexp.QuoteMeta(ip) + `\s+RoCE v2\s+\S+\s+` + regexp.QuoteMeta(ip) + `\n`)
		if !re.MatchString(s) {
			t.Errorf("output lacks the RoCE v2 GID of %s marked as default", ip)
		}
	}

	f, out, errOut = realFactory(t)
	if code := run(context.Background(), f, []string{"devices", "--json"}); code != 0 {
		t.Fatalf("gorperf devices --json: exit status %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out.String(), `"schema_version": 1`) || !strings.Contains(out.String(), `"name": "`+dev.Name+`"`) {
		t.Errorf("JSON lacks schema_version or %s:\n%s", dev.Name, out)
	}
}

func TestDevicesUnknownOnDevice(t *testing.T) {
	dev := rdmatest.Device(t)
	f, out, errOut := realFactory(t)
	code := run(context.Background(), f, []string{"devices", "-d", "nosuchdev0"})
	if code != 1 || !strings.Contains(errOut.String(), `no RDMA device named "nosuchdev0"`) || !strings.Contains(errOut.String(), dev.Name) {
		t.Errorf("exit status %d, stderr:\n%s%s", code, errOut, out)
	}
}

func TestDoctorOnDevice(t *testing.T) {
	dev := rdmatest.Device(t)
	f, out, errOut := realFactory(t)
	code := run(context.Background(), f, []string{"doctor", "-d", dev.Name, "-i", "1"})
	t.Logf("gorperf doctor -d %s:\n%s%s", dev.Name, out, errOut)
	if code != 0 || strings.Contains(out.String(), "[FAIL]") {
		t.Errorf("doctor: exit status %d, want 0 with no failures", code)
	}
	s := out.String()
	for _, want := range []string{"[ ok ] RDMA devices: " + dev.Name, "state ACTIVE", "RoCE v2 GID index"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if ip := os.Getenv("RXE_IP"); ip != "" && !strings.Contains(s, "("+ip+" on ") {
		t.Errorf("output lacks the chosen GID's IP %s", ip)
	}
	if os.Getenv("RXE_VM") != "" && !strings.Contains(s, "[ ok ] "+dev.Name+" names no NUMA node") {
		t.Errorf("output lacks rxe's NUMA finding (it has no node)")
	}
}

// TestMaxGIDIndex: devices' maxGIDIndex, which it cannot import, is
// ibverbs.MaxGIDIndex.
func TestMaxGIDIndex(t *testing.T) {
	if maxGIDIndex != ibverbs.MaxGIDIndex {
		t.Errorf("maxGIDIndex %d, ibverbs.MaxGIDIndex %d", maxGIDIndex, ibverbs.MaxGIDIndex)
	}
}
