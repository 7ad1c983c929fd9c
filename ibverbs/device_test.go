//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestDeviceSmoke lists devices, opens the test device, queries port 1 and
// reads its GID table, and checks what it read against the kernel's view:
// an active Ethernet port with a RoCE v2 GID that maps its netdev's IPv4
// address.
func TestDeviceSmoke(t *testing.T) {
	info := rdmatest.Device(t)
	devs, err := ibverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range devs {
		if d.Name == info.Name {
			found = true
			if d.NodeType == ibverbs.NodeUnknown || d.GUID == 0 {
				t.Errorf("%s: node type %v GUID %s", d.Name, d.NodeType, d.GUIDString())
			}
			// The node the kernel names under the device's class entry
			// (none for rxe, which has no parent device), or -1.
			node := -1
			if b, err := os.ReadFile("/sys/class/infiniband/" + d.Name + "/device/numa_node"); err == nil {
				if _, err := fmt.Sscan(string(b), &node); err != nil || node < 0 {
					node = -1
				}
			}
			if d.NUMANode != node {
				t.Errorf("%s: NUMA node %d, want %d", d.Name, d.NUMANode, node)
			}
		}
	}
	if !found {
		t.Fatalf("Devices() lacks %s: %+v", info.Name, devs)
	}
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	da, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if da.PhysPortCnt < 1 || da.MaxQP < 1 || da.MaxCQE < 1 || da.MaxMRSize == 0 {
		t.Errorf("implausible device attributes: %+v", da)
	}
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	if pa.State != ibverbs.PortActive {
		t.Errorf("port state %v, want ACTIVE", pa.State)
	}
	if pa.LinkLayer != ibverbs.LinkLayerEthernet {
		t.Skipf("link layer %v: the RoCE checks below need Ethernet", pa.LinkLayer)
	}
	if pa.ActiveMTU.Bytes() == 0 || pa.GIDTableLen == 0 {
		t.Errorf("active MTU %v, GID table length %d", pa.ActiveMTU, pa.GIDTableLen)
	}
	table, err := ctx.GIDTable(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	var v2 *ibverbs.GIDEntry
	for i, e := range table {
		t.Logf("%v", e)
		if e.Type == ibverbs.GIDTypeRoCEv2 && e.IP().Is4() && v2 == nil {
			v2 = &table[i]
		}
	}
	if v2 == nil {
		t.Fatalf("no IPv4 RoCE v2 GID in %v", table)
	}
	if v2.Netdev == "" {
		t.Fatalf("GID %v has no netdev", v2)
	}
	// The GID must map an IPv4 address the netdev really has.
	ifc, err := net.InterfaceByName(v2.Netdev)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == v2.IP() {
			ok = true
		}
	}
	if !ok {
		t.Errorf("GID %v maps %v, which %s does not have (it has %v)", v2.GID, v2.IP(), v2.Netdev, addrs)
	}
	// The single-entry query agrees with the table.
	one, err := ctx.QueryGID(info.Port, v2.Index)
	if err != nil {
		t.Fatal(err)
	}
	if one.GID != v2.GID || one.Type != v2.Type {
		t.Errorf("QueryGID(%d) = %v, table has %v", v2.Index, one, v2)
	}
}

func TestOpenErrors(t *testing.T) {
	info := rdmatest.Device(t)
	_, err := ibverbs.Open("no-such-device")
	if !errors.Is(err, syscall.ENODEV) {
		t.Errorf("Open(unknown) = %v, want ENODEV", err)
	}
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.QueryPort(99); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPort(99) = %v, want EINVAL", err)
	}
	if _, err := ctx.QueryGID(info.Port, pa.GIDTableLen); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryGID(out of range) = %v, want EINVAL", err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ctx.QueryPort(info.Port); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("QueryPort after Close = %v, want ErrClosed", err)
	}
}

// TestNoRDMAKernel checks a host whose kernel has no RDMA user-space
// interface, where libibverbs fails ibv_get_device_list with ENOSYS: that
// is a host with no devices. It runs only on such a host (CI's, outside
// the VM).
func TestNoRDMAKernel(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband_verbs"); err == nil {
		t.Skip("this kernel has the RDMA user-space interface")
	}
	devs, err := ibverbs.Devices()
	if err != nil || len(devs) != 0 {
		t.Errorf("Devices() = %v, %v; want an empty list", devs, err)
	}
	for _, name := range []string{"", "mlx5_0"} {
		_, err := ibverbs.Open(name)
		if !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "no RDMA devices") {
			t.Errorf("Open(%q) = %v, want ENODEV saying there are no devices", name, err)
		}
	}
}

