//go:build linux && cgo

package ibverbs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/ibverbs/internal/cverbs"
)

// TestPollExProviderFailure gives PollEx a poll iterator that fails as a
// provider can: with an errno, with none found (ENOENT, EBUSY), and with
// mlx5's CQ_POLL_ERR, -2, which is no errno. A failure must be an error
// and never a count of completions that were not taken; the completions
// taken before it are returned, and the failure with the next call.
func TestPollExProviderFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		good, rc int
		want     error // of the call after the good completions; nil: none found
		text     string
	}{
		{"empty", 0, int(syscall.ENOENT), nil, ""},
		{"busy", 0, int(syscall.EBUSY), nil, ""},
		{"errno", 0, int(syscall.EINVAL), syscall.EINVAL, "ibv_start_poll"},
		{"CQ_POLL_ERR", 0, -2, syscall.EIO, "ibv_start_poll"},
		{"CQ_POLL_ERR after one", 1, -2, syscall.EIO, "ibv_start_poll"},
		{"CQ_POLL_ERR after three", 3, -2, syscall.EIO, "ibv_start_poll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := cverbs.NewFakeCQEx(tc.good, tc.rc)
			defer f.Free()
			cq := ibverbs.CQOverEx(f.Ptr())
			wcs := make([]ibverbs.WCEx, 8)
			if tc.good > 0 {
				n, err := cq.PollEx(wcs)
				if n != tc.good || err != nil {
					t.Fatalf("PollEx over %d completions and a failure: %d, %v; want %d, nil", tc.good, n, err, tc.good)
				}
				for i, w := range wcs[:n] {
					if w.WRID != uint64(i+1) || w.Err() != nil {
						t.Errorf("completion %d: wr_id %d, %v; want wr_id %d, success", i, w.WRID, w.Err(), i+1)
					}
				}
			}
			n, err := cq.PollEx(wcs)
			if n != 0 {
				t.Errorf("PollEx counted %d completions that do not exist (err %v)", n, err)
			}
			switch {
			case tc.want == nil && err != nil:
				t.Errorf("PollEx on an iterator that says %d: %v, want no error", tc.rc, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("PollEx on an iterator that says %d: %v, want an error matching %v", tc.rc, err, tc.want)
			case tc.want != nil && !strings.Contains(err.Error(), tc.text):
				t.Errorf("PollEx's error %q does not name %s", err, tc.text)
			}
			if f.Taken() != tc.good || f.Ends() != tc.good {
				t.Errorf("the iterator gave %d completions and saw %d end_polls, want %d of each", f.Taken(), f.Ends(), tc.good)
			}
		})
	}
}

// TestPollFailedCompletion gives Poll a provider whose failed completion
// has in every field but wr_id, status, vendor_err and qp_num what a
// provider may leave there (0xa5 bytes): the verbs define only those four
// for a failed completion. Poll returns those four and zeros.
func TestPollFailedCompletion(t *testing.T) {
	f := cverbs.NewFakeFailedCQ(77, int(ibverbs.WCRemAccessErr), 0x33, 0x1234)
	defer f.Free()
	cq := ibverbs.CQOver(f.Ptr())
	wcs := make([]ibverbs.WC, 4)
	n, err := cq.Poll(wcs)
	if n != 1 || err != nil {
		t.Fatalf("Poll over one failed completion: %d, %v", n, err)
	}
	want := ibverbs.WC{WRID: 77, Status: ibverbs.WCRemAccessErr, VendorErr: 0x33, QPN: 0x1234}
	if wcs[0] != want {
		t.Errorf("failed completion %+v, want %+v: the fields the verbs leave undefined 0", wcs[0], want)
	}
	var we *ibverbs.WCError
	if !errors.As(wcs[0].Err(), &we) || we.Opcode != 0 || we.WRID != 77 || we.QPN != 0x1234 {
		t.Errorf("its error: %#v", wcs[0].Err())
	}
}
