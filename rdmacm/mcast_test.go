//go:build linux && cgo

package rdmacm_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// testGroup is the tests' multicast group: IPv4 local scope (RFC 2365),
// which never leaves the site. In the VM it exists only on the veth pair.
const testGroup = "239.255.198.18"

// A send-only member on one device reaches both full members on the
// other, and the one left still does after the other leaves.
func TestMulticast(t *testing.T) {
	n1, n2 := device(t), secondDevice(t)
	ctx := timeout(t, 60*time.Second)
	join := func(n testNet, sendOnly bool) *rdmacm.Conn {
		t.Helper()
		c, err := rdmacm.JoinMulticast(ctx, testGroup, &rdmacm.Config{SrcAddr: n.IP.String(), MulticastSendOnly: sendOnly})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, c) })
		if c.Group() != netip.MustParseAddr(testGroup) || c.QP().Type() != ibverbs.QPTypeUD {
			t.Fatalf("joined %v with a %v QP", c.Group(), c.QP().Type())
		}
		return c
	}
	r1, r2 := join(n2, false), join(n2, false)
	s := join(n1, true)
	ah, qpn, qkey := s.RemoteUD()
	if ah == nil || qpn != 0xffffff || qkey == 0 {
		t.Fatalf("RemoteUD: AH %v, QPN %#x, QKey %#x; want the group's, QPN 0xffffff", ah, qpn, qkey)
	}
	// The join's parameters: the group's address, which on InfiniBand
	// has its multicast LID.
	if ud := s.UD(); ud.QPNum != qpn || ud.QKey != qkey || !ud.AHAttr.IsGlobal ||
		netip.AddrFrom16([16]byte(ud.AHAttr.GRH.DGID)).Unmap() != netip.MustParseAddr(testGroup) {
		t.Errorf("UD: %+v; want the group's QPN, QKey and GID", ud)
	}
	const grh = 40
	sm := register(t, s.PD(), 4096, 0)
	rm := []*mem{register(t, r1.PD(), 4096, 0), register(t, r2.PD(), 4096, 0)}
	recv := func(i int, c *rdmacm.Conn, want string) {
		t.Helper()
		wc := waitWC(t, c.RecvCQ(), 20*time.Second)
		got := rm[i].buf.Bytes()[wc.WRID*256:]
		if int(wc.ByteLen) != grh+len(want) || string(got[grh:grh+len(want)]) != want || wc.SrcQP != s.QP().Num() {
			t.Fatalf("member %d received %d bytes %q from QP %#x, want %q from %#x", i, wc.ByteLen, got[grh:wc.ByteLen], wc.SrcQP, want, s.QP().Num())
		}
	}
	for i, c := range []*rdmacm.Conn{r1, r2} {
		for k := range 3 {
			if err := c.QP().PostRecv([]ibverbs.RecvWR{{ID: uint64(k), SGL: []ibverbs.SGE{rm[i].mr.SGE(k*256, 256)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sendAll := func(msg string) {
		t.Helper()
		copy(sm.buf.Bytes(), msg)
		if err := s.QP().PostSend([]ibverbs.SendWR{{ID: 1, Opcode: ibverbs.OpSend, Flags: ibverbs.SendSignaled,
			SGL: []ibverbs.SGE{sm.mr.SGE(0, len(msg))}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}}); err != nil {
			t.Fatal(err)
		}
		waitWC(t, s.SendCQ(), 20*time.Second)
	}
	for k := range 2 {
		msg := fmt.Sprintf("datagram %d to the group", k)
		sendAll(msg)
		recv(0, r1, msg)
		recv(1, r2, msg)
	}
	closeOK(t, rm[0].mr) // MRs close before their PD
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	sendAll("after one member left")
	recv(1, r2, "after one member left")
	// The send-only member's QP is not attached: nothing reached it.
	if wc, err := pollWC(s.RecvCQ(), 100*time.Millisecond); err == nil {
		t.Errorf("the send-only member received %+v", wc)
	}
}

// TestMulticastQPCloseBusy: a member's QP, which librdmacm attached to the
// group, cannot be destroyed until the member leaves; its Close says so
// and leaves it whole, and the member's own Close still leaves and frees
// everything.
func TestMulticastQPCloseBusy(t *testing.T) {
	n := device(t)
	c, err := rdmacm.JoinMulticast(timeout(t, 60*time.Second), testGroup, &rdmacm.Config{SrcAddr: n.IP.String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.QP().Close(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("closing an attached member's QP: %v, want EBUSY", err)
	}
	if _, err := c.QP().State(); err != nil {
		t.Errorf("the QP after a failed Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("closing the member: %v", err)
	}
}

func TestMulticastErrors(t *testing.T) {
	n := device(t)
	ctx := timeout(t, 30*time.Second)
	cfg := &rdmacm.Config{SrcAddr: n.IP.String()}
	var oe *rdmacm.OpError
	if _, err := rdmacm.JoinMulticast(ctx, n.IP.String(), cfg); !errors.Is(err, syscall.EINVAL) || !errors.As(err, &oe) || oe.Op != "join" {
		t.Errorf("JoinMulticast of a unicast address = %v, want an *OpError with EINVAL", err)
	}
	if _, err := rdmacm.JoinMulticast(ctx, "239.255.198.18:4791", cfg); err == nil {
		t.Error("JoinMulticast of an address with a port succeeded")
	}
	// The ID level: a unicast address, and leaving a group never joined.
	_, id := newID(t, rdmacm.PortSpaceUDP)
	if err := id.BindAddr(netip.AddrPortFrom(n.IP, 0)); err != nil {
		t.Fatal(err)
	}
	if err := id.JoinMulticast(n.IP, false); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ID.JoinMulticast of a unicast address = %v, want EINVAL", err)
	}
	if err := id.LeaveMulticast(netip.MustParseAddr(testGroup)); err == nil || !bytes.Contains([]byte(err.Error()), []byte("rdma_leave_multicast")) {
		t.Errorf("LeaveMulticast of a group never joined = %v, want rdma_leave_multicast's error", err)
	}
}

// TestMulticastIPv6RoCEv2: the kernel refuses an IPv6 group over RoCE v2
// with its internal ENOTSUPP (errno 524), which came back as "errno 524"
// and matched nothing; it says why, and matches errors.ErrUnsupported
// and syscall.EOPNOTSUPP.
func TestMulticastIPv6RoCEv2(t *testing.T) {
	n := device(t)
	ip6 := globalIPv6(t, n.IP)
	c, err := rdmacm.JoinMulticast(timeout(t, 30*time.Second), "ff05::198:18", &rdmacm.Config{SrcAddr: ip6.String()})
	if err == nil {
		closeOK(t, c)
		t.Skipf("%s joined an IPv6 group: its port is not RoCE v2", n.Dev)
	}
	const why = "rdmacm: join ff05::198:18: the kernel does not join IPv6 multicast groups over RoCE v2"
	if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EOPNOTSUPP) || !strings.HasPrefix(err.Error(), why) {
		t.Errorf("JoinMulticast(ff05::198:18) from %s: %v; want ErrUnsupported and EOPNOTSUPP saying %q", ip6, err, why)
	}
}
