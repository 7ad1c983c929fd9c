//go:build linux && cgo

package ibverbs_test

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
)

// TestContextTransport: a Context's Transport, from Open and from
// WrapContext, is its device's entry in Devices: TransportIB on soft-RoCE.
func TestContextTransport(t *testing.T) {
	ctx, _ := rdmatest.Open(t)
	devs, err := ibverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	want := ibverbs.TransportUnknown
	for _, d := range devs {
		if d.Name == ctx.Name() {
			want = d.Transport
		}
	}
	if want == ibverbs.TransportUnknown {
		t.Fatalf("%s: no transport in Devices: %v", ctx.Name(), devs)
	}
	for name, c := range map[string]*ibverbs.Context{"Open": ctx, "WrapContext": wrap(t, ctx)} {
		if got := c.Transport(); got != want {
			t.Errorf("%s: Transport() = %v, want %v, Devices' for %s", name, got, want, ctx.Name())
		}
	}
}
