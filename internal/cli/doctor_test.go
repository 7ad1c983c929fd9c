package cli

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeFS writes files under a temporary root: path -> content.
func fakeFS(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func wantFinding(t *testing.T, f finding, lvl level, msg string) {
	t.Helper()
	if f.Level != lvl || !strings.Contains(f.Msg, msg) {
		t.Errorf("got %s %q, want %s containing %q", f.Level.tag(), f.Msg, lvl.tag(), msg)
	}
	if lvl != levelOK && f.Fix == "" && f.Level == lvl {
		t.Errorf("%s %q has no fix", f.Level.tag(), f.Msg)
	}
}

func TestCheckMemlock(t *testing.T) {
	for _, tc := range []struct {
		cur uint64
		err error
		lvl level
		msg string
	}{
		{rlimitInfinity, nil, levelOK, "unlimited"},
		{64 * mib, nil, levelOK, "64 MiB"},
		{8 * mib, nil, levelWarn, "8 MiB"},
		{64 * 1024, nil, levelWarn, "64 KiB"},
		{0, errors.New("nope"), levelWarn, "nope"},
	} {
		f := checkMemlock(tc.cur, tc.err, false)
		wantFinding(t, f, tc.lvl, tc.msg)
		if tc.lvl == levelWarn && (!strings.Contains(f.Fix, "ulimit -l unlimited") || !strings.Contains(f.Fix, "--ulimit memlock=-1") || !strings.Contains(f.Fix, "--cap-add IPC_LOCK")) {
			t.Errorf("fix %q", f.Fix)
		}
	}
}

// TestCheckMemlockCapability: a process whose effective capabilities
// (CapEff in /proc/self/status) hold CAP_IPC_LOCK, bit 14, as root's do,
// registers memory past the locked-memory limit: a small limit is then
// no warning, and doctor says why. It warned of ENOMEM that root never
// gets.
func TestCheckMemlockCapability(t *testing.T) {
	status := func(capEff string) string {
		return "Name:\tgorperf\nUmask:\t0022\nCapInh:\t0000000000000000\nCapPrm:\t" + capEff + "\nCapEff:\t" + capEff + "\nCapBnd:\t000001ffffffffff\n"
	}
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{status("000001ffffffffff"), true},  // root
		{status("0000000000004000"), true},  // CAP_IPC_LOCK alone (--cap-add IPC_LOCK)
		{status("0000000000003fff"), false}, // the bits below it
		{status("0000000000000000"), false}, // a user
		{"Name:\tgorperf\n", false},         // no CapEff
		{"", false},
	} {
		root := fakeFS(t, map[string]string{"proc/self/status": tc.status})
		if got := hasIPCLock(root); got != tc.want {
			t.Errorf("hasIPCLock(%q) = %v, want %v", tc.status, got, tc.want)
		}
	}
	if hasIPCLock(t.TempDir()) {
		t.Errorf("hasIPCLock with no status file = true")
	}
	// In a user namespace of its own the capability is not the initial
	// namespace's, which the kernel asks for.
	for _, tc := range []struct {
		uidMap string
		want   bool
	}{
		{"         0          0 4294967295\n", true},
		{"         0       1000          1\n", false},
		{"         0     100000      65536\n", false},
	} {
		root := fakeFS(t, map[string]string{"proc/self/status": status("000001ffffffffff"), "proc/self/uid_map": tc.uidMap})
		if got := hasIPCLock(root); got != tc.want {
			t.Errorf("hasIPCLock with uid_map %q = %v, want %v", tc.uidMap, got, tc.want)
		}
	}
	wantFinding(t, checkMemlock(64*1024, nil, true), levelOK, "locked-memory limit (ulimit -l) is 64 KiB, but this process has CAP_IPC_LOCK (as root has)")
	wantFinding(t, checkMemlock(0, errors.New("nope"), true), levelOK, "CAP_IPC_LOCK")
	wantFinding(t, checkMemlock(rlimitInfinity, nil, true), levelOK, "is unlimited")
	wantFinding(t, checkMemlock(64*mib, nil, true), levelOK, "is 64 MiB")
	// doctor reads the capability where it reads /proc.
	root := fakeFS(t, map[string]string{"proc/self/status": status("000001ffffffffff")})
	opts := &DoctorOptions{Root: root, Devices: func(string) ([]deviceReport, error) { return nil, nil },
		Access: func(string) error { return nil }, Memlock: func() (uint64, error) { return 64 * 1024, nil }}
	var saw bool
	for _, f := range doctorChecks(opts) {
		if strings.Contains(f.Msg, "locked-memory") {
			saw = true
			wantFinding(t, f, levelOK, "CAP_IPC_LOCK")
		}
	}
	if !saw {
		t.Errorf("doctor made no locked-memory finding")
	}
}

