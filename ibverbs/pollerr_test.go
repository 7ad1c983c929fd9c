//go:build linux && cgo

package ibverbs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/ibverbs/internal/cverbs"
)

// TestPollExProviderFailure: what Poll and PollEx make of a provider's
// answer after taking some completions: none found (ENOENT, EBUSY from
// ibv_start_poll), an errno, mlx5's CQ_POLL_ERR (-2, no errno), or
// ibv_poll_cq's negative count. A failure must be an error and never a
// count of completions that were not taken; the completions taken before
// it are returned, and the failure with the next call. The C mapping
// (shim.h's gv_poll_end) and the Go error (pollError) are checked with
// the values a provider returns, without a provider.
func TestPollExProviderFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ex      bool // from ibv_start_poll, else ibv_poll_cq
		got, rc int
		want    error // nil: got completions and no error
		text    string
	}{
		{"empty", true, 0, int(syscall.ENOENT), nil, ""},
		{"busy", true, 0, int(syscall.EBUSY), nil, ""},
		{"empty after three", true, 3, int(syscall.ENOENT), nil, ""},
		{"errno", true, 0, int(syscall.EINVAL), syscall.EINVAL, "ibv_start_poll"},
		{"errno after two", true, 2, int(syscall.EINVAL), nil, ""},
		{"CQ_POLL_ERR", true, 0, -2, syscall.EIO, "ibv_start_poll"},
		{"CQ_POLL_ERR after one", true, 1, -2, nil, ""},
		{"CQ_POLL_ERR after three", true, 3, -2, nil, ""},
		{"ibv_poll_cq fails", false, 0, -1, syscall.EIO, "ibv_poll_cq"},
		{"ibv_poll_cq -ENOENT", false, 0, -int(syscall.ENOENT), syscall.EIO, "ibv_poll_cq"},
		{"ibv_poll_cq fails after four", false, 4, -1, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := ibverbs.PollEnd(tc.got, tc.rc)
			if tc.want == nil {
				if n != tc.got {
					t.Errorf("gv_poll_end(%d, %d) = %d, want the %d completions taken", tc.got, tc.rc, n, tc.got)
				}
				return
			}
			if n >= 0 {
				t.Fatalf("gv_poll_end(%d, %d) = %d: a failure counted as completions", tc.got, tc.rc, n)
			}
			err := ibverbs.PollError(n, tc.ex)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("provider's %d: %v, want an error matching %v that names %s", tc.rc, err, tc.want, tc.text)
			}
		})
	}
}

// TestFillWC converts a struct ibv_wc as ibv_poll_cq leaves it to the Go
// layout with shim.h's gv_fill_wc, as Poll does. A failed completion whose
// fields but wr_id, status, vendor_err and qp_num hold what a provider may
// leave there (0xa5 bytes: the verbs define only those four) gives those
// four and zeros; a successful one gives every field, its immediate data
// in host order.
func TestFillWC(t *testing.T) {
	put := func(w []byte, field string, v uint64) {
		f, ok := cverbs.IBVWCFields[field]
		if !ok {
			t.Fatalf("no field %s", field)
		}
		b := w[f.Off : f.Off+f.Size]
		switch f.Size {
		case 1:
			b[0] = byte(v)
		case 2:
			binary.NativeEndian.PutUint16(b, uint16(v))
		case 4:
			binary.NativeEndian.PutUint32(b, uint32(v))
		case 8:
			binary.NativeEndian.PutUint64(b, v)
		default:
			t.Fatalf("field %s of %d bytes", field, f.Size)
		}
	}
	garbage := func() []byte { return bytes.Repeat([]byte{0xa5}, cverbs.IBVWCSize) }

	w := garbage()
	put(w, "wr_id", 77)
	put(w, "status", uint64(ibverbs.WCRemAccessErr))
	put(w, "vendor_err", 0x33)
	put(w, "qp_num", 0x1234)
	wc := ibverbs.FillWC(w)
	want := ibverbs.WC{WRID: 77, Status: ibverbs.WCRemAccessErr, VendorErr: 0x33, QPN: 0x1234}
	if wc != want {
		t.Errorf("failed completion %#v, want %#v: the fields the verbs leave undefined 0", wc, want)
	}
	var we *ibverbs.WCError
	if !errors.As(wc.Err(), &we) || we.Opcode != 0 || we.WRID != 77 || we.QPN != 0x1234 || we.VendorErr != 0x33 {
		t.Errorf("its error: %#v", wc.Err())
	}

	w = garbage()
	put(w, "wr_id", 5)
	put(w, "status", uint64(ibverbs.WCSuccess))
	put(w, "opcode", uint64(ibverbs.WCRecv))
	put(w, "vendor_err", 0)
	put(w, "byte_len", 100)
	binary.BigEndian.PutUint32(w[cverbs.IBVWCFields["imm_data"].Off:], 0x01020304) // __be32
	put(w, "qp_num", 0x11)
	put(w, "src_qp", 0x22)
	put(w, "wc_flags", uint64(ibverbs.WCWithImm|ibverbs.WCWithGRH))
	put(w, "pkey_index", 3)
	put(w, "slid", 0x44)
	put(w, "sl", 5)
	put(w, "dlid_path_bits", 6)
	wc = ibverbs.FillWC(w)
	want = ibverbs.WC{WRID: 5, Opcode: ibverbs.WCRecv, ByteLen: 100, Imm: 0x01020304, QPN: 0x11, SrcQP: 0x22,
		Flags: ibverbs.WCWithImm | ibverbs.WCWithGRH, PKeyIndex: 3, SLID: 0x44, SL: 5, DLIDPathBits: 6}
	if wc != want {
		t.Errorf("successful completion %#v, want %#v", wc, want)
	}
}

