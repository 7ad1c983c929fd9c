package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/gorperf/gorperf/internal/affinity"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/report"
)

// DoctorOptions are the options of `gorperf doctor`. The function fields
// reach the host; tests replace them.
type DoctorOptions struct {
	IO        *IOStreams
	Devices   func(name string) ([]deviceReport, error)
	Root      string // where /dev and /sys are: "/" but in tests
	Device    string // -d: only this device
	Port      int    // -i: only this port; 0 for all
	TClass    int    // --tclass: the traffic class the tests will use, if TClassSet
	TClassSet bool
	JSON      bool // --json

	Access  func(path string) error                     // may we read and write path?
	Memlock func() (uint64, error)                      // RLIMIT_MEMLOCK's soft limit in bytes
	Addrs   func(netdev string) ([]netip.Prefix, error) // a netdev's IP addresses
	// CPUs are the CPUs this process may run on and those online;
	// NodeCPUs a NUMA node's.
	CPUs     func() (started, online []int, err error)
	NodeCPUs func(node int) ([]int, error)
}

func newCmdDoctor(f *Factory, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{
		IO: f.IO, Devices: f.Devices, Root: f.Root,
		Access:   func(p string) error { return unix.Access(p, unix.R_OK|unix.W_OK) },
		Memlock:  memlock,
		Addrs:    netdevAddrs,
		CPUs:     startedCPUs,
		NodeCPUs: affinity.NodeCPUs,
	}
	cmd := &cobra.Command{
		Use:   "doctor [-d DEV] [-i PORT] [--json]",
		Short: "Check that this host is ready for RDMA, and say how to fix what is not",
		Long: `Check the things RDMA needs: the uverbs device files (and rdma_cm's, for
-R), the locked-memory limit, an active port, a routable RoCE v2 GID (and
none past index 255, which no test can use), the MTU of each netdev with a
routable GID (a VLAN's too) against the RDMA MTU, ECN and PFC where the
driver exposes them, and the device's NUMA node against the CPUs a test
would run on. Each finding is [ ok ], [warn] or [FAIL]; warnings and
failures come with a fix. A port that is not ACTIVE fails if -i names it,
if tests use it by default (the first device's port 1, or -d's port 1) or
if no port checked is ACTIVE; otherwise it is a warning, and not checked
further. The exit status is 1 if anything failed. With --json the findings
are one JSON document.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Port < 0 {
				return usageErrorf("invalid port %d: ports are numbered from 1", opts.Port)
			}
			if opts.TClassSet = cmd.Flags().Changed("tclass"); opts.TClass < 0 || opts.TClass > 255 {
				return usageErrorf("--tclass: %d out of range 0-255", opts.TClass)
			}
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Device, "ib-dev", "d", "", "only this RDMA device (default: all)")
	cmd.Flags().IntVarP(&opts.Port, "ib-port", "i", 0, "only this port (default: all)")
	cmd.Flags().IntVar(&opts.TClass, "tclass", 0, "check ECN and PFC for the priority of this traffic class (as gorperf --tclass)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the findings as a JSON document (schema_version 1): each with its level (ok, warn, fail), message and fix, and the counts")
	return cmd
}

// level is how bad a finding is.
type level int

const (
	levelOK level = iota
	levelWarn
	levelFail
)

func (l level) tag() string { return [...]string{"[ ok ]", "[warn]", "[FAIL]"}[l] }

// finding is the outcome of one check.
type finding struct {
	Level level
	Msg   string // one line
	Fix   string // for warn and fail: what to do
}

func ok(format string, a ...any) finding {
	return finding{Level: levelOK, Msg: fmt.Sprintf(format, a...)}
}
func warn(fix, format string, a ...any) finding {
	return finding{Level: levelWarn, Msg: fmt.Sprintf(format, a...), Fix: fix}
}
func fail(fix, format string, a ...any) finding {
	return finding{Level: levelFail, Msg: fmt.Sprintf(format, a...), Fix: fix}
}

func doctorRun(opts *DoctorOptions) error {
	fs := doctorChecks(opts)
	write := writeFindings
	if opts.JSON {
		write = writeFindingsJSON
	}
	if err := write(opts.IO.Out, fs); err != nil {
		return err
	}
	for _, f := range fs {
		if f.Level == levelFail {
			return &silentError{exitError}
		}
	}
	return nil
}

func writeFindings(w io.Writer, fs []finding) error {
	var b strings.Builder
	var n [3]int
	for _, f := range fs {
		n[f.Level]++
		fmt.Fprintf(&b, "%s %s\n", f.Level.tag(), f.Msg)
		if f.Fix != "" {
			fmt.Fprintf(&b, "       fix: %s\n", f.Fix)
		}
	}
	fmt.Fprintf(&b, "%d ok, %d warnings, %d failures\n", n[levelOK], n[levelWarn], n[levelFail])
	_, err := io.WriteString(w, b.String())
	return err
}

// doctorSchemaVersion is the version of `gorperf doctor --json`'s
// document. Bump it when a field changes meaning or goes away; adding a
// field does not bump it.
const doctorSchemaVersion = 1

// doctorDoc is doctor's --json document: the findings in order, and how
// many of each level. One of a command line that was wrong has no
// findings and the error, as a test's document has it.
type doctorDoc struct {
	SchemaVersion int `json:"schema_version"`
	// Tool and Version are as a test's document has them: "gorperf"
	// and its version.
	Tool     string          `json:"tool"`
	Version  string          `json:"version"`
	Findings []doctorFinding `json:"findings"`
	OK       int             `json:"ok"`
	Warnings int             `json:"warnings"`
	Failures int             `json:"failures"`
	Error    *report.Error   `json:"error,omitempty"`
}

// doctorFinding is a finding in the document: its level ("ok", "warn"
// or "fail"), its line, and for the last two the fix.
type doctorFinding struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

func (l level) name() string { return [...]string{"ok", "warn", "fail"}[l] }

func writeFindingsJSON(w io.Writer, fs []finding) error {
	d := doctorDoc{SchemaVersion: doctorSchemaVersion, Tool: report.Tool, Version: Version, Findings: make([]doctorFinding, 0, len(fs))}
	for _, f := range fs {
		d.Findings = append(d.Findings, doctorFinding{Level: f.Level.name(), Message: f.Msg, Fix: f.Fix})
		switch f.Level {
		case levelOK:
			d.OK++
		case levelWarn:
			d.Warnings++
		case levelFail:
			d.Failures++
		}
	}
	return encodeIndented(w, d)
}

// writeDoctorJSONError writes the document of gorperf doctor --json whose
// command line was wrong: no findings, and the error.
func writeDoctorJSONError(w io.Writer, err error) error {
	return encodeIndented(w, doctorDoc{SchemaVersion: doctorSchemaVersion, Tool: report.Tool, Version: Version, Findings: []doctorFinding{},
		Error: &report.Error{Code: errorCode(err), Message: err.Error()}})
}

// doctorChecks runs every check and returns the findings in order.
func doctorChecks(opts *DoctorOptions) []finding {
	devs, err := opts.Devices(opts.Device)
	fs := []finding{checkDevices(devs, err)}
	fs = append(fs, checkDevFiles(opts.Root, devs, opts.Access)...)
	lim, err := opts.Memlock()
	fs = append(fs, checkMemlock(lim, err, hasIPCLock(opts.Root)))
	active := activePorts(devs)
	for i, d := range devs {
		if d.Error != "" {
			fs = append(fs, fail("check `dmesg` for the driver's errors", "%s: %s", d.Name, d.Error))
			continue
		}
		fs = append(fs, checkNUMA(opts, d))
		if opts.Port > len(d.Ports) {
			fs = append(fs, fail(fmt.Sprintf("pick a port with -i 1..%d", len(d.Ports)),
				"%s has no port %d", d.Name, opts.Port))
			continue
		}
		for _, p := range d.Ports {
			if opts.Port != 0 && p.Port != opts.Port {
				continue
			}
			// A port the user did not name that is not ACTIVE, on a host
			// where another is (the second port of a dual-port NIC with one
			// cable, an unplugged NIC), does not stop the tests: a warning,
			// and its GID and MTU do not matter until it comes up. The
			// port tests use by default (the first device's port 1, or
			// -d's) is a failure, naming the ACTIVE ones: a test run
			// without -d and -i (or without -i) fails on it.
			if opts.Port == 0 && p.Error == "" && p.State != "ACTIVE" && len(active) > 0 {
				fs = append(fs, idlePort(d, p, i == 0 && p.Port == 1, opts.Device != "", active))
				continue
			}
			fs = append(fs, checkPort(opts, d, p)...)
		}
	}
	return fs
}

// activePorts names the ACTIVE ports among devs as the flags that pick
// them: "-d rxe0 -i 1".
func activePorts(devs []deviceReport) []string {
	var out []string
	for _, d := range devs {
		if d.Error != "" {
			continue
		}
		for _, p := range d.Ports {
			if p.Error == "" && p.State == "ACTIVE" {
				out = append(out, fmt.Sprintf("-d %s -i %d", d.Name, p.Port))
			}
		}
	}
	return out
}

// idlePort is the finding for a port that is not ACTIVE while others
// (active, as activePorts names them) are: tests run on those, a warning.
// first says the port is the one tests use without -d and -i (the first
// device's port 1; with -d, byDev, that device's port 1, which they use
// without -i): a failure, since a test run so fails.
func idlePort(d deviceReport, p portReport, first, byDev bool, active []string) finding {
	at := fmt.Sprintf("%s port %d", d.Name, p.Port)
	use := strings.Join(active, "`, `")
	nd := portNetdev(p)
	if nd == "" {
		nd = "<netdev>"
	}
	fix := fmt.Sprintf("run tests on an ACTIVE port (`%s`), or bring this one up (check its cable, and `ip link set %s up`)", use, nd)
	if p.LinkLayer == "InfiniBand" {
		fix = fmt.Sprintf("run tests on an ACTIVE port (`%s`), or bring this one up (check its cable; an INIT port waits for a subnet manager)", use)
	}
	msg := fmt.Sprintf("%s: state %s (%s), not ACTIVE: not checked further; tests on it fail, other ports are ACTIVE", at, p.State, p.PhysState)
	switch {
	case first && byDev:
		msg += "; without -i tests use this port"
	case first:
		msg += "; without -d and -i tests use this port"
	}
	if first {
		return fail(fix, "%s", msg)
	}
	return warn(fix, "%s", msg)
}

// startedCPUs are the CPUs this process may run on, and those online.
func startedCPUs() (started, online []int, err error) {
	if started, err = affinity.Current(); err == nil {
		online, err = affinity.Online()
	}
	return started, online, err
}

// checkNUMA says whether a test on d would run on the CPUs of its NUMA
// node: gorperf moves there by default, unless it is started on fewer
// CPUs than are online, when it stays on them.
func checkNUMA(opts *DoctorOptions, d deviceReport) finding {
	if d.NUMANode < 0 {
		return ok("%s names no NUMA node (a software device, or a host with one node): no CPUs to prefer", d.Name)
	}
	node, err := opts.NodeCPUs(d.NUMANode)
	if err == nil && len(node) == 0 {
		err = errors.New("no CPUs")
	}
	if err != nil {
		return warn("", "%s is on NUMA node %d, whose CPUs cannot be read: %v", d.Name, d.NUMANode, err)
	}
	started, online, err := opts.CPUs()
	if err != nil {
		return warn("", "%s is on NUMA node %d (CPUs %s); this process's CPUs cannot be read: %v", d.Name, d.NUMANode, affinity.FormatList(node), err)
	}
	at := fmt.Sprintf("%s is on NUMA node %d (CPUs %s)", d.Name, d.NUMANode, affinity.FormatList(node))
	var off []int
	for _, c := range started {
		if !slices.Contains(node, c) {
			off = append(off, c)
		}
	}
	switch {
	case len(started) >= len(online):
		return ok("%s: gorperf moves there by default", at)
	case len(off) == 0:
		return ok("%s, and all of this shell's CPUs (%s) are there", at, affinity.FormatList(started))
	}
	fix := fmt.Sprintf("start gorperf with --numa_node %d, or unrestricted (it then moves to the node), or `taskset -c %s`", d.NUMANode, affinity.FormatList(node))
	if len(off) == len(started) {
		return warn(fix, "%s, and this shell runs on CPUs %s, none of them there: gorperf stays on them, and its memory and interrupts are a socket away", at, affinity.FormatList(started))
	}
	return warn(fix, "%s, and this shell runs on CPUs %s, of which %s are elsewhere: gorperf stays on them", at, affinity.FormatList(started), affinity.FormatList(off))
}

const noDevicesFix = "load the NIC's RDMA driver (e.g. `modprobe mlx5_ib`), or set up soft-RoCE: ci/setup-rxe.sh (`rdma link add rxe0 type rxe netdev eth0`)"

func checkDevices(devs []deviceReport, err error) finding {
	if errors.Is(err, errors.ErrUnsupported) {
		return fail("build gorperf on Linux with cgo and rdma-core's -dev packages (docs/getting-started.md)", "RDMA devices: %v", err)
	}
	if err != nil {
		return fail("name a device that `gorperf devices` lists", "RDMA devices: %v", err)
	}
	if len(devs) == 0 {
		return fail(noDevicesFix, "no RDMA devices found")
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
	}
	return ok("RDMA devices: %s", strings.Join(names, ", "))
}

// checkDevFiles checks that /dev/infiniband exists and that each device's
// uverbs file, found through /sys/class/infiniband_verbs/*/ibdev, may be
// opened for reading and writing.
func checkDevFiles(root string, devs []deviceReport, access func(string) error) []finding {
	dir := filepath.Join(root, "dev/infiniband")
	if _, err := os.Stat(dir); err != nil {
		return []finding{fail("load ib_uverbs (`modprobe ib_uverbs`); in a container, pass the device: `docker run --device=/dev/infiniband`",
			"/dev/infiniband: %v", bareError(err))}
	}
	uverbs := map[string]string{} // ibdev name -> uverbsN
	cls, _ := filepath.Glob(filepath.Join(root, "sys/class/infiniband_verbs/uverbs*"))
	for _, c := range cls {
		if b, err := os.ReadFile(filepath.Join(c, "ibdev")); err == nil {
			uverbs[strings.TrimSpace(string(b))] = filepath.Base(c)
		}
	}
	var fs []finding
	for _, d := range devs {
		u, found := uverbs[d.Name]
		if !found {
			fs = append(fs, warn("check that ib_uverbs is loaded (`modprobe ib_uverbs`)",
				"%s: no uverbs device in /sys/class/infiniband_verbs", d.Name))
			continue
		}
		p := "/dev/infiniband/" + u
		if err := access(filepath.Join(root, p)); err != nil {
			fs = append(fs, fail(fmt.Sprintf("run as root, or grant access to %s (a udev rule giving it to the `rdma` group, mode 0660); in a container pass --device=/dev/infiniband", p),
				"%s (%s) is not readable and writable: %v", p, d.Name, bareError(err)))
			continue
		}
		fs = append(fs, ok("%s (%s) is readable and writable", p, d.Name))
	}
	if len(devs) == 0 {
		fs = append(fs, ok("/dev/infiniband exists"))
	}
	return append(fs, checkRdmaCM(root, access))
}

// checkRdmaCM checks /dev/infiniband/rdma_cm, rdma_ucm's device, which
// librdmacm opens for reading and writing to make any rdma_cm connection:
// tests with -R fail without it, the others do not need it. In a container
// given only the uverbs files it is missing though the host has it. Where
// rdma_ucm is not loaded (sys/module/rdma_ucm) librdmacm's netlink query
// for the device has the kernel load it, which makes the file, where
// rdmaCMAutoload says so.
func checkRdmaCM(root string, access func(string) error) finding {
	const p = "/dev/infiniband/rdma_cm"
	full := filepath.Join(root, p)
	if _, err := os.Stat(full); err != nil {
		fix := "in a container, pass it too (`docker run --device=/dev/infiniband/rdma_cm`, or all of /dev/infiniband)"
		if _, err := os.Stat(filepath.Join(root, "sys/module/rdma_ucm")); err != nil {
			if rdmaCMAutoload(root) {
				return ok("%s is not there yet: rdma_ucm is not loaded, and the first test with -R (rdma_cm) has the kernel load it, which makes the file", p)
			}
			fix = "load rdma_ucm (`modprobe rdma_ucm`, and list it in /etc/modules-load.d/); " + fix
		}
		return warn(fix, "%s: %v: tests with -R (rdma_cm) fail; the others do not need it", p, bareError(err))
	}
	if err := access(full); err != nil {
		return warn(fmt.Sprintf("run as root, or grant access to %s (the kernel makes it mode 0666)", p),
			"%s is not readable and writable: %v: tests with -R (rdma_cm) fail; the others do not need it", p, bareError(err))
	}
	return ok("%s is readable and writable (for -R)", p)
}

// rdmaCMAutoload reports whether librdmacm's first use would load rdma_ucm
// and so make /dev/infiniband/rdma_cm, by the files under root: the running
// kernel's modules.alias maps "rdma-client-rdma_cm" to it (from Linux 5.3,
// whose netlink query for a client's device loads the module of that
// alias), and /dev/infiniband is on a devtmpfs, where the kernel makes
// device files itself (a container's /dev is a tmpfs of its own).
func rdmaCMAutoload(root string) bool {
	rel, err := os.ReadFile(filepath.Join(root, "proc/sys/kernel/osrelease"))
	if err != nil {
		return false
	}
	aliases, err := os.ReadFile(filepath.Join(root, "lib/modules", strings.TrimSpace(string(rel)), "modules.alias"))
	if err != nil || !strings.Contains("\n"+string(aliases), "\nalias rdma-client-rdma_cm rdma_ucm\n") {
		return false
	}
	mounts, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return false
	}
	// "36 35 0:6 / /dev rw,relatime shared:2 - devtmpfs udev rw": the
	// mount point is the fifth field, the type the first after " - "; the
	// last mount of the longest point that holds /dev/infiniband counts.
	at, fstype := "", ""
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		i := slices.Index(f, "-")
		if len(f) < 5 || i < 5 || i+1 >= len(f) {
			continue
		}
		mp := f[4]
		if (mp == "/" || mp == "/dev" || mp == "/dev/infiniband") && len(mp) >= len(at) {
			at, fstype = mp, f[i+1]
		}
	}
	return fstype == "devtmpfs"
}

const (
	mib            = 1 << 20
	memlockWant    = 64 * mib
	rlimitInfinity = ^uint64(0)
)

func memlock() (uint64, error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		return 0, os.NewSyscallError("getrlimit", err)
	}
	return r.Cur, nil
}

const memlockFix = "`ulimit -l unlimited` (or memlock in /etc/security/limits.conf, LimitMEMLOCK=infinity for systemd); in a container `docker run --ulimit memlock=-1`, or `--cap-add IPC_LOCK`"

// capIPCLock is CAP_IPC_LOCK's bit in the capability masks of
// /proc/PID/status.
const capIPCLock = 14

// hasIPCLock reports whether this process's effective capabilities, read
// from proc/self/status under root, hold CAP_IPC_LOCK: the kernel then
// registers (pins) memory past the locked-memory limit (ib_umem_get
// checks capable(CAP_IPC_LOCK)). Root has it, and docker's --cap-add
// IPC_LOCK grants it. A status that cannot be read says no. capable()
// asks the initial user namespace: in another one (unshare -r, rootless
// podman), whose proc/self/uid_map is not the identity, the capability
// does not count.
func hasIPCLock(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/status"))
	if err != nil {
		return false
	}
	if m, err := os.ReadFile(filepath.Join(root, "proc/self/uid_map")); err == nil &&
		!slices.Equal(strings.Fields(string(m)), []string{"0", "0", "4294967295"}) {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && m&(1<<capIPCLock) != 0
		}
	}
	return false
}

// checkMemlock judges the locked-memory limit cur (err: it could not be
// read) of a process whose capabilities hold CAP_IPC_LOCK if ipcLock,
// which makes the limit no limit to registering memory.
func checkMemlock(cur uint64, err error, ipcLock bool) finding {
	const capSays = "this process has CAP_IPC_LOCK (as root has), with which the kernel registers buffers past the limit"
	switch {
	case ipcLock && err != nil:
		return ok("locked-memory limit: %v; but %s", err, capSays)
	case ipcLock && cur != rlimitInfinity && cur < memlockWant:
		return ok("locked-memory limit (ulimit -l) is %s, but %s", sizeString(cur), capSays)
	case err != nil:
		return warn(memlockFix, "locked-memory limit: %v", err)
	case cur == rlimitInfinity:
		return ok("locked-memory limit (ulimit -l) is unlimited")
	case cur < memlockWant:
		return warn(memlockFix, "locked-memory limit (ulimit -l) is %s: registering buffers larger than that fails with ENOMEM", sizeString(cur))
	}
	return ok("locked-memory limit (ulimit -l) is %s", sizeString(cur))
}

func sizeString(n uint64) string {
	switch {
	case n >= mib && n%mib == 0:
		return fmt.Sprintf("%d MiB", n/mib)
	case n >= 1024 && n%1024 == 0:
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkPort runs the checks of one port.
func checkPort(opts *DoctorOptions, d deviceReport, p portReport) []finding {
	at := fmt.Sprintf("%s port %d", d.Name, p.Port)
	if p.Error != "" {
		return []finding{fail("check `dmesg` for the driver's errors", "%s: %s", at, p.Error)}
	}
	fs := []finding{checkPortState(at, p, portNetdev(p))}
	switch p.LinkLayer {
	case "Ethernet":
		fs = append(fs, ok("%s: link layer Ethernet (RoCE)", at))
	case "InfiniBand":
		if p.LID == 0 {
			fs = append(fs, warn("start a subnet manager on the fabric (e.g. `systemctl start opensm`)",
				"%s: link layer InfiniBand, but the port has no LID", at))
		} else {
			fs = append(fs, ok("%s: link layer InfiniBand, LID %d", at, p.LID))
		}
		return fs // the rest is about RoCE
	default:
		return append(fs, warn("check the driver with `ibv_devinfo -v`", "%s: link layer %s: not checked further", at, p.LinkLayer))
	}
	netdev := portNetdev(p)
	fs = append(fs, checkGID(opts.Root, at, p, netdev, opts.Addrs)...)
	if netdev == "" {
		return fs
	}
	drv := driverName(opts.Root, d.Name)
	// Each netdev a test can run over has its own MTU: a VLAN's or a
	// macvlan's may be smaller than the port's netdev's.
	for _, nd := range gidNetdevs(p, netdev) {
		fs = append(fs, checkNetdevMTU(opts.Root, at, nd, p, mtuOverhead(drv)))
	}
	// ECN and PFC are the lower device's (mlx5's ecn/ and qos/ are on the
	// physical netdev, not on a VLAN over it); the MTU is the GID's own.
	lower := lowerNetdev(opts.Root, netdev)
	if lower != netdev {
		fs = append(fs, ok("%s: %s runs over %s, whose ECN and PFC settings apply", at, netdev, lower))
	}
	fs = append(fs, checkECN(opts.Root, lower, drv), checkPFC(opts.Root, lower, drv))
	if opts.TClassSet {
		fs = append(fs, checkTClass(opts.Root, lower, opts.TClass)...)
	}
	return fs
}

// lowerNetdev returns the device under netdev, through as many layers as
// there are (a VLAN, a macvlan, a VLAN over those), as the lower_<name>
// links in /sys/class/net/<netdev> name it: where the driver exposes the
// port's ECN and PFC settings. It stops at a device with no lower device or
// several (a bond's), and returns netdev itself if that has none.
func lowerNetdev(root, netdev string) string {
	nd := netdev
	for range 8 { // a stack deeper than this is not a real one
		ents, err := os.ReadDir(filepath.Join(root, "sys/class/net", nd))
		if err != nil {
			break
		}
		var lower []string
		for _, e := range ents {
			if l, ok := strings.CutPrefix(e.Name(), "lower_"); ok && l != "" {
				lower = append(lower, l)
			}
		}
		if len(lower) != 1 {
			break
		}
		nd = lower[0]
	}
	return nd
}

// checkPortState reports the port's state; netdev, the port's netdev
// (portNetdev) or "", goes into the fix.
func checkPortState(at string, p portReport, netdev string) finding {
	if p.State == "ACTIVE" {
		return ok("%s: state ACTIVE (%s)", at, p.PhysState)
	}
	fix := fmt.Sprintf("bring the port's netdev up (`ip link set %s up`) and check the cable and the switch port", cmp.Or(netdev, "<netdev>"))
	if p.LinkLayer == "InfiniBand" {
		fix = "check the cable; an INIT port waits for a subnet manager (`systemctl start opensm`)"
	}
	return fail(fix, "%s: state %s (%s), not ACTIVE", at, p.State, p.PhysState)
}

// portNetdev returns the netdev of the port's default GID, else of its
// first GID with one.
func portNetdev(p portReport) string {
	for _, g := range p.GIDs {
		if p.DefaultGID != nil && g.Index == p.DefaultGID.Index && g.Netdev != "" {
			return g.Netdev
		}
	}
	for _, g := range p.GIDs {
		if g.Netdev != "" {
			return g.Netdev
		}
	}
	return ""
}

// gidNetdevs returns netdev, the port's, and after it every other netdev
// that has a routable GID on the port (a VLAN or a macvlan over it), in
// the order of the GID table.
func gidNetdevs(p portReport, netdev string) []string {
	nds := []string{netdev}
	for _, g := range p.GIDs {
		if g.Netdev != "" && routableGID(g) && !slices.Contains(nds, g.Netdev) {
			nds = append(nds, g.Netdev)
		}
	}
	return nds
}

// routableGID reports whether g is a RoCE v2 GID of an address that is
// not link-local: one a test can route from.
func routableGID(g gidReport) bool {
	ip, err := netip.ParseAddr(g.IP)
	return err == nil && g.Type == "RoCE v2" && !ip.Unmap().IsLinkLocalUnicast()
}

// checkGID reports the port's default GID, the RoCE v2 GID SelectGID
// would choose (which a test uses where its control connection's local
// address has no GID on the port), and whether its address is one the
// netdev has, and the netdev is up, so that peers can route to it; root
// is where sysfs is.
func checkGID(root, at string, p portReport, netdev string, addrs func(string) ([]netip.Prefix, error)) []finding {
	if p.DefaultGID == nil {
		nd := netdev
		if nd == "" {
			nd = "<netdev>"
		}
		why := "no RoCE v2 GID"
		if p.NoGIDReason != "" {
			why = p.NoGIDReason
		}
		return append([]finding{fail(fmt.Sprintf("give %s a routable IP address of its subnet (`ip addr add <address>/<prefix length> dev %s`): the kernel adds its GIDs", nd, nd),
			"%s: no usable RoCE v2 GID: %s", at, why)}, checkGIDIndexLimit(at, p)...)
	}
	var g gidReport
	for _, e := range p.GIDs {
		if e.Index == p.DefaultGID.Index {
			g = e
		}
	}
	fs := []finding{ok("%s: RoCE v2 GID index %d (%s on %s) is the default: %s; %s", at, g.Index, g.IP, dash(g.Netdev), p.DefaultGID.Reason, defaultGIDUse)}
	fs = append(fs, checkGIDTie(at, p, g, addrs)...)
	fs = append(fs, checkGIDAddrState(at, p)...)
	fs = append(fs, checkGIDIndexLimit(at, p)...)
	ip, err := netip.ParseAddr(g.IP)
	if err != nil || g.Netdev == "" {
		return append(fs, warn("check `rdma link show` and the GID table in /sys/class/infiniband/<dev>/ports/<port>/gid_attrs", "%s: cannot tell which netdev GID index %d belongs to", at, g.Index))
	}
	have, err := addrs(g.Netdev)
	if err != nil {
		return append(fs, warn("check the netdev with `ip addr show`", "%s: addresses of %s: %v", at, g.Netdev, err))
	}
	for _, a := range have {
		if a.Addr().Is4In6() && a.Addr().Unmap() == ip {
			return append(fs, warn(fmt.Sprintf("add %s to %s as an IPv4 address (`ip addr add %s/24 dev %s`)", ip, g.Netdev, ip, g.Netdev),
				"%s: %s has %s as the IPv6 address %s, not as IPv4: RoCE v2 cannot route from GID index %d", at, g.Netdev, ip, a.Addr(), g.Index))
		}
		if a.Addr() == ip {
			if ip.IsLinkLocalUnicast() {
				return append(fs, warn("add a routable address to "+g.Netdev, "%s: %s on %s is link-local, not routable", at, ip, g.Netdev))
			}
			if down := netdevDown(root, g.Netdev); down != "" {
				return append(fs, warn(fmt.Sprintf("bring it up: `ip link set %s up`", g.Netdev),
					"%s: %s has %s, but is down (%s): not routable until it is up", at, g.Netdev, a, down))
			}
			return append(fs, ok("%s: %s has %s: routable", at, g.Netdev, a))
		}
	}
	return append(fs, warn(fmt.Sprintf("check `ip addr show %s`; a stale GID goes away when the address does", g.Netdev),
		"%s: GID index %d's address %s is not on %s", at, g.Index, ip, g.Netdev))
}

// checkGIDTie warns when the default GID g tied with entries of other
// netdevs or subnets: the table's order then decides, which is not the
// order the addresses were added in (the kernel puts a new address's GIDs
// in the lowest free slots), and another host may pick another network.
// That matters where a test takes the default GID: where its control
// connection's local address has no GID on the port.
func checkGIDTie(at string, p portReport, g gidReport, addrs func(string) ([]netip.Prefix, error)) []finding {
	if len(p.DefaultGID.Tied) == 0 {
		return nil
	}
	tied := map[int]bool{g.Index: true}
	for _, i := range p.DefaultGID.Tied {
		tied[i] = true
	}
	var netdevs, subnets []string
	add := func(l []string, s string) []string {
		if s == "" || slices.Contains(l, s) {
			return l
		}
		return append(l, s)
	}
	for _, e := range p.GIDs {
		if !tied[e.Index] {
			continue
		}
		netdevs = add(netdevs, e.Netdev)
		ip, err := netip.ParseAddr(e.IP)
		if err != nil || e.Netdev == "" {
			continue
		}
		have, _ := addrs(e.Netdev)
		for _, a := range have {
			if a.Addr() == ip && a.IsValid() {
				subnets = add(subnets, a.Masked().String())
			}
		}
	}
	if len(netdevs) < 2 && len(subnets) < 2 {
		return nil
	}
	return []finding{warn("choose with --gid-netdev, --gid-subnet or --source_ip: each host takes the lowest-numbered of the tied entries, and the kernel puts a new address's GIDs in the lowest free slots, reusing those of addresses removed, so that order is not the order the addresses were added in",
		"%s: the default GID index %d ties with %d other entries (netdevs %s; subnets %s): where a test's control connection's local address has no GID on this port (loopback, a control connection over another NIC), another host may pick another network",
		at, g.Index, len(p.DefaultGID.Tied), strings.Join(netdevs, ", "), dash(strings.Join(subnets, ", ")))}
}

// checkGIDAddrState warns of GIDs whose address cannot be used: a
// tentative or dadfailed IPv6 address, or an IPv4-mapped one added as
// IPv6. Selection passes them over; a peer or a rule naming one fails.
func checkGIDAddrState(at string, p portReport) []finding {
	var bad []string
	for _, e := range p.GIDs {
		if strings.Contains(e.AddrFlags, "tentative") || strings.Contains(e.AddrFlags, "dadfailed") || e.MappedIPv6 {
			bad = append(bad, fmt.Sprintf("index %d %s%s on %s", e.Index, e.IP, e.note(), dash(e.Netdev)))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return []finding{warn("remove or fix these addresses (`ip addr show`): a dadfailed one is another host's too; ::ffff:a.b.c.d belongs on the netdev as IPv4 a.b.c.d",
		"%s: GIDs of unusable addresses, which GID selection passes over: %s", at, strings.Join(bad, "; "))}
}

// checkGIDIndexLimit warns of routable GIDs past index 255, which no
// test can use: the verbs' GID index (sgid_index, of ibv_global_route
// and ibv_qp_attr's address vector) is 8 bits. Each address of the
// port's netdevs and their VLANs adds a RoCE v1 and a RoCE v2 GID, so a
// few hundred addresses fill the table past it; GID selection passes over
// those entries, and -x cannot name them.
func checkGIDIndexLimit(at string, p portReport) []finding {
	var past []gidReport
	var netdevs []string
	for _, g := range p.GIDs {
		if g.Index > maxGIDIndex && routableGID(g) {
			past = append(past, g)
			if g.Netdev != "" && !slices.Contains(netdevs, g.Netdev) {
				netdevs = append(netdevs, g.Netdev)
			}
		}
	}
	if len(past) == 0 {
		return nil
	}
	first := past[0]
	return []finding{warn(fmt.Sprintf("remove addresses that RDMA does not need from %s (`ip addr show`; each adds two GIDs, RoCE v1 and v2), so that every address's GIDs are at index 255 or below; a GID keeps its index until its address goes", dash(strings.Join(netdevs, ", "))),
		"%s: %d routable GIDs are past index 255, where no test can use them (the verbs' GID index is 8 bits): the first, index %d, is %s on %s",
		at, len(past), first.Index, first.IP, dash(first.Netdev))}
}

// netdevDown says, where netdev is down, how sysfs under root says so:
// its flags lack IFF_UP ("administratively down"), or its operstate is
// down, lowerlayerdown (a VLAN over a netdev that is down) or notpresent;
// "" where it is up, or sysfs cannot tell (operstate unknown, as a
// netdev that reports no carrier has).
func netdevDown(root, netdev string) string {
	dir := filepath.Join(root, "sys/class/net", netdev)
	if b, err := os.ReadFile(filepath.Join(dir, "flags")); err == nil {
		if f, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 32); err == nil && f&unix.IFF_UP == 0 {
			return "administratively down: `ip link show` lacks UP"
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "operstate"))
	if st := strings.TrimSpace(string(b)); err == nil && (st == "down" || st == "lowerlayerdown" || st == "notpresent") {
		return "operstate " + st
	}
	return ""
}

// mtuOverhead is the bytes of headers that drv's ports count between the
// netdev MTU and the RDMA MTU, as a test's set-up counts them.
func mtuOverhead(drv string) int { return bench.MTUOverhead(isRXE(drv)) }

// checkNetdevMTU judges the MTU of netdev, the port's or another that
// has GIDs on it (a VLAN's), whose driver puts overhead bytes of headers
// around an RDMA MTU's payload: one too small for the port's active MTU
// makes the path MTU of a test over its GIDs smaller (gorperf's and
// rdma_cm's, which cap it to what the GID's netdev carries), or loses
// the larger packets (perftest's without -R).
func checkNetdevMTU(root, at, netdev string, p portReport, overhead int) finding {
	mtu, err := bench.NetdevMTU(root, netdev)
	if err != nil {
		return warn(fmt.Sprintf("check `ip link show %s`", netdev), "%s: MTU of %s: %v", at, netdev, bareError(err))
	}
	fits := bench.CarriedMTU(mtu, overhead, p.MaxMTU) // up to the port's max
	switch {
	case mtu < p.ActiveMTU+overhead && fits == 0:
		return warn(fmt.Sprintf("raise it: `ip link set %s mtu %d` (and the switch ports' MTU)", netdev, p.ActiveMTU+overhead),
			"%s: %s MTU %d is too small for RDMA MTU %d, which needs %d+%d bytes of RoCE v2 headers, or for any RDMA MTU: RDMA over its GIDs loses its packets",
			at, netdev, mtu, p.ActiveMTU, p.ActiveMTU, overhead)
	case mtu < p.ActiveMTU+overhead:
		gets := fmt.Sprintf("path MTU %d from gorperf and rdma_cm (-R)", fits)
		if cm := bench.CarriedMTU(mtu, bench.RoCEOverhead, p.MaxMTU); cm != fits {
			// rdma_cm counts 96 bytes of headers on any device
			// (iboe_get_mtu), more than rxe's 80.
			gets = fmt.Sprintf("path MTU %d from gorperf, %d from rdma_cm (-R, which counts %d bytes of headers)", fits, cm, bench.RoCEOverhead)
		}
		return warn(fmt.Sprintf("raise it: `ip link set %s mtu %d` (and the switch ports' MTU), or give perftest -m %d", netdev, p.ActiveMTU+overhead, fits),
			"%s: %s MTU %d is too small for RDMA MTU %d, which needs %d+%d bytes of RoCE v2 headers: a test over its GIDs gets %s, and loses its large packets where the path MTU is the port's (perftest without -R)",
			at, netdev, mtu, p.ActiveMTU, p.ActiveMTU, overhead, gets)
	case fits > p.ActiveMTU && lowerNetdev(root, netdev) == netdev:
		// The port's MTU follows its own netdev's, not a VLAN's over it.
		return warn(fmt.Sprintf("most drivers set the port MTU from the netdev MTU: re-set it (`ip link set %s mtu %d`) and check `gorperf devices`", netdev, mtu),
			"%s: %s MTU %d would carry RDMA MTU %d, but the port is active at %d", at, netdev, mtu, fits, p.ActiveMTU)
	}
	return ok("%s: %s MTU %d carries RDMA MTU %d (+%d bytes of RoCE v2 headers)", at, netdev, mtu, p.ActiveMTU, overhead)
}

// driverName names the driver behind an RDMA device: the kernel driver of
// its parent device; for a device with none that has the attribute parent,
// which rdma_rxe alone gives its devices (the netdev's name), rdma_rxe;
// else the device name without its number (rxe0: rxe).
func driverName(root, ibdev string) string {
	dir := filepath.Join(root, "sys/class/infiniband", ibdev)
	if l, err := os.Readlink(filepath.Join(dir, "device/driver")); err == nil {
		return filepath.Base(l)
	}
	if _, err := os.Stat(filepath.Join(dir, "parent")); err == nil {
		return "rdma_rxe"
	}
	return strings.TrimRight(ibdev, "0123456789_")
}

// isRXE reports whether driverName's drv is soft-RoCE's.
func isRXE(drv string) bool { return drv == "rdma_rxe" || drv == "rxe" }

// checkECN reports on which priorities ECN is enabled, as mlx5 (MLNX_OFED's)
// exposes it in /sys/class/net/<netdev>/ecn/roce_{np,rp}/enable/<prio>,
// files holding 1 or 0: the notification point (the receiver, which answers
// packets marked CE with CNPs) and the reaction point (the sender, which
// slows down on CNPs). Rate control needs both on a priority: the
// receiver's NP and the sender's RP, and a host is each in turn. A priority
// on which one is on is one in use; the other being off there is a warning.
func checkECN(root, netdev, drv string) finding {
	dir := filepath.Join(root, "sys/class/net", netdev, "ecn")
	if _, err := os.Stat(dir); err != nil {
		return ok("%s: ECN: not exposed by this driver (%s)", netdev, drv)
	}
	np, rp := ecnPrios(filepath.Join(dir, "roce_np/enable")), ecnPrios(filepath.Join(dir, "roce_rp/enable"))
	if len(np) == 0 && len(rp) == 0 {
		return warn(fmt.Sprintf("enable it on RoCE's priority, e.g. 3: `echo 1 > /sys/class/net/%s/ecn/roce_np/enable/3` and the same for roce_rp", netdev),
			"%s: ECN is off on every priority: congestion will be met with drops or PFC pauses, not rate control", netdev)
	}
	noRP, noNP := prioMinus(np, rp), prioMinus(rp, np)
	var why, fix []string
	if len(noRP) > 0 {
		why = append(why, fmt.Sprintf("the reaction point is off on priorities %s, where the notification point is on: what this host sends there does not slow down when its peers report congestion", prioList(noRP)))
		fix = append(fix, ecnEnable(netdev, "roce_rp", noRP))
	}
	if len(noNP) > 0 {
		why = append(why, fmt.Sprintf("the notification point is off on priorities %s, where the reaction point is on: this host sends no CNPs for congested traffic it receives there, so its peers do not slow down", prioList(noNP)))
		fix = append(fix, ecnEnable(netdev, "roce_np", noNP))
	}
	if len(why) > 0 {
		return warn(strings.Join(fix, "; "), "%s: ECN (notification point %s, reaction point %s): %s",
			netdev, prioList(np), prioList(rp), strings.Join(why, "; "))
	}
	return ok("%s: ECN on for priorities %s (notification and reaction point)", netdev, prioList(np))
}

// ecnEnable is the shell command that turns ECN's point (roce_np, roce_rp)
// on for prios.
func ecnEnable(netdev, point string, prios []int) string {
	if len(prios) == 1 {
		return fmt.Sprintf("`echo 1 > /sys/class/net/%s/ecn/%s/enable/%d`", netdev, point, prios[0])
	}
	return fmt.Sprintf("`for p in %s; do echo 1 > /sys/class/net/%s/ecn/%s/enable/$p; done`",
		strings.ReplaceAll(prioList(prios), ",", " "), netdev, point)
}

// prioMinus returns the priorities of a that b lacks.
func prioMinus(a, b []int) []int {
	var out []int
	for _, p := range a {
		if !slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

func ecnPrios(dir string) []int {
	ents, _ := os.ReadDir(dir)
	var on []int
	for _, e := range ents {
		prio, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && strings.TrimSpace(string(b)) == "1" {
			on = append(on, prio)
		}
	}
	sort.Ints(on)
	return on
}

func prioList(p []int) string {
	if len(p) == 0 {
		return "none"
	}
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// checkPFC reports the netdev's priority flow control set-up where the
// driver exposes it in /sys/class/net/<netdev>/qos/pfc.
func checkPFC(root, netdev, drv string) finding {
	b, err := os.ReadFile(filepath.Join(root, "sys/class/net", netdev, "qos/pfc"))
	if err != nil {
		return ok("%s: PFC: not exposed by this driver (%s); `dcb pfc show dev %s` may know", netdev, drv, netdev)
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		s = "(empty)"
	}
	return ok("%s: PFC: %s", netdev, s)
}

// tclassPrio is the priority a RoCE v2 packet with traffic class tc gets
// under DSCP trust with the default map: DSCP (the upper six bits) / 8.
func tclassPrio(tc int) int { return tc >> 2 >> 3 }

// checkTClass checks what the traffic class the tests use will meet: its
// ECN bits, and ECN and PFC on the priority it maps to, where the driver
// exposes them.
func checkTClass(root, netdev string, tc int) []finding {
	prio := tclassPrio(tc)
	var fs []finding
	switch tc & 3 {
	case 3:
		fs = append(fs, warn("use a traffic class whose low two bits are 00, 01 or 10",
			"--tclass %d sets ECN to CE (11): every packet claims congestion", tc))
	default:
		fs = append(fs, ok("--tclass %d: DSCP %d, priority %d under DSCP trust (default map)", tc, tc>>2, prio))
	}
	dir := filepath.Join(root, "sys/class/net", netdev, "ecn")
	if _, err := os.Stat(dir); err == nil {
		np, rp := ecnPrios(filepath.Join(dir, "roce_np/enable")), ecnPrios(filepath.Join(dir, "roce_rp/enable"))
		inNP, inRP := slices.Contains(np, prio), slices.Contains(rp, prio)
		switch {
		case !inNP && !inRP:
			fs = append(fs, warn(fmt.Sprintf("`echo 1 > /sys/class/net/%s/ecn/roce_np/enable/%d` and the same under roce_rp", netdev, prio),
				"%s: ECN is off for priority %d, the one --tclass %d maps to", netdev, prio, tc))
		case !inRP:
			fs = append(fs, warn(ecnEnable(netdev, "roce_rp", []int{prio}),
				"%s: ECN's reaction point is off for priority %d, the one --tclass %d maps to: this host's sends there do not slow down for congestion", netdev, prio, tc))
		case !inNP:
			fs = append(fs, warn(ecnEnable(netdev, "roce_np", []int{prio}),
				"%s: ECN's notification point is off for priority %d, the one --tclass %d maps to: this host sends no CNPs for congestion there", netdev, prio, tc))
		default:
			fs = append(fs, ok("%s: ECN on for priority %d", netdev, prio))
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "sys/class/net", netdev, "qos/pfc")); err == nil {
		// "Priority 0..7: 0 0 0 1 0 0 0 0": the last eight fields.
		f := strings.Fields(string(b))
		if len(f) >= 8 && prio < 8 {
			if f[len(f)-8+prio] != "1" {
				fs = append(fs, warn(fmt.Sprintf("enable PFC on priority %d (e.g. `mlnx_qos -i %s --pfc ...` or `dcb pfc set dev %s prio-pfc %d:on`), or rely on ECN alone", prio, netdev, netdev, prio),
					"%s: PFC is off for priority %d: the traffic class is lossy", netdev, prio))
			} else {
				fs = append(fs, ok("%s: PFC on for priority %d", netdev, prio))
			}
		}
	}
	return fs
}

// netdevAddrs returns a network device's addresses.
func netdevAddrs(name string) ([]netip.Prefix, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	return ipPrefixes(as), nil
}

// ipPrefixes returns the IP addresses among as (net.Interface.Addrs',
// net.InterfaceAddrs') with their prefix lengths.
func ipPrefixes(as []net.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(n.IP)
			ones, bits := n.Mask.Size()
			// The net package holds an IPv4 address in 16 bytes with a
			// 4-byte mask; ::ffff:a.b.c.d added as IPv6 has a 16-byte
			// one and stays IPv6.
			if ip.Is4In6() && bits == 32 {
				ip = ip.Unmap()
			}
			out = append(out, netip.PrefixFrom(ip, ones))
		}
	}
	return out
}

// bareError is err without the operation and path that an *fs.PathError
// or *os.SyscallError puts before the cause, for a message that names the
// path itself; any other error (a bare syscall.Errno, say) as it is.
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}
