//go:build linux && cgo

package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestConstantsMatchC(t *testing.T) {
	for g, c := range eventTypeTable() {
		if int(g) != c {
			t.Errorf("%s = %d, C has %d", g, int(g), c)
		}
	}
	if n := len(eventTypeTable()); n != len(eventNames) {
		t.Errorf("%d event types checked, %d named", n, len(eventNames))
	}
	if UDPQKey != cUDPQKey() {
		t.Errorf("UDPQKey = %#x, C has %#x", UDPQKey, cUDPQKey())
	}
	for g, c := range portSpaceTable() {
		if int(g) != c {
			t.Errorf("PortSpace%s = %#x, C has %#x", g, int(g), c)
		}
	}
}

func TestEventTypeString(t *testing.T) {
	for _, tc := range []struct {
		t    EventType
		want string
	}{
		{EventAddrResolved, "ADDR_RESOLVED"},
		{EventRejected, "REJECTED"},
		{EventEstablished, "ESTABLISHED"},
		{EventTimewaitExit, "TIMEWAIT_EXIT"},
		{EventType(99), "EventType(99)"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%d: %q, want %q", int(tc.t), got, tc.want)
		}
	}
}

func TestEventErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		is   []error
		not  []error
		text string
	}{
		{"addr error", Event{Type: EventAddrError, Status: -int(syscall.ETIMEDOUT)},
			[]error{ErrAddrResolve, syscall.ETIMEDOUT}, []error{ErrUnreachable, syscall.ECONNREFUSED}, "address not resolved"},
		{"route error", Event{Type: EventRouteError, Status: -int(syscall.ENETUNREACH)},
			[]error{ErrRouteResolve, syscall.ENETUNREACH}, nil, "RDMA_CM_EVENT_ROUTE_ERROR"},
		{"unreachable", Event{Type: EventUnreachable, Status: -int(syscall.ETIMEDOUT)},
			[]error{ErrUnreachable, syscall.ETIMEDOUT}, nil, "peer unreachable"},
		{"disconnected", Event{Type: EventDisconnected},
			[]error{ErrDisconnected}, []error{syscall.ETIMEDOUT}, "peer disconnected"},
		{"rejected", Event{Type: EventRejected, Status: 28, Param: ConnParam{PrivateData: []byte("go away\x00\x00")}},
			[]error{syscall.ECONNREFUSED}, []error{ErrUnreachable}, `private data "go away"`},
		{"UD rejected", Event{Type: EventUnreachable, Status: 1, IsUD: true},
			[]error{syscall.ECONNREFUSED}, []error{ErrUnreachable}, "nothing listens"},
	} {
		err := error(&OpError{Op: "dial", Addr: "198.18.0.1:1", Err: eventError(&tc.ev)})
		for _, target := range tc.is {
			if !errors.Is(err, target) {
				t.Errorf("%s: %v does not match %v", tc.name, err, target)
			}
		}
		for _, target := range tc.not {
			if errors.Is(err, target) {
				t.Errorf("%s: %v matches %v", tc.name, err, target)
			}
		}
		if !strings.Contains(err.Error(), tc.text) || !strings.HasPrefix(err.Error(), "rdmacm: dial 198.18.0.1:1: ") {
			t.Errorf("%s: %q lacks %q", tc.name, err, tc.text)
		}
	}
	var rej *RejectedError
	if err := eventError(&Event{Type: EventRejected, Status: 28}); !errors.As(err, &rej) || rej.Status != 28 {
		t.Errorf("REJECTED gave %v", err)
	}
}