// TestGIDTableMatchesQueryGID reads every port's GID table both ways, at
// once (ibv_query_gid_table, which returns all ports' entries into one
// buffer) and slot by slot (ibv_query_gid_ex), and requires the same
// entries: each used slot once, with its type and netdev, and no other.
// TestQueryPKey reads every entry of the test port's P_Key table
// (ibv_query_pkey): on RoCE, as on soft-RoCE, index 0 holds the default
// key 0xffff. An index past the table, a negative one or a port the
// device does not have fail with EINVAL, the first two saying the table's
// size.
func TestQueryPKey(t *testing.T) {
	info, ctx := openTestDevice(t)
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	if pa.PKeyTableLen < 1 {
		t.Fatalf("port %d's P_Key table has %d entries", info.Port, pa.PKeyTableLen)
	}
	for i := range pa.PKeyTableLen {
		k, err := ctx.QueryPKey(info.Port, i)
		if err != nil {
			t.Fatalf("P_Key index %d of %d: %v", i, pa.PKeyTableLen, err)
		}
		if i == 0 && pa.LinkLayer == ibverbs.LinkLayerEthernet && k != 0xffff {
			t.Errorf("P_Key index 0 on RoCE = %#x, want 0xffff", k)
		}
		if i == 0 {
			t.Logf("%s port %d: P_Key table of %d, index 0 %#x", ctx.Name(), info.Port, pa.PKeyTableLen, k)
		}
	}
	n := pa.PKeyTableLen
	for _, i := range []int{n, -1} {
		want := fmt.Sprintf("P_Key index %d out of range: %s port %d has %d entries (0-%d): ibv_query_pkey: invalid argument",
			i, ctx.Name(), info.Port, n, n-1)
		if k, err := ctx.QueryPKey(info.Port, i); !errors.Is(err, syscall.EINVAL) || err.Error() != want {
			t.Errorf("QueryPKey(%d, %d) = %#x, %v; want EINVAL: %q", info.Port, i, k, err, want)
		}
	}
	if _, err := ctx.QueryPKey(0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QueryPKey of port 0 = %v, want EINVAL", err)
	}
}

func TestGIDTableMatchesQueryGID(t *testing.T) {
	info, ctx := openTestDevice(t)
	da, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	for port := 1; port <= da.PhysPortCnt; port++ {
		if n := checkGIDTable(t, ctx, port); n == 0 && port == info.Port {
			t.Errorf("port %d: no valid GID", port)
		}
	}
}

// TestGIDTableSlotBySlot reads GID tables as GIDTable does where all the
// ports' tables together pass what one ibv_query_gid_table call can
// return (2047 entries: an mlx5 uplink with its representors' ports):
// with that limit lowered to 4, it reads the port's table slot by slot
// (ibv_query_gid_ex), and must read what the one call reads, on the test
// device and the VM's second one. The library must fail one call past
// the limit with EINVAL, and not at it, or the limit is wrong.
func TestGIDTableSlotBySlot(t *testing.T) {
	info := rdmatest.Device(t)
	names := []string{info.Name}
	if d := os.Getenv("RXE_DEV2"); d != "" && d != info.Name {
		names = append(names, d)
	}
	for _, name := range names {
		ctx, err := ibverbs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Close()
		da, err := ctx.QueryDevice()
		if err != nil {
			t.Fatal(err)
		}
		for port := 1; port <= da.PhysPortCnt; port++ {
			pa, err := ctx.QueryPort(port)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := ctx.GIDTable(port)
			if err != nil {
				t.Fatalf("%s port %d: GIDTable: %v", name, port, err)
			}
			restore := ibverbs.SetGIDTableMaxEntries(4)
			slots, err := ctx.GIDTable(port)
			if err == nil {
				checkGIDTable(t, ctx, port)
			}
			restore()
			if err != nil {
				t.Fatalf("%s port %d: GIDTable slot by slot: %v", name, port, err)
			}
			if pa.GIDTableLen <= 4 || len(whole) == 0 && name == info.Name && port == info.Port {
				t.Errorf("%s port %d: %d slots, %d entries: too few to test reading it slot by slot", name, port, pa.GIDTableLen, len(whole))
			}
			if !slices.Equal(whole, slots) {
				t.Errorf("%s port %d: one call read\n%v\nslot by slot\n%v", name, port, whole, slots)
			}
		}
		max := ibverbs.GIDTableMaxEntries()
		if _, err := ctx.QueryGIDTable(max); err != nil {
			t.Errorf("%s: ibv_query_gid_table with %d entries: %v", name, max, err)
		}
		if _, err := ctx.QueryGIDTable(max + 1); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "ibv_query_gid_table") {
			t.Errorf("%s: ibv_query_gid_table with %d entries: %v, want EINVAL", name, max+1, err)
		}
	}
}

