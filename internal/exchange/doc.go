// Package exchange is gorperf's control protocol: how a client and a server
// agree on a test over a TCP connection (port 18515 by default) and swap what
// each needs to reach the other's queue pairs and memory.
//
// A session runs in this order; every step is one message each way, or one
// message from the client:
//
//	both    Hello     Handshake: magic "GRPF" and ProtocolVersion must match
//	client  TestSpec  the server learns the test from the client, then checks
//	                  it with TestSpec.CheckLimits before it allocates anything
//	both    Offer     with -R on RC (version 14), before rdma_cm connects the
//	                  QPs: the client's path MTU, then the server's once it
//	                  listens, so that both cap their QPs to the least
//	                  (an -R test of another kind has a Sync there)
//	both    Setup     SwapSetup: one QPInfo (endpoint, rkey, buffer) per QP, and the Env
//	both    Sync      Barrier, as often as the test needs: before each
//	                  size, and with a warm-up one more before that
//	                  (version 11), which ends the warm-ups
//	both    Result    SwapResult: each side's counts, for bidirectional totals
//
// Instead of the message it is expected to send, a side may send an ErrorMsg
// at any point; the receiver gets it back as a *PeerError. A side that is
// interrupted (Ctrl-C) sends an ErrorMsg with CodeAborted (version 9): in
// a measurement before its Result, so that the peer ends its own loop at
// once and still gets the figures; a passive side, after the Result it
// has already sent; in a warm-up or between sizes, in place of its Sync.
//
// Between those messages each side may send an Alive at any point, and
// gorperf's engine sends one every 250 ms from the start of a test to
// the end (Conn.KeepAlive): receives skip them, and a side that waits
// with Conn.SetPeerTimeout tells a peer that is stopped or hung, whose
// connection stays open, from one that takes long to finish. A server
// whose client's test waits its turn behind other clients' tests (gorperf
// serve) sends it a Queued in place of an Alive (version 13), which says
// how many tests come first: receives pass it to the Conn's OnQueued and
// skip it too.
//
// # Wire format
//
// Every message is a frame: a 4-byte header {type uint8, reserved uint8 (0),
// length uint16} and a payload of that length, at most MaxPayload bytes. All
// integers are big-endian; a bool is one byte, 0 or 1; a string is a one-byte
// length and at most MaxString bytes. Each message type has a fixed payload
// layout (see the AppendPayload methods) and only one encoding: decoders
// reject unknown types, non-zero reserved bytes, bools other than 0 or 1,
// counts over their bound and trailing bytes, so whatever decodes re-encodes
// to the same bytes. The header is checked before the payload is read, so a
// peer that speaks another protocol (perftest's ASCII key exchange, say) is
// recognised at once and nothing larger than the bound for that type is ever
// allocated. The decoders are fuzzed (fuzz_test.go).
//
// A Conn reads exactly one frame at a time without read-ahead, but for
// Conn.ReadAhead's, whose messages its next receives return, so the
// underlying net.Conn can be used for something else after the exchange.
package exchange
