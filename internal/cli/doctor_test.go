package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/internal/bench"
)

// fakeFS writes files under a temporary root: path -> content, or for
// content symlinkTo+target a symbolic link to target, as sysfs has.
func fakeFS(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(c, symlinkTo); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// symlinkTo starts fakeFS's content for a symbolic link.
const symlinkTo = "symlink to "

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
	if len(fs) != 2 {
		t.Fatalf("findings: %+v", fs)
	}
	wantFinding(t, fs[0], levelOK, "/dev/infiniband/uverbs0 (rxe0) is readable and writable")
	wantFinding(t, fs[1], levelWarn, "/dev/infiniband/rdma_cm: no such file or directory: tests with -R (rdma_cm) fail")

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
	wantFinding(t, checkPortState("rxe0 port 1", p, "rxeveth0"), levelOK, "state ACTIVE (LINK_UP)")
	p.State, p.PhysState = "DOWN", "DISABLED"
	f := checkPortState("rxe0 port 1", p, "rxeveth0")
	wantFinding(t, f, levelFail, "state DOWN (DISABLED), not ACTIVE")
	// The fix names the netdev where the port has one, where it said
	// <netdev> that the same report named two lines further down.
	if !strings.Contains(f.Fix, "`ip link set rxeveth0 up`") {
		t.Errorf("fix %q", f.Fix)
	}
	if f := checkPortState("rxe0 port 1", p, ""); !strings.Contains(f.Fix, "`ip link set <netdev> up`") {
		t.Errorf("fix with no netdev known: %q", f.Fix)
	}
}

func TestCheckGID(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	has := func(string) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("fe80::5054:ff:fe12:3456/64")}, nil
	}
	fs := checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", has)
	if len(fs) != 2 {
		t.Fatalf("findings: %+v", fs)
	}
	wantFinding(t, fs[0], levelOK, "RoCE v2 GID index 1 (198.18.0.1 on rxeveth0) is the default: first routable IPv4")
	wantFinding(t, fs[1], levelOK, "rxeveth0 has 198.18.0.1/24: routable")

	fs = checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", func(string) ([]netip.Prefix, error) { return nil, nil })
	wantFinding(t, fs[1], levelWarn, "address 198.18.0.1 is not on rxeveth0")

	fs = checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", noAddrs)
	wantFinding(t, fs[1], levelWarn, "no such network interface")

	p.DefaultGID, p.NoGIDReason = nil, "no GID matches any routable RoCE v2 GID; index 0 fe80::1: link-local"
	fs = checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", has)
	wantFinding(t, fs[0], levelFail, "no usable RoCE v2 GID: no GID matches")
	// No address of the fix's own: 198.18.0.1, which it gave, may be
	// another netdev's of this host (rxe0's, for rxe1's netdev).
	if !strings.Contains(fs[0].Fix, "`ip addr add <address>/<prefix length> dev rxeveth0`") {
		t.Errorf("fix %q", fs[0].Fix)
	}
}

