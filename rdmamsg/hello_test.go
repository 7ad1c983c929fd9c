package rdmamsg

import (
	"bytes"
	"errors"
	"testing"
)

func TestHello(t *testing.T) {
	h := hello{depth: 32, maxMessage: 4096}
	b := h.encode()
	if len(b) != helloLen {
		t.Fatalf("%d bytes", len(b))
	}
	// RoCE's CM pads a reply's private data with zeros.
	for _, in := range [][]byte{b, append(bytes.Clone(b), make([]byte, 180)...)} {
		got, err := parseHello(in)
		if err != nil || got != h {
			t.Errorf("parseHello(%d bytes) = %+v, %v; want %+v", len(in), got, err, h)
		}
	}
	// The flag of end and abort messages is bit 0 of byte 5, which an
	// older rdmamsg sent as zero and ignores.
	e := hello{depth: 32, maxMessage: 4096, ends: true}
	if eb := e.encode(); eb[5] != 1 || !bytes.Equal(eb[:5], b[:5]) || !bytes.Equal(eb[6:], b[6:]) {
		t.Errorf("with ends: %x, without: %x", eb, b)
	}
	if got, err := parseHello(e.encode()); err != nil || got != e {
		t.Errorf("parseHello(%x) = %+v, %v; want %+v", e.encode(), got, err, e)
	}
	bad := map[string][]byte{
		"empty":       nil,
		"short":       b[:helloLen-1],
		"magic":       append([]byte("XRMS"), b[4:]...),
		"version":     func() []byte { c := bytes.Clone(b); c[4] = 2; return c }(),
		"depth 3":     hello{depth: 3, maxMessage: 1}.encode(),
		"depth 16385": hello{depth: maxDepth + 1, maxMessage: 1}.encode(),
		"message 0":   hello{depth: 4, maxMessage: 0}.encode(),
		"message big": hello{depth: 4, maxMessage: maxMaxMessage + 1}.encode(),
	}
	for name, in := range bad {
		if _, err := parseHello(in); !errors.Is(err, errNotHello) {
			t.Errorf("%s: parseHello = %v, want errNotHello", name, err)
		}
	}
}

// FuzzParseHello feeds the decoder of the peer's connection data with
// arbitrary bytes: it must not panic, and what it accepts must be within
// the bounds and encode back to the bytes it came from.
func FuzzParseHello(f *testing.F) {
	f.Add(hello{depth: 32, maxMessage: 4096}.encode())
	f.Add(append(hello{depth: 4, maxMessage: 1}.encode(), 0, 0, 0))
	f.Add([]byte("GRMS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHello(b)
		if err != nil {
			return
		}
		if h.depth < minDepth || h.depth > maxDepth || h.maxMessage < 1 || h.maxMessage > maxMaxMessage {
			t.Fatalf("accepted %+v", h)
		}
		enc := h.encode()
		if !bytes.Equal(enc[:4], b[:4]) || !bytes.Equal(enc[8:], b[8:helloLen]) || enc[4] != b[4] {
			t.Fatalf("%x decoded as %+v, which encodes as %x", b[:helloLen], h, enc)
		}
	})
}

func TestPacketHeaderAndHello(t *testing.T) {
	b := make([]byte, packetHeaderLen+3)
	putPacketHeader(b, 7471, 1016)
	if port, max, ok := parsePacketHeader(b); !ok || port != 7471 || max != 1016 {
		t.Errorf("header: %d %d %v", port, max, ok)
	}
	for name, bad := range map[string][]byte{
		"short":   b[:packetHeaderLen-1],
		"magic":   append([]byte{'X'}, b[1:]...),
		"port 0":  func() []byte { c := bytes.Clone(b); c[2], c[3] = 0, 0; return c }(),
		"max 0":   func() []byte { c := bytes.Clone(b); copy(c[4:8], []byte{0, 0, 0, 0}); return c }(),
		"version": func() []byte { c := bytes.Clone(b); c[1] = 9; return c }(),
	} {
		if _, _, ok := parsePacketHeader(bad); ok {
			t.Errorf("header %s accepted", name)
		}
	}
	h := append(packetHello(4096), make([]byte, 100)...)
	if max, ok := parsePacketHello(h); !ok || max != 4096 {
		t.Errorf("hello: %d %v", max, ok)
	}
	if _, ok := parsePacketHello(hello{depth: 4, maxMessage: 4}.encode()); ok {
		t.Error("a Conn's hello taken for a PacketConn's")
	}
}

