//go:build linux && cgo

package ibverbs

import (
	"strings"
	"testing"
)

// BenchmarkCheckSend is the Go-side check of each request PostSend,
// PostSendLists and a SendBatch's Set make (checkSend), without a
// device: a write of one SGE, and an inline one whose SGE lies in a live
// MR, which the check finds in its cache. It must not allocate.
func BenchmarkCheckSend(b *testing.B) {
	buf := make([]byte, 4096)
	m := registerFake(buf, 0x1234)
	defer unregisterFake(m)
	qp := &QP{pd: &PD{}, typ: QPTypeRC, cap: QPCap{MaxSendWR: 16, MaxSendSGE: 4, MaxInline: 64}}
	sgl := []SGE{{Addr: m.ptr + 64, Length: 64, LKey: m.lkey}}
	for _, c := range []struct {
		name  string
		flags SendFlags
	}{{"write", SendSignaled}, {"inline", SendInline | SendSignaled}} {
		b.Run(c.name, func(b *testing.B) {
			w := SendWR{Opcode: OpRDMAWrite, Flags: c.flags, SGL: sgl, RemoteAddr: 0x1000, RKey: 1}
			b.ReportAllocs()
			for b.Loop() {
				if err := qp.checkSend(&w, 4, &qp.inl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The inline check takes SGEs within a live MR under its lkey, from its
// cache or the registry, and refuses others, and those of an MR closed
// since the cache took it; an empty SGE copies nothing and passes.
func TestInlineCheck(t *testing.T) {
	buf := make([]byte, 256)
	m := registerFake(buf, 0x77)
	var c inlineCache
	in := SGE{Addr: m.ptr + 200, Length: 56, LKey: 0x77}
	for _, tc := range []struct {
		name string
		sgl  []SGE
		ok   bool
	}{
		{"within", []SGE{in, {Addr: m.ptr, Length: 1, LKey: 0x77}}, true},
		{"to the end", []SGE{{Addr: m.ptr, Length: 256, LKey: 0x77}}, true},
		{"one past the end", []SGE{in, {Addr: m.ptr + 200, Length: 57, LKey: 0x77}}, false},
		{"before", []SGE{{Addr: m.ptr - 1, Length: 2, LKey: 0x77}}, false},
		{"wrapping", []SGE{{Addr: m.ptr + 8, Length: 1<<32 - 1, LKey: 0x77}}, false},
		{"another lkey", []SGE{{Addr: m.ptr, Length: 8, LKey: 0x78}}, false},
		{"an empty SGE anywhere", []SGE{{Addr: 0x10, Length: 0}}, true},
	} {
		err := c.checkSGL(nil, tc.sgl)
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "inline SGE ") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if c.m != m.MR {
		t.Errorf("the cache holds %p, want the MR %p", c.m, m.MR)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.checkSGL(nil, []SGE{in}) }); n != 0 {
		t.Errorf("checkSGL allocates %v times", n)
	}
	unregisterFake(m)
	if err := c.checkSGL(nil, []SGE{in}); err == nil || !strings.Contains(err.Error(), "no live MR of the QP's PD has that LKey") {
		t.Errorf("after the MR's close: %v", err)
	}
}