func TestCheckNetdevMTU(t *testing.T) {
	// rxe counts 80 bytes (RXE_MAX_HDR_LENGTH), the others 96
	// (iboe_get_mtu): a netdev MTU of 4176 is active at 4096 on rxe, one
	// of 4175 at 2048.
	for _, tc := range []struct {
		mtu         string
		active, max int
		overhead    int
		lvl         level
		msg         string
	}{
		{"1500\n", 1024, 4096, bench.RoCEOverhead, levelOK, "rxeveth0 MTU 1500 carries RDMA MTU 1024 (+96 bytes"},
		{"9000\n", 4096, 4096, bench.RoCEOverhead, levelOK, "carries RDMA MTU 4096"},
		{"4200\n", 4096, 4096, bench.RoCEOverhead, levelOK, "carries RDMA MTU 4096"},
		{"4100\n", 4096, 4096, bench.RoCEOverhead, levelWarn, "MTU 4100 is too small for RDMA MTU 4096"},
		{"1100\n", 1024, 4096, bench.RoCEOverhead, levelWarn, "too small for RDMA MTU 1024"},
		{"9000\n", 1024, 4096, bench.RoCEOverhead, levelWarn, "MTU 9000 would carry RDMA MTU 4096, but the port is active at 1024"},
		{"9000\n", 2048, 2048, bench.RoCEOverhead, levelOK, "carries RDMA MTU 2048"}, // the port can do no more
		{"junk", 1024, 4096, bench.RoCEOverhead, levelWarn, "not a number"},
		{"4176\n", 4096, 4096, bench.RXEOverhead, levelOK, "rxeveth0 MTU 4176 carries RDMA MTU 4096 (+80 bytes"},
		{"4191\n", 4096, 4096, bench.RXEOverhead, levelOK, "carries RDMA MTU 4096"},
		{"4175\n", 2048, 4096, bench.RXEOverhead, levelOK, "carries RDMA MTU 2048"},
		{"1500\n", 1024, 4096, bench.RXEOverhead, levelOK, "carries RDMA MTU 1024"},
		{"4175\n", 4096, 4096, bench.RXEOverhead, levelWarn, "MTU 4175 is too small for RDMA MTU 4096, which needs 4096+80"},
		{"4180\n", 1024, 4096, bench.RXEOverhead, levelWarn, "MTU 4180 would carry RDMA MTU 4096, but the port is active at 1024"},
	} {
		root := fakeFS(t, map[string]string{"sys/class/net/rxeveth0/mtu": tc.mtu})
		p := portReport{ActiveMTU: tc.active, MaxMTU: tc.max}
		wantFinding(t, checkNetdevMTU(root, "rxe0 port 1", "rxeveth0", p, tc.overhead), tc.lvl, tc.msg)
	}
	for drv, want := range map[string]int{"rdma_rxe": 80, "rxe": 80, "mlx5_core": 96, "bnxt_en": 96, "": 96} {
		if got := mtuOverhead(drv); got != want {
			t.Errorf("mtuOverhead(%q) = %d, want %d", drv, got, want)
		}
	}
	f := checkNetdevMTU(t.TempDir(), "rxe0 port 1", "rxeveth0", portReport{ActiveMTU: 1024, MaxMTU: 4096}, bench.RoCEOverhead)
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
	wantFinding(t, checkECN(mlx, "eth2", "mlx5_core"), levelOK, "ECN on for priorities 3 (notification and reaction point)")
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
	// One point of the two off: the warning says which.
	files["sys/class/net/eth2/ecn/roce_rp/enable/3"] = "0\n"
	fs = checkTClass(fakeFS(t, files), "eth2", 106)
	wantFinding(t, fs[1], levelWarn, "ECN's reaction point is off for priority 3")
	if !strings.Contains(fs[1].Fix, "roce_rp/enable/3") {
		t.Errorf("fix %q", fs[1].Fix)
	}
	files["sys/class/net/eth2/ecn/roce_rp/enable/3"], files["sys/class/net/eth2/ecn/roce_np/enable/3"] = "1\n", "0\n"
	fs = checkTClass(fakeFS(t, files), "eth2", 106)
	wantFinding(t, fs[1], levelWarn, "ECN's notification point is off for priority 3")
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
	// rxe's devices have no parent device but an attribute parent, the
	// netdev's name, whatever the device is called.
	root = fakeFS(t, map[string]string{"sys/class/infiniband/roce0/parent": "eth0\n"})
	if got := driverName(root, "roce0"); got != "rdma_rxe" {
		t.Errorf("driverName(roce0, an rxe device) = %q", got)
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
		"dev/infiniband/rdma_cm":                   "",
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

	// --json: the same findings, in order, as one document.
	opts, out = newOpts(fakeDevices()[:1], 2)
	opts.JSON = true
	code := exitCode(doctorRun(opts))
	var doc doctorDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || code != 1 {
		t.Fatalf("doctor -i 2 --json: exit status %d, %v\n%s", code, err, out)
	}
	opts, text := newOpts(fakeDevices()[:1], 2)
	doctorRun(opts)
	lines := strings.Split(text.String(), "\n")
	n := [3]int{}
	for i, f := range doc.Findings {
		tag := map[string]string{"ok": "[ ok ]", "warn": "[warn]", "fail": "[FAIL]"}[f.Level]
		if !slices.Contains(lines, tag+" "+f.Message) || (f.Fix == "") != (f.Level == "ok") {
			t.Errorf("finding %d %+v is not in the text:\n%s", i, f, text)
		}
		n[slices.Index([]string{"ok", "warn", "fail"}, f.Level)]++
	}
	if doc.SchemaVersion != 1 || doc.Failures == 0 || n != [3]int{doc.OK, doc.Warnings, doc.Failures} ||
		!strings.HasSuffix(text.String(), fmt.Sprintf("%d ok, %d warnings, %d failures\n", doc.OK, doc.Warnings, doc.Failures)) {
		t.Errorf("doctor --json counts %d ok, %d warnings, %d failures (found %v), schema %d; text:\n%s", doc.OK, doc.Warnings, doc.Failures, n, doc.SchemaVersion, text)
	}
}

// doctorOn runs the whole doctor, its flags -d dev and -i port, over a fake
// host: the files under a temporary root, the devices devs (of which -d
// keeps its own), each netdev with the IP of its GID. It returns the
// output and the exit status.
func doctorOn(t *testing.T, files map[string]string, devs []deviceReport, dev string, port int) (string, int) {
	t.Helper()
	var out bytes.Buffer
	opts := &DoctorOptions{
		IO: &IOStreams{Out: &out, ErrOut: &out},
		Devices: func(name string) ([]deviceReport, error) {
			if name == "" {
				return devs, nil
			}
			for _, d := range devs {
				if d.Name == name {
					return []deviceReport{d}, nil
				}
			}
			return nil, errors.New("no such device")
		},
		Root: fakeFS(t, files), Device: dev, Port: port,
		Access:  func(string) error { return nil },
		Memlock: func() (uint64, error) { return rlimitInfinity, nil },
		Addrs: func(nd string) ([]netip.Prefix, error) {
			for _, d := range devs {
				for _, p := range d.Ports {
					for _, g := range p.GIDs {
						if a, err := netip.ParseAddr(g.IP); err == nil && g.Netdev == nd && !a.IsLinkLocalUnicast() {
							return []netip.Prefix{netip.PrefixFrom(a, 24)}, nil
						}
					}
				}
			}
			return nil, nil
		},
		CPUs:     func() ([]int, []int, error) { return []int{0, 1}, []int{0, 1}, nil },
		NodeCPUs: func(int) ([]int, error) { return []int{0, 1}, nil },
	}
	code := exitCode(doctorRun(opts))
	return out.String(), code
}

// twoRXE is a host of two rxe devices, rxe0 on rxeveth0 and rxe1 on
// rxeveth1, with the files doctor reads.
func twoRXE() ([]deviceReport, map[string]string) {
	devs := []deviceReport{fakeDevices()[0], fakeDevices()[0]}
	devs[1].Name = "rxe1"
	devs[1].Ports = []portReport{{
		Port: 1, State: "ACTIVE", PhysState: "LINK_UP", ActiveMTU: 1024, MaxMTU: 4096, LinkLayer: "Ethernet",
		GIDs:       []gidReport{{Index: 1, GID: "::ffff:198.18.0.2", Type: "RoCE v2", Netdev: "rxeveth1", IP: "198.18.0.2"}},
		DefaultGID: &gidChoice{Index: 1, Reason: "first routable IPv4 RoCE v2 entry"},
	}}
	return devs, map[string]string{
		"dev/infiniband/uverbs0":                   "",
		"dev/infiniband/uverbs1":                   "",
		"dev/infiniband/rdma_cm":                   "",
		"sys/class/infiniband_verbs/uverbs0/ibdev": "rxe0\n",
		"sys/class/infiniband_verbs/uverbs1/ibdev": "rxe1\n",
		"sys/class/net/rxeveth0/mtu":               "1500\n",
		"sys/class/net/rxeveth1/mtu":               "1500\n",
	}
}

// downPort takes port p of d down, as an unplugged cable does: DOWN, and
// with no address on its netdev no RoCE v2 GID but the link-local one.
func downPort(p *portReport) {
	p.State, p.PhysState = "DOWN", "DISABLED"
	p.GIDs = []gidReport{{Index: 0, GID: "fe80::1", Type: "RoCE v2", Netdev: "rxeveth1", IP: "fe80::1"}}
	p.DefaultGID, p.NoGIDReason = nil, "no routable RoCE v2 GID; index 0 fe80::1: link-local"
}

// TestDoctorDownPortNotNamed: a port that is not ACTIVE while another is
// (a dual-port NIC with one cable, an unplugged second NIC) leaves the
// host ready: a warning that names the ACTIVE port to use, not a failure
// (doctor failed, exit status 1, for any such port, and for its missing
// GID). A port the user names (-i), or a device (-d) with no port ACTIVE,
// or a host with none, still fails; so does the port tests use by default
// (the first device's port 1, or -d's port 1), naming the ACTIVE ones,
// where it was a warning and exit status 0.
func TestDoctorDownPortNotNamed(t *testing.T) {
	devs, files := twoRXE()
	downPort(&devs[1].Ports[0])
	out, code := doctorOn(t, files, devs, "", 0)
	if code != 0 || strings.Contains(out, "[FAIL]") {
		t.Errorf("doctor with rxe0 ACTIVE and rxe1 DOWN: exit status %d, want 0 and no failure\n%s", code, out)
	}
	for _, want := range []string{
		"[warn] rxe1 port 1: state DOWN (DISABLED), not ACTIVE: not checked further; tests on it fail, other ports are ACTIVE\n",
		"fix: run tests on an ACTIVE port (`-d rxe0 -i 1`), or bring this one up (check its cable, and `ip link set rxeveth1 up`)\n",
		"[ ok ] rxe0 port 1: state ACTIVE",
		"[ ok ] rxe0 port 1: rxeveth0 has 198.18.0.1/24: routable",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rxe1 port 1: RoCE v2") || strings.Contains(out, "no usable RoCE v2 GID") {
		t.Errorf("the down port's GID was judged:\n%s", out)
	}

	// The port tests use without -d and -i (the first device's port 1)
	// down: a failure, which says so and names the ACTIVE port.
	devs, files = twoRXE()
	downPort(&devs[0].Ports[0])
	out, code = doctorOn(t, files, devs, "", 0)
	if code != 1 || !strings.Contains(out, "[FAIL] rxe0 port 1: state DOWN (DISABLED), not ACTIVE: not checked further; tests on it fail, other ports are ACTIVE; without -d and -i tests use this port") ||
		!strings.Contains(out, "`-d rxe1 -i 1`") {
		t.Errorf("doctor with rxe0 DOWN and rxe1 ACTIVE: exit status %d, want 1\n%s", code, out)
	}
	// -d's port 1 down, its port 2 ACTIVE: tests without -i fail.
	devs, files = twoRXE()
	devs = devs[:1]
	p2 := devs[0].Ports[0]
	p2.Port = 2
	devs[0].Ports = append(devs[0].Ports, p2)
	downPort(&devs[0].Ports[0])
	out, code = doctorOn(t, files, devs, "rxe0", 0)
	if code != 1 || !strings.Contains(out, "[FAIL] rxe0 port 1: state DOWN (DISABLED), not ACTIVE: not checked further; tests on it fail, other ports are ACTIVE; without -i tests use this port") ||
		!strings.Contains(out, "`-d rxe0 -i 2`") {
		t.Errorf("doctor -d rxe0 with its port 1 DOWN and port 2 ACTIVE: exit status %d, want 1\n%s", code, out)
	}

	// Named, or nothing ACTIVE where doctor looks: a failure.
	devs, files = twoRXE()
	downPort(&devs[1].Ports[0])
	for _, tc := range []struct {
		dev  string
		port int
	}{{"", 1}, {"rxe1", 0}, {"rxe1", 1}} {
		out, code := doctorOn(t, files, devs, tc.dev, tc.port)
		if code != 1 || !strings.Contains(out, "[FAIL] rxe1 port 1: state DOWN (DISABLED), not ACTIVE\n") {
			t.Errorf("doctor -d %q -i %d with rxe1 DOWN: exit status %d, want 1 and the port's failure\n%s", tc.dev, tc.port, code, out)
		}
	}
	downPort(&devs[0].Ports[0])
	out, code = doctorOn(t, files, devs, "", 0)
	if code != 1 || strings.Count(out, "not ACTIVE\n") != 2 {
		t.Errorf("doctor with every port DOWN: exit status %d, want 1 and both ports' failures\n%s", code, out)
	}
}

// TestDoctorRXEMTU: rxe sets its port's active MTU from the netdev MTU less
// its own 80 bytes of headers (RXE_MAX_HDR_LENGTH), not the 96 of
// iboe_get_mtu: at 4180 it is active at 4096 and its packets fit. doctor
// warned that 4180 is too small for 4096; for mlx5 it is.
func TestDoctorRXEMTU(t *testing.T) {
	devs, files := twoRXE()
	devs = devs[:1]
	devs[0].Ports[0].ActiveMTU = 4096
	files["sys/class/net/rxeveth0/mtu"] = "4180\n"
	out, code := doctorOn(t, files, devs, "", 0)
	if code != 0 || strings.Contains(out, "[warn]") || !strings.Contains(out, "[ ok ] rxe0 port 1: rxeveth0 MTU 4180 carries RDMA MTU 4096 (+80 bytes of RoCE v2 headers)") {
		t.Errorf("rxe at netdev MTU 4180, active 4096: exit status %d\n%s", code, out)
	}
	// The same by rxe's sysfs, on a device not named rxeN.
	devs[0].Name = "roce0"
	files["sys/class/infiniband_verbs/uverbs0/ibdev"] = "roce0\n"
	files["sys/class/infiniband/roce0/parent"] = "rxeveth0\n"
	out, _ = doctorOn(t, files, devs, "", 0)
	if !strings.Contains(out, "[ ok ] roce0 port 1: rxeveth0 MTU 4180 carries RDMA MTU 4096 (+80 bytes") {
		t.Errorf("rxe device roce0 at netdev MTU 4180:\n%s", out)
	}
	// Another driver's: 4180 is too small.
	devs[0].Name = "bnxt_re0"
	files["sys/class/infiniband_verbs/uverbs0/ibdev"] = "bnxt_re0\n"
	out, _ = doctorOn(t, files, devs, "", 0)
	if !strings.Contains(out, "[warn] bnxt_re0 port 1: rxeveth0 MTU 4180 is too small for RDMA MTU 4096, which needs 4096+96") {
		t.Errorf("bnxt_re0 at netdev MTU 4180:\n%s", out)
	}
}

// TestDoctorRdmaCM: without /dev/infiniband/rdma_cm (a container given only
// the uverbs files, or rdma_ucm not loaded where nothing loads it on
// demand) every -R test fails, and doctor says so; it said nothing. (In the
// VM, a mount namespace with only uverbs0 and uverbs1 in /dev/infiniband:
// -R failed in rdma_create_event_channel, old doctor said all ok.)
func TestDoctorRdmaCM(t *testing.T) {
	devs, files := twoRXE()
	devs = devs[:1]
	out, code := doctorOn(t, files, devs, "", 0)
	if code != 0 || !strings.Contains(out, "[ ok ] /dev/infiniband/rdma_cm is readable and writable (for -R)\n") {
		t.Errorf("with rdma_cm: exit status %d\n%s", code, out)
	}
	delete(files, "dev/infiniband/rdma_cm")
	out, code = doctorOn(t, files, devs, "", 0)
	if code != 0 || !strings.Contains(out, "[warn] /dev/infiniband/rdma_cm: no such file or directory: tests with -R (rdma_cm) fail; the others do not need it\n") ||
		!strings.Contains(out, "modprobe rdma_ucm") || !strings.Contains(out, "--device=/dev/infiniband/rdma_cm") {
		t.Errorf("without rdma_cm: exit status %d, want 0 and a warning\n%s", code, out)
	}
	// rdma_ucm loaded, its file missing: a container's /dev.
	files["sys/module/rdma_ucm/refcnt"] = "0\n"
	out, _ = doctorOn(t, files, devs, "", 0)
	if !strings.Contains(out, "[warn] /dev/infiniband/rdma_cm: no such file") || strings.Contains(out, "modprobe rdma_ucm") {
		t.Errorf("without rdma_cm, rdma_ucm loaded:\n%s", out)
	}
	// rdma_ucm not loaded on a host whose kernel loads it, and makes the
	// file, for librdmacm's first use: modules.alias has its alias and /dev
	// is a devtmpfs. In the VM, kernel 6.1 with rdma_ucm unloaded, a -R
	// test ran so and the file appeared.
	delete(files, "sys/module/rdma_ucm/refcnt")
	files["proc/sys/kernel/osrelease"] = "6.1.0-57-amd64\n"
	files["lib/modules/6.1.0-57-amd64/modules.alias"] = "alias rdma-client-uverbs ib_uverbs\nalias rdma-client-rdma_cm rdma_ucm\n"
	const devtmpfs = "23 26 0:6 / /dev rw,relatime shared:2 - devtmpfs udev rw,mode=755\n"
	for _, tc := range []struct {
		name, mountinfo string
		ok              bool
	}{
		{"a host's devtmpfs", "26 1 8:1 / / rw - ext4 /dev/sda1 rw\n" + devtmpfs, true},
		{"a container's tmpfs", "26 1 0:50 / / rw - overlay overlay rw\n30 26 0:52 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k\n", false},
		{"a tmpfs on /dev/infiniband", devtmpfs + "40 23 0:60 / /dev/infiniband rw - tmpfs none rw\n", false},
		{"no mountinfo", "", false},
	} {
		files["proc/self/mountinfo"] = tc.mountinfo
		out, code := doctorOn(t, files, devs, "", 0)
		got := strings.Contains(out, "[ ok ] /dev/infiniband/rdma_cm is not there yet: rdma_ucm is not loaded, and the first test with -R (rdma_cm) has the kernel load it, which makes the file\n")
		if code != 0 || got != tc.ok || !tc.ok && !strings.Contains(out, "[warn] /dev/infiniband/rdma_cm: no such file") {
			t.Errorf("rdma_ucm not loaded, %s: exit status %d\n%s", tc.name, code, out)
		}
	}
	files["proc/self/mountinfo"] = devtmpfs
	files["lib/modules/6.1.0-57-amd64/modules.alias"] = "alias rdma-client-uverbs ib_uverbs\n" // before Linux 5.3
	if out, _ := doctorOn(t, files, devs, "", 0); !strings.Contains(out, "[warn] /dev/infiniband/rdma_cm: no such file") {
		t.Errorf("rdma_ucm not loaded, no alias to load it by:\n%s", out)
	}
	// There, but not ours.
	root := fakeFS(t, map[string]string{"dev/infiniband/rdma_cm": ""})
	fs := checkDevFiles(root, nil, func(p string) error {
		return &os.PathError{Op: "access", Path: p, Err: os.ErrPermission}
	})
	if len(fs) != 2 {
		t.Fatalf("findings: %+v", fs)
	}
	wantFinding(t, fs[1], levelWarn, "/dev/infiniband/rdma_cm is not readable and writable: permission denied: tests with -R (rdma_cm) fail")
}

// TestCheckECNReactionPoint: ECN slows a sender only if the receiver's
// notification point and the sender's reaction point are on for the
// priority; a host with one of them off on a priority where the other is
// on is a warning that names the priorities and the fix. doctor said ok
// with the notification point on and the reaction point off everywhere.
func TestCheckECNReactionPoint(t *testing.T) {
	ecn := func(np, rp string) string {
		files := map[string]string{}
		for i := range 8 {
			files[fmt.Sprintf("sys/class/net/eth2/ecn/roce_np/enable/%d", i)] = np[i:i+1] + "\n"
			files[fmt.Sprintf("sys/class/net/eth2/ecn/roce_rp/enable/%d", i)] = rp[i:i+1] + "\n"
		}
		return fakeFS(t, files)
	}
	for _, tc := range []struct {
		np, rp   string
		lvl      level
		msg, fix string
	}{
		{"11111111", "11111111", levelOK, "eth2: ECN on for priorities 0,1,2,3,4,5,6,7 (notification and reaction point)", ""},
		{"00010000", "00010000", levelOK, "eth2: ECN on for priorities 3 (notification and reaction point)", ""},
		{"11111111", "00000000", levelWarn, "eth2: ECN (notification point 0,1,2,3,4,5,6,7, reaction point none): the reaction point is off on priorities 0,1,2,3,4,5,6,7, where the notification point is on: what this host sends there does not slow down",
			"`for p in 0 1 2 3 4 5 6 7; do echo 1 > /sys/class/net/eth2/ecn/roce_rp/enable/$p; done`"},
		{"00010000", "00000000", levelWarn, "the reaction point is off on priorities 3,", "`echo 1 > /sys/class/net/eth2/ecn/roce_rp/enable/3`"},
		{"00010100", "00000100", levelWarn, "the reaction point is off on priorities 3,", "roce_rp/enable/3`"},
		{"00000000", "00010000", levelWarn, "the notification point is off on priorities 3,", "`echo 1 > /sys/class/net/eth2/ecn/roce_np/enable/3`"},
		{"00000000", "00000000", levelWarn, "ECN is off on every priority", ""},
	} {
		f := checkECN(ecn(tc.np, tc.rp), "eth2", "mlx5_core")
		if f.Level != tc.lvl || !strings.Contains(f.Msg, tc.msg) || !strings.Contains(f.Fix, tc.fix) || (f.Level != levelOK && f.Fix == "") {
			t.Errorf("np %s rp %s: %s %q (fix %q), want %s with %q (fix %q)", tc.np, tc.rp, f.Level.tag(), f.Msg, f.Fix, tc.lvl.tag(), tc.msg, tc.fix)
		}
	}
}

// TestLowerNetdev: the device under a netdev, through every layer, as
// its lower_<name> links say; a bond (two lower devices) and a physical
// netdev (none, or not there at all) are their own.
func TestLowerNetdev(t *testing.T) {
	root := fakeFS(t, map[string]string{
		"sys/class/net/eth0/mtu":                 "1500\n",
		"sys/class/net/eth0.100/lower_eth0":      symlinkTo + "../../../devices/pci0000:00/0000:00:02.0/net/eth0",
		"sys/class/net/mv0/lower_eth0.100":       symlinkTo + "../../../devices/virtual/net/eth0.100",
		"sys/class/net/bond0/lower_eth1":         symlinkTo + "../eth1",
		"sys/class/net/bond0/lower_eth2":         symlinkTo + "../eth2",
		"sys/class/net/bond0.7/lower_bond0":      symlinkTo + "../bond0",
		"sys/class/net/loop0/lower_loop1":        symlinkTo + "../loop1",
		"sys/class/net/loop1/lower_loop0":        symlinkTo + "../loop0",
		"sys/class/net/rxeveth0/upper_rxeveth.9": symlinkTo + "../rxeveth.9",
	})
	for nd, want := range map[string]string{
		"eth0": "eth0", "eth0.100": "eth0", "mv0": "eth0", "bond0.7": "bond0", "bond0": "bond0",
		"rxeveth0": "rxeveth0", "nosuch0": "nosuch0",
	} {
		if got := lowerNetdev(root, nd); got != want {
			t.Errorf("lowerNetdev(%s) = %q, want %q", nd, got, want)
		}
	}
	// A loop, which sysfs never has, ends.
	if got := lowerNetdev(root, "loop0"); got != "loop0" && got != "loop1" {
		t.Errorf("lowerNetdev(loop0) = %q", got)
	}
}

// TestDoctorECNOnLowerNetdev: where the port's GID is on a VLAN netdev
// (only eth0.100 has an address), ECN and PFC are checked on the device
// under it, where mlx5 exposes them, and the MTU on the VLAN's own. Doctor
// looked for ecn/ and qos/pfc on eth0.100 and said "ECN: not exposed by
// this driver (mlx5_core)", an ok, though ECN was off on eth0.
func TestDoctorECNOnLowerNetdev(t *testing.T) {
	devs := []deviceReport{{
		Name: "mlx5_0", NodeType: "CA", Transport: "InfiniBand", NUMANode: -1,
		Ports: []portReport{{
			Port: 1, State: "ACTIVE", PhysState: "LINK_UP", ActiveMTU: 1024, MaxMTU: 4096, LinkLayer: "Ethernet",
			GIDs: []gidReport{
				{Index: 0, GID: "fe80::1", Type: "RoCE v2", Netdev: "eth0", IP: "fe80::1"},
				{Index: 1, GID: "fe80::1", Type: "RoCE v2", Netdev: "eth0.100", IP: "fe80::1"},
				{Index: 2, GID: "::ffff:10.0.100.1", Type: "RoCE v2", Netdev: "eth0.100", IP: "10.0.100.1"},
			},
			DefaultGID: &gidChoice{Index: 2, Reason: "first routable IPv4 RoCE v2 entry"},
		}},
	}}
	files := map[string]string{
		"dev/infiniband/uverbs0":                    "",
		"dev/infiniband/rdma_cm":                    "",
		"sys/class/infiniband_verbs/uverbs0/ibdev":  "mlx5_0\n",
		"sys/class/infiniband/mlx5_0/device/driver": symlinkTo + "../../../bus/pci/drivers/mlx5_core",
		"sys/class/net/eth0/mtu":                    "9000\n",
		"sys/class/net/eth0/ecn/roce_np/enable/3":   "0\n",
		"sys/class/net/eth0/ecn/roce_rp/enable/3":   "0\n",
		"sys/class/net/eth0/qos/pfc":                "Priority 0..7: 0 0 0 0 0 0 0 0\n",
		"sys/class/net/eth0.100/mtu":                "1500\n",
		"sys/class/net/eth0.100/lower_eth0":         symlinkTo + "../../../devices/pci0000:00/0000:00:02.0/net/eth0",
	}
	out, code := doctorOn(t, files, devs, "", 0)
	for _, want := range []string{
		"[ ok ] mlx5_0 port 1: eth0.100 MTU 1500 carries RDMA MTU 1024",
		"[ ok ] mlx5_0 port 1: eth0.100 runs over eth0, whose ECN and PFC settings apply",
		"[warn] eth0: ECN is off on every priority",
		"fix: enable it on RoCE's priority, e.g. 3: `echo 1 > /sys/class/net/eth0/ecn/roce_np/enable/3`",
		"[ ok ] eth0: PFC: Priority 0..7: 0 0 0 0 0 0 0 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out, "not exposed") || strings.Contains(out, "eth0.100: ECN") {
		t.Errorf("exit status %d:\n%s", code, out)
	}
	// --tclass's priority too.
	opts := &DoctorOptions{Root: fakeFS(t, files), TClassSet: true, TClass: 106,
		Addrs: func(string) ([]netip.Prefix, error) {
			return []netip.Prefix{netip.MustParsePrefix("10.0.100.1/24")}, nil
		}}
	var msgs []string
	for _, f := range checkPort(opts, devs[0], devs[0].Ports[0]) {
		msgs = append(msgs, f.Level.tag()+" "+f.Msg)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"[warn] eth0: ECN is off for priority 3, the one --tclass 106 maps to", "[warn] eth0: PFC is off for priority 3"} {
		if !strings.Contains(all, want) {
			t.Errorf("--tclass 106: lacks %q:\n%s", want, all)
		}
	}
}

// An IPv4-mapped GID whose address the netdev has as the IPv6 address
// ::ffff:a.b.c.d is not routable, and netdevAddrs keeps such an address
// IPv6.
func TestCheckGIDMappedIPv6(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	p.GIDs[1].IP, p.GIDs[1].GID = "198.18.0.99", "::ffff:198.18.0.99"
	mapped := func(string) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("::ffff:198.18.0.99/128")}, nil
	}
	fs := checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", mapped)
	wantFinding(t, fs[len(fs)-1], levelWarn, "rxeveth0 has 198.18.0.99 as the IPv6 address ::ffff:198.18.0.99, not as IPv4")

	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip(err)
	}
	as, err := netdevAddrs(lo.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(as, netip.MustParsePrefix("127.0.0.1/8")) {
		t.Errorf("lo: %v lacks 127.0.0.1/8, unmapped", as)
	}
}

