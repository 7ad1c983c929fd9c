package ibverbs_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
)

// fullEndpoint has every field set, each to a value that tells its bytes
// apart.
func fullEndpoint() ibverbs.Endpoint {
	g, err := ibverbs.ParseGID("2001:db8::1:2:3:4")
	if err != nil {
		panic(err)
	}
	return ibverbs.Endpoint{QPN: 0xabcdef, PSN: 0x123456, QKey: 0x11223344, LID: 0xbeef, GID: g,
		GIDIndex: 3, GIDType: ibverbs.GIDTypeRoCEv2, MTU: ibverbs.MTU4096, Port: 1, RdAtomic: 16}
}

// The encoding is EndpointSize bytes, the version then the fields in
// order, big-endian, and decodes to what was encoded, from the front of
// longer input too.
func TestEndpointRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		e    ibverbs.Endpoint
		want string // hex
	}{
		{fullEndpoint(), "01" + "00abcdef" + "00123456" + "11223344" + "beef" +
			"20010db8000000000001000200030004" + "03" + "02" + "05" + "01" + "10"},
		{ibverbs.Endpoint{}, "01" + strings.Repeat("00", ibverbs.EndpointSize-1)},
		{ibverbs.Endpoint{QPN: 0xffffff, PSN: 0xffffff, QKey: 0xffffffff, LID: 0xffff,
			GID: ibverbs.GID(bytes.Repeat([]byte{0xff}, 16)), GIDIndex: 255, GIDType: 255,
			MTU: ibverbs.MTU256, Port: 255, RdAtomic: 255},
			"01" + "00ffffff" + "00ffffff" + "ffffffff" + "ffff" + strings.Repeat("ff", 16) +
				"ff" + "ff" + "01" + "ff" + "ff"},
	} {
		prefix := []byte("prefix")
		b, err := tc.e.AppendBinary(prefix)
		if err != nil {
			t.Errorf("AppendBinary(%v): %v", tc.e, err)
			continue
		}
		if !bytes.Equal(b[:len(prefix)], prefix) || hex.EncodeToString(b[len(prefix):]) != tc.want {
			t.Errorf("AppendBinary(%v) = %x, want prefix then %s", tc.e, b, tc.want)
		}
		if len(b)-len(prefix) != ibverbs.EndpointSize {
			t.Errorf("AppendBinary appended %d bytes, want EndpointSize (%d)", len(b)-len(prefix), ibverbs.EndpointSize)
		}
		m, err := tc.e.MarshalBinary()
		if err != nil || !bytes.Equal(m, b[len(prefix):]) {
			t.Errorf("MarshalBinary(%v) = %x, %v; want AppendBinary's %x", tc.e, m, err, b[len(prefix):])
		}
		for _, data := range [][]byte{m, append(bytes.Clone(m), make([]byte, 56-ibverbs.EndpointSize)...),
			append(bytes.Clone(m), "the caller's own bytes"...)} {
			var got ibverbs.Endpoint
			if err := got.UnmarshalBinary(data); err != nil || got != tc.e {
				t.Errorf("UnmarshalBinary(%x) = %v, %v; want %v", data, got, err, tc.e)
			}
		}
	}
}

// What AppendBinary cannot encode it refuses, appending nothing; what
// UnmarshalBinary cannot decode it refuses, leaving the Endpoint as it
// was: too few bytes, another version (the zeros of empty private data)
// and fields out of range.
func TestEndpointMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    ibverbs.Endpoint
	}{
		{"QPN past 24 bits", ibverbs.Endpoint{QPN: 1 << 24}},
		{"PSN past 24 bits", ibverbs.Endpoint{PSN: 1 << 24}},
		{"GID type past a byte", ibverbs.Endpoint{GIDType: 256}},
		{"MTU 6", ibverbs.Endpoint{MTU: 6}},
	} {
		b, err := tc.e.AppendBinary([]byte("x"))
		if !errors.Is(err, syscall.EINVAL) || string(b) != "x" {
			t.Errorf("AppendBinary %s: %q, %v; want x alone and EINVAL", tc.name, b, err)
		}
	}
	good, err := fullEndpoint().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	with := func(off int, v ...byte) []byte {
		b := bytes.Clone(good)
		copy(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"nil", nil, io.ErrUnexpectedEOF},
		{"one byte short", good[:ibverbs.EndpointSize-1], io.ErrUnexpectedEOF},
		{"zeros", make([]byte, 56), syscall.EINVAL},
		{"version 2", with(0, 2), syscall.EINVAL},
		{"QPN past 24 bits", with(1, 1), syscall.EINVAL},
		{"PSN past 24 bits", with(5, 1), syscall.EINVAL},
		{"MTU 6", with(33, 6), syscall.EINVAL},
		{"MTU 255", with(33, 255), syscall.EINVAL},
	} {
		orig := ibverbs.Endpoint{QPN: 7, MTU: ibverbs.MTU1024}
		got := orig
		if err := got.UnmarshalBinary(tc.data); !errors.Is(err, tc.want) || got != orig {
			t.Errorf("UnmarshalBinary %s: %v, %v; want %v and the Endpoint unchanged", tc.name, got, err, tc.want)
		}
	}
}

