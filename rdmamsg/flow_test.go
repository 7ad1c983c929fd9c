package rdmamsg

import (
	"math/rand/v2"
	"testing"
)

// side models one end of a connection for the credit protocol: its
// receives, the messages its application has not taken yet, and the
// messages it has on the wire to the other side, in order.
type side struct {
	fl      flow
	posted  int      // receives posted
	held    int      // data messages received, not yet taken
	wire    []uint32 // immediate data of messages on their way to the peer
	pending int      // data messages the application still wants to send
	sent    int
	got     int
}

func newSides(depthA, depthB int) (*side, *side) {
	a := &side{fl: newFlow(depthA, depthB), posted: depthA}
	b := &side{fl: newFlow(depthB, depthA), posted: depthB}
	return a, b
}

// update sends an update if the protocol calls for one, as the
// connection does after every change.
func (s *side) update() {
	if s.fl.wantUpdate() {
		s.wire = append(s.wire, s.fl.update())
	}
}

func (s *side) trySend() bool {
	if s.pending == 0 || !s.fl.canSend() {
		return false
	}
	s.pending--
	s.sent++
	s.wire = append(s.wire, s.fl.send())
	return true
}

// deliver moves the first message on from's wire to to, failing the test
// if to has no receive posted for it: the protocol's promise.
func deliver(t *testing.T, from, to *side) bool {
	t.Helper()
	if len(from.wire) == 0 {
		return false
	}
	imm := from.wire[0]
	from.wire = from.wire[1:]
	if to.posted == 0 {
		t.Fatal("a message arrived with no receive posted")
	}
	to.posted--
	kind, ok := to.fl.received(imm)
	if !ok {
		t.Fatalf("immediate data %#x refused", imm)
	}
	if kind == msgUpdate {
		to.posted++
		to.fl.reposted(1)
		to.update()
	} else {
		to.held++
	}
	return true
}

func (s *side) take() bool {
	if s.held == 0 {
		return false
	}
	s.held--
	s.got++
	s.posted++
	s.fl.reposted(1)
	s.update()
	return true
}

// invariant checks that each side's credits, what is on the wire to the
// peer, what the peer holds and what it has not reported add up to the
// peer's depth.
func invariant(t *testing.T, s, peer *side, peerDepth int) {
	t.Helper()
	if peer.posted+peer.held != peerDepth {
		t.Fatalf("peer has %d posted and %d held, depth %d", peer.posted, peer.held, peerDepth)
	}
	if s.fl.credits < 0 {
		t.Fatalf("credits %d", s.fl.credits)
	}
	// An abort, which takes no credit, sent now goes behind what is on
	// the wire into the receive the peer posts beyond its depth: that one
	// is free as long as the messages on the wire find receives within
	// the depth.
	if len(s.wire) > peer.posted {
		t.Fatalf("%d messages on the wire, %d receives posted within the depth", len(s.wire), peer.posted)
	}
	// Credits in flight back to s are in the peer's wire.
	back := 0
	for _, imm := range peer.wire {
		back += int(imm & immCredits)
	}
	if got := s.fl.credits + len(s.wire) + peer.held + peer.fl.unreported + back; got != peerDepth {
		t.Fatalf("credits %d + on the wire %d + held %d + unreported %d + reported in flight %d = %d, want the depth %d",
			s.fl.credits, len(s.wire), peer.held, peer.fl.unreported, back, got, peerDepth)
	}
}

// TestFlowNeverOverrunsNorDeadlocks drives two sides with random
// senders, receivers and wire delays: no message may find its receive
// queue empty, and once both applications take everything, every message
// wanted must get through and both sides must be able to send again.
func TestFlowNeverOverrunsNorDeadlocks(t *testing.T) {
	for _, depths := range [][2]int{{4, 4}, {4, 64}, {5, 7}, {32, 32}, {64, 4}} {
		for seed := range uint64(50) {
			r := rand.New(rand.NewPCG(seed, uint64(depths[0]*1000+depths[1])))
			a, b := newSides(depths[0], depths[1])
			a.pending, b.pending = 1+r.IntN(500), r.IntN(500)
			sides := [2]*side{a, b}
			// Random phase: the applications take messages when they
			// please, or not at all for a while.
			for range 2000 {
				i := r.IntN(2)
				s, peer := sides[i], sides[1-i]
				switch r.IntN(5) {
				case 0:
					s.trySend()
				case 1:
					deliver(t, s, peer)
				case 2:
					if r.IntN(3) > 0 {
						s.take()
					}
				case 3:
					// a burst, as a busy sender posts
					for s.trySend() {
					}
				case 4:
					// a keepalive, sent as data is: only with a
					// credit to spare
					if s.fl.canSend() {
						s.wire = append(s.wire, s.fl.update())
					}
				}
				invariant(t, a, b, depths[1])
				invariant(t, b, a, depths[0])
			}
			// Fair phase: both applications take everything.
			for step := 0; a.pending+b.pending+len(a.wire)+len(b.wire)+a.held+b.held > 0; step++ {
				if step > 100000 {
					t.Fatalf("depths %v seed %d: stuck with %d and %d to send, credits %d and %d, %d and %d unreported",
						depths, seed, a.pending, b.pending, a.fl.credits, b.fl.credits, a.fl.unreported, b.fl.unreported)
				}
				for _, s := range sides {
					s.trySend()
				}
				deliver(t, a, b)
				deliver(t, b, a)
				a.take()
				b.take()
				invariant(t, a, b, depths[1])
				invariant(t, b, a, depths[0])
			}
			if a.got != b.sent || b.got != a.sent {
				t.Fatalf("sent %d and %d, received %d and %d", a.sent, b.sent, b.got, a.got)
			}
			if !a.fl.canSend() || !b.fl.canSend() {
				t.Fatalf("depths %v seed %d: idle, yet credits %d and %d", depths, seed, a.fl.credits, b.fl.credits)
			}
		}
	}
}