// TestPollFailedCompletion takes real failed completions from soft-RoCE,
// with Poll and PollEx, from a CQ that ibv_create_cq made and one that
// ibv_create_cq_ex made: an RDMA write past the end of the peer's MR
// (REM_ACCESS_ERR) and a receive flushed when its QP goes to the error
// state (WR_FLUSH_ERR). Each has WRID, Status, VendorErr and QPN, the
// fields the verbs define for a failed completion, and zeros, and its Err
// is a *WCError with its WRID and QPN. An empty CQ gives 0 and no error.
func TestPollFailedCompletion(t *testing.T) {
	for _, tc := range []struct {
		name string
		cqEx bool
		ex   bool // PollEx, else Poll
	}{
		{"Poll", false, false},
		{"PollEx", false, true},
		{"Poll,cq_ex", true, false},
		{"PollEx,cq_ex", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, pairOpts{typ: ibverbs.QPTypeRC, cqEx: tc.cqEx})
			poll := func(cq *ibverbs.CQ) ibverbs.WC {
				t.Helper()
				if tc.ex {
					wc := pollExN(t, cq, 1)[0]
					if wc.Timestamp != 0 || wc.Wallclock != 0 {
						t.Errorf("timestamps %d, %d on a CQ made without them", wc.Timestamp, wc.Wallclock)
					}
					return wc.WC
				}
				return pollN(t, cq, 1)[0]
			}
			empty := func(cq *ibverbs.CQ) {
				t.Helper()
				var n int
				var err error
				if tc.ex {
					n, err = cq.PollEx(make([]ibverbs.WCEx, 4))
				} else {
					n, err = cq.Poll(make([]ibverbs.WC, 4))
				}
				if n != 0 || err != nil {
					t.Errorf("poll of an empty CQ: %d, %v; want 0, nil", n, err)
				}
			}
			check := func(wc ibverbs.WC, id uint64, st ibverbs.WCStatus, qpn uint32) {
				t.Helper()
				want := ibverbs.WC{WRID: id, Status: st, VendorErr: wc.VendorErr, QPN: qpn}
				if wc != want {
					t.Errorf("failed completion %#v, want %#v: the fields the verbs leave undefined 0", wc, want)
				}
				var we *ibverbs.WCError
				if !errors.As(wc.Err(), &we) || !errors.Is(we, st) || we.WRID != id || we.QPN != qpn || we.Opcode != 0 {
					t.Errorf("its error: %#v", wc.Err())
				}
			}
			empty(p.a.cq)

			err := p.a.qp.PostSend([]ibverbs.SendWR{{ID: 77, Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
				SGL: []ibverbs.SGE{p.a.mr.SGE(0, 256)}, RemoteAddr: p.b.mr.Addr() + bufSize - 10, RKey: p.b.mr.RKey()}})
			if err != nil {
				t.Fatal(err)
			}
			check(poll(p.a.cq), 77, ibverbs.WCRemAccessErr, p.a.qp.Num())
			empty(p.a.cq)

			if err := p.b.qp.PostRecv([]ibverbs.RecvWR{{ID: 88, SGL: []ibverbs.SGE{p.b.mr.SGE(0, 64)}}}); err != nil {
				t.Fatal(err)
			}
			if err := p.b.qp.ToError(); err != nil {
				t.Fatal(err)
			}
			check(poll(p.b.cq), 88, ibverbs.WCWRFlushErr, p.b.qp.Num())
			empty(p.b.cq)
		})
	}
}
