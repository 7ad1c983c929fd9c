//go:build linux && cgo

package bench

import "testing"

// TestAnyPattern: through an SRQ a region may hold packets of two QPs'
// messages, each at its place, but not a byte that no QP sent there.
func TestAnyPattern(t *testing.T) {
	const size, nqp = 4096, 2
	a, b, got := make([]byte, size), make([]byte, size), make([]byte, size)
	pattern(a, size, 0)
	pattern(b, size, 1)
	copy(got, a[:1024])
	copy(got[1024:], b[1024:])
	want := make([]byte, size)
	if !anyPattern(got, want, nqp) {
		t.Error("QP 0's first packet and QP 1's other three were refused")
	}
	if !anyPattern(b, want, nqp) {
		t.Error("QP 1's whole message was refused")
	}
	got[2000] = b[2001]
	if anyPattern(got, want, nqp) {
		t.Error("a byte out of place was accepted")
	}
	if anyPattern(b, want, 1) {
		t.Error("QP 1's message was accepted where only QP 0 sends")
	}
}