// A default GID tied with entries of other netdevs and subnets is
// warned of, with the flags that choose; a tie within one subnet is not.
func TestCheckGIDTie(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	p.GIDs = append(p.GIDs,
		gidReport{Index: 2, GID: "::ffff:198.18.10.1", Type: "RoCE v2", Netdev: "rxeveth0.10", IP: "198.18.10.1"},
		gidReport{Index: 3, GID: "::ffff:198.18.0.11", Type: "RoCE v2", Netdev: "rxeveth0", IP: "198.18.0.11"},
	)
	addrs := func(nd string) ([]netip.Prefix, error) {
		if nd == "rxeveth0.10" {
			return []netip.Prefix{netip.MustParsePrefix("198.18.10.1/24")}, nil
		}
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24"), netip.MustParsePrefix("198.18.0.11/24")}, nil
	}
	p.DefaultGID.Tied = []int{2, 3}
	fs := checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", addrs)
	f := fs[1]
	wantFinding(t, f, levelWarn, "default GID index 1 ties with 2 other entries (netdevs rxeveth0, rxeveth0.10; subnets 198.18.0.0/24, 198.18.10.0/24)")
	for _, w := range []string{"--gid-netdev", "--gid-subnet", "--source_ip"} {
		if !strings.Contains(f.Fix, w) {
			t.Errorf("fix %q does not name %s", f.Fix, w)
		}
	}
	p.DefaultGID.Tied = []int{3}
	for _, f := range checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", addrs) {
		if strings.Contains(f.Msg, "ties") {
			t.Errorf("a tie within one netdev and subnet warned: %+v", f)
		}
	}
}