// FuzzParsePacket feeds the datagram header and lookup answer decoders
// arbitrary bytes: they must not panic, and what they accept is in bounds.
func FuzzParsePacket(f *testing.F) {
	h := make([]byte, packetHeaderLen)
	putPacketHeader(h, 1, 1)
	f.Add(h)
	f.Add(packetHello(1016))
	f.Fuzz(func(t *testing.T, b []byte) {
		if port, max, ok := parsePacketHeader(b); ok && (port == 0 || max < 1 || max > maxMaxMessage) {
			t.Fatalf("header %x: port %d, max %d", b, port, max)
		}
		if max, ok := parsePacketHello(b); ok && (max < 1 || max > maxMaxMessage) {
			t.Fatalf("hello %x: max %d", b, max)
		}
	})
}

func TestEndpointFrame(t *testing.T) {
	e := endpoint{mtu: 3, lid: 0x1234, qpn: 0x11, psn: 0xabcdef,
		gid: [16]byte{10: 0xff, 11: 0xff, 12: 198, 13: 18, 15: 1}, hello: hello{depth: 32, maxMessage: 4096}}
	b := e.frame()
	kind, n, err := parseFrameHeader(b)
	if err != nil || kind != frameEndpoint || n != endpointLen || len(b) != frameHdrLen+n {
		t.Fatalf("header: %q %d %v (%d bytes)", kind, n, err, len(b))
	}
	if got, err := parseEndpoint(b[frameHdrLen:]); err != nil || got != e {
		t.Fatalf("parseEndpoint = %+v, %v; want %+v", got, err, e)
	}
	body := b[frameHdrLen:]
	with := func(i int, v byte) []byte { c := bytes.Clone(body); c[i] = v; return c }
	for name, in := range map[string][]byte{
		"short":   body[:endpointLen-1],
		"long":    append(bytes.Clone(body), 0),
		"version": with(0, 2),
		"MTU 0":   with(1, 0),
		"MTU 6":   with(1, 6),
		"QPN 0":   func() []byte { c := bytes.Clone(body); copy(c[4:8], []byte{0, 0, 0, 0}); return c }(),
		"QPN big": with(4, 1),
		"PSN big": with(8, 1),
		"hello":   with(28, 'X'),
	} {
		if _, err := parseEndpoint(in); !errors.Is(err, errNotHello) {
			t.Errorf("%s: parseEndpoint = %v, want errNotHello", name, err)
		}
	}
	for name, in := range map[string][]byte{
		"HTTP":  []byte("HTTP/1"),
		"short": b[:frameHdrLen-1],
		"kind":  func() []byte { c := bytes.Clone(b); c[4] = 'Q'; return c }(),
	} {
		if _, _, err := parseFrameHeader(in); !errors.Is(err, errNotHello) {
			t.Errorf("%s: parseFrameHeader = %v, want errNotHello", name, err)
		}
	}
	long := putFrame(frameError, bytes.Repeat([]byte("x"), 300))
	if kind, n, err := parseFrameHeader(long); err != nil || kind != frameError || n != maxFrameBody || len(long) != frameHdrLen+n {
		t.Errorf("a long error frame: %q %d %v (%d bytes)", kind, n, err, len(long))
	}
}

// FuzzParseEndpoint feeds the decoder of the peer's handshake with
// arbitrary bytes: it must not panic, and what it accepts must frame back
// to the bytes it came from.
func FuzzParseEndpoint(f *testing.F) {
	f.Add(endpoint{mtu: 1, qpn: 1, hello: hello{depth: 4, maxMessage: 1}}.frame()[frameHdrLen:])
	f.Add(make([]byte, endpointLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseEndpoint(b)
		if err != nil {
			return
		}
		if enc := e.frame()[frameHdrLen:]; !bytes.Equal(enc[:28], b[:28]) || !bytes.Equal(enc[28:32], b[28:32]) || !bytes.Equal(enc[36:], b[36:]) {
			t.Fatalf("%x decoded as %+v, which frames as %x", b, e, enc)
		}
	})
}
