//go:build linux && cgo

package cli

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gorperf/gorperf/internal/rdmatest"
)

// roceV2Port is RoCE v2's UDP destination port.
const roceV2Port = 4791

// rocePacket is what the wire tests read of one captured RoCE v2 packet:
// its IPv4 header's addresses, TOS and TTL, its UDP source port, and of
// its base transport header the opcode and destination QP, with the
// immediate data of the one-packet RC sends and writes that carry it.
type rocePacket struct {
	src, dst netip.Addr
	tos, ttl uint8
	sport    uint16
	opcode   uint8
	destQP   uint32
	imm      uint32 // with hasImm
	hasImm   bool
}

// RC opcodes of the base transport header (IBA vol. 1, 9.2): the
// one-packet messages with immediate data.
const (
	bthSendOnlyImm  = 0x05
	bthWriteOnlyImm = 0x0b
	bthLen, rethLen = 12, 16
)

// capture records the RoCE v2 packets over IPv4 that cross a network
// device, in both directions, from a packet socket (so it needs
// CAP_NET_RAW: root in the rxe VM).
type capture struct {
	fd       int
	stopping atomic.Int64 // when stop began, in Unix nanoseconds: 0 until then
	done     chan struct{}
	pkts     []rocePacket // the loop's until done is closed
	otherUDP int
	cut      bool // the drain ran out of time (drainLimit)
}

// drainLimit bounds how long stop drains the socket: the drain ends at
// the first read that finds it empty for 200 ms, or after drainLimit on
// a netdev never that quiet, whose packets the capture then misses. A
// backlog of the test's packets takes well under a second to read. (A
// variable for TestCaptureStopsOnBusyNetdev.)
var drainLimit = 10 * time.Second

// startCapture starts capturing on netdev; stop ends it.
func startCapture(t *testing.T, netdev string) *capture {
	t.Helper()
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		t.Fatal(err)
	}
	// ETH_P_ALL: a socket bound to one protocol sees only the packets
	// that arrive, not those the device sends.
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, int(htons(syscall.ETH_P_ALL)))
	if err != nil {
		t.Fatalf("packet socket: %v", err)
	}
	c := &capture{fd: fd, done: make(chan struct{})}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		syscall.Close(fd)
		t.Fatalf("binding the packet socket to %s: %v", netdev, err)
	}
	// A large buffer so that a slow reader (TCG) does not lose packets;
	// the kernel's drop count is reported too. SO_RCVBUFFORCE passes
	// net.core.rmem_max; it needs CAP_NET_ADMIN, as the socket needed
	// CAP_NET_RAW. Reads wake every 200 ms, so that stop need not wait
	// for a packet.
	tv := syscall.Timeval{Usec: 200000}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 8<<20); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	go c.loop()
	t.Cleanup(func() { c.stop(t) })
	return c
}

func (c *capture) loop() {
	defer close(c.done)
	buf := make([]byte, 256) // the headers are all it reads
	for {
		n, from, err := syscall.Recvfrom(c.fd, buf, 0)
		if err == syscall.EINTR {
			continue // a signal (the Go runtime's), not the socket's end
		}
		if at := c.stopping.Load(); at != 0 {
			// Only a timeout after the run has ended means the socket is
			// drained; a pause mid-run is not the end. A netdev never
			// quiet for as long ends the drain at its limit.
			if err != nil {
				return
			}
			if time.Since(time.Unix(0, at)) > drainLimit {
				c.cut = true
				return
			}
		}
		if err != nil {
			continue
		}
		if ll, ok := from.(*syscall.SockaddrLinklayer); !ok || ll.Protocol != htons(syscall.ETH_P_IP) {
			continue
		}
		if p, ok := parseRoCEv2(buf[:n]); ok {
			c.pkts = append(c.pkts, p)
		} else if n > 9 && buf[9] == syscall.IPPROTO_UDP {
			c.otherUDP++
		}
	}
}

