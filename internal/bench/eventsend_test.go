//go:build linux && cgo

package bench_test

import (
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestEventsEndOnTime: with completion events (-e), a send_bw receiver
// whose messages stop (the sender's time is up) notices its own end
// within a few of its 10 ms sleeps, and so does a bidirectional test's
// sending loop: the test ends well within a second and a half of its
// duration. The loops' periodic checks came once in as many sleeps as
// their pacer's stride had grown to while the messages flowed, up to 256
// (2.5 s); under emulation the stride stays small (each iteration is
// slow), so this bounds the whole, and TestPacerDueAfterASleep shows
// the pacer's part.
func TestEventsEndOnTime(t *testing.T) {
	const dur = 2 * time.Second
	loop := newLoopClock(t)
	for _, tc := range []struct {
		name string
		spec exchange.TestSpec
	}{
		{"send_bw", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 2,
			NumQPs: 1, TXDepth: 128, RXDepth: 512, CQModeration: 64, Events: true}},
		{"send_bw UD", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeUD, Size: 64, Duration: 2,
			NumQPs: 1, TXDepth: 128, RXDepth: 512, CQModeration: 64, Events: true}},
		{"send_bw -b", exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: 64, Duration: 2,
			NumQPs: 1, TXDepth: 128, RXDepth: 512, CQModeration: 64, Events: true, Bidirectional: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loop.reset()
			c, s := loopback(t, tc.spec)
			took := loop.since()
			if len(c.Sizes) != 1 || len(s.Sizes) != 1 || s.Sizes[0].BW.Iterations == 0 {
				t.Fatalf("client %+v, server %+v", c.Sizes, s.Sizes)
			}
			t.Logf("%v from the client's loop's start to the test's end", took)
			if took > dur+1500*time.Millisecond {
				t.Errorf("a %v test with -e took %v from its loop's start", dur, took)
			}
		})
	}
}
