package bench

import (
	"errors"
	"testing"
)

// TestCapMTUNone: a netdev whose MTU carries not even RDMA MTU 256 with
// the headers fails the test at once, naming the netdev, its MTU and the
// least it needs, with the command that sets it: the cap was MTU 256,
// whose packets the netdev dropped, and the test waited out its peer
// timeout.
func TestCapMTUNone(t *testing.T) {
	for _, tc := range []struct {
		mtu, overhead, active int
		how                   string
		fits                  int
		err                   string
	}{
		{mtu: 1500, overhead: RXEOverhead, active: 1024},
		{mtu: 700, overhead: RXEOverhead, active: 1024, fits: 512},
		{mtu: 336, overhead: RXEOverhead, active: 1024, fits: 256},
		{mtu: 300, overhead: RXEOverhead, active: 1024,
			err: "rxeveth0.10's MTU 300 carries no RDMA MTU (256 bytes and 80 of headers): raise it to at least 336 (`ip link set rxeveth0.10 mtu 336`)"},
		{mtu: 335, overhead: RXEOverhead, active: 4096,
			err: "rxeveth0.10's MTU 335 carries no RDMA MTU (256 bytes and 80 of headers): raise it to at least 336 (`ip link set rxeveth0.10 mtu 336`)"},
		{mtu: 340, overhead: RoCEOverhead, active: 1024, how: ", as rdma_cm counts them",
			err: "rxeveth0.10's MTU 340 carries no RDMA MTU (256 bytes and 96 of headers, as rdma_cm counts them): raise it to at least 352 (`ip link set rxeveth0.10 mtu 352`)"},
	} {
		fits, err := capMTU("rxeveth0.10", tc.mtu, tc.overhead, tc.active, tc.how)
		var ne *NetdevMTUError
		switch {
		case tc.err == "" && (err != nil || fits != tc.fits):
			t.Errorf("capMTU(%d, %d, %d) = %d, %v; want %d", tc.mtu, tc.overhead, tc.active, fits, err, tc.fits)
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.As(err, &ne)):
			t.Errorf("capMTU(%d, %d, %d) = %d, %v; want\n%s", tc.mtu, tc.overhead, tc.active, fits, err, tc.err)
		}
	}
}