// stop drains the socket and returns the RoCE v2 packets seen and the
// number the kernel dropped for want of buffer space.
func (c *capture) stop(t *testing.T) ([]rocePacket, int) {
	if !c.stopping.CompareAndSwap(0, time.Now().UnixNano()) {
		<-c.done
		return c.pkts, 0
	}
	<-c.done
	defer syscall.Close(c.fd)
	if c.cut {
		t.Logf("the drain of the packet socket stopped after %v: the netdev was never quiet for 200 ms", drainLimit)
	}
	st, err := getPacketStats(c.fd)
	if err != nil {
		t.Fatal(err)
	}
	if st.Drops > 0 {
		t.Logf("the packet socket dropped %d packets", st.Drops)
	}
	return c.pkts, int(st.Drops)
}

// TestCaptureStopsOnBusyNetdev: a capture's stop returns within its
// drain's limit on a netdev never quiet for 200 ms (lo, a datagram every
// 20 ms here), where it waited until the traffic paused, for ever on a
// busy netdev, unless a signal interrupted a read (the Go runtime's),
// which ended the drain too, early, as if the socket were empty; the
// packets sent before the stop are seen.
func TestCaptureStopsOnBusyNetdev(t *testing.T) {
	if os.Geteuid() != 0 {
		needInVM(t, "needs root for a packet socket")
	}
	defer func(d time.Duration) { drainLimit = d }(drainLimit)
	drainLimit = time.Second
	c := startCapture(t, "lo")
	sink, err := net.ListenPacket("udp", "127.0.0.1:0") // takes them, unread
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	conn, err := net.Dial("udp", sink.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The traffic goes on until well past the limit, then ends, so that
	// a stop that waits for a pause returns, late, rather than hang.
	quit, flooded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flooded)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(10 * drainLimit); time.Now().Before(end); {
			conn.Write([]byte("busy"))
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(quit); <-flooded }()
	time.Sleep(time.Second)
	start := time.Now()
	c.stop(t)
	took := time.Since(start)
	if took > drainLimit+time.Second {
		t.Errorf("stop took %v on a busy netdev, want at most the drain's limit, %v, and a read's 200 ms", took, drainLimit)
	}
	// A datagram over lo is seen twice, going out and coming in: some
	// 100 in the second before the stop.
	if !c.cut || c.otherUDP < 50 {
		t.Errorf("stop after %v: drain cut %v, %d UDP packets seen; want it cut at its limit, and the datagrams sent seen", took, c.cut, c.otherUDP)
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// packetStats is struct tpacket_stats from linux/if_packet.h.
type packetStats struct{ Packets, Drops uint32 }

// getPacketStats reads PACKET_STATISTICS from a packet socket.
func getPacketStats(fd int) (packetStats, error) {
	var st packetStats
	l := uint32(unsafe.Sizeof(st))
	const solPacket, packetStatistics = 263, 6
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), solPacket, packetStatistics,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return st, fmt.Errorf("getsockopt PACKET_STATISTICS: %w", e)
	}
	return st, nil
}

// wireNetdev returns the netdev of the rxe VM's server device, or skips
// the test where there is none: a NIC's packets do not cross its netdev.
func wireNetdev(t *testing.T) string {
	nd := os.Getenv("RXE_NETDEV")
	if nd == "" || os.Getenv("RXE_DEV2") == "" {
		if rdmatest.Required() && os.Getenv("RXE_VM") != "" {
			t.Fatal("needs the two-device rxe VM")
		}
		t.Skip("needs the rxe VM's veth pair (ci/rxe-vm/run -2)")
	}
	return nd
}

// TestRoCEv2OnTheWire sniffs the veth during a run and checks that the
// RDMA traffic is UDP to port 4791, RoCE v2, and that --tclass reaches
// the IP header, with QPs gorperf connects and with rdma_cm's (-R).
func TestRoCEv2OnTheWire(t *testing.T) {
	nd := wireNetdev(t)
	c := startCapture(t, nd)
	pair(t, "write-bw", "-s", "4096", "-n", "200", "--tclass", "104")
	pair(t, "write-bw", "-s", "4096", "-n", "200", "--tclass", "72", "-R")
	pkts, drops := c.stop(t)
	t.Logf("on %s: %d RoCE v2 packets (UDP 4791), %d other UDP", nd, len(pkts), c.otherUDP)
	if len(pkts)+drops < 400 {
		t.Fatalf("saw %d RoCE v2 packets on %s, want at least one per message (400)", len(pkts), nd)
	}
	byTOS := map[uint8]int{}
	for _, p := range pkts {
		byTOS[p.tos]++
	}
	for _, tos := range []uint8{104, 72} {
		if n := byTOS[tos]; n+drops < 200 {
			t.Errorf("%d RoCE v2 packets with TOS %d, want at least one per message (200)", n, tos)
		}
	}
}