func TestCheckDevices(t *testing.T) {
	wantFinding(t, checkDevices(nil, nil), levelFail, "no RDMA devices found")
	if f := checkDevices(nil, nil); !strings.Contains(f.Fix, "ci/setup-rxe.sh") {
		t.Errorf("fix %q does not mention ci/setup-rxe.sh", f.Fix)
	}
	wantFinding(t, checkDevices(nil, errors.New(`no RDMA device named "x" (devices: rxe0)`)), levelFail, "devices: rxe0")
	wantFinding(t, checkDevices(fakeDevices(), nil), levelOK, "rxe0, mlx5_0")
}

func TestCheckDevFiles(t *testing.T) {
	devs := fakeDevices()[:1]
	sysfs := map[string]string{
		"dev/infiniband/uverbs0":                   "",
		"sys/class/infiniband_verbs/uverbs0/ibdev": "rxe0\n",
		"sys/class/infiniband_verbs/uverbs1/ibdev": "other\n",
		"sys/class/infiniband_verbs/abi_version":   "6\n",
	}
	allow := func(string) error { return nil }
	deny := func(string) error { return &os.PathError{Op: "access", Path: "x", Err: os.ErrPermission} }

	fs := checkDevFiles(fakeFS(t, sysfs), devs, allow)
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	wantFinding(t, fs[0], levelOK, "/dev/infiniband/uverbs0 (rxe0) is readable and writable")

	fs = checkDevFiles(fakeFS(t, sysfs), devs, deny)
	wantFinding(t, fs[0], levelFail, "not readable and writable: permission denied")
	// access(2) fails with a bare errno, which is the cause itself.
	fs = checkDevFiles(fakeFS(t, sysfs), devs, func(string) error { return syscall.EACCES })
	wantFinding(t, fs[0], levelFail, "/dev/infiniband/uverbs0 (rxe0) is not readable and writable: permission denied")

	fs = checkDevFiles(t.TempDir(), devs, allow)
	wantFinding(t, fs[0], levelFail, "/dev/infiniband: no such file or directory")

	delete(sysfs, "sys/class/infiniband_verbs/uverbs0/ibdev")
	fs = checkDevFiles(fakeFS(t, sysfs), devs, allow)
	wantFinding(t, fs[0], levelWarn, "rxe0: no uverbs device")
}

func TestCheckPortState(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	wantFinding(t, checkPortState("rxe0 port 1", p), levelOK, "state ACTIVE (LINK_UP)")
	p.State, p.PhysState = "DOWN", "DISABLED"
	f := checkPortState("rxe0 port 1", p)
	wantFinding(t, f, levelFail, "state DOWN (DISABLED), not ACTIVE")
	if !strings.Contains(f.Fix, "ip link set") {
		t.Errorf("fix %q", f.Fix)
	}
}

func TestCheckGID(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	has := func(string) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("fe80::5054:ff:fe12:3456/64")}, nil
	}
	fs := checkGID("rxe0 port 1", p, "rxeveth0", has)
	if len(fs) != 2 {
		t.Fatalf("findings: %+v", fs)
	}
	wantFinding(t, fs[0], levelOK, "RoCE v2 GID index 1 (198.18.0.1 on rxeveth0) would be used: first routable IPv4")
	wantFinding(t, fs[1], levelOK, "rxeveth0 has 198.18.0.1/24: routable")

	fs = checkGID("rxe0 port 1", p, "rxeveth0", func(string) ([]netip.Prefix, error) { return nil, nil })
	wantFinding(t, fs[1], levelWarn, "address 198.18.0.1 is not on rxeveth0")

	fs = checkGID("rxe0 port 1", p, "rxeveth0", noAddrs)
	wantFinding(t, fs[1], levelWarn, "no such network interface")

	p.DefaultGID, p.NoGIDReason = nil, "no GID matches any routable RoCE v2 GID; index 0 fe80::1: link-local"
	fs = checkGID("rxe0 port 1", p, "rxeveth0", has)
	wantFinding(t, fs[0], levelFail, "no usable RoCE v2 GID: no GID matches")
	if !strings.Contains(fs[0].Fix, "ip addr add") {
		t.Errorf("fix %q", fs[0].Fix)
	}
}

