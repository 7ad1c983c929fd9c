package rdmamsg

// The credit protocol. Each side keeps depth receives posted, one per
// message it can take; the peer starts with that many credits and spends
// one on every message it sends, so no message ever finds the receive
// queue empty (no RNR NAK, no retry timer). A side that has reposted
// receives reports them in the immediate data of its next message; when it
// has no message to send and half its depth is unreported, it sends an
// update: a message with no payload whose immediate data has the update
// bit set.
//
// An update needs a credit too, since it takes a receive on the other
// side. A side therefore sends data only while it holds two credits or
// more, keeping the last for an update. That avoids the deadlock of two
// sides that have spent every credit on data and each wait for the other's
// report: a side always has the credit to report with. An update, for its
// part, is answered by an update only once half a depth of them has
// accumulated, so two idle sides do not trade updates for ever.
//
// Two more messages end a side's part, and need no credit: an end message
// (CloseWrite, Close), after the data before it, and an abort (Abort).
// Each side posts two receives more than the depth it tells its peer,
// which the credits never count: at most depth messages are ever in
// receives not yet posted again, and a side sends at most one end and one
// abort, so those two stay free for them, even when the peer reads
// nothing and no credit is left. The receive an end or an abort took is
// not posted again, nor reported: nothing may follow it but updates (and,
// after an end, an abort).
const (
	immUpdate  = 1 << 31   // the message is an update, not data
	immAbort   = 1 << 30   // the sender aborted the connection (Abort)
	immEnd     = 1 << 29   // the end of the sender's stream (CloseWrite, Close)
	immClosing = 1 << 28   // with immEnd: the sender closes (Close), and takes nothing more
	immCredits = 1<<16 - 1 // the credits reported
)

// What a message received is, by its immediate data.
type msgKind int

const (
	msgData msgKind = iota
	msgUpdate
	msgEnd
	msgClose // an end message of Close's
	msgAbort
)

// flow is one side's account of the credit protocol.
type flow struct {
	credits    int // receives the peer has posted that this side may fill
	unreported int // receives reposted here that the peer has not been told of
	threshold  int // unreported receives that call for an update
	peerDepth  int // the most credits the peer can give
}

func newFlow(depth, peerDepth int) flow {
	return flow{credits: peerDepth, threshold: depth / 2, peerDepth: peerDepth}
}

// canSend says whether a data message may go now.
func (f *flow) canSend() bool { return f.credits >= 2 }

// send spends a credit on a data message and returns its immediate data,
// which reports every receive reposted so far.
func (f *flow) send() uint32 {
	f.credits--
	imm := uint32(f.unreported)
	f.unreported = 0
	return imm
}

// wantUpdate says whether an update should go now: enough is unreported
// and a credit is left for it.
func (f *flow) wantUpdate() bool {
	return f.unreported >= f.threshold && f.credits >= 1
}

// update spends a credit on an update and returns its immediate data.
func (f *flow) update() uint32 {
	f.credits--
	imm := immUpdate | uint32(f.unreported)
	f.unreported = 0
	return imm
}

// abort returns the immediate data of an abort, which goes into a
// receive the peer keeps spare, or, where the peer keeps none (spare
// false: an older rdmamsg), takes a credit; ok is false when it cannot
// go.
func (f *flow) abort(spare bool) (imm uint32, ok bool) {
	if !spare {
		if f.credits < 1 {
			return 0, false
		}
		f.credits--
	}
	return immAbort, true
}

// end returns the immediate data of an end message, which goes into a
// receive the peer keeps spare, and reports every receive reposted so
// far, as data does; closing says the sender closes.
func (f *flow) end(closing bool) uint32 {
	imm := immEnd | uint32(f.unreported)
	if closing {
		imm |= immClosing
	}
	f.unreported = 0
	return imm
}

// received takes a message's immediate data: it adds the credits the peer
// reports and says what the message is. ok is false for immediate data
// this protocol never sends (an unused bit, or more than one kind), or
// credits the peer cannot have given.
func (f *flow) received(imm uint32) (kind msgKind, ok bool) {
	n := int(imm & immCredits)
	switch imm &^ immCredits {
	case 0:
		kind = msgData
	case immUpdate:
		kind = msgUpdate
	case immEnd:
		kind = msgEnd
	case immEnd | immClosing:
		kind = msgClose
	case immAbort:
		kind = msgAbort
	default:
		return 0, false
	}
	if f.credits+n > f.peerDepth {
		return 0, false
	}
	f.credits += n
	return kind, true
}

// reposted counts n receives posted again.
func (f *flow) reposted(n int) { f.unreported += n }

// ring is a FIFO of receive buffer indices, of fixed capacity.
type ring struct {
	buf        []int
	head, size int
}

func newRing(n int) ring { return ring{buf: make([]int, n)} }

func (r *ring) len() int { return r.size }

// push adds i at the back; the ring must not be full.
func (r *ring) push(i int) {
	r.buf[(r.head+r.size)%len(r.buf)] = i
	r.size++
}

// pop takes the front; the ring must not be empty.
func (r *ring) pop() int {
	i := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return i
}