// TestGIDTableNamesNetdevsOnce checks that GIDTable names the entries'
// netdevs with one listing of the host's interfaces, read at once or slot
// by slot, where each entry's lookup (net.InterfaceByIndex) listed them
// all again: some 300 listings for TestGIDIndexPast255's table.
func TestGIDTableNamesNetdevsOnce(t *testing.T) {
	info, ctx := openTestDevice(t)
	count, restore := ibverbs.CountInterfaceListings()
	defer restore()
	for _, max := range []int{ibverbs.GIDTableMaxEntries(), 4} {
		restoreMax := ibverbs.SetGIDTableMaxEntries(max)
		before := count()
		table, err := ctx.GIDTable(info.Port)
		restoreMax()
		if err != nil {
			t.Fatal(err)
		}
		named := 0
		for _, e := range table {
			if e.Netdev != "" {
				named++
			}
		}
		if named < 2 {
			t.Errorf("%d entries of %v name a netdev, want 2 or more", named, table)
		}
		if n := count() - before; n != 1 {
			t.Errorf("read with at most %d entries a call: %d listings of the interfaces for %d entries, want 1", max, n, len(table))
		}
	}
}

// checkGIDTable compares ctx.GIDTable(port) with QueryGID of each slot and
// returns the number of valid entries.
func checkGIDTable(t *testing.T, ctx *ibverbs.Context, port int) int {
	t.Helper()
	pa, err := ctx.QueryPort(port)
	if err != nil {
		t.Fatal(err)
	}
	table, err := ctx.GIDTable(port)
	if err != nil {
		t.Fatalf("GIDTable(%d): %v", port, err)
	}
	byIndex := map[int]ibverbs.GIDEntry{}
	for _, e := range table {
		if e.Port != port {
			t.Errorf("GIDTable(%d) has %v of port %d", port, e, e.Port)
		}
		if _, dup := byIndex[e.Index]; dup {
			t.Errorf("GIDTable(%d) has index %d twice", port, e.Index)
		}
		byIndex[e.Index] = e
	}
	valid := 0
	for i := 0; i < pa.GIDTableLen; i++ {
		one, err := ctx.QueryGID(port, i)
		if errors.Is(err, syscall.ENODATA) {
			if e, ok := byIndex[i]; ok {
				t.Errorf("port %d index %d: QueryGID says empty, GIDTable has %v", port, i, e)
			}
			continue
		}
		if err != nil {
			t.Fatalf("QueryGID(%d, %d): %v", port, i, err)
		}
		if one.GID.IsZero() {
			continue
		}
		valid++
		e, ok := byIndex[i]
		if !ok {
			t.Errorf("port %d index %d: QueryGID has %v, GIDTable lacks it", port, i, one)
			continue
		}
		if e != one {
			t.Errorf("port %d index %d: GIDTable has %+v, QueryGID %+v", port, i, e, one)
		}
	}
	if valid != len(table) {
		t.Errorf("port %d: %d valid slots, GIDTable has %d entries", port, valid, len(table))
	}
	return valid
}

