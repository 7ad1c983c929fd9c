//go:build linux && cgo

package rdmacm_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/rdmacm"
)

// noDeviceEnv, in the environment of this test binary, makes
// TestNoDeviceRefused run the one call it names, as a process of its own.
const noDeviceEnv = "GORPERF_RDMACM_NODEVICE_CALL"

// noDeviceIDs are IDs on no device: new, bound to a wildcard address,
// listening on one.
var noDeviceIDs = []struct {
	name string
	make func(t *testing.T) *rdmacm.ID
}{
	{"new", func(t *testing.T) *rdmacm.ID { _, id := newID(t, rdmacm.PortSpaceTCP); return id }},
	{"newUDP", func(t *testing.T) *rdmacm.ID { _, id := newID(t, rdmacm.PortSpaceUDP); return id }},
	{"bound", func(t *testing.T) *rdmacm.ID { return boundWildcard(t, "0.0.0.0:0", false) }},
	{"bound6", func(t *testing.T) *rdmacm.ID { return boundWildcard(t, "[::]:0", false) }},
	{"listening", func(t *testing.T) *rdmacm.ID { return boundWildcard(t, "0.0.0.0:0", true) }},
}

func boundWildcard(t *testing.T, a string, listen bool) *rdmacm.ID {
	_, id := newID(t, rdmacm.PortSpaceTCP)
	if err := id.BindAddr(netip.MustParseAddrPort(a)); err != nil {
		t.Fatal(err)
	}
	if listen {
		if err := id.Listen(0); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// noDeviceCalls are the ID's calls into librdmacm that need a device,
// each with what its error says to do first, where the binding says it
// (librdmacm reads the device, which the kernel refuses no sooner), or ""
// where librdmacm or the kernel refuses on its own.
var noDeviceCalls = []struct {
	name  string
	call  func(*rdmacm.ID) error
	first string
}{
	{"ResolveRoute", func(id *rdmacm.ID) error { return id.ResolveRoute(time.Second) }, "resolve the peer's address first (ResolveAddr"},
	{"ConnectNil", func(id *rdmacm.ID) error { return id.Connect(nil) }, "(ResolveAddr, ResolveRoute)"},
	{"Connect", func(id *rdmacm.ID) error { return id.Connect(&rdmacm.ConnParam{QPNum: 1}) }, "(ResolveAddr, ResolveRoute)"},
	{"ConnectMaxDepth", func(id *rdmacm.ID) error {
		return id.Connect(&rdmacm.ConnParam{QPNum: 1, InitiatorDepth: rdmacm.MaxDepth, ResponderResources: rdmacm.MaxDepth})
	}, "(ResolveAddr, ResolveRoute)"},
	{"AcceptNil", func(id *rdmacm.ID) error { return id.Accept(nil) }, "CONNECT_REQUEST event (Event.ID)"},
	{"Accept", func(id *rdmacm.ID) error { return id.Accept(&rdmacm.ConnParam{QPNum: 1}) }, "CONNECT_REQUEST event (Event.ID)"},
	{"AcceptMaxDepth", func(id *rdmacm.ID) error {
		return id.Accept(&rdmacm.ConnParam{QPNum: 1, InitiatorDepth: rdmacm.MaxDepth, ResponderResources: rdmacm.MaxDepth})
	}, "CONNECT_REQUEST event (Event.ID)"},
	{"Reject", func(id *rdmacm.ID) error { return id.Reject(nil) }, ""},
	{"Disconnect", func(id *rdmacm.ID) error { return id.Disconnect() }, ""},
	{"Establish", func(id *rdmacm.ID) error { return id.Establish() }, ""},
	{"Notify", func(id *rdmacm.ID) error { return id.Notify(ibverbs.EventCommEst) }, ""},
	{"InitQPAttrInit", func(id *rdmacm.ID) error { _, _, err := id.InitQPAttr(ibverbs.QPStateInit); return err }, ""},
	{"InitQPAttrRTR", func(id *rdmacm.ID) error { _, _, err := id.InitQPAttr(ibverbs.QPStateRTR); return err }, ""},
	{"JoinMulticast", func(id *rdmacm.ID) error { return id.JoinMulticast(netip.MustParseAddr("239.1.1.1"), false) }, ""},
	{"CreateQP", func(id *rdmacm.ID) error {
		devs, err := rdmacm.Devices()
		if err != nil || len(devs) == 0 {
			return errors.Join(errors.New("no device to make a PD on"), err)
		}
		pd, err := devs[0].AllocPD()
		if err != nil {
			return errors.Join(errors.New("AllocPD"), err)
		}
		defer pd.Close()
		cq, err := devs[0].CreateCQ(4, nil)
		if err != nil {
			return errors.Join(errors.New("CreateCQ"), err)
		}
		defer cq.Close()
		qp, err := id.CreateQP(pd, ibverbs.QPInit{SendCQ: cq, Cap: ibverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
		if err == nil {
			qp.Close()
		}
		return err
	}, ""},
}

// TestNoDeviceRefused: each call on an ID on no device (new, or bound to
// or listening on a wildcard address) fails with EINVAL, and the
// binding's own refusals say what to do first, where ResolveRoute,
// Connect and Accept crashed the process (SIGSEGV: librdmacm read the
// ID's device, NULL). Each kind of ID's calls run in a process of their
// own, each on an ID of its own; where that process fails (a crash ends
// it at its first crashing call), each of its calls runs again in a
// process of its own, so that a crash fails its case alone. (A process
// a call cost some 50 s in the VM under emulation, 75 processes; a
// process a kind of ID costs 5.)
func TestNoDeviceRefused(t *testing.T) {
	if call := os.Getenv(noDeviceEnv); call != "" {
		noDeviceCall(t, call)
		return
	}
	device(t)
	// run runs the calls named name ("ID" for all of an ID's, "ID/call"
	// for one) in a process of their own.
	run := func(t *testing.T, name string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNoDeviceRefused$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), noDeviceEnv+"="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			if len(out) > 4000 {
				out = out[:4000]
			}
			t.Errorf("%s: the process ended with %v:\n%s", name, err, out)
			return false
		}
		return true
	}
	for _, id := range noDeviceIDs {
		t.Run(id.name, func(t *testing.T) {
			if run(t, id.name) {
				return
			}
			for _, c := range noDeviceCalls {
				t.Run(c.name, func(t *testing.T) { run(t, id.name+"/"+c.name) })
			}
		})
	}
}

// noDeviceCall runs the call named "ID/call", or each of the ID's calls
// named "ID", each on a new ID, and checks its error.
func noDeviceCall(t *testing.T, name string) {
	device(t)
	idName, callName, one := strings.Cut(name, "/")
	ran := false
	for _, i := range noDeviceIDs {
		if i.name != idName {
			continue
		}
		for _, c := range noDeviceCalls {
			if one && c.name != callName {
				continue
			}
			ran = true
			t.Run(c.name, func(t *testing.T) {
				id := i.make(t)
				err := c.call(id)
				t.Logf("%s/%s: %v", i.name, c.name, err)
				if !errors.Is(err, syscall.EINVAL) {
					t.Errorf("%s on a %s ID: %v, want EINVAL", c.name, i.name, err)
				}
				if c.first != "" && (err == nil || !strings.Contains(err.Error(), c.first) || !strings.Contains(err.Error(), "device")) {
					t.Errorf("%s on a %s ID: %v, want it to say the ID is on no device and what to do: %q", c.name, i.name, err, c.first)
				}
			})
		}
	}
	if !ran {
		t.Fatalf("no call %q", name)
	}
}

// TestInvalidAddrPort: the zero netip.AddrPort as BindAddr's address or
// ResolveAddr's destination, or a ResolveAddr source with a port but no
// address, is refused with EINVAL naming the argument, where the first
// two bound or resolved [::] and the last was dropped.
func TestInvalidAddrPort(t *testing.T) {
	device(t)
	for _, c := range []struct {
		name string
		call func(*rdmacm.ID) error
		want string
	}{
		{"BindAddr", func(id *rdmacm.ID) error { return id.BindAddr(netip.AddrPort{}) }, "BindAddr: addr is the invalid (zero) netip.AddrPort"},
		{"ResolveAddr dst", func(id *rdmacm.ID) error {
			return id.ResolveAddr(netip.AddrPort{}, netip.AddrPort{}, time.Second)
		}, "ResolveAddr: dst is the invalid (zero) netip.AddrPort"},
		{"ResolveAddr src", func(id *rdmacm.ID) error {
			return id.ResolveAddr(netip.AddrPortFrom(netip.Addr{}, 7471), netip.MustParseAddrPort("198.18.0.1:7471"), time.Second)
		}, "ResolveAddr: src has port 7471 but no address"},
	} {
		_, id := newID(t, rdmacm.PortSpaceTCP)
		err := c.call(id)
		if !errors.Is(err, syscall.EINVAL) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want EINVAL and %q", c.name, err, c.want)
		}
		if a := id.LocalAddr(); a.IsValid() {
			t.Errorf("%s: the ID is bound to %s after the refusal, want it unbound", c.name, a)
		}
	}
}
