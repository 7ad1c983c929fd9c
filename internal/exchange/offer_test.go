package exchange

import (
	"errors"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestOfferMTU: an Offer carries its MTU through a frame, and a frame
// whose MTU is none of ibverbs.MTU256 to MTU4096 is malformed.
func TestOfferMTU(t *testing.T) {
	for _, m := range []ibverbs.MTU{ibverbs.MTU256, ibverbs.MTU4096} {
		b, err := AppendFrame(nil, Offer{MTU: m})
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeFrame(b)
		if err != nil || got != (Offer{MTU: m}) {
			t.Errorf("Offer %v: decoded %v, %v", m, got, err)
		}
	}
	for _, m := range []uint8{0, 6, 0xff} {
		b := []byte{uint8(TypeOffer), 0, 0, 1, m}
		if got, err := DecodeFrame(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("an Offer of MTU %d: %v, %v; want ErrMalformed", m, got, err)
		}
	}
}
