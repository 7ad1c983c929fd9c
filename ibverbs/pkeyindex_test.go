//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestPKeyIndex: PKeyIndex (ibv_get_pkey_index) finds each key of the
// test port's P_Key table at the first index that holds it (QueryPKey):
// on RoCE, as on soft-RoCE, the default key 0xffff at index 0. A key the
// table lacks (0x7fff, the default key without the membership bit, among
// them) fails with an error matching ENOENT that names the verb and says
// so, a port the device does not have with EINVAL, and a closed Context
// with ErrClosed.
func TestPKeyIndex(t *testing.T) {
	info, ctx := openTestDevice(t)
	pa, err := ctx.QueryPort(info.Port)
	if err != nil {
		t.Fatal(err)
	}
	first := map[uint16]int{}
	for i := range pa.PKeyTableLen {
		k, err := ctx.QueryPKey(info.Port, i)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
	}
	if i, ok := first[0xffff]; pa.LinkLayer == ibverbs.LinkLayerEthernet && (!ok || i != 0) {
		t.Fatalf("RoCE P_Key table %v: want 0xffff at index 0", first)
	}
	for k, want := range first {
		if got, err := ctx.PKeyIndex(info.Port, k); err != nil || got != want {
			t.Errorf("PKeyIndex(%d, %#04x) = %d, %v; want %d", info.Port, k, got, err, want)
		}
	}
	absent := []uint16{0x1234}
	if _, ok := first[0x7fff]; !ok {
		absent = append(absent, 0x7fff)
	}
	for _, k := range absent {
		if _, ok := first[k]; ok {
			continue
		}
		got, err := ctx.PKeyIndex(info.Port, k)
		want := fmt.Sprintf("P_Key %#04x is not in %s port %d's P_Key table: ibv_get_pkey_index: ", k, ctx.Name(), info.Port)
		if !errors.Is(err, syscall.ENOENT) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("PKeyIndex(%d, %#04x) = %d, %v; want ENOENT: %q...", info.Port, k, got, err, want)
		}
	}
	da, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{0, da.PhysPortCnt + 1} {
		if _, err := ctx.PKeyIndex(port, 0xffff); !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "ibv_get_pkey_index: ") {
			t.Errorf("PKeyIndex(%d, 0xffff) = %v, want EINVAL of ibv_get_pkey_index", port, err)
		}
	}
	closed, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, closed)
	if _, err := closed.PKeyIndex(info.Port, 0xffff); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("PKeyIndex of a closed Context = %v, want ErrClosed", err)
	}
}

// TestRawClock: RawClock (ibv_query_rt_values_ex) reads the device's
// clock, which does not go back between two reads; a device without the
// query, soft-RoCE among them, fails with an error naming the verb that
// matches errors.ErrUnsupported. A closed Context gives ErrClosed.
func TestRawClock(t *testing.T) {
	info, ctx := openTestDevice(t)
	a, err := ctx.RawClock()
	if err != nil && (!errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "ibv_query_rt_values_ex: ")) {
		t.Errorf("RawClock() = %v, want nil or an error of ibv_query_rt_values_ex matching errors.ErrUnsupported", err)
	}
	t.Logf("RawClock on %s: %d, %v", ctx.Name(), a, err)
	if err == nil {
		b, err := ctx.RawClock()
		if err != nil || b < a {
			t.Errorf("RawClock() again = %d, %v; want no less than %d", b, err, a)
		}
	}
	closed, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, closed)
	if _, err := closed.RawClock(); !errors.Is(err, ibverbs.ErrClosed) {
		t.Errorf("RawClock of a closed Context = %v, want ErrClosed", err)
	}
}
