//go:build linux && cgo

package rdmamsg

// SetMaxPeers sets how many destinations a PacketConn keeps address
// handles for, for a test, and returns what puts it back.
func SetMaxPeers(n int) (restore func()) {
	old := maxPeers
	maxPeers = n
	return func() { maxPeers = old }
}

// Peers returns how many destinations p keeps an address handle for.
func (p *PacketConn) Peers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.peers)
}

// Retired returns how many address handles p has retired and not yet
// closed.
func (p *PacketConn) Retired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.retired)
}

// Hello returns the private data of an rdmamsg Dial's request, for a test
// that drives rdma_cm itself.
func Hello(depth, maxMessage int) []byte {
	return hello{depth: depth, maxMessage: maxMessage}.encode()
}
