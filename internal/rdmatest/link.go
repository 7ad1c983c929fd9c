//go:build linux && cgo

package rdmatest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// LinkUp brings the rxe VM's netdev nd, which a test took down, back up
// with what going down removed: the VM's routes between its two devices'
// addresses (ci/rxe-vm/guest.sh's tables 101 and 102, which send traffic
// between them over the veth pair rather than locally). It then waits
// for each of devs' port 1 to be ACTIVE again, for 10 s, and fails the
// test for one that is not.
func LinkUp(t testing.TB, nd string, devs ...string) {
	t.Helper()
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("link", "set", nd, "up")
	time.Sleep(500 * time.Millisecond)
	ip1, ip2 := os.Getenv("RXE_IP"), os.Getenv("RXE_IP2")
	nd1, nd2 := os.Getenv("RXE_NETDEV"), os.Getenv("RXE_NETDEV2")
	if ip1 != "" && ip2 != "" && nd1 != "" && nd2 != "" {
		ip("route", "replace", ip1, "dev", nd2, "src", ip2, "table", "101")
		ip("route", "replace", ip2, "dev", nd1, "src", ip1, "table", "102")
	}
	for _, dev := range devs {
		ok := false
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !ok; time.Sleep(100 * time.Millisecond) {
			b, _ := os.ReadFile("/sys/class/infiniband/" + dev + "/ports/1/state")
			ok = strings.Contains(string(b), "ACTIVE")
		}
		if !ok {
			t.Errorf("%s's port not ACTIVE 10 s after its link came back", dev)
		}
	}
}
