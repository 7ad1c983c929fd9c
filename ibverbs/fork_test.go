//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

func TestForkStatusString(t *testing.T) {
	for s, want := range map[ibverbs.ForkStatus]string{ibverbs.ForkDisabled: "DISABLED",
		ibverbs.ForkEnabled: "ENABLED", ibverbs.ForkUnneeded: "UNNEEDED", 7: "ForkStatus(7)"} {
		if s.String() != want {
			t.Errorf("ForkStatus %d: %q, want %q", int32(s), s, want)
		}
	}
}

// forkChildEnv makes TestForkInitFresh, in a test binary that
// TestForkState starts, call ForkInit in a process that has registered
// nothing.
const forkChildEnv = "GORPERF_TEST_FORK_INIT_CHILD"

// TestForkInitFresh is TestForkState's child: it does nothing unless
// forkChildEnv is set.
func TestForkInitFresh(t *testing.T) {
	if os.Getenv(forkChildEnv) != "1" {
		return
	}
	before := ibverbs.ForkState()
	err := ibverbs.ForkInit()
	fmt.Printf("forkinit: %v %v %v\n", before, err, ibverbs.ForkState())
}

// TestForkState asks libibverbs whether fork needs ibv_fork_init on the
// device's kernel: from Linux 5.13, which copies registered pages into a
// child, it is unneeded. A process that has registered nothing may call
// ForkInit, which succeeds and leaves the state as it was; once memory is
// registered ForkInit fails with EINVAL (rdma-core 44) or does nothing (a
// library that checks the kernel first), and the state stays too.
func TestForkState(t *testing.T) {
	info := rdmatest.Device(t) // the RDMA modules, whose netlink answers, loaded
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release[:], err)
	}
	want := ibverbs.ForkUnneeded
	if major < 5 || major == 5 && minor < 13 {
		want = ibverbs.ForkDisabled
	}
	for _, k := range []string{"RDMAV_FORK_SAFE", "IBV_FORK_SAFE"} {
		if _, ok := os.LookupEnv(k); ok && want == ibverbs.ForkDisabled {
			want = ibverbs.ForkEnabled
		}
	}

	// A fresh process: nothing registered yet.
	cmd := exec.Command(os.Args[0], "-test.run=^TestForkInitFresh$", "-test.count=1")
	cmd.Env = append(os.Environ(), forkChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "forkinit: ") {
			line = l
		}
	}
	wantInit := ibverbs.ForkEnabled
	if want == ibverbs.ForkUnneeded {
		wantInit = want
	}
	if exp := fmt.Sprintf("forkinit: %v <nil> %v", want, wantInit); line != exp {
		t.Errorf("Linux %d.%d, a process that registered nothing: %q, want %q (ForkState, ForkInit's error, ForkState)\n%s",
			major, minor, line, exp, out)
	}

	// This process, once it has registered memory.
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, ctx)
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, pd)
	buf, err := ibverbs.NewBuffer(4096, ibverbs.BufferOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, buf)
	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, mr)
	if st := ibverbs.ForkState(); st != want {
		t.Fatalf("ForkState on Linux %d.%d: %v, want %v", major, minor, st, want)
	}
	err = ibverbs.ForkInit()
	t.Logf("Linux %d.%d: ForkState %v; ForkInit after a registration: %v", major, minor, want, err)
	if err != nil && (!errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "ibv_fork_init")) {
		t.Errorf("ForkInit after a registration: %v, want nil or an ibv_fork_init EINVAL", err)
	}
	if err == nil && want == ibverbs.ForkDisabled {
		t.Errorf("ForkInit after a registration succeeded on Linux %d.%d, where libibverbs needs it first", major, minor)
	}
	if st := ibverbs.ForkState(); st != want {
		t.Errorf("ForkState after ForkInit: %v, want %v", st, want)
	}
}