// TestConfigDefaults: the zero Config asks the CM for the device's
// depths, 6 retries (DefaultRetryCount: soft-RoCE retries for ever on 7,
// where the old default of 7 never noticed a silent peer) and RNR
// retries for ever; 7 retries asked for are 7.
func TestConfigDefaults(t *testing.T) {
	p := (&Config{}).connParam()
	if p.InitiatorDepth != MaxDepth || p.ResponderResources != MaxDepth || p.RetryCount != 6 || p.RNRRetryCount != 7 {
		t.Errorf("defaults: %+v", p)
	}
	p = (&Config{InitiatorDepth: -1, ResponderResources: 4, RetryCount: -1, RNRRetryCount: 20}).connParam()
	if p.InitiatorDepth != 0 || p.ResponderResources != 4 || p.RetryCount != 0 || p.RNRRetryCount != 7 {
		t.Errorf("set: %+v", p)
	}
	for n, want := range map[int]uint8{1: 1, 6: 6, 7: 7, 8: 7} {
		if p := (&Config{RetryCount: n}).connParam(); p.RetryCount != want {
			t.Errorf("Config.RetryCount %d: the CM asked for %d, want %d", n, p.RetryCount, want)
		}
	}
	c := (&Config{}).qpCap()
	if c.MaxSendWR != defaultWR || c.MaxRecvWR != defaultWR || c.MaxSendSGE != 1 || c.MaxRecvSGE != 1 {
		t.Errorf("default cap %+v", c)
	}
	if (&Config{UD: true}).portSpace() != PortSpaceUDP || (&Config{}).portSpace() != PortSpaceTCP {
		t.Error("port space")
	}
}

func TestAddrParsing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		in   string
		wild netip.Addr
		want string
		err  bool
	}{
		{"198.18.0.1:7471", netip.Addr{}, "198.18.0.1:7471", false},
		{":7471", netip.IPv6Unspecified(), "[::]:7471", false},
		{":7471", netip.IPv4Unspecified(), "0.0.0.0:7471", false},
		{":7471", netip.Addr{}, "", true},
		{"[::1]:9", netip.Addr{}, "[::1]:9", false},
		{"127.0.0.1:0", netip.IPv6Unspecified(), "127.0.0.1:0", false},
		{"198.18.0.1", netip.Addr{}, "", true},
		{"198.18.0.1:99999", netip.Addr{}, "", true},
	} {
		got, err := lookupAddrPort(ctx, tc.in, tc.wild)
		if (err != nil) != tc.err || (err == nil && got.String() != tc.want) {
			t.Errorf("%q: %v, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
	if ap, err := parseSrcAddr(ctx, "198.18.0.2"); err != nil || ap != netip.MustParseAddrPort("198.18.0.2:0") {
		t.Errorf("SrcAddr: %v %v", ap, err)
	}
}

// TestSockaddrRoundTrip: addresses go to C and come back the same, a
// link-local IPv6 address's zone (the interface, by name or number)
// included, which the kernel needs to bind or reach it.
func TestSockaddrRoundTrip(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"198.18.0.1:7471", ""},
		{"[::1]:65535", ""},
		{"0.0.0.0:0", ""},
		{"[fe80::1%lo]:7471", ""},
		{fmt.Sprintf("[fe80::1%%%d]:7471", lo.Index), "[fe80::1%lo]:7471"},
		{"[fe80::1]:7471", ""},
	} {
		ap := netip.MustParseAddrPort(tc.in)
		want := ap
		if tc.want != "" {
			want = netip.MustParseAddrPort(tc.want)
		}
		var ss sockaddrStorage
		if got := addrPort(sockaddr(ap, &ss)); got != want {
			t.Errorf("%s came back as %s, want %s", ap, got, want)
		}
	}
}

// ErrClosed, wrapped, matches os.ErrClosed and net.ErrClosed: an accept
// or read loop written for package net ends on it.
func TestErrClosedMatchesNet(t *testing.T) {
	err := fmt.Errorf("accepting: %w", ErrClosed)
	for _, target := range []error{ErrClosed, os.ErrClosed, net.ErrClosed} {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(%v, %v) is false", err, target)
		}
	}
	if errors.Is(err, syscall.EBADF) || errors.Is(err, io.EOF) {
		t.Errorf("%v matches an unrelated error", err)
	}
}