func TestCheckNetdevMTU(t *testing.T) {
	for _, tc := range []struct {
		mtu         string
		active, max int
		lvl         level
		msg         string
	}{
		{"1500\n", 1024, 4096, levelOK, "rxeveth0 MTU 1500 carries RDMA MTU 1024 (+96 bytes"},
		{"9000\n", 4096, 4096, levelOK, "carries RDMA MTU 4096"},
		{"4200\n", 4096, 4096, levelOK, "carries RDMA MTU 4096"},
		{"4100\n", 4096, 4096, levelWarn, "MTU 4100 is too small for RDMA MTU 4096"},
		{"1100\n", 1024, 4096, levelWarn, "too small for RDMA MTU 1024"},
		{"9000\n", 1024, 4096, levelWarn, "MTU 9000 would carry RDMA MTU 4096, but the port is active at 1024"},
		{"9000\n", 2048, 2048, levelOK, "carries RDMA MTU 2048"}, // the port can do no more
		{"junk", 1024, 4096, levelWarn, "not a number"},
	} {
		root := fakeFS(t, map[string]string{"sys/class/net/rxeveth0/mtu": tc.mtu})
		p := portReport{ActiveMTU: tc.active, MaxMTU: tc.max}
		wantFinding(t, checkNetdevMTU(root, "rxe0 port 1", "rxeveth0", p), tc.lvl, tc.msg)
	}
	f := checkNetdevMTU(t.TempDir(), "rxe0 port 1", "rxeveth0", portReport{ActiveMTU: 1024, MaxMTU: 4096})
	if f.Level != levelWarn || !strings.Contains(f.Msg, "no such file") {
		t.Errorf("missing mtu file: %+v", f)
	}
}

func TestCheckECNAndPFC(t *testing.T) {
	none := t.TempDir()
	wantFinding(t, checkECN(none, "rxeveth0", "rxe"), levelOK, "ECN: not exposed by this driver (rxe)")
	wantFinding(t, checkPFC(none, "rxeveth0", "rxe"), levelOK, "PFC: not exposed by this driver (rxe)")

	files := map[string]string{"sys/class/net/eth2/qos/pfc": "Priority 0..7: 0 0 0 1 0 0 0 0\n"}
	for i := range 8 {
		v := "0\n"
		if i == 3 {
			v = "1\n"
		}
		files["sys/class/net/eth2/ecn/roce_np/enable/"+string(rune('0'+i))] = v
		files["sys/class/net/eth2/ecn/roce_rp/enable/"+string(rune('0'+i))] = v
	}
	mlx := fakeFS(t, files)
	wantFinding(t, checkECN(mlx, "eth2", "mlx5_core"), levelOK, "ECN on for priorities: notification point 3, reaction point 3")
	wantFinding(t, checkPFC(mlx, "eth2", "mlx5_core"), levelOK, "PFC: Priority 0..7: 0 0 0 1 0 0 0 0")

	off := fakeFS(t, map[string]string{"sys/class/net/eth2/ecn/roce_np/enable/3": "0\n"})
	wantFinding(t, checkECN(off, "eth2", "mlx5_core"), levelWarn, "ECN is off on every priority")
}

func TestCheckTClass(t *testing.T) {
	files := map[string]string{"sys/class/net/eth2/qos/pfc": "Priority 0..7: 0 0 0 1 0 0 0 0\n",
		"sys/class/net/eth2/ecn/roce_np/enable/3": "1\n", "sys/class/net/eth2/ecn/roce_rp/enable/3": "1\n",
		"sys/class/net/eth2/ecn/roce_np/enable/0": "0\n", "sys/class/net/eth2/ecn/roce_rp/enable/0": "0\n"}
	mlx := fakeFS(t, files)
	// 106 = DSCP 26 (AF31) with ECT(0): priority 3, where ECN and PFC are on.
	fs := checkTClass(mlx, "eth2", 106)
	if len(fs) != 3 {
		t.Fatalf("%d findings: %+v", len(fs), fs)
	}
	wantFinding(t, fs[0], levelOK, "--tclass 106: DSCP 26, priority 3")
	wantFinding(t, fs[1], levelOK, "ECN on for priority 3")
	wantFinding(t, fs[2], levelOK, "PFC on for priority 3")
	// 0: priority 0, where neither is on.
	fs = checkTClass(mlx, "eth2", 0)
	wantFinding(t, fs[1], levelWarn, "ECN is off for priority 0")
	wantFinding(t, fs[2], levelWarn, "PFC is off for priority 0")
	// CE in the ECN bits.
	wantFinding(t, checkTClass(t.TempDir(), "rxeveth0", 3)[0], levelWarn, "ECN to CE")
	if n := len(checkTClass(t.TempDir(), "rxeveth0", 106)); n != 1 {
		t.Errorf("rxe (nothing exposed): %d findings, want 1", n)
	}
}

