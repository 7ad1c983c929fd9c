package exchange

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorperf/gorperf/ibverbs"
)

// fullEndpoint has every field set, and a GID with all 16 bytes non-zero.
func fullEndpoint() ibverbs.Endpoint {
	g, err := ibverbs.ParseGID("fe80:1234:5678:9abc:def0:1122:3344:5566")
	if err != nil {
		panic(err)
	}
	return ibverbs.Endpoint{QPN: 0xabcdef, PSN: 0x123456, QKey: 0x11111111, LID: 0xbeef,
		GID: g, GIDIndex: 3, GIDType: ibverbs.GIDTypeRoCEv2, MTU: ibverbs.MTU4096, Port: 1, RdAtomic: 16}
}

// testSpec is a valid write_bw spec with every field non-zero that can be.
func testSpec() TestSpec {
	return TestSpec{Test: WriteBW, ConnType: ibverbs.QPTypeRC, Size: 65536, Iterations: 5000,
		Duration: 0, NumQPs: 2, Bidirectional: true, TXDepth: 128, RXDepth: 512,
		CQModeration: 100, PostList: 1, Inline: 0, MTU: ibverbs.MTU1024, TrafficClass: 106, SL: 3, OutReads: 8,
		ValidateData: true}
}

func messages() []struct {
	name string
	m    Message
} {
	every := TestSpec{Test: AtomicLat, Atomic: CmpSwap, ConnType: ibverbs.QPTypeUD, Size: 0xdeadbeef,
		AllSizes: true, Iterations: 1 << 60, Duration: 99, Margin: 0x01020304, NumQPs: 0xffff, Bidirectional: true,
		TXDepth: 1, RXDepth: 2, CQModeration: 3, PostList: 4, RecvPostList: 6, Inline: 5, MTU: ibverbs.MTU256,
		RdmaCM: true, TrafficClass: 255, SL: 15, OutReads: 255, RunInfinitely: true, ValidateData: true, OldPostSend: true,
		NoRelaxedOrdering: true, Events: true, HugePages: true, SRQ: true, Reversed: true, Immediate: true, WarmUp: true, MRPerQP: true, Multicast: true, InlineDefault: true, RXDepthDefault: true, Flags: 0x80000000,
		Threads: 0xfffe, Thread: 0xfffd, Group: 0x0102030405060708,
		FlowLabels: []uint32{0, MaxFlowLabel, 0x12345}}
	labels := testSpec()
	labels.FlowLabels = make([]uint32, MaxSetupQPs)
	for i := range labels.FlowLabels {
		labels.FlowLabels[i] = uint32(i) << 10
	}
	many := make([]QPInfo, MaxSetupQPs)
	for i := range many {
		many[i] = QPInfo{Endpoint: fullEndpoint(), RKey: uint32(i), Addr: uint64(i) << 32, Len: 1 << 20}
	}
	return []struct {
		name string
		m    Message
	}{
		{"hello", NewHello("gorperf 0.1.0")},
		{"hello empty", Hello{}},
		{"hello max tool", NewHello(strings.Repeat("x", MaxString))},
		{"spec", testSpec()},
		{"spec zero", TestSpec{}},
		{"spec every field", every},
		{"spec max flow labels", labels},
		{"setup empty", Setup{}},
		{"setup one", Setup{QPs: []QPInfo{{Endpoint: fullEndpoint(), RKey: 0xcafe, Addr: 0x7f00_0000_1000, Len: 1 << 23}}}},
		{"setup env", Setup{QPs: []QPInfo{{Endpoint: fullEndpoint(), RKey: 1, Addr: 2, Len: 3}},
			Env: Env{Host: "node17", Kernel: "6.1.0-57-amd64", Device: "mlx5_0", FWVer: "28.39.1002", Netdev: "ens1f0np0",
				VendorID: 0x2c9, VendorPartID: 4129, LinkKbps: 103125000, ActiveMTU: 4096}}},
		{"setup max", Setup{QPs: many, Env: Env{Host: strings.Repeat("h", MaxString), Kernel: strings.Repeat("k", MaxString),
			Device: strings.Repeat("d", MaxString), FWVer: strings.Repeat("f", MaxString), Netdev: strings.Repeat("n", MaxString),
			VendorID: math.MaxUint32, VendorPartID: math.MaxUint32, LinkKbps: math.MaxUint32, ActiveMTU: math.MaxUint32}}},
		{"sync", Sync{Seq: 7}},
		{"sync max", Sync{Seq: 0xffffffff}},
		{"result", Result{Iterations: 5000, Bytes: 5000 * 65536, Elapsed: 1234567 * time.Microsecond, Mismatches: 2, PeakMessages: 1000, PeakElapsed: 20900 * time.Nanosecond}},
		{"result error", Result{Error: "CQ error: RETRY_EXC_ERR on QP 0x12"}},
		{"result max error", Result{Iterations: math.MaxUint64, Error: strings.Repeat("e", MaxString)}},
		{"error max text", ErrorMsg{Code: CodeOverLimit, Text: strings.Repeat("t", MaxString)}},
		{"error", ErrorMsg{Code: CodeOverLimit, Text: "too big"}},
		{"error unknown code", ErrorMsg{Code: 999}},
		{"alive", Alive{}},
		{"queued", Queued{Ahead: 3}},
		{"queued max", Queued{Ahead: math.MaxUint32}},
		{"offer", Offer{MTU: ibverbs.MTU1024}},
	}
}

