//go:build linux && cgo

package ibverbs_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestDeviceIndex checks DeviceInfo.Index against the index by which the
// rdma tool, over RDMA netlink, prints each device ("1: rxe0: node_type
// ..."), and that no two devices share one.
func TestDeviceIndex(t *testing.T) {
	info := rdmatest.Device(t)
	devs, err := ibverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("rdma", "dev", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma dev show: %v: %s", err, out)
	}
	want := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") || !strings.HasSuffix(f[1], ":") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil {
			continue
		}
		want[strings.TrimSuffix(f[1], ":")] = n
	}
	seen := map[int]string{}
	found := false
	for _, d := range devs {
		w, ok := want[d.Name]
		if !ok {
			t.Errorf("%s: not in rdma dev show's output:\n%s", d.Name, out)
			continue
		}
		if d.Index != w {
			t.Errorf("%s: Index %d, rdma dev show says %d", d.Name, d.Index, w)
		}
		if o, dup := seen[d.Index]; dup {
			t.Errorf("%s and %s share index %d", o, d.Name, d.Index)
		}
		seen[d.Index] = d.Name
		found = found || d.Name == info.Name
		t.Logf("%s: index %d", d.Name, d.Index)
	}
	if !found {
		t.Errorf("the test device %s is not in Devices", info.Name)
	}
}
