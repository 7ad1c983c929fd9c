//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// A CQ larger than the device allows fails naming the device's limit,
// DeviceAttr.MaxCQE.
func TestCQEPastDeviceLimit(t *testing.T) {
	p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC})
	da, err := p.ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	if da.MaxCQE >= math.MaxInt32 {
		t.Skipf("%s allows CQs of %d entries", p.ctx.Name(), da.MaxCQE)
	}
	want := fmt.Sprintf("%d entries, more than the device's limit of %d (DeviceAttr.MaxCQE)", math.MaxInt32, da.MaxCQE)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%s: %v; want EINVAL saying %q", what, err, want)
		}
	}
	cq, err := p.ctx.CreateCQ(math.MaxInt32, nil)
	if err == nil {
		closeOK(t, cq)
	}
	check("CreateCQ", err)
	cq, err = p.ctx.CreateCQEx(ibverbs.CQInit{Entries: math.MaxInt32})
	if err == nil {
		closeOK(t, cq)
	}
	check("CreateCQEx", err)
	check("Resize", p.a.cq.Resize(math.MaxInt32))
}