// TestFlowRefusesBadImmediate checks that credits the peer cannot have
// given, and bits the protocol does not use, are refused.
func TestFlowRefusesBadImmediate(t *testing.T) {
	f := newFlow(8, 8)
	f.send()
	if _, ok := f.received(2); ok {
		t.Error("9 credits of a depth of 8 accepted")
	}
	if _, ok := f.received(1 << 20); ok {
		t.Error("an unused bit accepted")
	}
	if _, ok := f.received(immUpdate | immEnd); ok {
		t.Error("an update that is also an end accepted")
	}
	if k, ok := f.received(immUpdate | 1); !ok || k != msgUpdate || f.credits != 8 {
		t.Errorf("an update of 1: kind %v, ok %v, credits %d", k, ok, f.credits)
	}
	f.send()
	if k, ok := f.received(immEnd | 1); !ok || k != msgEnd || f.credits != 8 {
		t.Errorf("an end reporting 1: kind %v, ok %v, credits %d", k, ok, f.credits)
	}
	if k, ok := f.received(immAbort); !ok || k != msgAbort {
		t.Errorf("an abort: kind %v, ok %v", k, ok)
	}
	if k, ok := f.received(immEnd | immClosing); !ok || k != msgClose {
		t.Errorf("an end of Close's: kind %v, ok %v", k, ok)
	}
	for _, imm := range []uint32{immClosing, immUpdate | immClosing, immAbort | immClosing} {
		if _, ok := f.received(imm); ok {
			t.Errorf("immediate data %#x accepted: the closing bit goes only with an end", imm)
		}
	}
}

// TestFlowEnd: an end message takes no credit, reports the receives
// reposted, and marks Close's.
func TestFlowEnd(t *testing.T) {
	f := newFlow(4, 4)
	f.credits = 0
	f.reposted(3)
	if imm := f.end(false); imm != immEnd|3 || f.credits != 0 || f.unreported != 0 {
		t.Errorf("end: %#x, credits %d, unreported %d; want %#x, 0, 0", imm, f.credits, f.unreported, immEnd|3)
	}
	if imm := f.end(true); imm != immEnd|immClosing {
		t.Errorf("Close's end: %#x; want %#x", imm, immEnd|immClosing)
	}
}

// TestFlowAbort: an abort takes no credit from a peer that keeps a
// receive spare for it, and goes with none left; to one that keeps none,
// it takes a credit, and cannot go without one.
func TestFlowAbort(t *testing.T) {
	f := newFlow(4, 4)
	f.credits = 0
	if imm, ok := f.abort(true); !ok || imm != immAbort || f.credits != 0 {
		t.Errorf("abort with a spare and no credit: %#x, %v, credits %d", imm, ok, f.credits)
	}
	if _, ok := f.abort(false); ok {
		t.Error("abort without a spare or a credit went")
	}
	f.credits = 1
	if imm, ok := f.abort(false); !ok || imm != immAbort || f.credits != 0 {
		t.Errorf("abort without a spare, with a credit: %#x, %v, credits %d", imm, ok, f.credits)
	}
}

func TestRing(t *testing.T) {
	r := newRing(3)
	next, want := 0, 0
	for step := range 50 {
		if r.len() < 3 && step%4 != 3 {
			r.push(next)
			next++
			continue
		}
		if got := r.pop(); got != want {
			t.Fatalf("pop = %d, want %d", got, want)
		}
		want++
	}
	if r.len() != next-want {
		t.Fatalf("len %d, want %d", r.len(), next-want)
	}
}
