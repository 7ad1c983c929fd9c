//go:build linux && cgo

package bench

import (
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/internal/exchange"
)

// TestAnyPattern: through an SRQ a region may hold packets of two QPs'
// messages, each at its place, but not a byte that none of them sent there.
func TestAnyPattern(t *testing.T) {
	const size = 4096
	a, b, got := make([]byte, size), make([]byte, size), make([]byte, size)
	pattern(a, size, 0)
	pattern(b, size, 1)
	copy(got, a[:1024])
	copy(got[1024:], b[1024:])
	want := make([]byte, size)
	if !anyPattern(got, want, []int{0, 1}) {
		t.Error("QP 0's first packet and QP 1's other three were refused")
	}
	if !anyPattern(b, want, []int{0, 1}) {
		t.Error("QP 1's whole message was refused")
	}
	got[2000] = b[2001]
	if anyPattern(got, want, []int{0, 1}) {
		t.Error("a byte out of place was accepted")
	}
	if anyPattern(b, want, []int{0}) {
		t.Error("QP 1's message was accepted where only QP 0's landed")
	}
}

// srqSession is a send_bw server's session of nqp QPs through an SRQ with
// --validate, QP i numbered 100+i, with no device.
func srqSession(t *testing.T, nqp int, size uint32) *session {
	spec := exchange.TestSpec{Test: exchange.SendBW, ConnType: ibverbs.QPTypeRC, Size: size, Iterations: 100,
		NumQPs: uint16(nqp), TXDepth: 16, RXDepth: 64, CQModeration: 1, SRQ: true, ValidateData: true}
	s := unitSession(t, spec)
	s.srqFilled = &srqLanded{index: map[uint32]int{}, filled: make([]bool, nqp), bits: make([][]uint64, nqp)}
	for i := range nqp {
		s.srqFilled.index[uint32(100+i)] = i
		s.srqFilled.bits[i] = make([]uint64, (nqp+63)/64)
	}
	return s
}

// TestSRQValidateLanded: through an SRQ, --validate checks a region only
// against the patterns of the QPs whose messages landed there in the
// size's run, where any QP's pattern passed: with 64 QPs, whose patterns
// differ by 13·qp mod 256, a single bit flipped that turns a byte into
// another QP's passed one time in five, and with 256 QPs any byte did.
func TestSRQValidateLanded(t *testing.T) {
	const size = 4096
	for _, nqp := range []int{2, 64, 256} {
		s := srqSession(t, nqp, size)
		b := s.buf.Bytes()
		// Region 1 got QP 0's and QP 1's messages, packet by packet;
		// region 0 got QP 0's.
		msg := func(region, qp int) []byte {
			m := b[s.dst(region) : s.dst(region)+size]
			pattern(m, size, qp)
			s.srqFilled.add(region, uint32(100+qp))
			return m
		}
		msg(0, 0)
		r1 := msg(1, 1)
		copy(r1[:1024], b[s.dst(0):])
		s.srqFilled.add(1, 100)
		if bad := s.validate(size, false, 100); bad != 0 {
			t.Fatalf("%d QPs: %d mismatches in intact regions", nqp, bad)
		}
		// Every single-bit flip of region 0's bytes: each must count.
		m := b[s.dst(0) : s.dst(0)+size]
		passed, tried := 0, 0
		for j := 0; j < size; j += 61 {
			for bit := range 8 {
				msg(0, 0)
				m[j] ^= 1 << bit
				tried++
				if s.validate(size, false, 100) == 0 {
					passed++
				}
			}
		}
		if passed != 0 {
			t.Errorf("%d QPs: %d of %d single-bit flips passed", nqp, passed, tried)
		}
		// A region in which a message came to a QP the session does not
		// know counts when it holds no QP's pattern.
		m2 := b[s.dst(0) : s.dst(0)+size]
		for i := range m2 {
			m2[i] = 0xab
		}
		s.srqFilled.add(0, 7)
		if bad := s.validate(size, false, 100); bad != 1 {
			t.Errorf("%d QPs: 0xab bytes from an unknown QP: %d mismatches, want 1", nqp, bad)
		}
		// What landed is forgotten for the next size: a region nothing
		// landed in is not checked.
		if bad := s.validate(size, false, 100); bad != 0 {
			t.Errorf("%d QPs: regions nothing landed in: %d mismatches", nqp, bad)
		}
	}
}