// GIDs of dadfailed, tentative or IPv6-configured mapped addresses are
// warned of; a deprecated one is not.
func TestCheckGIDAddrState(t *testing.T) {
	p := fakeDevices()[0].Ports[0]
	p.GIDs = append(p.GIDs,
		gidReport{Index: 2, GID: "2001:2::77", Type: "RoCE v2", Netdev: "rxeveth0", IP: "2001:2::77", AddrFlags: "tentative dadfailed"},
		gidReport{Index: 3, GID: "2001:2:0:5::2", Type: "RoCE v2", Netdev: "rxeveth0", IP: "2001:2:0:5::2", AddrFlags: "deprecated"},
		gidReport{Index: 4, GID: "::ffff:198.18.0.99", Type: "RoCE v2", Netdev: "rxeveth0", IP: "198.18.0.99", MappedIPv6: true},
	)
	has := func(string) ([]netip.Prefix, error) {
		return []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, nil
	}
	fs := checkGID(t.TempDir(), "rxe0 port 1", p, "rxeveth0", has)
	wantFinding(t, fs[1], levelWarn, "GIDs of unusable addresses, which GID selection passes over: index 2 2001:2::77 (tentative dadfailed) on rxeveth0; index 4 198.18.0.99 (IPv6 ::ffff:198.18.0.99) on rxeveth0")
	if strings.Contains(fs[1].Msg, "2001:2:0:5::2") {
		t.Errorf("deprecated address warned: %s", fs[1].Msg)
	}
}
