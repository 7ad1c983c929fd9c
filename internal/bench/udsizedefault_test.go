//go:build linux && cgo

package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestSizesUDDefault: a UD test's default size (SizeDefault), the most
// the client offers, is the path MTU where the server's side offers less
// (its VLAN netdev carries 512 under the client's 1024); a size asked for
// over it is still refused, and a sweep stops at it. Both sides refused
// the default too: "a UD message is at most the path MTU, 512 bytes
// here, not 1024".
func TestSizesUDDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec exchange.TestSpec
		want []uint32
		err  string
	}{
		{"default", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 1024, SizeDefault: true}, []uint32{512}, ""},
		{"default within", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 256, SizeDefault: true}, []uint32{256}, ""},
		{"-s", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 1024}, nil,
			"a UD message is at most the path MTU, 512 bytes here, not 1024: choose a smaller -s"},
		{"-a", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, AllSizes: true, SizeDefault: true},
			[]uint32{2, 4, 8, 16, 32, 64, 128, 256, 512}, ""},
		{"RC", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 1024, SizeDefault: true}, []uint32{1024}, ""},
	} {
		s := &session{spec: tc.spec, portAttr: ibverbs.PortAttr{ActiveMTU: ibverbs.MTU1024},
			remote: []exchange.QPInfo{{Endpoint: ibverbs.Endpoint{MTU: ibverbs.MTU512}}}}
		got, err := s.sizes()
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: sizes() = %v, %v; want %v, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}
