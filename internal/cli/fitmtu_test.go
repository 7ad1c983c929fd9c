//go:build linux && cgo

package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/bench"
	"github.com/gorperf/gorperf/internal/exchange"
	"github.com/gorperf/gorperf/internal/report"
)

// TestFitMTUNetdev: UD's default size comes down to the MTU this side
// offers, and the notes name where it comes from: the port's active MTU
// as before, or the GID's netdev where that carries less (a VLAN's),
// where they said "the port's MTU" of either.
func TestFitMTUNetdev(t *testing.T) {
	port := bench.MTULimit{MTU: ibverbs.MTU1024, Active: ibverbs.MTU1024}
	vlan := bench.MTULimit{MTU: ibverbs.MTU512, Active: ibverbs.MTU1024, Netdev: "rxeveth1.10", NetdevMTU: 700}
	for _, tc := range []struct {
		name   string
		udSize bool
		mtu    ibverbs.MTU // -m
		m      bench.MTULimit
		size   uint32
		notes  []string
	}{
		{"UD, port", true, 0, port, 1024, []string{"gorperf: a UD message is at most the port's MTU: sending 1024 bytes (-s to choose)\n"}},
		{"UD, VLAN", true, 0, vlan, 512, []string{"gorperf: a UD message is at most what the GID's netdev rxeveth1.10 (MTU 700) carries, under the port's active 1024: sending 512 bytes (-s to choose)\n"}},
		{"-m over the port", false, ibverbs.MTU4096, port, 65536, []string{"gorperf: -m 4096 is over the port's active MTU: the path MTU is at most 1024\n"}},
		{"-m over the VLAN", false, ibverbs.MTU1024, vlan, 65536, []string{"gorperf: -m 1024 is over what the GID's netdev rxeveth1.10 (MTU 700) carries, under the port's active 1024: the path MTU is at most 512\n"}},
		{"UD -m over the VLAN", true, ibverbs.MTU1024, vlan, 512, []string{"sending 512 bytes", "-m 1024 is over what the GID's netdev rxeveth1.10"}},
		{"fits", false, ibverbs.MTU512, vlan, 65536, nil},
	} {
		o := &testOptions{udSize: tc.udSize, value: report.NoValue}
		spec := exchange.TestSpec{Size: 65536, MTU: tc.mtu}
		if tc.udSize {
			spec.Size = 4096
			if tc.mtu != 0 {
				spec.Size = uint32(tc.mtu.Bytes())
			}
		}
		var errOut bytes.Buffer
		note := o.fitMTU(&errOut, &spec, tc.m)
		errOut.WriteString(note) // SizeFitted's to print
		if spec.Size != tc.size {
			t.Errorf("%s: size %d, want %d", tc.name, spec.Size, tc.size)
		}
		for _, n := range tc.notes {
			if !strings.Contains(errOut.String(), n) {
				t.Errorf("%s: %q lacks %q", tc.name, errOut.String(), n)
			}
		}
		if tc.notes == nil && errOut.Len() > 0 {
			t.Errorf("%s: noted %q", tc.name, errOut.String())
		}
	}
}
