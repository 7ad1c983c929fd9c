//go:build linux && cgo

package rdmamsg

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// TestPacketPeersEviction: with room for 4 destinations, one written to
// between each of 100 new ones (as lookups would add them) stays known
// throughout, where the pick at random before dropped it within a few; the
// others come and go, 4 kept at most, each dropped handle closed; and
// the eviction allocates nothing once the PacketConn knows its 4. No
// device: the handles are bare, which close as nothing.
func TestPacketPeersEviction(t *testing.T) {
	t.Cleanup(SetMaxPeers(4))
	p := &PacketConn{peers: map[netip.AddrPort]udPeer{}, closed: make(chan struct{})}
	ctx := context.Background()
	by := time.Now().Add(time.Minute)
	addr := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 4791)
	}
	busy := addr(0)
	p.remember(busy, udPeer{ah: new(ibverbs.AH)})
	write := func(to netip.AddrPort) {
		t.Helper()
		// WriteTo to a known destination: found known, no lookup.
		if _, err := p.lookupOnce(ctx, to, by); err != nil {
			t.Fatalf("WriteTo %v, known: %v", to, err)
		}
	}
	for i := 1; i <= 100; i++ {
		write(busy)
		p.remember(addr(i), udPeer{ah: new(ibverbs.AH)})
		if _, ok := p.peers[busy]; !ok {
			t.Fatalf("the destination written to between each new one was dropped at the new one %d", i)
		}
		if len(p.peers) > 4 {
			t.Fatalf("%d destinations known, at most 4 wanted", len(p.peers))
		}
	}
	if len(p.peers) != 4 {
		t.Errorf("%d destinations known, want 4", len(p.peers))
	}
	if len(p.retired) != 0 {
		t.Errorf("%d dropped handles not closed", len(p.retired))
	}
	// Two destinations kept busy, the others each written to once: the
	// busy ones stay, and the flood goes through the other 2 places.
	other := addr(1000)
	p.remember(other, udPeer{ah: new(ibverbs.AH)})
	for i := 1001; i <= 1100; i++ {
		write(busy)
		write(other)
		p.remember(addr(i), udPeer{ah: new(ibverbs.AH)})
		write(addr(i))
		_, okBusy := p.peers[busy]
		_, okOther := p.peers[other]
		if !okBusy || !okOther {
			t.Fatalf("at the new one %d: the busy destinations known: %v, %v", i, okBusy, okOther)
		}
	}
	ahs := make([]*ibverbs.AH, 64)
	for i := range ahs {
		ahs[i] = new(ibverbs.AH)
	}
	i := 0
	if a := testing.AllocsPerRun(len(ahs)-1, func() {
		write(busy)
		p.remember(addr(2000+i), udPeer{ah: ahs[i]})
		i++
	}); a != 0 {
		t.Errorf("%.2f allocations an eviction", a)
	}
}

// TestPacketPeersLRU drives the eviction with writes to known
// destinations and new ones at random, against a list of the
// destinations in the order last written to: the ones known are always
// the list's first 5.
func TestPacketPeersLRU(t *testing.T) {
	t.Cleanup(SetMaxPeers(5))
	p := &PacketConn{peers: map[netip.AddrPort]udPeer{}, closed: make(chan struct{})}
	ctx := context.Background()
	by := time.Now().Add(time.Minute)
	var recent []netip.AddrPort // the model: most recent first
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		if len(recent) > 0 && r.IntN(3) > 0 {
			to := recent[r.IntN(min(len(recent), 5))]
			if _, err := p.lookupOnce(ctx, to, by); err != nil {
				t.Fatalf("step %d: WriteTo %v, known: %v", i, to, err)
			}
			recent = slices.DeleteFunc(recent, func(a netip.AddrPort) bool { return a == to })
			recent = slices.Insert(recent, 0, to)
		} else {
			to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 4791)
			p.remember(to, udPeer{ah: new(ibverbs.AH)})
			recent = slices.Insert(recent, 0, to)
		}
		want := recent[:min(len(recent), 5)]
		if len(p.peers) != len(want) {
			t.Fatalf("step %d: %d destinations known, want %d", i, len(p.peers), len(want))
		}
		for _, a := range want {
			if _, ok := p.peers[a]; !ok {
				t.Fatalf("step %d: %v, among the 5 written to last (%v), was dropped", i, a, want)
			}
		}
	}
}