// TestPayloadBounds: each type's smallest and largest message encode to
// exactly the payload sizes a receiver accepts for it, so that no message
// a sender makes is refused as malformed (a Result's bounds had kept
// four numbers when it gained a fifth: an error text of 248 bytes or more
// was refused).
func TestPayloadBounds(t *testing.T) {
	maxSetup := messages()
	byName := map[string]Message{}
	for _, tc := range maxSetup {
		byName[tc.name] = tc.m
	}
	for _, tc := range []struct {
		smallest, largest Message
	}{
		{Hello{}, byName["hello max tool"]},
		{TestSpec{}, byName["spec max flow labels"]},
		{Setup{}, byName["setup max"]},
		{Sync{}, Sync{Seq: math.MaxUint32}},
		{Result{}, byName["result max error"]},
		{ErrorMsg{}, byName["error max text"]},
		{Alive{}, Alive{}},
		{Queued{}, Queued{Ahead: math.MaxUint32}},
	} {
		typ := tc.smallest.Type()
		lo, hi, ok := payloadBounds(typ)
		if !ok {
			t.Fatalf("%v: no bounds", typ)
		}
		if n := len(tc.smallest.AppendPayload(nil)); n != lo {
			t.Errorf("%v: the smallest payload is %d bytes, the bounds' %d", typ, n, lo)
		}
		if n := len(tc.largest.AppendPayload(nil)); n != hi {
			t.Errorf("%v: the largest payload is %d bytes, the bounds' %d", typ, n, hi)
		}
		frame, err := AppendFrame(nil, tc.largest)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeFrame(frame); err != nil {
			t.Errorf("%v: the largest message: %v", typ, err)
		}
	}
}