// parseRoCEv2 reads an IPv4 packet that carries UDP to port 4791.
func parseRoCEv2(b []byte) (rocePacket, bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != syscall.IPPROTO_UDP {
		return rocePacket{}, false
	}
	ihl := int(b[0]&0xf) * 4
	if len(b) < ihl+8 || binary.BigEndian.Uint16(b[ihl+2:]) != roceV2Port {
		return rocePacket{}, false
	}
	p := rocePacket{src: netip.AddrFrom4([4]byte(b[12:16])), dst: netip.AddrFrom4([4]byte(b[16:20])),
		tos: b[1], ttl: b[8], sport: binary.BigEndian.Uint16(b[ihl:])}
	bth := b[ihl+8:]
	if len(bth) < bthLen {
		return p, true
	}
	p.opcode, p.destQP = bth[0], binary.BigEndian.Uint32(bth[4:8])&0xffffff
	at := -1
	switch p.opcode {
	case bthSendOnlyImm:
		at = bthLen
	case bthWriteOnlyImm:
		at = bthLen + rethLen
	}
	if at >= 0 && len(bth) >= at+4 {
		p.imm, p.hasImm = binary.BigEndian.Uint32(bth[at:]), true
	}
	return p, true
}

// flowLabelSport is the UDP source port that the kernel (and mlx5's
// firmware interface) derives from a RoCE v2 QP's flow label:
// rdma_flow_label_to_udp_sport in include/rdma/ib_verbs.h, which folds the
// label's top 6 of 20 bits into its low 14 and sets the top two bits of
// the port.
func flowLabelSport(fl uint32) uint16 {
	low, high := fl&0x3fff, fl&0xfc000
	return uint16((low ^ high>>14) | 0xc000)
}

// TestGRHOnTheWire captures the packets of two tests on the server
// device's netdev and checks that the GRH fields gorperf was given are
// the ones on the wire, in both directions: --tclass as the IPv4 TOS
// byte and, for RC, each QP's --flow_label as its UDP source port (rxe
// derives it as the kernel's helper does). A UD test checks the address
// handle's traffic class; rxe does not take a UD packet's source port
// from the label. The TTL is the route's (64 here): the kernel replaces a
// RoCE QP's or address handle's hop limit with its route's, which is why
// gorperf has no -L (perftest's is for raw Ethernet only).
func TestGRHOnTheWire(t *testing.T) {
	netdev := wireNetdev(t)
	_, _, addr := peers(t)
	srvIP, err := netip.ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		test   string
		args   []string
		tos    uint8
		labels []uint32 // RC: each QP's, in order
	}{
		{"write-bw", []string{"-q", "2", "-s", "1024", "-n", "100", "--tclass", "0x68", "--flow_label", "0x11111,0x2abcd"}, 0x68, []uint32{0x11111, 0x2abcd}},
		{"send-bw", []string{"-c", "UD", "-s", "512", "-n", "100", "-T", "32", "--flow_label", "7"}, 32, nil},
	} {
		t.Run(tc.test, func(t *testing.T) {
			c := startCapture(t, netdev)
			r := pair(t, tc.test, tc.args...)
			pkts, drops := c.stop(t)
			if len(r.FlowLabels) == 0 {
				t.Errorf("JSON flow_labels %#x", r.FlowLabels)
			}
			sports := map[bool]map[uint16]int{true: {}, false: {}} // by "sent by the client"
			flows := map[string]int{}
			for _, p := range pkts {
				flows[fmt.Sprintf("%v>%v:%d", p.src, p.dst, p.sport)]++
				fromClient := p.dst == srvIP
				if !fromClient && p.src != srvIP {
					continue
				}
				if p.ttl != 64 || p.tos != tc.tos {
					t.Fatalf("a packet %v → %v has TTL %d and TOS %#x; want the route's 64 and %#x", p.src, p.dst, p.ttl, p.tos, tc.tos)
				}
				sports[fromClient][p.sport]++
			}
			n := func(m map[uint16]int) (sum int) {
				for _, v := range m {
					sum += v
				}
				return sum
			}
			if n(sports[true])+drops < 100 || (tc.labels != nil && n(sports[false]) == 0) {
				t.Fatalf("captured %d packets from the client and %d from the server on %s; want the test's 100 messages and their ACKs (%v)",
					n(sports[true]), n(sports[false]), netdev, flows)
			}
			if tc.labels == nil {
				return
			}
			want := map[uint16]bool{}
			for _, fl := range tc.labels {
				want[flowLabelSport(fl)] = true
			}
			for side, m := range sports {
				if len(m) != len(want) {
					t.Errorf("client %v: UDP source ports %v, want one for each flow label: %v", side, m, want)
				}
				for sp := range m {
					if !want[sp] {
						t.Errorf("client %v: UDP source port %d (%#x) is no flow label's; want %v", side, sp, sp, want)
					}
				}
			}
			t.Logf("UDP source ports: client %v, server %v (labels %#x)", sports[true], sports[false], tc.labels)
		})
	}
}