// TestGIDIndexPast255 gives the rxe VM's netdev enough IPv6 addresses that
// the port's GID table (1024 slots on rxe, one RoCE v2 entry an address
// on Linux 6.1, and a RoCE v1 one too where the driver makes both) fills
// past index 255, which the verbs' 8-bit sgid_index cannot name. The table
// must still read the same both ways; SelectGID must pass such an entry
// over, and Endpoint refuse its index rather than wrap it (256 to 0). It
// changes the netdev's addresses, so it runs only on the VM's netdev.
func TestGIDIndexPast255(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	nd := os.Getenv("RXE_NETDEV")
	if nd == "" || os.Getenv("GORPERF_TEST_DEVICE") != os.Getenv("RXE_DEV") {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("in the rxe VM but RXE_NETDEV is unset")
		}
		t.Skip("needs the rxe VM's netdev (RXE_NETDEV) to add addresses to")
	}
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	if pa.GIDTableLen <= 256 {
		t.Skipf("the GID table has %d slots: no index past 255", pa.GIDTableLen)
	}
	const n = 300
	sub := netip.MustParsePrefix("2001:3::/64")
	var add, del strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&add, "addr add 2001:3::%x/64 dev %s nodad\n", i, nd)
		fmt.Fprintf(&del, "addr del 2001:3::%x/64 dev %s\n", i, nd)
	}
	ip := func(script string) error {
		cmd := exec.Command("ip", "-batch", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("ip -batch: %v: %s", err, out)
		}
		return nil
	}
	// ours returns the table's entries of the added addresses, and the
	// first RoCE v2 one past index 255.
	ours := func() (int, ibverbs.GIDEntry) {
		table, err := ctx.GIDTable(info.Port)
		if err != nil {
			t.Fatal(err)
		}
		k, past := 0, ibverbs.GIDEntry{}
		for _, e := range table {
			if sub.Contains(e.IP()) {
				k++
				if e.Index > 255 && e.Type == ibverbs.GIDTypeRoCEv2 && past.Index == 0 {
					past = e
				}
			}
		}
		return k, past
	}
	wait := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in 10s", what)
			}
		}
	}
	if err := ip(add.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ip(del.String()); err != nil {
			t.Error(err)
		}
		wait("the added addresses' GIDs to go", func() bool { k, _ := ours(); return k == 0 })
	})
	var past ibverbs.GIDEntry
	k := 0
	wait("a RoCE v2 GID past index 255", func() bool { k, past = ours(); return past.Index > 255 })
	t.Logf("%d GIDs of the %d addresses added; %v", k, n, past)

	if got := checkGIDTable(t, ctx, info.Port); got <= 256 {
		t.Errorf("%d valid GIDs, want more than 256", got)
	}
	whole, err := ctx.GIDTable(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	restore := ibverbs.SetGIDTableMaxEntries(4)
	slots, err := ctx.GIDTable(info.Port)
	restore()
	if err != nil || !slices.Equal(whole, slots) {
		t.Errorf("GIDTable slot by slot: %d entries, %v; want the %d of one call", len(slots), err, len(whole))
	}
	_, err = ctx.SelectGID(info.Port, ibverbs.GIDRule{Addr: past.IP()})
	var ne *ibverbs.NoGIDError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "past 255") {
		t.Errorf("SelectGID(%v) = %v, want a NoGIDError that says the index is past 255", past.IP(), err)
	}

	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	cq, err := ctx.CreateCQ(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: ibverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	if ep, err := qp.Endpoint(info.Port, past.Index); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Endpoint(%d, %d) = %v (GID index %d), %v; want EINVAL", info.Port, past.Index, ep, ep.GIDIndex, err)
	}
	if _, err := qp.Endpoint(info.Port, 0); err != nil {
		t.Errorf("Endpoint(%d, 0): %v", info.Port, err)
	}
}

// TestSelectGIDZone picks the port's link-local RoCE v2 GID by its address
// with a zone, as a link-local socket address has it: the zone names the
// GID's netdev, by name or index; another netdev's zone rules it out.
func TestSelectGIDZone(t *testing.T) {
	ctx, info := rdmatest.Open(t)
	// LinkLocalGID skips where the port has none, or fails under
	// GORPERF_REQUIRE_DEVICE=1 unless GORPERF_ALLOW_UNSUPPORTED lists
	// link-local-gid.
	ll := rdmatest.LinkLocalGID(t, info.Name, info.Port)
	for _, tt := range []struct {
		zone string
		ok   bool
	}{{ll.Netdev, true}, {fmt.Sprint(ll.Ifindex), true}, {"", true}, {"lo", false}} {
		addr := ll.IP().WithZone(tt.zone)
		ch, err := ctx.SelectGID(info.Port, ibverbs.GIDRule{Addr: addr})
		switch {
		case tt.ok && err != nil:
			t.Errorf("SelectGID(%v): %v", addr, err)
		case tt.ok && ch.Entry != ll:
			t.Errorf("SelectGID(%v) chose %v, want %v", addr, ch.Entry, ll)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), "not zone lo")):
			t.Errorf("SelectGID(%v) = %v, %v; want it refused for the zone", addr, ch.Entry, err)
		}
	}
}

// openTestDevice opens the test device (rdmatest.Device), closed when
// the test ends.
func openTestDevice(t *testing.T) (rdmatest.Info, *ibverbs.Context) {
	t.Helper()
	info := rdmatest.Device(t)
	ctx, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return info, ctx
}