func TestDriverName(t *testing.T) {
	if got := driverName(t.TempDir(), "rxe0"); got != "rxe" {
		t.Errorf("driverName(rxe0) = %q", got)
	}
	root := t.TempDir()
	dev := filepath.Join(root, "sys/class/infiniband/mlx5_0/device")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../bus/pci/drivers/mlx5_core", filepath.Join(dev, "driver")); err != nil {
		t.Fatal(err)
	}
	if got := driverName(root, "mlx5_0"); got != "mlx5_core" {
		t.Errorf("driverName(mlx5_0) = %q", got)
	}
}

// TestCheckNUMA: a device's NUMA node against the CPUs gorperf would
// start on: anywhere, when it is free to move there; all on the node; none
// or some on it, with the fix.
func TestCheckNUMA(t *testing.T) {
	nodes := map[int][]int{0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}}
	online := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, tc := range []struct {
		node    int
		started []int
		level   level
		want    string
	}{
		{-1, online, levelOK, "mlx5_0 names no NUMA node"},
		{1, online, levelOK, "mlx5_0 is on NUMA node 1 (CPUs 4-7): gorperf moves there by default"},
		{1, []int{5, 6}, levelOK, "all of this shell's CPUs (5-6) are there"},
		{1, []int{0, 1}, levelWarn, "runs on CPUs 0-1, none of them there"},
		{1, []int{3, 4}, levelWarn, "runs on CPUs 3-4, of which 3 are elsewhere"},
		{2, online, levelWarn, "NUMA node 2, whose CPUs cannot be read: no such node"},
	} {
		opts := &DoctorOptions{
			CPUs: func() ([]int, []int, error) { return tc.started, online, nil },
			NodeCPUs: func(n int) ([]int, error) {
				if cpus, ok := nodes[n]; ok {
					return cpus, nil
				}
				return nil, errors.New("no such node")
			},
		}
		f := checkNUMA(opts, deviceReport{Name: "mlx5_0", NUMANode: tc.node})
		if f.Level != tc.level || !strings.Contains(f.Msg, tc.want) || (f.Level == levelWarn && tc.node == 1 && !strings.Contains(f.Fix, "--numa_node 1")) {
			t.Errorf("node %d, started on %v: %s %s (fix %q), want %q", tc.node, tc.started, f.Level.tag(), f.Msg, f.Fix, tc.want)
		}
	}
}

// TestDoctorRun drives the whole doctor over a fake rxe host.
func TestDoctorRun(t *testing.T) {
	root := fakeFS(t, map[string]string{
		"dev/infiniband/uverbs0":                   "",
		"sys/class/infiniband_verbs/uverbs0/ibdev": "rxe0\n",
		"sys/class/net/rxeveth0/mtu":               "1500\n",
	})
	newOpts := func(devs []deviceReport, port int) (*DoctorOptions, *bytes.Buffer) {
		var out bytes.Buffer
		return &DoctorOptions{
			IO:      &IOStreams{Out: &out, ErrOut: &out},
			Devices: func(string) ([]deviceReport, error) { return devs, nil },
			Root:    root, Port: port,
			Access:  func(string) error { return nil },
			Memlock: func() (uint64, error) { return 8 * mib, nil },
			Addrs: func(string) ([]netip.Prefix, error) {
				return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, nil
			},
			CPUs:     func() ([]int, []int, error) { return []int{0, 1}, []int{0, 1}, nil },
			NodeCPUs: func(int) ([]int, error) { return nil, errors.New("unused: rxe has no node") },
		}, &out
	}

	opts, out := newOpts(fakeDevices()[:1], 0)
	if err := doctorRun(opts); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	golden(t, "doctor.golden", out.Bytes())

	down := fakeDevices()[:1]
	down[0].Ports[0].State = "DOWN"
	opts, out = newOpts(down, 0)
	if code := exitCode(doctorRun(opts)); code != 1 {
		t.Errorf("doctor with a DOWN port: exit status %d, want 1\n%s", code, out)
	}

	opts, out = newOpts(fakeDevices()[:1], 2)
	if code := exitCode(doctorRun(opts)); code != 1 || !strings.Contains(out.String(), "[FAIL] rxe0 has no port 2") {
		t.Errorf("doctor -i 2: exit status %d\n%s", code, out)
	}
}