// TestTruncate: a text cut to MaxString bytes ends with an ellipsis,
// cut at a space near the limit where there is one (the peer's fix in a
// long error read "... or leave -x", as if whole), else before a split
// UTF-8 sequence; one that is not UTF-8 where it is cut keeps all but
// the ellipsis's bytes: a backward scan through 300 continuation bytes
// made it empty, and a failed Result read as a success on the peer.
func TestTruncate(t *testing.T) {
	words := strings.Repeat("word ", 60) // 300 bytes, a space every 5
	for _, tc := range []struct {
		name string
		s    string
		want string
	}{
		{"short", "abc", "abc"},
		{"whole", strings.Repeat("a", MaxString), strings.Repeat("a", MaxString)},
		{"ascii", strings.Repeat("a", 300), strings.Repeat("a", MaxString-3) + "…"},
		{"words", words, strings.TrimSpace(words[:250]) + "…"},
		{"spaces", strings.Repeat("a", 250) + strings.Repeat(" ", 10), strings.Repeat("a", 250) + "…"},
		{"space far back", "a " + strings.Repeat("b", 300), "a " + strings.Repeat("b", MaxString-5) + "…"},
		{"split rune", strings.Repeat("a", MaxString-4) + "é" + "aaaa", strings.Repeat("a", MaxString-4) + "…"},
		{"split 4-byte rune", strings.Repeat("a", MaxString-5) + "😀" + "aaaa", strings.Repeat("a", MaxString-5) + "…"},
		{"not UTF-8", strings.Repeat("\x80", 300), strings.Repeat("\x80", MaxString-3) + "…"},
	} {
		got := truncate(tc.s)
		if got != tc.want || len(got) > MaxString {
			t.Errorf("%s: %q (%d bytes), want %q", tc.name, got, len(got), tc.want)
		}
	}
	res, err := DecodeFrame(must(AppendFrame(nil, Result{Error: strings.Repeat("\x80", 300)})))
	if err != nil || res.(Result).Err() == nil {
		t.Errorf("a Result whose error is not UTF-8: %+v, %v; want it failed", res, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range messages() {
		t.Run(tc.name, func(t *testing.T) {
			frame, err := AppendFrame([]byte("prefix"), tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(frame, []byte("prefix")) {
				t.Fatalf("AppendFrame lost the prefix")
			}
			frame = frame[len("prefix"):]
			if got := int(binary.BigEndian.Uint16(frame[2:])); got != len(frame)-HeaderLen {
				t.Fatalf("header length %d, payload %d", got, len(frame)-HeaderLen)
			}
			got, err := DecodeFrame(frame)
			if err != nil {
				t.Fatalf("DecodeFrame: %v", err)
			}
			if !reflect.DeepEqual(got, tc.m) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.m)
			}
			got, err = ReadFrame(bytes.NewReader(frame))
			if err != nil || !reflect.DeepEqual(got, tc.m) {
				t.Fatalf("ReadFrame = %+v, %v", got, err)
			}
			got, err = decodePayload(tc.m.Type(), tc.m.AppendPayload(nil))
			if err != nil || !reflect.DeepEqual(got, tc.m) {
				t.Fatalf("decodePayload = %+v, %v", got, err)
			}
		})
	}
}

func TestEncodeBounds(t *testing.T) {
	long := strings.Repeat("é", MaxString) // 2 bytes a rune: cut at a rune boundary
	b, err := AppendFrame(nil, ErrorMsg{Code: CodeFailed, Text: long})
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	text := m.(ErrorMsg).Text
	if len(text) != MaxString || !strings.HasPrefix(long, strings.TrimSuffix(text, "…")) || !strings.HasSuffix(text, "…") {
		t.Errorf("long text sent as %d bytes %q", len(text), text)
	}

	if _, err := AppendFrame(nil, Setup{QPs: make([]QPInfo, MaxSetupQPs+1)}); err == nil {
		t.Error("AppendFrame sent a Setup of more than MaxSetupQPs")
	}

	b, _ = AppendFrame(nil, Result{Elapsed: -time.Second, PeakElapsed: -time.Second})
	if m, err := DecodeFrame(b); err != nil || m.(Result).Elapsed != 0 || m.(Result).PeakElapsed != 0 {
		t.Errorf("negative Elapsed and PeakElapsed decode as %v, %v; want 0", m, err)
	}
}

func frameOf(t MsgType, reserved byte, payload []byte) []byte {
	b := []byte{byte(t), reserved, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(len(payload)))
	return append(b, payload...)
}

func TestDecodeRejects(t *testing.T) {
	spec := testSpec().AppendPayload(nil)
	setup := Setup{QPs: []QPInfo{{Endpoint: fullEndpoint()}}}.AppendPayload(nil)
	result := Result{}.AppendPayload(nil)
	with := func(b []byte, i int, v byte) []byte {
		b = bytes.Clone(b)
		b[i] = v
		return b
	}
	tooMany := binary.BigEndian.AppendUint16(nil, MaxSetupQPs+1)
	tooMany = append(tooMany, make([]byte, (MaxSetupQPs+1)*qpInfoLen)...)
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"empty", nil},
		{"short header", []byte{1, 0, 0}},
		{"unknown type 0", frameOf(0, 0, nil)},
		{"unknown type 8", frameOf(8, 0, nil)},
		{"unknown type 0xff", frameOf(0xff, 0, []byte{1, 2, 3, 4})},
		{"perftest line", []byte("0000:000011:9f1c3a:00000000:0000000000000000")},
		{"reserved byte", frameOf(TypeSync, 1, []byte{0, 0, 0, 1})},
		{"short payload", frameOf(TypeSync, 0, []byte{0, 0, 1})},
		{"trailing byte", frameOf(TypeSync, 0, []byte{0, 0, 0, 1, 0})},
		{"bytes beyond length", append(frameOf(TypeSync, 0, []byte{0, 0, 0, 1}), 9)}, // ReadFrame stops before the 9
		{"spec trailing", frameOf(TypeSpec, 0, append(bytes.Clone(spec), 0))},
		{"spec short", frameOf(TypeSpec, 0, spec[:len(spec)-1])},
		{"setup count over bytes", frameOf(TypeSetup, 0, with(setup, 1, 2))},
		{"setup bytes over count", frameOf(TypeSetup, 0, with(setup, 1, 0))},
		{"setup too many", frameOf(TypeSetup, 0, tooMany)},
		{"hello string past end", frameOf(TypeHello, 0, []byte{'G', 'R', 'P', 'F', 0, 1, 5, 'a'})},
		{"hello trailing", frameOf(TypeHello, 0, []byte{'G', 'R', 'P', 'F', 0, 1, 1, 'a', 'b'})},
		{"result elapsed overflow", frameOf(TypeResult, 0, with(result, 16, 0x80))},
		{"result peak overflow", frameOf(TypeResult, 0, with(result, 32, 0x80))},
		{"error short", frameOf(TypeError, 0, []byte{0, 1})},
		{"alive with a payload", frameOf(TypeAlive, 0, []byte{1})},
		{"queued short", frameOf(TypeQueued, 0, []byte{0, 0, 1})},
		{"queued long", frameOf(TypeQueued, 0, []byte{0, 0, 0, 1, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeFrame(tc.frame)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeFrame = %+v, %v; want ErrMalformed", m, err)
			}
			if len(tc.frame) >= HeaderLen && tc.name != "bytes beyond length" {
				if m, err := ReadFrame(bytes.NewReader(tc.frame)); err == nil {
					t.Fatalf("ReadFrame = %+v", m)
				}
			}
		})
	}
}

// ReadFrame reads one frame and not a byte more.
func TestReadFrameNoReadAhead(t *testing.T) {
	var b []byte
	b, _ = AppendFrame(b, Sync{Seq: 1})
	b, _ = AppendFrame(b, Sync{Seq: 2})
	b = append(b, "rest"...)
	r := bytes.NewReader(b)
	for want := uint32(1); want <= 2; want++ {
		m, err := ReadFrame(r)
		if err != nil || m.(Sync).Seq != want {
			t.Fatalf("frame %d: %+v, %v", want, m, err)
		}
	}
	if r.Len() != len("rest") {
		t.Fatalf("%d bytes left, want 4", r.Len())
	}
	if _, err := ReadFrame(bytes.NewReader(nil)); err != io.EOF {
		t.Fatalf("ReadFrame on no bytes: %v, want io.EOF", err)
	}
}

func TestMsgTypeString(t *testing.T) {
	for _, tc := range messages() {
		if s := tc.m.Type().String(); strings.HasPrefix(s, "MsgType") {
			t.Errorf("%T has no name: %s", tc.m, s)
		}
	}
	if s := MsgType(0x30).String(); s != "MsgType(0x30)" {
		t.Errorf("MsgType(0x30) = %s", s)
	}
}
