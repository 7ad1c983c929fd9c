package bench

// This file has no build constraint: gorperf doctor, which builds
// without cgo, judges netdev MTUs by the same rules as a test's set-up.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RoCEOverhead is what a RoCE v2 packet carries besides its RDMA payload,
// counted inside the netdev MTU: the kernel's iboe_get_mtu subtracts the
// GRH or IP header (40), UDP (8), BTH (12), the largest extended headers
// (XRC 4 + AtomicETH 28) and the ICRC (4). So IB MTU 1024 needs a netdev
// MTU of at least 1120 and IB MTU 4096 one of 4192: a standard 1500 gives
// 1024, jumbo frames of 4200 or more give 4096.
const RoCEOverhead = 40 + 8 + 12 + 4 + 28 + 4

// RXEOverhead is what soft-RoCE (rdma_rxe) counts instead: rxe_set_mtu
// sets the port's active MTU from the netdev MTU less RXE_MAX_HDR_LENGTH,
// 80 (eth_mtu_int_to_enum in rxe_param.h), the most an rxe packet carries
// besides its payload; so rxe is active at 4096 from a netdev MTU of 4176,
// and its packets fit.
const RXEOverhead = 80

// MTUOverhead is the bytes of headers that a port counts between its
// netdev's MTU and the RDMA MTU: RXEOverhead on soft-RoCE (rxe), else
// RoCEOverhead.
func MTUOverhead(rxe bool) int {
	if rxe {
		return RXEOverhead
	}
	return RoCEOverhead
}

// NetdevMTU reads the MTU of netdev from root's /sys/class/net ("" for
// this host's).
func NetdevMTU(root, netdev string) (int, error) {
	b, err := os.ReadFile(filepath.Join(root, "/sys/class/net", netdev, "mtu"))
	if err != nil {
		return 0, err
	}
	mtu, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", strings.TrimSpace(string(b)))
	}
	return mtu, nil
}

// CarriedMTU is the largest RDMA MTU, 256 to most (at most 4096) bytes,
// that a netdev MTU of mtu carries with overhead bytes of headers: 0 if
// it carries not even 256.
func CarriedMTU(mtu, overhead, most int) int {
	fits := 0
	for m := 256; m <= 4096 && m <= most; m *= 2 {
		if mtu-overhead >= m {
			fits = m
		}
	}
	return fits
}

// NetdevMTUError is the failure of a test over a GID whose netdev's MTU
// carries no RDMA MTU, not even 256 bytes, with overhead bytes of headers
// (CarriedMTU is 0): every packet of the test would be dropped, and the
// test wait out its peer timeout. how, if set, says whose count of the
// headers it is (", as rdma_cm counts them").
type NetdevMTUError struct {
	Netdev   string
	MTU      int
	Overhead int
	How      string
}

func (e *NetdevMTUError) Error() string {
	least := 256 + e.Overhead
	return fmt.Sprintf("%s's MTU %d carries no RDMA MTU (256 bytes and %d of headers%s): raise it to at least %d (`ip link set %s mtu %d`)",
		e.Netdev, e.MTU, e.Overhead, e.How, least, e.Netdev, least)
}

// capMTU is what a netdev of MTU mtu carries under a port active at
// active bytes, with overhead bytes of headers (CarriedMTU): 0 where it
// carries all of active, a *NetdevMTUError where it carries nothing.
func capMTU(netdev string, mtu, overhead, active int, how string) (int, error) {
	fits := CarriedMTU(mtu, overhead, active)
	switch {
	case fits >= active:
		return 0, nil
	case fits == 0:
		return 0, &NetdevMTUError{Netdev: netdev, MTU: mtu, Overhead: overhead, How: how}
	}
	return fits, nil
}