// FuzzEndpoint: any input decodes or fails without panicking, and
// leaves the Endpoint as it was when it fails; what decodes encodes back
// to the input's first EndpointSize bytes.
func FuzzEndpoint(f *testing.F) {
	enc, _ := fullEndpoint().MarshalBinary()
	f.Add(enc)
	f.Add(append(bytes.Clone(enc), make([]byte, 20)...))
	f.Add(make([]byte, 56))
	f.Add(enc[:ibverbs.EndpointSize-1])
	f.Fuzz(func(t *testing.T, data []byte) {
		var e ibverbs.Endpoint
		if err := e.UnmarshalBinary(data); err != nil {
			if e != (ibverbs.Endpoint{}) {
				t.Fatalf("failed (%v) but set %v", err, e)
			}
			return
		}
		if e.QPN > 0xffffff || e.PSN > 0xffffff || (e.MTU != 0 && e.MTU.Bytes() == 0) {
			t.Fatalf("decoded %+v, out of range", e)
		}
		b, err := e.MarshalBinary()
		if err != nil || !bytes.Equal(b, data[:ibverbs.EndpointSize]) {
			t.Fatalf("%+v encodes to %x, %v; decoded from %x", e, b, err, data[:ibverbs.EndpointSize])
		}
	})
}

// A GID is text in JSON, and back; text that is no GID fails.
func TestGIDText(t *testing.T) {
	for _, tc := range []struct{ in, text string }{
		{"::ffff:198.18.0.1", "::ffff:198.18.0.1"},
		{"198.18.0.1", "::ffff:198.18.0.1"},
		{"fe80::1", "fe80::1"},
		{"0000:0000:0000:0000:0000:ffff:c612:0001", "::ffff:198.18.0.1"},
		{"::", "::"},
	} {
		var g ibverbs.GID
		if err := g.UnmarshalText([]byte(tc.in)); err != nil {
			t.Errorf("UnmarshalText(%q): %v", tc.in, err)
			continue
		}
		b, err := g.MarshalText()
		if err != nil || string(b) != tc.text {
			t.Errorf("MarshalText(UnmarshalText(%q)) = %q, %v; want %q", tc.in, b, err, tc.text)
		}
		j, err := json.Marshal(g)
		if err != nil || string(j) != `"`+tc.text+`"` {
			t.Errorf("json.Marshal(%s) = %s, %v; want %q", tc.in, j, err, tc.text)
		}
		var back ibverbs.GID
		if err := json.Unmarshal(j, &back); err != nil || back != g {
			t.Errorf("json.Unmarshal(%s) = %v, %v; want %v", j, back, err, g)
		}
	}
	for _, bad := range []string{"", "x", "1.2.3", "::ffff:198.18.0.1:1", "0000:0000:0000:0000:0000:ffff:c612:00011",
		"zzzz:0000:0000:0000:0000:ffff:c612:0001",
		strings.Repeat("f", 1000)} {
		g := ibverbs.GID{1}
		if err := g.UnmarshalText([]byte(bad)); !errors.Is(err, syscall.EINVAL) || g != (ibverbs.GID{1}) {
			t.Errorf("UnmarshalText(%q): %v, GID %v; want EINVAL and the GID unchanged", bad, err, g)
		}
		if err := json.Unmarshal([]byte(`"`+bad+`"`), &g); err == nil {
			t.Errorf("json.Unmarshal(%q) = nil error", bad)
		}
	}
	// An Endpoint in JSON carries its GID as text.
	j, err := json.Marshal(fullEndpoint())
	if err != nil || !strings.Contains(string(j), `"GID":"2001:db8::1:2:3:4"`) {
		t.Errorf("json.Marshal(Endpoint) = %s, %v; want its GID as text", j, err)
	}
	var e ibverbs.Endpoint
	if err := json.Unmarshal(j, &e); err != nil || e != fullEndpoint() {
		t.Errorf("json.Unmarshal(%s) = %v, %v", j, e, err)
	}
}

// An Endpoint travels as EndpointSize bytes, here with a RemoteMR's
// bytes behind it; the peer decodes both from the front of what came.
func ExampleEndpoint_AppendBinary() {
	gid, _ := ibverbs.ParseGID("198.18.0.1")
	local := ibverbs.Endpoint{QPN: 0x11, PSN: 0x2a, QKey: 0x11111111, GID: gid, GIDIndex: 1,
		GIDType: ibverbs.GIDTypeRoCEv2, MTU: ibverbs.MTU1024, Port: 1, RdAtomic: 16}
	msg, err := local.AppendBinary(nil) // then, say, mr.Remote().AppendBinary(msg)
	if err != nil {
		panic(err)
	}
	// ... msg goes to the peer, by TCP or as rdma_cm private data ...
	var remote ibverbs.Endpoint
	if err := remote.UnmarshalBinary(msg); err != nil {
		panic(err)
	}
	fmt.Println(len(msg), remote)
	// Output: 36 QPN 0x000011 PSN 0x00002a LID 0 GID ::ffff:198.18.0.1 (index 1, RoCE v2) MTU 1024
}