// TestFlowLabelSport pins the kernel's mapping with values worked out by
// hand.
func TestFlowLabelSport(t *testing.T) {
	for _, tc := range []struct {
		fl   uint32
		want uint16
	}{
		{0, 0xc000},
		{1, 0xc001},
		{0x3fff, 0xffff},
		{0x4000, 0xc001}, // bit 14 folds onto bit 0
		{0xfffff, 0xc000 | 0x3fff ^ 0x3f},
		{0x11111, 0xc000 | 0x1111 ^ 0x4},
	} {
		if got := flowLabelSport(tc.fl); got != tc.want {
			t.Errorf("flowLabelSport(%#x) = %#x, want %#x", tc.fl, got, tc.want)
		}
	}
}

// TestImmediateOnTheWire captures --write_with_imm and --send_with_imm
// runs and checks that their messages go out as RC writes and sends with
// immediate data, each carrying its number on its QP: 1 to n for the
// bandwidth loop's messages, 0 to n-1 for the latency loop's, from both
// sides.
func TestImmediateOnTheWire(t *testing.T) {
	netdev := wireNetdev(t)
	for _, tc := range []struct {
		test     string
		args     []string
		opcode   uint8
		from, to uint32 // each QP's numbers
		qps      int    // QPs that send
	}{
		{"write-bw", []string{"--write_with_imm", "-q", "2", "-s", "512", "-n", "100"}, bthWriteOnlyImm, 1, 100, 2},
		{"send-lat", []string{"--send_with_imm", "-s", "64", "-n", "50"}, bthSendOnlyImm, 0, 49, 2}, // one QP each side
	} {
		t.Run(tc.test, func(t *testing.T) {
			c := startCapture(t, netdev)
			r := pair(t, tc.test, tc.args...)
			pkts, drops := c.stop(t)
			if !r.Immediate {
				t.Error("JSON immediate false")
			}
			seen := map[uint32]map[uint32]bool{} // destination QP: its numbers
			for _, p := range pkts {
				if p.opcode != tc.opcode {
					continue
				}
				if !p.hasImm || p.imm < tc.from || p.imm > tc.to {
					t.Fatalf("a message to QP %#x carries immediate %d (%v); want %d to %d", p.destQP, p.imm, p.hasImm, tc.from, tc.to)
				}
				if seen[p.destQP] == nil {
					seen[p.destQP] = map[uint32]bool{}
				}
				seen[p.destQP][p.imm] = true
			}
			want := int(tc.to - tc.from + 1)
			n := 0
			for _, m := range seen {
				n += len(m)
			}
			if len(seen) != tc.qps || n+drops < want*tc.qps {
				t.Fatalf("opcode %#x to %d QPs, %d numbers in all; want %d QPs with %d each", tc.opcode, len(seen), n, tc.qps, want)
			}
			t.Logf("%d QPs got numbers %d to %d with opcode %#x", len(seen), tc.from, tc.to, tc.opcode)
		})
	}
}
