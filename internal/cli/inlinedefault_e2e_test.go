//go:build linux && cgo

package cli

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/rdmatest"
	"github.com/gorperf/gorperf/internal/report"
)

// TestInlineDefaultSoftware: without -I, write-lat inlines nothing on
// rxe and siw, as perftest's, whose ib_dev_name does not recognise them
// (its ctx_set_max_inline then inlines nothing); gorperf inlined its 220
// bytes there. -I 64 is still taken, and a device perftest
// knows keeps perftest's 220 (or the most it inlines, if less).
func TestInlineDefaultSoftware(t *testing.T) {
	info := rdmatest.Device(t)
	dev, err := ibverbs.Open(info.Name)
	if err != nil {
		t.Fatal(err)
	}
	da, err := dev.QueryDevice()
	dev.Close()
	if err != nil {
		t.Fatal(err)
	}
	software := da.VendorID == 0xffffff || da.VendorID == 0x626d74 // rxe, siw
	ctx := testContext(t, 60*time.Second)
	for _, tc := range []struct {
		flags []string
		want  int // -1: 1 to 220
	}{
		{nil, map[bool]int{true: 0, false: -1}[software]},
		{[]string{"-I", "64"}, 64},
	} {
		args := append([]string{"loopback", "write-lat", "-d", info.Name, "-i", fmt.Sprint(info.Port), "-s", "64", "-n", "20", "--json"}, tc.flags...)
		out, err := gorperf(ctx, args...).Output()
		var r report.Result
		if jerr := json.Unmarshal(out, &r); err != nil || jerr != nil || r.Error != nil || r.MaxInline == nil {
			t.Errorf("%v: %v, %v\n%s", tc.flags, err, jerr, out)
			continue
		}
		got := *r.MaxInline
		if (tc.want >= 0 && got != tc.want) || (tc.want < 0 && (got < 1 || got > 220)) {
			t.Errorf("%s (vendor %#x) %v: max_inline %d, want %d (-1: 1 to 220)", info.Name, da.VendorID, tc.flags, got, tc.want)
		}
	}
}
